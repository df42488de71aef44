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

.PHONY: demo test test-python test-extension bench venv clean soundness

venv: $(STAMP)

$(STAMP): pyproject.toml requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m fullgraph.lsp_server.demo

test: test-python test-extension

test-python: $(STAMP)
	$(PY) -m pytest -n 2 -q $(PYTEST_ARGS)

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
	rm -rf $(VENV) .cache build *.egg-info
