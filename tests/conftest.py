"""Test-wide set-up: a private numbax cache per test run, so runs start cold, and the
``jit`` marker on the tests that compile with Numba.

The `jit` marker
----------------
Numba's first compile of a function takes 0.2-2 s, so compiled checks are most of the
suite's time; ``pytest -m "not jit"`` (``make test-fast``) runs the rest in minutes. Which
tests compile is measured, not guessed: every test process counts Numba's compile events
(``numba.core.event``) during each test, fixtures included, and a run given
``--record-jit`` (``make test``, ``make test-fast``) writes what it saw to
``tests/numba_compiles.txt``, which is committed. At collection a test is marked from
that file: ``jit`` if it compiled, or if it uses a fixture that compiled (a module's
shared compiled program compiles once, for whichever test comes first). A test the file
does not list yet (new, renamed) is classified by reading its code, fixtures and
parameters for ``jit``/``numba``, as a fallback, until the next recording run lists it.
A run without jit tests that compiled anyway lists them at its end, and records them
when ``--record-jit`` is given, so the next fast run leaves them out.

The same file keeps each test file's seconds in the last whole run (``seconds``), by
which whole files run longest first (``make test`` hands whole files to its workers).

A test recorded as compiling stays recorded when a later run sees it compile nothing:
it can reuse what an earlier test of the same process compiled (a module-level ``jit``
object), yet compile when it runs alone. Delete its line, or the file, to measure anew.
Compiles in a subprocess are not seen: a test that starts a Python process (which
imports numbax and Numba afresh, and mostly compiles) is recorded as compiling; the
notebooks' test is marked in its module, so that it is left out before any record.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

# GPU code (tests/gpu) runs on Numba's CUDA simulator, which must be chosen before Numba
# is imported; on a machine with a GPU, NUMBA_ENABLE_CUDASIM=0 runs it on the device.
os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")

import numba.core.event  # noqa: E402
import pytest  # noqa: E402

# Before numbax is imported anywhere: generated modules and Numba's disk cache go to a
# fresh directory per test run. The xdist workers inherit it from the controller's
# environment (this module is imported before they start).
os.environ.setdefault("NUMBAX_CACHE_DIR", tempfile.mkdtemp(prefix="numbax-test-cache-"))
# ... and start empty, not from an installed runtime (`python -m numbax precompile`),
# whatever was installed: the tests of that set it themselves.
os.environ.setdefault("NUMBAX_INSTALLED_RUNTIME", "0")


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A fresh, empty cache root for this test (``NUMBAX_CACHE_DIR``); the directories
    numbax checked are forgotten before and after it."""
    from numbax.codegen import cache

    root = tmp_path / "cache"
    monkeypatch.setenv("NUMBAX_CACHE_DIR", str(root))
    cache.forget_directories()
    yield root
    cache.forget_directories()


RECORD = Path(__file__).parent / "numba_compiles.txt"
"""What the last recording runs saw: ``jit <test>``, ``eager <test>``, ``fixture <id>``."""

_HEADER = (
    "# Tests that compile with Numba (jit), tests that do not (eager), and shared fixtures\n"
    "# that compile (fixture): written by `pytest --record-jit` (make test, make test-fast)\n"
    "# from Numba's compile events; tests/conftest.py marks the `jit` tests from it.\n"
    "# Each file's seconds in the last whole run (seconds): the longest files run first.\n"
)


# -- counting Numba's compiles in this process ----------------------------------------


class _CompileCounter(numba.core.event.Listener):
    """Counts ``numba:compile`` events: each is one function compiled for one signature
    (a load from Numba's disk cache is not one)."""

    def __init__(self) -> None:
        self.compiles = 0

    def on_start(self, event: numba.core.event.Event) -> None:
        self.compiles += 1

    def on_end(self, event: numba.core.event.Event) -> None:
        pass


_COUNTER = _CompileCounter()
numba.core.event.register("numba:compile", _COUNTER)


