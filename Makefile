# Every target sets itself up first (Debian programs, .venv, packages): see scripts/setup.sh.
PY        := .venv/bin/python
VERSION   ?= 1.0.0
OUT       ?= releases
CONFIG    ?=
ARGS      ?=
BENCHMARKS := imagecode vsr bd2bb fg nlvr2

.PHONY: setup $(addprefix build-,$(BENCHMARKS)) test test-quick check-dataflow check-portable check-flink flink-setup flink-start flink-stop check-explorer check-crowd-pages labelstudio-setup check-label-studio bench bench-real-model bench-scale clean-sample cache-prune

setup:
	@bash scripts/setup.sh

# `make build-<benchmark>`: one rule for every benchmark (python -m pipelines <benchmark> build).
# Without the benchmark's main input it builds the embedded sample (generated on first use)
# with the `sample` config; with it, the `paper` config on your data. Every other variable
# below reaches the build either way (an answer file given to a sample build replaces the
# sample's for that round), and one of another benchmark stops it with one line naming it:
# no variable is dropped without a word. CONFIG=<name or path> picks another config, ARGS
# adds options (--set KEY=VALUE, Beam options).
#   imagecode  VIDEOS=<manifest.jsonl> [IMAGES=<folder or images.jsonl>]
#              [DESCRIPTIONS=<describer output>] [RETRIEVALS=<retriever output>]
#   vsr        COCO=<instances_train2017.json,...> and/or ANNOTATIONS=<raw.jsonl>
#              [CAPTIONS=<writer output>] [VOTES=<votes>] [EXTRA_LABELS=<labels>]
#   bd2bb      TUPLES=<tuples.jsonl> [CAPTIONS=<captions_train2014.json>] [PARSES=<actions.conllu>]
#   fg         [FG=mscoco|flickr30k] CAPTIONS=<{id: [5]} JSON or dataset_*.json>
#              IMAGES=<test images> POOL=<unlabeled2017 folder or .jsonl> CHECKPOINT=<ViT-B-32.pt>
#              DETAILS=<details.jsonl> [MERGED=<merged.jsonl>] [CORRECTIONS=<corrections.jsonl>]
#              (FG picks the configuration: paper/sample or flickr30k/flickr30k-sample)
#   nlvr2      PUBLIC=<dev.json,test1.json,...>: re-release the public files (config public)
MAIN_INPUT_imagecode = $(VIDEOS)
INPUTS_imagecode = $(if $(VIDEOS),--set inputs.videos=$(VIDEOS)) \
                   $(if $(IMAGES),--set static.images=$(IMAGES)) \
                   $(if $(DESCRIPTIONS),--set crowd.descriptions=$(DESCRIPTIONS)) \
                   $(if $(RETRIEVALS),--set crowd.retrievals=$(RETRIEVALS))
MAIN_INPUT_vsr = $(COCO)$(ANNOTATIONS)
INPUTS_vsr = $(if $(COCO),--set 'inputs.coco=[$(COCO)]') \
             $(if $(ANNOTATIONS),--set 'inputs.annotations=[$(ANNOTATIONS)]') \
             $(if $(CAPTIONS),--set 'inputs.captions=[$(CAPTIONS)]') \
             $(if $(VOTES),--set 'inputs.votes=[$(VOTES)]') \
             $(if $(EXTRA_LABELS),--set 'inputs.extra_labels=[$(EXTRA_LABELS)]')
MAIN_INPUT_bd2bb = $(TUPLES)
INPUTS_bd2bb = $(if $(TUPLES),--set inputs.tuples=$(TUPLES)) \
               $(if $(CAPTIONS),--set inputs.captions=$(CAPTIONS)) \
               $(if $(PARSES),--set inputs.parses=$(PARSES))

MAIN_INPUT_fg = $(CAPTIONS)
INPUTS_fg = $(if $(CAPTIONS),--set inputs.captions=$(CAPTIONS)) \
            $(if $(IMAGES),--set inputs.images=$(IMAGES)) \
            $(if $(POOL),--set inputs.pool=$(POOL)) \
            $(if $(CHECKPOINT),--set embed.checkpoint=$(CHECKPOINT)) \
            $(if $(DETAILS),--set inputs.details=$(DETAILS)) \
            $(if $(MERGED),--set inputs.merged=$(MERGED) --set merge.kind=file) \
            $(if $(CORRECTIONS),--set inputs.corrections=$(CORRECTIONS))
