# The two commands of the contract: `make demo` and `make test`.
# Both create .venv and install on first use; later runs reuse it (the stamp
# file is rebuilt only when the dependency files change).

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# One Inductor cache for every test and demo run: the first compile of a graph
# costs 5-20 s on CPU, later runs reuse the generated kernels.
export TORCHINDUCTOR_CACHE_DIR ?= $(CURDIR)/.cache/inductor
export HF_HUB_OFFLINE := 1
PYTEST_ARGS ?=

# The other interpreter legs: Python 3.12 with torch 2.11 (the CUDA machine's
# pair) and 3.13 with torch 2.13, each in a virtual environment made once and
# reused like .venv, each running what depends on the interpreter and on torch.
# torch for these comes from the package index (a CUDA build, ~4.7 GB, runs on
# the CPU).  A missing
# interpreter skips its leg and says so.  The CUDA builds install with
# --no-cache-dir: pip's cache would keep another ~3 GB of wheels per leg on a
# disk that CI shares (a full disk failed CI once, mid-install).
find_python = $(shell for p in $$(command -v python$(1)) $(HOME)/.pyenv/versions/$(1).*/bin/python$(1); do \
	"$$p" -c "" >/dev/null 2>&1 && { echo "$$p"; break; }; done)
PYTHON312 ?= $(call find_python,3.12)
PYTHON313 ?= $(call find_python,3.13)
TORCH312 ?= torch==2.11.*
TORCH313 ?= torch==2.13.*
# The 3.12 leg (torch 2.11, the GPU machine's pair) runs what depends on the
# interpreter and on torch: the runtime, its soundness suite, the corpus, the CLI
# and the benchmarks' harness.  The static rules and the language server are pure
# Python over libcst and pygls: the 3.10 and 3.11 legs run them.
LEG312_TESTS ?= tests/runtime tests/soundness tests/test_corpus.py tests/test_programs_eager.py \
	tests/cli tests/bench tests/test_architecture.py
# The 3.13 leg runs the 3.12 leg's set on torch 2.13, plus the static rules' tests
# that depend on the interpreter's ast and on libcst's internals (chunking, the fast
# tree walk); the rest of the static rules and the language server are pure Python
# the 3.10 and 3.11 legs run (the whole suite on 3.13 too took the run past budget).
LEG313_TESTS ?= $(LEG312_TESTS) tests/refactors/test_incremental.py tests/refactors/test_fast_tree.py \
	tests/refactors/test_lint_scaling.py
# The Python 3.10 leg: the static rules, the CLI and the language server (which
# support 3.10+; the runtime refuses 3.10) without torch, so no multi-GB
# download: requirements-py310.txt lists the other dependencies and the project
# goes in with --no-deps.  The tests that need torch or the runtime skip, saying so.
PYTHON310 ?= $(call find_python,3.10)
LEG310_TESTS ?= tests/refactors tests/cli tests/lsp

.PHONY: demo test test-python test-py310 test-py312 test-py313 test-extension bench venv venv310 venv312 venv313 clean soundness gpu-check

venv: $(STAMP)

$(STAMP): pyproject.toml requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m fullgraph.lsp_server.cli.demo

test: test-python test-py310 test-py312 test-py313 test-extension

test-python: $(STAMP)
	$(PY) -m pytest -n 2 -q $(PYTEST_ARGS)

.venv310/.installed: pyproject.toml requirements-py310.txt
	test -x .venv310/bin/python || $(PYTHON310) -m venv .venv310
	.venv310/bin/python -m pip install --quiet --upgrade pip
	.venv310/bin/python -m pip install --quiet -r requirements-py310.txt
	.venv310/bin/python -m pip install --quiet --no-deps -e .
	touch $@

.venv312/.installed: pyproject.toml
	test -x .venv312/bin/python || $(PYTHON312) -m venv .venv312
	.venv312/bin/python -m pip install --quiet --upgrade pip
	.venv312/bin/python -m pip install --quiet --no-cache-dir "$(TORCH312)"
	.venv312/bin/python -m pip install --quiet -e ".[dev]"
	touch $@

.venv313/.installed: pyproject.toml
	test -x .venv313/bin/python || $(PYTHON313) -m venv .venv313
	.venv313/bin/python -m pip install --quiet --upgrade pip
	.venv313/bin/python -m pip install --quiet --no-cache-dir "$(TORCH313)"
	.venv313/bin/python -m pip install --quiet -e ".[dev]"
	touch $@

venv310: .venv310/.installed
venv312: .venv312/.installed
venv313: .venv313/.installed

ifeq ($(PYTHON310),)
test-py310:
	@echo "skipping the Python 3.10 leg: no python3.10 found (set PYTHON310=/path/to/python3.10)"
else
test-py310: .venv310/.installed
	.venv310/bin/python -m pytest -n 2 -q $(LEG310_TESTS) $(PYTEST_ARGS)
endif

ifeq ($(PYTHON312),)
test-py312:
	@echo "skipping the Python 3.12 leg: no python3.12 found (set PYTHON312=/path/to/python3.12)"
else
test-py312: .venv312/.installed
	.venv312/bin/python -m pytest -n 2 -q $(LEG312_TESTS) $(PYTEST_ARGS)
endif

ifeq ($(PYTHON313),)
test-py313:
	@echo "skipping the Python 3.13 leg: no python3.13 found (set PYTHON313=/path/to/python3.13)"
else
test-py313: .venv313/.installed
	.venv313/bin/python -m pytest -n 2 -q $(LEG313_TESTS) $(PYTEST_ARGS)
endif

# The extension's build and tests run when Node is present.
test-extension:
	@if command -v npm >/dev/null 2>&1 && [ -f package.json ]; then \
		npm ci --no-audit --no-fund && npm run build && npm test && npm run package; \
	else \
		echo "skipping extension tests: npm not found"; \
	fi

# The differential soundness suite (tests/soundness) with a longer hypothesis run;
# prints the per-class table (cases, passed, xfailed, wrong, internal, replays).
FULLGRAPH_SOUNDNESS_EXAMPLES ?= 400
soundness: $(STAMP)
	FULLGRAPH_SOUNDNESS_EXAMPLES=$(FULLGRAPH_SOUNDNESS_EXAMPLES) $(PY) -m pytest -n 0 -q tests/soundness $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) -m pip install --quiet -e .[bench]
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) .venv310 .venv312 .venv313 .cache build *.egg-info

# The GPU check for the CUDA machine (tests/gpu and the benchmark on a few models);
# here it says that no CUDA device was found.  Log and report in $(GPU_CHECK_OUT).
GPU_CHECK_OUT ?= .cache/gpu-check
gpu-check:
	GPU_CHECK_OUT=$(GPU_CHECK_OUT) PYTHON=$(if $(wildcard $(PY)),$(PY),python3) bash bench/gpu_check.sh