class _PythonSubprocesses:
    """Counts the Python processes started (compiles there are not seen here)."""

    def __init__(self) -> None:
        self.started = 0

    def __call__(self, event: str, args: tuple) -> None:
        if event == "subprocess.Popen" and _runs_python(args[0], args[1]):
            self.started += 1


def _runs_python(executable: Any, argv: Any) -> bool:
    program = executable or (argv[0] if isinstance(argv, (list, tuple)) and argv else argv)
    return "python" in Path(os.fsdecode(program)).name if program else False


_SUBPROCESSES = _PythonSubprocesses()
sys.addaudithook(_SUBPROCESSES)
assert subprocess  # the audit events above come from subprocess.Popen


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    item.stash[_COMPILES_AT_START] = (_COUNTER.compiles, _SUBPROCESSES.started)
    yield


_COMPILES_AT_START = pytest.StashKey[tuple[int, int]]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    if call.when == "teardown" and _COMPILES_AT_START in item.stash:
        compiles, started = item.stash[_COMPILES_AT_START]
        compiles = _COUNTER.compiles - compiles
        if not compiles and _SUBPROCESSES.started > started:
            compiles = -1  # in the Python process it started, not seen from here
        item.user_properties.append(("numba_compiles", compiles))
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest):
    before = _COUNTER.compiles
    yield
    item = getattr(request, "_pyfuncitem", None)
    if _COUNTER.compiles > before and fixturedef.scope != "function" and item is not None:
        item.user_properties.append(("compiling_fixture", _fixture_id(fixturedef)))


def _fixture_id(fixturedef: pytest.FixtureDef) -> str:
    return f"{fixturedef.baseid}::{fixturedef.argname}"


# -- marking -----------------------------------------------------------------------------


def _recorded() -> list[tuple[str, str]]:
    """The record's lines as (kind, the rest)."""
    if not RECORD.exists():
        return []
    return [line.partition(" ")[::2] for line in RECORD.read_text().splitlines()]


def _read_record() -> dict[str, set[str]]:
    record: dict[str, set[str]] = {"jit": set(), "eager": set(), "fixture": set()}
    for kind, name in _recorded():
        if kind in record and name:
            record[kind].add(name)
    return record


def _read_seconds() -> dict[str, int]:
    """Each test file's seconds in the last whole run that recorded it (``seconds``)."""
    seconds = {}
    for kind, rest in _recorded():
        name, _, value = rest.rpartition(" ")
        if kind == "seconds" and name and value.isdigit():
            seconds[name] = int(value)
    return seconds


_MENTIONS_JIT = re.compile(r"\bjit\b|\bnjit\b|backend=|\bnumba\b")


@functools.cache
def _mentions_jit(function: Any) -> bool:
    try:
        return bool(_MENTIONS_JIT.search(inspect.getsource(function)))
    except (OSError, TypeError):
        return False


def _fixture_defs(item: pytest.Item) -> list[pytest.FixtureDef]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return [d for defs in info.name2fixturedefs.values() for d in defs]


def _reads_as_jit(item: pytest.Item) -> bool:
    """The fallback for a test not recorded yet: its name (parameters' ids included),
    its code or a fixture it uses mention jit or Numba."""
    return (
        "jit" in item.name
        or _mentions_jit(getattr(item, "function", None))
        or any(_mentions_jit(d.func) for d in _fixture_defs(item))
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _longest_files_first(items)
    record = _read_record()
    for item in items:
        if item.get_closest_marker("jit"):
            continue
        if item.nodeid in record["jit"] or item.nodeid in record["eager"]:
            compiles = item.nodeid in record["jit"]
        else:
            compiles = _reads_as_jit(item)
        if compiles or any(_fixture_id(d) in record["fixture"] for d in _fixture_defs(item)):
            item.add_marker(pytest.mark.jit)


def _longest_files_first(items: list[pytest.Item]) -> None:
    """Whole files in order of their recorded seconds, longest first (a file not
    recorded yet counts as the longest), each file's tests in their own order.

    ``make test`` hands whole files to its workers (``--dist loadfile``): a file's
    compiled programs are compiled by one worker only, and with the longest files taken
    first, the run does not end waiting on one long file in one worker."""
    seconds = _read_seconds()
    position = {item: k for k, item in enumerate(items)}

    def key(item: pytest.Item) -> tuple[int, int]:
        path = item.nodeid.partition("::")[0]
        return -seconds.get(path, sys.maxsize), position[item]

    items.sort(key=key)


# -- recording, and the end-of-run list of tests that compiled without the marker --------


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--record-jit",
        action="store_true",
        help=f"write which tests compiled with Numba to {RECORD.name} (the jit marker)",
    )