MAIN_INPUT_nlvr2 = $(PUBLIC)
INPUTS_nlvr2 = $(if $(PUBLIC),--set 'inputs.public=[$(PUBLIC)]')
# Each benchmark's variables (those of the comment above); a variable given on the command
# line or in the environment that the goal's benchmark does not take is a mistake to name.
VARIABLES_imagecode = VIDEOS IMAGES DESCRIPTIONS RETRIEVALS
VARIABLES_vsr = COCO ANNOTATIONS CAPTIONS VOTES EXTRA_LABELS
VARIABLES_bd2bb = TUPLES CAPTIONS PARSES
VARIABLES_fg = FG CAPTIONS IMAGES POOL CHECKPOINT DETAILS MERGED CORRECTIONS
VARIABLES_nlvr2 = PUBLIC
given_variables = $(foreach v,$(sort $(foreach b,$(BENCHMARKS),$(VARIABLES_$(b)))),\
                    $(if $(filter command environment,$(firstword $(origin $(v)))),$(v)))
foreign_variables = $(filter-out $(VARIABLES_$(1)),$(given_variables))
$(foreach b,$(patsubst build-%,%,$(filter $(addprefix build-,$(BENCHMARKS)),$(MAKECMDGOALS))),\
  $(if $(call foreign_variables,$(b)),$(error $(foreach v,$(call foreign_variables,$(b)),$(v)=$($(v))) \
    is not a variable of build-$(b), which takes $(VARIABLES_$(b)); nothing would read it)))
# A benchmark with several configurations names its paper and sample configs here.
PAPER_CONFIG_fg = $(if $(filter flickr30k,$(FG)),flickr30k,paper)
SAMPLE_CONFIG_fg = $(if $(filter flickr30k,$(FG)),flickr30k-sample,sample)
PAPER_CONFIG_nlvr2 = public

$(addprefix build-,$(BENCHMARKS)): build-%: setup
	$(PY) -m pipelines $* build \
	  --config $(or $(CONFIG),$(if $(strip $(MAIN_INPUT_$*)),$(or $(PAPER_CONFIG_$*),paper),$(or $(SAMPLE_CONFIG_$*),sample))) \
	  $(INPUTS_$*) --output $(OUT) --version $(VERSION) $(ARGS)

# The tests, and the import rules of the house (.importlinter: benchmarks independent,
# library below benchmarks below the runner). TEST_WORKERS test processes (pytest-xdist;
# `auto`: one per core; 1: one process); the tests that read the session's sample releases
# share one worker (their xdist_group), so each sample is built once.
TEST_WORKERS ?= 2
test: setup
	.venv/bin/lint-imports --config .importlinter
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadgroup tests

# The inner loop (a few minutes): the import rules and the library's unit tests, without
# those marked slow (worker processes, full-size models) and no benchmark built end to
# end. `make test` before a commit.
QUICK_TESTS = tests/transforms tests/schemas tests/test_cli_imports.py tests/test_import_cycles.py \
              tests/test_bench_paper_scale.py tests/test_guide_paths.py tests/test_package_data.py
test-quick: setup
	.venv/bin/lint-imports --config .importlinter
	$(PY) -m pytest -q -n $(TEST_WORKERS) -m "not slow" $(QUICK_TESTS) \
	  --ignore=tests/transforms/test_openmp_limit.py

# Scale-out checks (docs/scale-out.md), run by CI after the tests: every sample translated
# for Dataflow Runner v2 offline, and built through Beam's portable runner with workers in
# other processes, its release compared with the in-process one.
check-dataflow: setup
	$(PY) -m pipelines check dataflow

check-portable: setup
	$(PY) -m pipelines check portable

# A Flink 1.19 cluster of separate JVMs (docs/scale-out.md). flink-setup fetches, once,
# Flink's jars (PyPI) and Beam's Flink job server (Maven Central) into build/flink/,
# checked against scripts/flink/sha256sums; it needs java 17 and mvn. check-flink builds
# every sample on a local cluster of two TaskManagers (equal to the in-process release,
# subtasks on both), then the fault tests: a TaskManager killed mid-build, the job
# server and the worker pool dying (tests/scaleout/test_flink_faults.py).
flink-setup: setup
	@bash scripts/flink/setup.sh

