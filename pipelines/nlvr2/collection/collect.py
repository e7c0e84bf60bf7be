"""The collection stages S1-S9 as one composite transform (§3.1-§3.4, App. B).

    out = p | CollectExamples(config.collection, seed=config.seed, staging_dir=staging)
    out[MAIN]      Example records (pipelines/nlvr2/records.py), split and identifier set
    out[REJECTS]   schemas.rejects.Reject records of every collection stage
    out[<table>]   extra tables, each a PCollection of flat dict rows (collection_tables;
                   their schemas: tables.COLLECTION_SCHEMAS)

    synsets -> queries (S1)                               tasks/search_queries.jsonl
    search results -> caps (S2) -> automatic pruning (S3) tasks/pruning.jsonl
    pruning answers (S4)                                  tasks/interest.jsonl
    interest answers, top 8 (S5) -> pairs (S6)            tasks/writing.jsonl
    sentences (S7)                                        tasks/validation.jsonl
    validations (S8) -> splits (S9)                       tasks/extra_validation.jsonl
    extra validations (S9) -> Example

Each round reads its answers from `collection.inputs.<round>`; a round left "" ends the
collection there, after exporting that round's tasks: run the round, set the input, build
again (the same seed gives the same tasks).
"""
from __future__ import annotations

import os

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.config import listed
from pipelines.nlvr2.collection.config import CollectionConfig
from pipelines.nlvr2.collection.queries import synset_queries
from pipelines.nlvr2.collection.rounds import (EXTRA_VALIDATION_LABELSTUDIO, INTEREST_COLUMNS, PRUNING_COLUMNS,
                                               SENTENCE_COLUMNS, VALIDATION_COLUMNS, VALIDATION_LABELSTUDIO,
                                               VALIDATOR, WRITER, ImageRound, ValidationRound, WritingRound,
                                               candidates, image_round_labelstudio, image_task, image_task_labels,
                                               pair_sets, validation_task, validation_task_labels,
                                               writing_labelstudio, writing_task_labels, writing_tasks)
from pipelines.nlvr2.collection.search import SEARCH_COLUMNS, AutoPrune, SearchSets
from pipelines.nlvr2.collection.similar_words import STAND_IN as SIMILAR_WORDS_STAND_IN
from pipelines.nlvr2.collection.similar_words import SimilarWords, load_encoder
from pipelines.nlvr2.collection.splits import HELD_OUT_ITEMS, SplitAndValidate
from pipelines.nlvr2.collection.synsets import hypernym_table, ilsvrc_synsets, select_synsets
from pipelines.nlvr2.collection.worker_pages import PAGE_OF, WriteWorkerPages, flat_row
from pipelines.nlvr2.tables import IMAGE_SETS, QUERIES, image_set_row, query_row
from pipelines.release.write.tables import Table
from transforms.core.errors import ConfigError
from transforms.core.stage import MAIN, REJECTS, StageFn, stage_pardo
from transforms.crowd.answer_files import check_answer_file
from transforms.crowd.labelstudio import LABELSTUDIO_DIR, WriteLabelStudioRound
from transforms.crowd.pages import PAGES_DIR
from transforms.crowd.shown import ReadTaskViews, check_evidence
from transforms.crowd.task_files import WriteTaskFiles

# each round's input and the columns its rows must have, in the order the rounds run
ROUND_COLUMNS = {"search_results": SEARCH_COLUMNS, "pruning_answers": PRUNING_COLUMNS,
                 "interest_answers": INTEREST_COLUMNS, "sentences": SENTENCE_COLUMNS,
                 "validations": VALIDATION_COLUMNS, "extra_validations": VALIDATION_COLUMNS}
TASK_FILES = ("search_queries.jsonl", "pruning.jsonl", "interest.jsonl", "writing.jsonl",
              "validation.jsonl", "extra_validation.jsonl")
TASKS_DIR = "tasks"
# each crowd round's answers: the task file its workers did (tasks/<file>), the task id
# column there, and how its rows name what they show (for a stale answer's detail)
ROUND_WORKERS = {"sentences": WRITER, "validations": VALIDATOR, "extra_validations": VALIDATOR}
ROUND_TASKS = {"pruning_answers": ("pruning.jsonl", "set", image_task_labels),
               "interest_answers": ("interest.jsonl", "set", image_task_labels),
               "sentences": ("writing.jsonl", "task", writing_task_labels),
               "validations": ("validation.jsonl", "example", validation_task_labels),
               "extra_validations": ("extra_validation.jsonl", "example", validation_task_labels)}


