"""``python -m benchmarks``: run the whole suite (see ``--help`` for selection and JSON)."""

import sys

from benchmarks.runner import main

sys.exit(main())
