PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup check lint typecheck layers test test-random smoke coverage evals serve bench clean node-deps unasync check-deploy

# uv installs when it is on PATH (several times faster), pip otherwise.
UV ?= $(shell command -v uv 2>/dev/null)
# INSTALL_INTO: make a venv at $(1) and install $(2) into it.
define INSTALL_INTO
	$(if $(UV),$(UV) venv -q --allow-existing $(1),$(PY) -m venv $(1))
	$(if $(UV),$(UV) pip install -q --python $(1)/bin/python $(2),\
	  $(1)/bin/pip install -q --upgrade pip && $(1)/bin/pip install -q $(2))
endef

$(BIN)/agentkit: pyproject.toml
	$(call INSTALL_INTO,$(VENV),-e '.[dev]')
	touch $@

# `make serve` needs only the core dependencies, not the dev toolchain: its own venv, unless
# the dev one is already there.
SERVE_VENV ?= $(if $(wildcard $(BIN)/agentkit),$(VENV),.venv-serve)

.venv-serve/bin/agentkit: pyproject.toml
	$(call INSTALL_INTO,.venv-serve,-e .)
	touch $@

setup: $(BIN)/agentkit

lint: setup
	$(BIN)/ruff check src tests bench examples agent evals
	$(BIN)/ruff format --check src tests bench examples agent evals

typecheck: setup
	$(BIN)/mypy

# The layer order of docs/architecture.md and the core's forbidden SDKs (pyproject.toml).
layers: setup
	$(BIN)/lint-imports

check: lint typecheck layers

# The blocking client is generated from the asyncio one (src/agentkit/client/_async.py);
# tests/client/test_unasync.py fails when they drift apart.
unasync: setup
	$(BIN)/python -m agentkit.client._unasync

# pytest as the test targets run it. Bytecode writing stays on even where the environment
# turns it off (PYTHONDONTWRITEBYTECODE): pytest caches its assertion-rewritten modules only
# when it may write bytecode, and without that cache every worker rewrites every test module
# and plugin package again (about half the collection time). In a fixed order
# (`-p no:randomly`); `make test-random` shuffles it.
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

# The whole suite, in parallel, then the 20 slowest tests. One worker more than there are
# cores: a test waits on a child process, a socket or a browser often enough that with one
# worker per core the CPUs sat partly idle (two cores: 544 s with two workers, 439 s with
# three). Work stealing rather than loadscope: loadscope keeps a module on one worker, so
# the largest modules (the store contract suite, about an eighth of the whole) end the run
# on one worker while the others wait; with stealing an idle worker takes half of
# another's remaining tests (a module-scoped server then starts at most once more).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
test: setup node-deps
	$(PYTEST) -q -p no:randomly -n $(TEST_WORKERS) --dist worksteal --durations=20

# The same suite in a random order (pytest-randomly; make echoes the command, seed and all;
# `make test-random SEED=N` repeats a run): no test may depend on the order it runs in.
SEED ?= $(shell od -An -N2 -tu2 /dev/urandom | tr -d ' ')
test-random: setup node-deps
	$(PYTEST) -q -n $(TEST_WORKERS) --dist worksteal -p randomly --randomly-seed=$(SEED) --durations=20

# The quick check (about a minute): discovery and the manifest, a turn on the test model,
# an HTTP session with a follow-up and an approval, the store contract on the file store,
# and the playground in Chromium.
smoke: setup
	$(PYTEST) -q -p no:randomly -m smoke

# The official Node clients the protocol tests drive the server with (AG-UI, the AI SDK),
# pinned by tests/protocols/node/package-lock.json.
NODE_CLIENTS := tests/protocols/node
$(NODE_CLIENTS)/node_modules/.package-lock.json: $(NODE_CLIENTS)/package-lock.json
	npm ci --prefix $(NODE_CLIENTS) --no-audit --no-fund
	touch $@

node-deps: $(NODE_CLIENTS)/node_modules/.package-lock.json

# The suite under coverage, subprocesses included (pyproject.toml [tool.coverage]); prints
# the per-module table and, last, the total. Slower than `make test`, so never its default.
# It runs on Python 3.12 in its own venv: on 3.11 the tracer loses the frames a coroutine
# resumes through when an exception is thrown into it (awaiting a cancelled task does that),
# so lines after such an await, and after `asyncio.run` around it, went unrecorded. 3.12's
# tracer has no such gap. (Its `sys.monitoring` core cannot measure branches before 3.14.)
COV_PY ?= python3.12
COV_VENV ?= .venv-cov
COV_BIN := $(COV_VENV)/bin

$(COV_BIN)/agentkit: pyproject.toml
	@PYBIN="$$(sh "$(CURDIR)/.ci/which-python" $(COV_PY))" || exit 1; "$$PYBIN" -m venv $(COV_VENV)
	$(COV_BIN)/pip install -q --upgrade pip
	$(COV_BIN)/pip install -q -e '.[dev]'
	touch $@

coverage: $(COV_BIN)/agentkit
	rm -f .coverage .coverage.*
	$(COV_BIN)/coverage run -m pytest -q -p no:cacheprovider
	$(COV_BIN)/coverage combine -q
	$(COV_BIN)/coverage report --skip-covered --sort=cover
	@echo "total coverage: $$($(COV_BIN)/coverage report --format=total)%"

