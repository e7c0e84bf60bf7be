# Every target sets itself up first (Debian programs, .venv, packages): see scripts/setup.sh.
PY        := .venv/bin/python
VERSION   ?= 1.0.0
OUT       ?= releases
CONFIG    ?= pipelines/configs/imagecode.yaml
SAMPLE    := samples/imagecode/videos.jsonl
ARGS      ?=

.PHONY: setup build-imagecode sample-imagecode test bench clean-sample

setup:
	@bash scripts/setup.sh

# Without VIDEOS: the embedded sample (generated on first use) with its offline config.
# With VIDEOS=<manifest.jsonl>: the paper's config on your videos.
ifeq ($(strip $(VIDEOS)),)
build-imagecode: setup sample-imagecode
	$(PY) -m pipelines.imagecode --config pipelines/configs/imagecode_sample.yaml \
	  --set inputs.videos=$(SAMPLE) --output $(OUT) --version $(VERSION) $(ARGS)
else
build-imagecode: setup
	$(PY) -m pipelines.imagecode --config $(CONFIG) --set inputs.videos=$(VIDEOS) \
	  --output $(OUT) --version $(VERSION) $(ARGS)
endif

sample-imagecode: setup
	$(PY) -m pipelines.samples imagecode samples/imagecode

test: setup
	$(PY) -m pytest -q tests

bench: setup
	$(PY) -m bench.imagecode_video

clean-sample:
	rm -rf samples/imagecode