def stage_devices(config: CollectionConfig) -> dict:
    """Where the collection's model stages run, with library and CUDA versions (the
    manifest's record): the similar words' sentence encoder, and the local similar
    images' encoder and kNN when a collection is given."""
    from transforms.core.devices import torch_device_record
    from transforms.vectors.knn import knn_identity
    out = {}
    if config.queries.similar_words.enabled:
        out["similar_words"] = torch_device_record(config.queries.similar_words.device,
                                                   "collection.queries.similar_words.device")
    local = config.search.local_similar
    if local.collection:
        if local.kind == "open_clip":
            out["local_similar_embed"] = torch_device_record(local.device, "collection.search.local_similar.device",
                                                             precision=local.precision)
        out["local_similar_knn"] = knn_identity(local.knn.spec())
    return out


def model_identities(config: CollectionConfig) -> dict:
    """What the manifest records of each model and language resource the collection
    loads (weights checksums, versions; a user's folder or checkpoint is written relative
    to the input root by the release): the similar words' sentence encoder, the local
    similar images' encoder, and the WordNet tables the queries come from."""
    import hashlib
    from pipelines.nlvr2.collection import synsets
    from transforms.text.sentence_embed import SentenceEncoderSpec
    from transforms.text.sentence_embed import encoder_identity as sentence_encoder_identity

    def table(path):
        with open(path, "rb") as f:
            return {"file": f"pipelines/nlvr2/data/{os.path.basename(path)}",
                    "sha256": hashlib.sha256(f.read()).hexdigest()}
    out = {"synsets": {"name": "ILSVRC-1k synsets of the release (WordNet 3.0 ids, lemmas)",
                       **table(synsets.RELEASE_SYNSETS)}}
    if config.queries.hypernyms:
        out["hypernyms"] = {"name": "direct WordNet 3.0 hypernyms (Table 1)", **table(synsets.HYPERNYMS)}
    words = config.queries.similar_words
    if words.enabled:
        out["similar_words"] = {**sentence_encoder_identity(SentenceEncoderSpec(model=words.model or None)),
                                "threshold": words.threshold, "stand_in": SIMILAR_WORDS_STAND_IN}
    local = config.search.local_similar
    if local.collection:
        from pipelines.nlvr2.collection.local_search import encoder_spec
        from transforms.image.encoders import encoder_identity
        out["local_similar_encoder"] = encoder_identity(encoder_spec(local))
    return out


def preflight(config: CollectionConfig) -> None:
    """Before any work: every round's answer file exists, is UTF-8 and has the round's
    columns (transforms/crowd/answer_files.check_answer_file raises InputError naming the
    file); a round's answers without the rounds before it is a ConfigError."""
    given = [key for key, path in config.round_inputs().items() if path]
    order = list(ROUND_COLUMNS)
    for key in given:
        missing = [k for k in order[:order.index(key)] if k not in given]
        if missing:
            raise ConfigError(f"collection.inputs.{key} is set but collection.inputs.{missing[0]} "
                              f"is not: the rounds run in order ({', '.join(order)})")
    for key in given:
        columns = ROUND_COLUMNS[key]
        if key == "search_results" and config.search.local_similar.collection:
            columns = columns[:-1]
        for path in listed(getattr(config.inputs, key)):   # one file, or a list of them (several exports)
            check_answer_file(path, columns, worker=ROUND_WORKERS.get(key, ""))
            if key in ROUND_TASKS:   # and one that cannot show what its workers saw
                file, id_column, _ = ROUND_TASKS[key]
                check_evidence(path, f"collection.inputs.{key}",
                               getattr(config.tasks_release, key), f"collection.tasks_release.{key}",
                               "nlvr2", [f"{TASKS_DIR}/{file}"], id_column)


def stand_ins(config: CollectionConfig) -> dict:
    """{what: how} of each stand-in this config uses, for the manifest and the data card."""
    declared = {}
    if config.queries.similar_words.enabled:
        declared["similar_words"] = (f"{SIMILAR_WORDS_STAND_IN}; threshold "
                                     f"{config.queries.similar_words.threshold}")
    if config.search.local_similar.collection:
        from pipelines.nlvr2.collection.local_search import STAND_IN as LOCAL_SIMILAR_STAND_IN   # imports torch
        declared["similar_images"] = f"{LOCAL_SIMILAR_STAND_IN}; encoder {config.search.local_similar.kind}"
    return declared


def collection_tables(config: CollectionConfig):
    """{table: Table} of the extra tables CollectExamples hands back. A query's text is
    unique within its synset only (pipelines/nlvr2/collection/queries.py), so its key is both; a set
    is named by its query and result rank."""
    tables = {QUERIES: Table("queries", "query.generated", key=("synset", "query"))}
    if config.inputs.search_results and config.inputs.pruning_answers and config.inputs.interest_answers:
        tables[IMAGE_SETS] = Table("pairing", "set.out", key="set")
    return tables


