# Every step skips work already done: the venv is rebuilt only when pyproject.toml changes, the model is
# assembled only when ~/.cache/ragrouter/models lacks a verified copy, and ingest adds only changed files.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export OMP_NUM_THREADS := 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# The version pinned in pyproject.toml, built for AVX2 (see the install step).
LLAMA_CPP_VERSION := 0.3.36
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: install model chromium postgres phoenix serve serve-phoenix serve-llm serve-embeddings serve-milvus ingest run lint docs test test-fast bench bench-retrieval eval eval-ingest eval-router eval-sql eval-retrieval eval-answers clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# CPU torch first and explicitly: a plain `torch` requirement pulls a multi-GB CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	# llama-cpp-python compiles from source (~3.5 min on 2 cores), for AVX2 rather than -march=native: a native
	# build uses AMX tile instructions where the CPU lists them, and this project's VMs trap them (2026-12-01:
	# "invalid opcode" in libggml-cpu.so at tilezero). Not from pip's wheel cache, which may hold a native build.
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(PY) -m pip install --quiet --no-cache-dir llama-cpp-python==$(LLAMA_CPP_VERSION)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

install: $(STAMP)

model: install
	$(PY) -m engines.models.files

ingest: model
	$(PY) -m ui.cli ingest

run: ingest
	$(PY) -m ui.cli ui

# llama.cpp's OpenAI-compatible server on the local model, on 127.0.0.1:8088 (docs/scaling.md): then
# RAGROUTER_LLM_BACKEND=openai_like RAGROUTER_API_BASE=http://127.0.0.1:8088/v1 ragrouter ask "..."
serve-llm: model
	$(PY) -m tools.servers llm

# The HTTP API on 127.0.0.1:8000 (OpenAI-compatible chat; docs/api.md, OpenAPI at /docs).
serve: model
	$(PY) -m ui.cli serve

# Arize Phoenix in a virtual environment of its own (it pins its own sqlglot and brings ~65 packages), to read the
# traces RAGROUTER_OTEL=otlp exports (docs/observability.md); tests/ui/test_phoenix.py starts it the same way.
PHOENIX := .phoenix
$(PHOENIX)/.installed:
	python3 -m venv $(PHOENIX)
	$(PHOENIX)/bin/pip install --quiet arize-phoenix==20.26.1
	touch $@

phoenix: $(PHOENIX)/.installed

# Phoenix offline on 127.0.0.1:6006, its data in the state folder: then RAGROUTER_OTEL=otlp and
# OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=http://127.0.0.1:6006/v1/traces.
serve-phoenix: install phoenix
	$(PY) -m tools.servers phoenix

# The embedding model over the OpenAI embeddings API, on 127.0.0.1:8089: then
# RAGROUTER_EMBEDDING_BACKEND=openai_like RAGROUTER_EMBED_API_BASE=http://127.0.0.1:8089/v1
serve-embeddings: install
	$(PY) -m tools.servers embeddings

# Milvus Lite's gRPC server as a process of its own, on 127.0.0.1:19530: then RAGROUTER_MILVUS_URI=http://127.0.0.1:19530
serve-milvus: install
	$(PY) -m tools.servers milvus

# The browser test drives Debian's chromium (with a Chinese and an emoji font, or Chinese text and the title's emoji render as boxes); they are
# installed here when missing, and the test is skipped where they cannot be.
BROWSER_PACKAGES := chromium fonts-wqy-microhei fonts-noto-color-emoji
chromium:
	dpkg -s $(BROWSER_PACKAGES) >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq $(BROWSER_PACKAGES) >/dev/null) || echo "chromium could not be installed: tests/ui/test_browser.py will be skipped"

# The PostgreSQL tests start a throwaway cluster from Debian's server binaries (evals/postgres.py); installed here
# when missing, and those tests are skipped where they cannot be.
postgres:
	dpkg -s postgresql >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq postgresql >/dev/null) || echo "postgresql could not be installed: tests/engines/sql/test_postgres.py will be skipped"

# ruff (lint and format) and import-linter (the one-way imports written in pyproject.toml).
lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

# docs/settings.md is generated from the settings model; tests/ui/test_settings_doc.py fails when it is stale.
docs: install
	$(PY) -m ui.settings_doc > docs/settings.md

test: lint model chromium postgres phoenix
	$(PY) -m pytest -q -p no:cacheprovider tests

# The tests that need no local model (about a minute); `make test` runs them all.
test-fast: lint
	$(PY) -m pytest -q -p no:cacheprovider -m "not slow" tests

bench-retrieval: install
	$(PY) -m bench.retrieval

# The reference sources (data/eval-sources.yaml) are ingested once, ~33 min for SciFact's 5,183 abstracts;
# RGB zh's pooled passages (data/eval-retrieval-sources.yaml) add ~4 min per split.
eval-ingest: model
	$(PY) -m ui.cli ingest --sources data/eval-sources.yaml
	$(PY) -m ui.cli ingest --sources data/eval-retrieval-sources.yaml

# `make eval` runs every suite on both splits (hours: the stock LLM router and the answer judge take seconds
# per question); reports land in evals/reports/SUITE-SPLIT and a rerun resumes where one stopped.
EVAL_SPLITS ?= dev test
LIMIT_router ?= 150
# 200 over 12 databases, round-robin: about 150 Spider questions (one per db in turn) and 50 KaggleDBQA ones.
LIMIT_sql ?= 200
LIMIT_retrieval ?= 450
LIMIT_answers ?= 30
eval-router eval-sql eval-retrieval eval-answers: eval-%: eval-ingest
	for split in $(EVAL_SPLITS); do $(PY) -m ui.cli eval $* --split $$split --limit $(LIMIT_$*) || exit 1; done

eval: eval-router eval-sql eval-retrieval eval-answers

bench: ingest eval-ingest
	$(PY) -m bench.performance

clean:
	rm -rf $(VENV) *.egg-info
