# Two commands on a fresh clone (only python3 and make needed):
#   make demo   install everything, generate sample eval output and build it (in two steps),
#               print the run summaries
#   make test   install everything, then run every check: ruff, mypy, pytest (with real dbt builds)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export DO_NOT_TRACK := 1
# the demo and the tests use this checkout's folders (output/, analytics/lake), never the
# folders these name for real eval output or a team's lake
unexport SKILLWALKER_HOME SKILLWALKER_OUTPUT_DIR SKILLWALKER_LAKE_DIR SKILLWALKER_LAKE_CATALOG \
	SKILLWALKER_LAKE_DATA_PATH

.PHONY: demo test test-fast install lint bench bench-quick clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	@echo "installing skillwalker-data and its dependencies into $(VENV) (log: $(VENV)/pip.log)"
	@$(BIN)/pip install --quiet --disable-pip-version-check -e '.[dev]' > $(VENV)/pip.log 2>&1 \
		|| (cat $(VENV)/pip.log; exit 1)
	touch $@

# the sample in two steps, built after each, as a lake grows: the older runs, then the
# newest run with a re-evaluation and the SCIL/ACIL loops (two builds: --as-of previous works)
demo: install
	$(BIN)/skillwalker-data sample --overwrite --part older
	$(BIN)/skillwalker-data build
	$(BIN)/skillwalker-data sample --part newest
	$(BIN)/skillwalker-data build
	$(BIN)/skillwalker-data summaries

lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy

# ruff first (a second); mypy (about 20 s on a fresh clone, without its cache)
# runs beside pytest: its report shows up when it ends, and its failure fails
# the command. pytest: two workers (the machines have 2 cores); a test file
# stays on one worker, so module-scoped builds are made once; files are handed
# out in the order of tests/conftest.py (longest files first; xdist would
# otherwise start with the files that hold the most tests); the log ends with
# the ten slowest tests, then the CPU the suite spent and the machine's speed
# (tests/conftest.py)
test: install
	$(BIN)/ruff check .
	@rm -f $(VENV)/mypy.status; \
	( $(BIN)/mypy > $(VENV)/mypy.log 2>&1; status=$$?; \
	  sed 's/^/mypy: /' $(VENV)/mypy.log; echo $$status > $(VENV)/mypy.status ) & \
	SKILLWALKER_TESTS_CPU_REPORT=1 $(BIN)/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder --durations=10; \
	tests=$$?; wait; mypy=$$(cat $(VENV)/mypy.status); \
	if [ "$$mypy" != 0 ]; then echo "make test: mypy found errors (the lines starting mypy: above)"; fi; \
	[ $$tests = 0 ] && [ "$$mypy" = 0 ]

# the unit tier: tests/python (no dbt build), for a quick answer while working
test-fast: install
	$(BIN)/python -m pytest -n 2 -q tests/python

bench: install
	$(BIN)/python bench/run.py

bench-quick: install
	$(BIN)/python bench/run.py --quick

clean:
	rm -rf target logs analytics output .pytest_cache .mypy_cache .ruff_cache
