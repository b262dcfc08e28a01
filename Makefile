PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup check lint typecheck test serve bench clean

$(BIN)/agentkit: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	touch $@

setup: $(BIN)/agentkit

lint: setup
	$(BIN)/ruff check src tests bench examples agent
	$(BIN)/ruff format --check src tests bench examples agent

typecheck: setup
	$(BIN)/mypy

check: lint typecheck

test: setup
	$(BIN)/python -m pytest -q

serve: setup
	$(BIN)/agentkit serve --dir examples/weather --dev

bench: setup
	for b in bench/bench_*.py; do $(BIN)/python $$b; done

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
