# Two entry points: `make run` (set up, import the sample, serve) and `make test` (set up, run the tests).
# Both are idempotent: the virtualenv is rebuilt only when the requirement files change.

PYTHON ?= python
VENV := .venv
BIN := $(VENV)/bin
DATA_DIR ?= data

.PHONY: run test bench quality setup browser screenshot clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 12), "Python 3.12+ is required (pyenv reads .python-version)"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements-dev.txt
	@touch $@

run: setup
	@DATA_DIR=$(DATA_DIR) BIN=$(BIN) ./scripts/start.sh

# The dashboard's browser test drives Debian's Chromium (never a browser download); install it when missing,
# alone: without its recommended packages apt upgrades nothing already installed (19 new packages, not 115).
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

clean:
	rm -rf $(VENV)
