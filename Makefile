# Every target sets itself up first (Debian programs, .venv, packages): see scripts/setup.sh.
PY        := .venv/bin/python
VERSION   ?= 1.0.0
OUT       ?= releases
CONFIG    ?= pipelines/imagecode/configs/paper.yaml
ARGS      ?=

.PHONY: setup build-imagecode sample-imagecode build-vsr sample-vsr build-bd2bb sample-bd2bb \
        test bench clean-sample cache-prune

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
	$(PY) -m pipelines.imagecode.pipeline --config pipelines/imagecode/configs/sample.yaml \
	  --output $(OUT) --version $(VERSION) $(ARGS)
else
build-imagecode: setup
	$(PY) -m pipelines.imagecode.pipeline --config $(CONFIG) --set inputs.videos=$(VIDEOS) $(INPUTS) \
	  --output $(OUT) --version $(VERSION) $(ARGS)
endif

sample-imagecode: setup
	$(PY) -m pipelines.imagecode.sample imagecode samples/imagecode

# VSR (pipelines/vsr/README.md). Without COCO and ANNOTATIONS: the embedded sample (generated on first use).
# COCO=<instances_train2017.json,instances_val2017.json> samples image pairs (§3.1);
# ANNOTATIONS=<raw.jsonl> validates annotations in the public raw layout;
# CAPTIONS=, VOTES=, EXTRA_LABELS= ingest writer output, validator votes, extra labels.
VSR_INPUTS = $(if $(COCO),--set 'inputs.coco=[$(COCO)]') \
             $(if $(ANNOTATIONS),--set 'inputs.annotations=[$(ANNOTATIONS)]') \
             $(if $(CAPTIONS),--set 'inputs.captions=[$(CAPTIONS)]') \
             $(if $(VOTES),--set 'inputs.votes=[$(VOTES)]') \
             $(if $(EXTRA_LABELS),--set 'inputs.extra_labels=[$(EXTRA_LABELS)]')
ifeq ($(strip $(COCO)$(ANNOTATIONS)),)
build-vsr: setup sample-vsr
	$(PY) -m pipelines.vsr.pipeline --config pipelines/vsr/configs/sample.yaml \
	  --output $(OUT) --version $(VERSION) $(ARGS)
else
build-vsr: setup
	$(PY) -m pipelines.vsr.pipeline --config pipelines/vsr/configs/paper.yaml $(VSR_INPUTS) \
	  --output $(OUT) --version $(VERSION) $(ARGS)
endif

sample-vsr: setup
	$(PY) -m pipelines.vsr.sample samples/vsr

# BD2BB (pipelines/bd2bb/README.md). Without TUPLES: the embedded sample (generated on first use).
# With TUPLES=<tuples.jsonl>: the paper's config on your data; CAPTIONS=<captions_train2014.json>
# and PARSES=<actions.conllu> (or ARGS="--set parser.backend=spacy --set parser.model=NAME_OR_DIR").
BD2BB_CONFIG ?= pipelines/bd2bb/configs/paper.yaml
BD2BB_INPUTS = --set inputs.tuples=$(TUPLES) \
               $(if $(CAPTIONS),--set inputs.captions=$(CAPTIONS)) \
               $(if $(PARSES),--set inputs.parses=$(PARSES))
ifeq ($(strip $(TUPLES)),)
build-bd2bb: setup sample-bd2bb
	$(PY) -m pipelines.bd2bb.pipeline --config pipelines/bd2bb/configs/sample.yaml \
	  --output $(OUT) --version $(VERSION) $(ARGS)
else
build-bd2bb: setup
	$(PY) -m pipelines.bd2bb.pipeline --config $(BD2BB_CONFIG) $(BD2BB_INPUTS) \
	  --output $(OUT) --version $(VERSION) $(ARGS)
endif

sample-bd2bb: setup
	$(PY) -m pipelines.bd2bb.sample samples/bd2bb

test: setup
	$(PY) -m pytest -q tests

bench: setup
	$(PY) -m bench.imagecode_video
	$(PY) -m bench.knn
	$(PY) -m bench.crowd_ingest
	$(PY) -m bench.imagecode_rebuild
	$(PY) -m bench.bd2bb_decoys
	$(PY) -m bench.bd2bb_language
	$(PY) -m bench.vsr_coco_stream

clean-sample:
	rm -rf samples/imagecode samples/vsr samples/bd2bb

# Delete cache shards that no release's MANIFEST.json names ("cache_files"; see pipelines/release/cache.py).
CACHE ?= $(OUT)/.cache
cache-prune: setup
	$(PY) -m pipelines.release.cache prune --cache $(CACHE) --releases $(OUT)
