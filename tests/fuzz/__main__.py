"""``python -m tests.fuzz``: the slow fuzzing profile (see ``tests/fuzz/run.py``)."""

import sys

from tests.fuzz.run import main

sys.exit(main())