# The filesystem evals of the deployed agent and of every example (offline test model).
evals: setup
	AGENTKIT_MODEL=test $(BIN)/agentkit eval --dir .
	for d in examples/*/; do AGENTKIT_MODEL=test $(BIN)/agentkit eval --dir "$$d" || exit 1; done

# Before `sam deploy`: replay the last CHECK_LAST recorded sessions on the bundle about to
# ship and fail on any divergence. DEPLOY_URL reads them from the running stack (the token
# in $$AGENTKIT_TOKEN, never on the command line); otherwise from the state folder STATE_ROOT.
CHECK_DIR ?= .
CHECK_LAST ?= 20
STATE_ROOT ?= .agentkit
check-deploy: setup
	$(BIN)/agentkit check-deploy --dir "$(CHECK_DIR)" --last $(CHECK_LAST) \
	  $(if $(DEPLOY_URL),--url "$(DEPLOY_URL)",--state-root "$(STATE_ROOT)")

serve: $(SERVE_VENV)/bin/agentkit
	$(SERVE_VENV)/bin/agentkit serve --dir examples/weather --dev

bench: setup
	for b in bench/bench_*.py; do $(BIN)/python $$b; done

clean:
	rm -rf $(VENV) .venv-serve .mypy_cache .ruff_cache .pytest_cache

# --- AWS bundle (SAM) -------------------------------------------------------------------
# sam-cli pins many packages, so it lives in its own venv, apart from the dev one.
AWS_VENV ?= .venv-aws
AWS_BIN := $(AWS_VENV)/bin
# The Lambda runtime of template.yaml; `sam build` needs a matching interpreter on PATH.
LAMBDA_PY ?= python3.12

.PHONY: aws-tools aws-check aws-build aws-lint aws-scan

$(AWS_BIN)/sam:
	$(PY) -m venv $(AWS_VENV)
	$(AWS_BIN)/pip install -q --upgrade pip
	$(AWS_BIN)/pip install -q aws-sam-cli cfn-lint
	touch $@

# checkov (the infrastructure scanner) pins its own set of packages too: a third venv.
SCAN_VENV ?= .venv-checkov
SCAN_BIN := $(SCAN_VENV)/bin

$(SCAN_BIN)/checkov:
	$(PY) -m venv $(SCAN_VENV)
	$(SCAN_BIN)/pip install -q --upgrade pip
	$(SCAN_BIN)/pip install -q checkov
	touch $@

aws-tools: $(AWS_BIN)/sam $(SCAN_BIN)/checkov

# Fails on any finding not suppressed in the resource's Metadata.checkov.skip (each with
# its reason). --skip-download keeps it offline: no policy or guideline download.
aws-scan: aws-tools
	$(SCAN_BIN)/checkov -f template.yaml --framework cloudformation --skip-download \
	  --quiet --compact

aws-lint: $(AWS_BIN)/sam
	$(AWS_BIN)/cfn-lint template.yaml
	SAM_CLI_TELEMETRY=0 $(AWS_BIN)/sam validate --lint --region us-east-1

# Uses the dev venv's agentkit (run `make setup` first); it never re-installs it.
aws-build: $(AWS_BIN)/sam
	@test -x "$(BIN)/agentkit" || { echo "aws-build: run 'make setup' first" >&2; exit 1; }
	@PYBIN="$$(sh "$(CURDIR)/.ci/which-python" $(LAMBDA_PY))" || exit 1; \
	PYDIR="$$(dirname "$$PYBIN")"; \
	PATH="$$PYDIR:$$PATH" LAYER_PIP="$(CURDIR)/$(BIN)/python -m pip" LAMBDA_PYTHON="$$PYBIN" \
	  SAM_CLI_TELEMETRY=0 $(AWS_BIN)/sam build --region us-east-1

aws-check: aws-lint aws-scan aws-build

# Builder targets `sam build` runs for each function and the layer (BuildMethod: makefile).
# ARTIFACTS_DIR is set by sam. `agentkit build` writes manifest.json and agent/ (and refuses
# on error diagnostics); `agentkit.aws.check` refuses cron EventBridge cannot express. The
# agentkit package itself is copied beside them; third-party code comes from the layer.
# Everything is byte-compiled for the Lambda runtime's Python (the package is read-only
# there, so uncompiled modules would be compiled again on every cold start).
# AGENT_DIR is the project whose agent/ is deployed: the repository root when it has an
# agent/ folder, else the weather example.
AGENTKIT_PYTHON ?= $(CURDIR)/$(BIN)/python
AGENTKIT_CLI ?= $(CURDIR)/$(BIN)/agentkit
AGENT_DIR ?= $(if $(wildcard agent/.),.,examples/weather)
LAMBDA_PYTHON ?= $(LAMBDA_PY)

define AGENTKIT_FUNCTION_BUILD
	"$(AGENTKIT_CLI)" build --dir "$(AGENT_DIR)" --out "$(ARTIFACTS_DIR)"
	"$(AGENTKIT_PYTHON)" -m agentkit.aws.check "$(ARTIFACTS_DIR)/manifest.json"
	cp -RL src/agentkit "$(ARTIFACTS_DIR)/agentkit"
	find "$(ARTIFACTS_DIR)/agentkit" -name '__pycache__' -type d -prune -exec rm -rf {} +
	"$(LAMBDA_PYTHON)" -m compileall -q -j 0 --invalidation-mode unchecked-hash \
	  "$(ARTIFACTS_DIR)/agentkit" "$(ARTIFACTS_DIR)/agent"
endef

build-ApiFunction:
	$(AGENTKIT_FUNCTION_BUILD)

build-TurnFunction:
	$(AGENTKIT_FUNCTION_BUILD)

build-HooksFunction:
	$(AGENTKIT_FUNCTION_BUILD)

build-SchedulerFunction:
	$(AGENTKIT_FUNCTION_BUILD)
