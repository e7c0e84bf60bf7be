"""What a VSR release writes besides its tables: the public layout (compat/, its format in
pipelines/vsr/compat.py), the crowd task exports (tasks/), the leakage check and the
relation / concept counts.

A public file is one file, so each is written by one worker, its lines sorted by example
id (the same bytes on every run).
"""
from __future__ import annotations

from typing import Callable

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.vsr.captions import TEMPLATE
from pipelines.vsr.compat import COMPAT_ALL, compat_path, to_public_line
from pipelines.vsr.records import SPLITS, SplitExample
from pipelines.vsr.relations import TABLE_1, relation_category
from transforms.crowd.labelstudio import Ask, RoundLayout
from transforms.crowd.shown import FINGERPRINT, TaskView, view
from transforms.crowd.task_files import WriteTaskFiles as WriteJsonLines


class WriteCompat(beam.PTransform):
    """SplitExample -> compat/ files (their layout: pipelines/vsr/compat.py)."""

    def __init__(self, staging_dir: str, stringify_votes: bool):
        super().__init__()
        self._folder = FileSystems.join(staging_dir, "compat")
        self._stringify = stringify_votes

    def expand(self, examples):
        stringify = self._stringify

        def files(item: SplitExample):
            key = item.voted.example.example_id
            line = to_public_line(item.voted, stringify)
            yield COMPAT_ALL, (key, line)
            yield compat_path("random", item.split), (key, line)
            if item.zeroshot_split:
                yield compat_path("zeroshot", item.zeroshot_split), (key, line)

        always = [COMPAT_ALL] + [compat_path(s, p) for s in ("random", "zeroshot") for p in SPLITS]
        return examples | "Compat lines" >> beam.FlatMap(files) | "Write compat" >> WriteJsonLines(
            self._folder, always)


CAPTION_TASKS, CAPTION_RELATIONS = "caption_tasks.jsonl", "caption_relations.jsonl"


def caption_relations() -> list:
    """(line number, {"relation", "category"}) for Table 1's 71 entries in print order
    ("among" under both of its categories): tasks/caption_relations.jsonl, written once
    for all caption tasks."""
    return list(enumerate({"relation": r, "category": category}
                          for category, relations in TABLE_1 for r in relations))


def caption_view(pair) -> TaskView:
    """What a writer sees (§3.1): both images (COCO file name, the link the page loads)
    and the two concepts. VSR never reads pixels: a COCO file name names one image."""
    return view({"images": [[i.file_name, i.coco_url] for i in pair.images],
                 "subj": pair.subj, "obj": pair.obj, "template": TEMPLATE},
                {"images": [i.file_name for i in pair.images], "links": [i.coco_url for i in pair.images],
                 "concepts": f"{pair.subj} / {pair.obj}"})


def validation_view(example) -> TaskView:
    """What a validator sees (§3.2): the image and the caption."""
    return view({"image": [example.image, example.image_link], "caption": example.caption},
                {"image": example.image, "link": example.image_link, "caption": example.caption})


def caption_task(pair) -> dict:
    """The writer's task for one pair (§3.1, Figure 3): both images, both concepts, the
    template, the relation list to offer (a reference to tasks/caption_relations.jsonl,
    Table 1's 71 relations, written once rather than in every task), and the answer
    fields to fill in."""
    return {"pair_id": pair.pair_id, "subj": pair.subj, "obj": pair.obj, "template": TEMPLATE,
            "images": [{"image": i.file_name, "image_link": i.coco_url} for i in pair.images],
            "relations": CAPTION_RELATIONS,
            "answer": {"pair_id": pair.pair_id, "relation": "", "true_image": "", "annotator_id": "",
                       FINGERPRINT: caption_view(pair).fingerprint},
            FINGERPRINT: caption_view(pair).fingerprint}


def validation_task(example) -> dict:
    """The validator's task (§3.2, Figure 4): image and caption, the writer's label hidden."""
    return {"example_id": example.example_id, "image": example.image,
            "image_link": example.image_link, "caption": example.caption,
            FINGERPRINT: validation_view(example).fingerprint}


# The validation round as a Label Studio project (transforms/crowd/labelstudio.py): the
# image and the caption; True/False recorded as the vote files hold the label, 1/0.
VALIDATION_LABELSTUDIO = RoundLayout(images=("image_link",), texts=("caption",),
                                     asks=(Ask("label", (("True", "1"), ("False", "0"))),),
                                     instructions="Is the caption true of the image?")


