# Two commands do all set-up on a fresh machine with only Python 3:
#   make demo   guided tour of numbax (creates/reuses .venv)
#   make test   the whole test suite  (creates/reuses .venv)
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat setup.cfg pyproject.toml | cksum | cut -d' ' -f1)

# Byte-code caches on, whatever the environment says (an empty value is "unset" to
# Python): each test worker and each process a test starts would otherwise compile
# numbax's source and rewrite every test module's asserts again (about 9 s a worker).
export PYTHONDONTWRITEBYTECODE =

.PHONY: demo precompile test test-fast jit-marks bench fuzz lint format docs clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) setup.cfg pyproject.toml
	$(PY) -m pip install --quiet -e '.[test,dev]'
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# numbax's runtime helpers compiled once for the common dtypes and ranks (about 1.5
# minutes, skipped while current), so that first calls compile only the program.
precompile: $(STAMP)
	$(PY) -m numbax precompile

demo: precompile
	$(PY) examples/demo.py

# --record-jit: which tests compiled with Numba goes to tests/numba_compiles.txt, from
# which tests/conftest.py sets the `jit` marker (docs/developer/testing.md).
test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder -q --record-jit

# The interpreted half (no Numba compile): a few minutes, for quick iterations. Tests that
# compiled anyway are listed at the end and recorded, so the next run leaves them out.
test-fast: $(STAMP)
	$(PY) -m pytest -n 2 --dist worksteal -q -m "not jit" --record-jit

# The record measured afresh: the whole suite, every test's compiles counted.
jit-marks: $(STAMP)
	rm -f tests/numba_compiles.txt
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder -q --record-jit

# JAX and autograd (the `compare` extra) are the benchmarks' peers; the stamp makes a
# second `make bench` skip pip. Pass options through, e.g. make bench BENCH_ARGS=--quick
COMPARE := $(VENV)/.compare-installed
BENCH_ARGS ?=

$(COMPARE): $(STAMP)
	$(PY) -m pip install --quiet -e '.[compare]'
	touch $(COMPARE)

# Then compile latency (benchmarks/compile.py): first calls cold and warm, in new
# processes, e.g. make bench COMPILE_ARGS="--quick --only hessian,mlp_dict"
COMPILE_ARGS ?=

bench: $(COMPARE) precompile
	$(PY) -m benchmarks $(BENCH_ARGS)
	$(PY) -m benchmarks.compile $(COMPILE_ARGS)

# Generated programs through every transformation (tests/fuzz): FUZZ_N programs (10,000
# by default), e.g. make fuzz FUZZ_N=500 FUZZ_ARGS="--modes eager,vmap --shrink 5"
FUZZ_N ?= 10000
FUZZ_ARGS ?=

fuzz: $(STAMP)
	FUZZ_N=$(FUZZ_N) $(PY) -m tests.fuzz $(FUZZ_ARGS)

# The documentation site (mkdocs.yml, docs/): the API reference from the docstrings,
# its own pages and the README's introduction; warnings are errors. The `docs` extra
# is installed once (stamp).
DOCS := $(VENV)/.docs-installed

$(DOCS): $(STAMP)
	$(PY) -m pip install --quiet -e '.[docs]'
	touch $(DOCS)

docs: $(DOCS)
	$(VENV)/bin/mkdocs build --strict --quiet

lint: $(STAMP)
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff check numbax tests benchmarks examples
	$(VENV)/bin/ruff format --check numbax tests benchmarks examples

format: $(STAMP)
	$(VENV)/bin/ruff format numbax tests benchmarks examples

clean:
	rm -rf $(VENV) build site *.egg-info numbax/_installed
