# Every step skips work already done: the venv is rebuilt only when pyproject.toml changes, the model is
# assembled only when ~/.cache/ragrouter/models lacks a verified copy, and ingest adds only changed files.
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export OMP_NUM_THREADS := 1
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install model ingest run test bench-retrieval bench-router clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# CPU torch first and explicitly: a plain `torch` requirement pulls a multi-GB CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	# llama-cpp-python compiles from source once (~3.5 min on 2 cores); pip's wheel cache keeps it after that.
	$(PY) -m pip install --quiet -e '.[test]'
	touch $@

install: $(STAMP)

model: install
	$(PY) -m engines.model_files

ingest: model
	$(PY) -m ui.cli ingest

run: ingest
	$(PY) -m ui.cli ui

test: model
	$(PY) -m pytest -q -p no:cacheprovider tests

bench-retrieval: install
	$(PY) -m bench.retrieval

# Ingesting the reference sources takes ~25 min the first time (5,183 SciFact abstracts); later runs skip it.
bench-router: model
	$(PY) -m ui.cli ingest --sources data/eval-sources.yaml
	$(PY) -m bench.router

clean:
	rm -rf $(VENV) *.egg-info