def relation_groups(relations):
    """((category, relations), ...): the build's relations under Table 1's categories in
    the paper's order, each relation once (under its first category), then the build's
    others as "Other". The caption page and project offer them so."""
    allowed, seen, groups = set(relations), set(), []
    for category, names in TABLE_1:
        offered = tuple(r for r in names if r in allowed and r not in seen)
        seen.update(offered)
        if offered:
            groups.append((category, offered))
    extra = tuple(sorted(allowed - seen))
    return tuple(groups) + ((("Other", extra),) if extra else ())


def caption_labelstudio(relations) -> RoundLayout:
    """The caption round (§3.1) as a Label Studio project, from its page's batch input
    rows (worker_pages.caption_row): both images and the two concepts; a relation of the
    build's list, grouped by Table 1's categories as the worker page groups them
    (relation_groups), then the image the caption is true for, recorded as that image's
    file name (the task's image_0 or image_1)."""
    groups = relation_groups(relations)
    ordered = [r for _, names in groups for r in names]
    return RoundLayout(
        images=("image_0_link", "image_1_link"), texts=("subj", "obj"),
        asks=(Ask("relation", tuple((r, r) for r in ordered), title="The relation: subject <relation> object",
                  groups=groups),
              Ask("true_image", (("The first image", "image_0"), ("The second image", "image_1")),
                  names_column=True, to="image_0_link", title="The image the caption is true for")),
        instructions="Write the caption: pick the relation of the subject to the object, then the image it is true for.")


class CheckVsrLeakage(beam.PTransform):
    """SplitExample -> one report: concepts in more than one zero-shot part, and examples
    (by id, and by image + caption) in more than one row, hence more than one split."""

    def expand(self, examples):
        concepts = (
            examples
            | "Zero-shot concepts" >> beam.FlatMap(
                lambda x: [(c, x.zeroshot_split) for c in (x.voted.example.subj, x.voted.example.obj)]
                if x.zeroshot_split else [])
            | "Distinct concept parts" >> beam.Distinct()
            | "Per concept" >> beam.GroupByKey()
            | "Concept parts" >> beam.Map(lambda kv: (kv[0], sorted(kv[1])))
            | "Concepts list" >> beam.combiners.ToList())
        repeated = (
            examples
            | "Identities" >> beam.FlatMap(lambda x: [
                ("id:" + x.voted.example.example_id, x.split),
                ("text:" + x.voted.example.image + "\x00" + x.voted.example.caption, x.split)])
            | "Per identity" >> beam.GroupByKey()
            | "Repeated" >> beam.FlatMap(lambda kv: [kv[0]] if len(list(kv[1])) > 1 else [])
            | "Repeated list" >> beam.combiners.ToList())
        return concepts | "Report" >> beam.Map(_leakage_report, repeated=beam.pvalue.AsSingleton(repeated))


def _leakage_report(concepts, repeated) -> dict:
    shared = sorted(c for c, parts in concepts if len(parts) > 1)
    return {"zeroshot_concepts": len(concepts),
            "zeroshot_concepts_in_several_splits": shared,
            "examples_in_several_rows": sorted(repeated)[:100],
            "examples_in_several_rows_count": len(repeated),
            "leakage": bool(shared or repeated)}


def count_by(examples, label: str, key_fn: Callable) -> beam.PCollection:
    """{key: n} of the examples, as one dict (keys: relations, concepts: bounded)."""
    return (examples | f"{label} keys" >> beam.FlatMap(key_fn)
            | f"{label} count" >> beam.combiners.Count.PerElement()
            | f"{label} dict" >> beam.combiners.ToDict()
            | f"{label} report" >> beam.Map(lambda d: {"name": label, "counts": {
                "|".join(k) if isinstance(k, tuple) else k: v for k, v in sorted(d.items())}}))


def relation_and_concept_counts(examples, extra: dict):
    """Counts per (relation, category) and per (concept, role) of the released examples."""
    relations = count_by(examples, "relations", lambda x: [(
        x.voted.example.relation, relation_category(x.voted.example.relation, extra))])
    concepts = count_by(examples, "concepts", lambda x: [
        (x.voted.example.subj, "subj"), (x.voted.example.obj, "obj")])
    return relations, concepts