check-flink: flink-setup
	$(PY) -m pipelines check flink
	FLINK_FAULTS=1 $(PY) -m pytest -q tests/scaleout/test_flink_faults.py

# A local cluster to build on by hand: TASKMANAGERS JVMs, logs and pids in build/flink/cluster.
TASKMANAGERS ?= 2
flink-start: flink-setup
	$(PY) -m pipelines cluster start --taskmanagers $(TASKMANAGERS)

flink-stop:
	$(PY) -m pipelines cluster stop

# The release explorer opened in headless Chromium from file:// (tests/release/
# test_explorer_browser.py): builds every sample, installs Debian's chromium if missing;
# screenshots land in build/explorer/. Run by CI after the tests.
check-explorer:
	@WITH_CHROMIUM=1 bash scripts/setup.sh
	EXPLORER_BROWSER=1 $(PY) -m pytest -q tests/release/explorer/test_explorer_browser.py
	@echo "explorer times (logged, not asserted; screenshots in build/explorer/):"; cat build/explorer/timings.json

# Every crowd round's worker page filled and submitted in headless Chromium (an untouched
# submit refused first), its results in MTurk's CSV format ingested by a rebuild, every
# preview's pictures counted loaded from disk (docs/crowd.md); screenshots in build/crowd-pages/.
check-crowd-pages:
	@WITH_CHROMIUM=1 bash scripts/setup.sh
	CROWD_BROWSER=1 $(PY) -m pytest -q tests/crowd/test_crowd_pages_browser.py

# Label Studio in its own venv (it would downgrade the project's numpy and pyarrow); the
# project talks to it over HTTP only (docs/crowd.md). Installed once, from PyPI.
labelstudio-setup: .venv-labelstudio/bin/label-studio

.venv-labelstudio/bin/label-studio: requirements-labelstudio.txt
	python3 -m venv .venv-labelstudio
	.venv-labelstudio/bin/pip install -q -r requirements-labelstudio.txt
	@touch $@

# A round of each crowd benchmark (VSR validation, NLVR2 writing, ImageCoDe retrieve)
# through one real Label Studio server on a loopback port: tasks imported, annotations
# submitted and exported through its REST API, each export rebuilt
# (tests/crowd/test_labelstudio_server.py). Plain `make test` skips it.
check-label-studio: setup labelstudio-setup
	LABEL_STUDIO_LIVE=1 $(PY) -m pytest -q -rs tests/crowd/test_labelstudio_server.py

bench: setup
	$(PY) -m bench.cli_latency
	$(PY) -m bench.imagecode_video
	$(PY) -m bench.knn
	$(PY) -m bench.kernel_noise
	$(PY) -m bench.crowd_ingest
	$(PY) -m bench.imagecode_rebuild
	$(PY) -m bench.bd2bb_decoys
	$(PY) -m bench.bd2bb_language
	$(PY) -m bench.vsr_coco_stream
	$(PY) -m bench.fg_search

# The paper's model at its real cost on the CPU, per part and precision (about an hour on
# 2 cores: bench/real_model.py), then the paper-scale table computed from it.
bench-real-model: setup
	$(PY) -m bench.real_model --out bench/results/real_model_cpu.json
	$(PY) -m bench.paper_scale --cpu bench/results/real_model_cpu.json

# How each build grows with its input (docs/benchmarks.md): three sizes a factor 4 apart
# per benchmark, CPU seconds and peak memory of the process tree, growth exponents and a
# projection to the published sizes. Long (hours on 2 cores); BENCH_SIZES=small is quick.
bench-scale: setup
	$(PY) -m bench.bench_scale --sizes $(or $(BENCH_SIZES),full)

clean-sample:
	rm -rf samples/imagecode samples/vsr samples/bd2bb samples/fg

# Delete cache shards that no release's MANIFEST.json names ("cache_files"; see pipelines/cache.py and pipelines/release/write/runs.py).
CACHE ?= $(OUT)/.cache
cache-prune: setup
	$(PY) -m pipelines cache prune --cache $(CACHE) --releases $(OUT)
