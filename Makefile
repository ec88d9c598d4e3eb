PY ?= python

.PHONY: install test test-fast lint format run models bench

install:            ## install with test extras (CPU torch)
	pip install torch==2.13.0 -e ".[dev]"

test:               ## every test, slow and browser ones included (what CI runs)
	$(PY) -m pytest

test-fast:          ## skip tests that load real models, start servers or a browser
	$(PY) -m pytest -m "not slow and not browser"

lint:
	ruff check . && ruff format --check .

format:
	ruff check --fix . && ruff format .

run:                ## the app on the embedded defaults
	$(PY) app.py

models:             ## load the profile's models, print load time and memory
	$(PY) -m dtkg models

bench:              ## the MetaQA and routing benchmarks (needs ../shared)
	$(PY) -m dtkg.eval metaqa --kb ../shared/data/metaqa/kb.txt --data ../shared/data/metaqa/1-hop/qa_dev.txt --limit 500 --mode only-chain --out /tmp/metaqa1.json
	$(PY) -m dtkg.eval hotpotqa --data ../shared/data/hotpotqa/dev_sample.jsonl --routing-only --out /tmp/hotpot-routing.json