def stage_links(config: CollectionConfig):
    """(stage, counter, stage, counter): what one stage passes on, the next takes in."""
    i = config.inputs
    links = []
    if i.search_results:
        links.append(("search", "result.out", "auto_pruning", "set.in"))
        if not config.search.local_similar.collection:   # else a seed may fail to embed between
            links.append(("search_results", "line.out", "search", "result.in"))
    if i.search_results and i.pruning_answers:
        links.append(("auto_pruning", "set.out", "crowd_pruning", "set.in"))
    if i.search_results and i.pruning_answers and i.interest_answers:
        links += [("crowd_pruning", "set.out", "set_construction", "set.in"),
                  ("set_construction", "set.out", "pairing", "set.in")]
    if i.sentences and IMAGE_SETS in collection_tables(config):
        links.append(("writing_answers", "line.out", "writing", "task.out"))
    if i.sentences and i.validations and IMAGE_SETS in collection_tables(config):
        links += [("validation", "example.out", "splits", "example.in")]
    if i.sentences and i.validations and i.extra_validations and IMAGE_SETS in collection_tables(config):
        links.append(("splits", "example.out", "extra_validation", "example.in"))
    return links


def last_stage(config: CollectionConfig):
    """(stage, counter) of the examples the collection hands on, or None while a round's
    answers are still missing (no examples yet)."""
    i = config.inputs
    if all((i.search_results, i.pruning_answers, i.interest_answers, i.sentences, i.validations,
            i.extra_validations)):
        return ("extra_validation", "example.out")
    return None


class _Queries(StageFn):
    """S1: a synset in, its queries out (Table 1)."""
    stage, level = "queries", "synset"
    counts_out = False

    def __init__(self, config: CollectionConfig):
        self._cfg = config
        self._similar = None

    def setup(self):
        similar = self._cfg.queries.similar_words
        if similar.enabled:
            vocabulary = similar.vocabulary or sorted({l for s in ilsvrc_synsets() for l in s.lemmas})
            self._similar = SimilarWords(load_encoder(similar.model, similar.device), vocabulary,
                                         similar.threshold, similar.max_words)

    def judge(self, synset):
        similar = self._similar(list(synset.lemmas)) if self._similar and not synset.animal else {}
        self.counts.count_out(level="synset")
        for query in synset_queries(synset, self._cfg.queries, self._cfg.search, hypernym_table(), similar):
            self.counts.note("query.generated")   # outside in/out: a synset makes many
            yield query


