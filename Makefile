# Every target sets itself up first (Debian programs, .venv, packages): see scripts/setup.sh.
PY        := .venv/bin/python
VERSION   ?= 1.0.0
OUT       ?= releases
CONFIG    ?= pipelines/configs/imagecode.yaml
ARGS      ?=

.PHONY: setup build-imagecode sample-imagecode test bench clean-sample cache-prune

setup:
	@bash scripts/setup.sh

# Without VIDEOS: the embedded sample (generated on first use) with its offline config.
# With VIDEOS=<manifest.jsonl>: the paper's config on your videos; optionally
# IMAGES=<folder or images.jsonl> (static sets), DESCRIPTIONS=<describer output> and
# RETRIEVALS=<retriever output> (the crowd rounds).
INPUTS = $(if $(IMAGES),--set static.images=$(IMAGES)) \
         $(if $(DESCRIPTIONS),--set crowd.descriptions=$(DESCRIPTIONS)) \
         $(if $(RETRIEVALS),--set crowd.retrievals=$(RETRIEVALS))
ifeq ($(strip $(VIDEOS)),)
build-imagecode: setup sample-imagecode
	$(PY) -m pipelines.imagecode --config pipelines/configs/imagecode_sample.yaml \
	  --output $(OUT) --version $(VERSION) $(ARGS)
else
build-imagecode: setup
	$(PY) -m pipelines.imagecode --config $(CONFIG) --set inputs.videos=$(VIDEOS) $(INPUTS) \
	  --output $(OUT) --version $(VERSION) $(ARGS)
endif

sample-imagecode: setup
	$(PY) -m pipelines.samples imagecode samples/imagecode

test: setup
	$(PY) -m pytest -q tests

bench: setup
	$(PY) -m bench.imagecode_video
	$(PY) -m bench.knn
	$(PY) -m bench.crowd_ingest

clean-sample:
	rm -rf samples/imagecode

# Delete cache shards that no release's MANIFEST.json names ("cache_files"; see pipelines/cache.py).
CACHE ?= $(OUT)/.cache
cache-prune: setup
	$(PY) -m pipelines.cache prune --cache $(CACHE) --releases $(OUT)