class _Observations:
    """What the run's tests did, from their reports (xdist sends them to the controller)."""

    def __init__(self) -> None:
        self.compiled: dict[str, int] = {}
        self.eager: set[str] = set()
        self.fixtures: set[str] = set()
        self.marked_jit: set[str] = set()
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.partition("::")[0]
        self.seconds[path] = self.seconds.get(path, 0.0) + report.duration
        if report.when == "call" and "jit" in report.keywords:
            self.marked_jit.add(report.nodeid)
        if report.when != "teardown":
            return
        for key, value in report.user_properties:
            if key == "compiling_fixture":
                self.fixtures.add(value)
            elif key == "numba_compiles" and value:
                self.compiled[report.nodeid] = value
            elif key == "numba_compiles":
                self.eager.add(report.nodeid)


_OBSERVATIONS = pytest.StashKey[_Observations]()


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller, or a run without xdist
        config.stash[_OBSERVATIONS] = observations = _Observations()
        config.pluginmanager.register(observations, "numbax-compile-observations")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    observations = config.stash.get(_OBSERVATIONS, None)
    if observations is None:
        return
    unmarked = sorted(
        n for n, c in observations.compiled.items() if c > 0 and n not in observations.marked_jit
    )
    if unmarked:
        terminalreporter.write_sep("=", "tests that compiled with Numba without the jit marker")
        for nodeid in unmarked:
            terminalreporter.write_line(f"{nodeid} ({observations.compiled[nodeid]} compiles)")
        hint = (
            f"recorded in tests/{RECORD.name}: the next run marks them"
            if config.getoption("--record-jit")
            else "run with --record-jit (make test-fast does) to record them"
        )
        terminalreporter.write_line(hint)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    observations = config.stash.get(_OBSERVATIONS, None)
    if observations is None or not config.getoption("--record-jit"):
        return
    whole_files = (
        exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
        and not session.shouldstop
        and not config.option.keyword
        and not config.option.markexpr
        and not any("::" in arg for arg in config.args)
    )
    _write_record(observations, _read_record(), _read_seconds(), whole_files)


def _write_record(
    seen: _Observations, record: dict[str, set[str]], seconds: dict[str, int], whole_files: bool
) -> None:
    """The record with this run's observations: a test seen compiling is ``jit``; one
    seen compiling nothing is ``eager`` unless recorded ``jit`` before (it may have used
    an earlier test's compiled code). When every test of the files run ran
    (``whole_files``), the tests of those files that did not run no longer exist, and
    those files' seconds are this run's."""
    jit = record["jit"] | set(seen.compiled)
    eager = (record["eager"] | seen.eager) - jit
    if whole_files:
        ran = set(seen.compiled) | seen.eager
        files = {nodeid.partition("::")[0] for nodeid in ran}
        gone = {n for n in jit | eager if n.partition("::")[0] in files and n not in ran}
        jit, eager = jit - gone, eager - gone
        seconds = {**seconds, **{path: round(t) for path, t in seen.seconds.items()}}
    lines = [f"jit {n}" for n in jit] + [f"eager {n}" for n in eager]
    lines += [f"fixture {n}" for n in record["fixture"] | seen.fixtures]
    lines += [f"seconds {path} {value}" for path, value in seconds.items()]
    lines.sort(key=lambda line: (line.partition(" ")[2], line))
    RECORD.write_text(_HEADER + "".join(f"{line}\n" for line in lines))