class CollectExamples(beam.PTransform):
    def __init__(self, config: CollectionConfig, seed: int, staging_dir: str):
        super().__init__()
        self.config, self.seed, self.staging_dir = config, seed, staging_dir

    def expand(self, pbegin):
        cfg = self.config
        p = pbegin.pipeline if hasattr(pbegin, "pipeline") else pbegin
        rejects, tasks = [], []
        synsets = p | "Synsets" >> beam.Create(select_synsets(cfg.synsets.names))
        queries = synsets | "Queries" >> stage_pardo(_Queries(cfg))
        out = {QUERIES: queries[MAIN] | "Query rows" >> beam.Map(query_row)}
        tasks.append(queries[MAIN] | "Query tasks" >> beam.Map(
            lambda q: ("search_queries.jsonl", (q.text, {"query": q.text, "synset": q.synset, "wide": q.wide}))))
        examples = self._rounds(queries[MAIN], rejects, tasks, out)
        every_task = tasks | "All tasks" >> beam.Flatten()
        _ = every_task | "Write tasks" >> WriteTaskFiles(FileSystems.join(self.staging_dir, TASKS_DIR), TASK_FILES)
        self._label_studio(every_task)
        _ = every_task | "Worker pages" >> WriteWorkerPages(
            FileSystems.join(self.staging_dir, "crowd", PAGES_DIR), cfg.search.set_size,
            cfg.pruning.set_images // 2, os.path.dirname(cfg.inputs.search_results))
        if examples is None:
            examples = p | "No examples yet" >> beam.Create([])
        if not rejects:
            rejects.append(p | "No rejects" >> beam.Create([]))
        out[MAIN] = examples
        out[REJECTS] = rejects | "Collection rejects" >> beam.Flatten()
        return out

    def _label_studio(self, every_task):
        """crowd/labelstudio/<round>.{xml,json} for each crowd round (S4, S5, S7, S8, S9):
        writing from its page's flat rows (its pairs shown as fixed places), the others
        from their task rows (the image rounds' images a list: a place each)."""
        cfg = self.config
        places, pairs = cfg.search.set_size, cfg.pruning.set_images // 2
        layouts = {"pruning": image_round_labelstudio("pruning"),
                   "interest": image_round_labelstudio("interest"),
                   "writing": writing_labelstudio(pairs),
                   "validation": VALIDATION_LABELSTUDIO, "extra_validation": EXTRA_VALIDATION_LABELSTUDIO}
        folder = FileSystems.join(self.staging_dir, "crowd", LABELSTUDIO_DIR)
        for file, name in PAGE_OF.items():
            flat = name == "writing"
            _ = (every_task | f"Label Studio {name} tasks" >> beam.Filter(lambda t, f=file: t[0] == f)
                 | f"Label Studio {name} rows" >> beam.MapTuple(
                     lambda _, keyed, n=name, flat=flat: (keyed[0], flat_row(n, keyed[1], places, pairs)
                                                          if flat else keyed[1]))
                 | f"Label Studio {name}" >> WriteLabelStudioRound(folder, name, layouts[name]))

    def _rounds(self, queries, rejects, tasks, out):
        """S2-S9, as far as the answers given reach; the last round reached exports its tasks."""
        cfg, inputs = self.config, self.config.inputs
        if not inputs.search_results:
            return None
        searched = queries | "Search" >> SearchSets(inputs.search_results, cfg.search)
        pruned = searched[MAIN] | "Automatic pruning" >> AutoPrune(cfg.pruning)
        rejects += [searched[REJECTS], pruned[REJECTS]]
        sets = pruned[MAIN]
        for stage, answers, task_file in (("crowd_pruning", inputs.pruning_answers, "pruning.jsonl"),
                                          ("set_construction", inputs.interest_answers, "interest.jsonl")):
            tasks.append(sets | f"{stage} tasks" >> beam.Map(
                lambda s, f=task_file: (f, (s.key, image_task(s)))))
            if not answers:
                return None
            key = "pruning_answers" if stage == "crowd_pruning" else "interest_answers"
            judged = sets | stage >> ImageRound(stage, answers, cfg.pruning, *self._earlier(p_of(sets), key))
            rejects.append(judged[REJECTS])
            sets = judged[MAIN]
        paired = pair_sets(sets, self.seed)
        rejects.append(paired[REJECTS])
        paired = paired[MAIN]
        out[IMAGE_SETS] = paired | "Set rows" >> beam.Map(image_set_row)
        tasks.append(paired | "Writing tasks" >> beam.FlatMap(
            lambda p: [("writing.jsonl", (t["task"], t)) for t in writing_tasks(p)]))
        if not inputs.sentences:
            return None
        written = paired | "Writing" >> WritingRound(inputs.sentences, cfg.pruning.set_images // 2,
                                                     *self._earlier(p_of(paired), "sentences"))
        rejects.append(written[REJECTS])
        tasks.append(written[MAIN] | "Validation tasks" >> beam.FlatMap(_validation_tasks))
        if not inputs.validations:
            return None
        validated = written[MAIN] | "Validation" >> ValidationRound(
            inputs.validations, *self._earlier(p_of(paired), "validations"))
        rejects.append(validated[REJECTS])
        final = validated[MAIN] | "Splits" >> SplitAndValidate(
            inputs.extra_validations, cfg.splits, self.seed,
            *self._earlier(p_of(paired), "extra_validations"))
        rejects.append(final[REJECTS])
        tasks.append(final[HELD_OUT_ITEMS] | "Extra validation tasks" >> beam.MapTuple(
            lambda split, item: ("extra_validation.jsonl", (item.candidate.example_id,
                                                            {**validation_task(item.candidate), "split": split}))))
        return final[MAIN]


    def _earlier(self, p, key: str):
        """(views, route key) of a round's tasks as `collection.tasks_release.<key>`
        exported them (transforms/crowd/shown.py, route 2); (None, key) without one."""
        route = f"collection.tasks_release.{key}"
        release = getattr(self.config.tasks_release, key)
        if not release:
            return None, route
        file, id_column, labels_of = ROUND_TASKS[key]
        path = FileSystems.join(release, TASKS_DIR, file)
        return p | f"{key} tasks as exported" >> ReadTaskViews([path], id_column, labels_of), route


def p_of(pcoll):
    return pcoll.pipeline


def _validation_tasks(sentence):
    return [("validation.jsonl", (c.example_id, validation_task(c))) for c in candidates(sentence)]
