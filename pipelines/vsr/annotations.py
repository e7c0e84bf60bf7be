"""Ingesting VSR annotations: the public raw layout, this build's writer output, validator
votes and extra labels. Every line becomes records or a Reject with a reason.

Public raw layout (../shared/realdata/vsr/all_vsr_raw_data.jsonl), one object per line:
    {"image", "image_link", "caption", "label": 0|1, "relation", "annotator_id",
     "vote_true_validator_id": [ids], "vote_false_validator_id": [ids]}
Vote lists may also be the v2 strings "[1, 2]"; an optional "reference_frame" is kept.
Subject and object come from parsing the caption (pipelines.vsr.captions).

Writer output (captions of this build's pairs, tasks/caption_tasks.jsonl):
    {"pair_id": "pair-…", "relation": "under", "true_image": "000000012345.jpg",
     "annotator_id": "w7"}
Each line yields two examples: the rendered caption with label 1 on `true_image`, 0 on
the other image of the pair.

Validator votes (tasks/validation_tasks.jsonl names the examples):
    {"example_id": "…", "validator_id": "v3", "label": 0|1}
Extra labels (§3.5 human ceiling), same shape as votes; joined to kept examples only.

Every file is read with transforms.io.lines.ReadNumberedLines, so a line-level reject names
its file and line, and a line whose bytes are not UTF-8 is bad_encoding. A writer, vote or
extra-label file ending in .csv is read as CSV rows instead (transforms/crowd/answer_files.py:
Mechanical Turk's batch results as downloaded, a rejected assignment rejected; the same
fields, `label` 0 or 1), each row a line of its own; so is one ending in .json that holds
Label Studio's JSON export (transforms/crowd/labelstudio.py: an annotation a row). A line holding
NaN, Infinity or a number beyond float range is bad_field; so is a public-layout image
that is not a plain COCO file name (schemas.coco.FILE_NAME), an image_link that is not
http(s), or one that names another file than `image`: both are published, and an image
name becomes a path for whoever downloads it.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Union

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from pipelines.vsr import reasons
from pipelines.vsr.captions import CaptionParser, render_caption
from pipelines.vsr.compat import PUBLIC_FIELDS, parse_vote_list
from pipelines.vsr.records import Example, ImagePair, coco_source, example_id
from pipelines.vsr.release import caption_view, validation_view
from schemas.coco import is_file_name, is_link, link_file_name
from transforms.core.stage import MAIN, REJECTS, KeepFirst, StageFn, stage_pardo
from transforms.core.errors import InputError
from transforms.crowd.answer_files import check_answer_file, parse_file
from transforms.crowd.labelstudio import is_export as is_labelstudio_export
from transforms.crowd.shown import Answer, CheckShown, carried
from transforms.io.files import open_regular_file
from transforms.io.lines import ReadNumberedLines, SourceLine, parse_json_object, required_strings_problem

ANNOTATIONS, CAPTIONS = "annotations", "captions"   # the stages of the two example sources
# The worker columns of the answer files: a platform's file (MTurk's results, Label
# Studio's export) fills them from its own record of who did the work (answer_files.py).
WRITER, VALIDATOR, LABELLER = "annotator_id", "validator_id", "annotator_id"
# each answer input: (the fields its rows need, its worker column)
ANSWER_FILES = {"captions": (("pair_id", "relation", "true_image", WRITER), WRITER),
                "votes": (("example_id", VALIDATOR, "label"), VALIDATOR),
                "extra_labels": (("example_id", LABELLER, "label"), LABELLER)}


@dataclass(frozen=True)
class CsvAnswerLine(SourceLine):
    """A row of a CSV answer file (Mechanical Turk's batch results as downloaded:
    transforms/crowd/answer_files.py and mturk.py) where VSR reads a JSON Lines line:
    `record` is the row's fields, or (reason, detail) for a row that is no answer (a
    rejected assignment, a malformed row). `text` is the fields as JSON, what a reject
    names."""
    record: Any = None


def parse_record(line: Union[SourceLine, str], required_fields):
    """A VSR JSON Lines line as a dict (required fields non-empty strings, every number
    finite: transforms/io/strict_json.py), or (reason, detail); a CSV row (CsvAnswerLine)
    as its fields, the same way."""
    if isinstance(line, CsvAnswerLine):
        if isinstance(line.record, tuple):
            return line.record
        return required_strings_problem(line.record, required_fields) or line.record
    return parse_json_object(line, required_fields)


def _csv_fields(fields: dict) -> dict:
    """A CSV row's cells as the JSON Lines answer would hold them: a label is 0 or 1."""
    label = fields.get("label")
    if isinstance(label, str) and label.strip() in ("0", "1"):
        return dict(fields, label=int(label.strip()))
    return fields


class ReadAnswerLines(beam.PTransform):
    """Answer files -> a SourceLine per JSON Lines line (ReadNumberedLines), a
    CsvAnswerLine per row of a `.csv` file (e.g. Mechanical Turk's batch results); each
    knows its pattern's place in the list, so "the first line" is the same either way.
    `worker`: the file's worker column, a platform's own record of who did the work."""

    def __init__(self, patterns, worker: str):
        super().__init__()
        self._patterns, self._worker = list(patterns), worker

    def expand(self, pbegin):
        ranked = list(enumerate(self._patterns))
        tables = [(rank, p) for rank, p in ranked if _is_table(p)]
        if not tables:   # JSON Lines only: as every VSR input has always been read
            return pbegin | "Lines" >> ReadNumberedLines(self._patterns)

        worker = self._worker

        def rows(ranked_pattern):
            rank, pattern = ranked_pattern
            for path in sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list):
                with open_regular_file(path) as raw:
                    for row in parse_file(path, raw, "csv" if _is_csv(path) else "jsonl", worker=worker):
                        fields = _csv_fields(row.fields) if row.error is None else None
                        text = json.dumps(fields, ensure_ascii=False) if fields is not None else ""
                        yield CsvAnswerLine(path, row.line, text, None, rank,
                                            fields if fields is not None else row.error)

        parts = [pbegin | f"Lines {rank}" >> ReadNumberedLines([p])
                 | f"Place {rank}" >> beam.Map(lambda line, r=rank: dataclasses.replace(line, rank=r))
                 for rank, p in ranked if not _is_table(p)]
        parts.append(pbegin | "CSV files" >> beam.Create(tables) | "CSV rows" >> beam.FlatMap(rows)
                     | "Spread rows" >> beam.Reshuffle())
        return parts | "Answer lines" >> beam.Flatten()


def check_answer_tables(files: Mapping[str, list]) -> None:
    """Before any work: each answer file read as a platform's table (a CSV, Label Studio's
    export) has the fields its rows need and says who did the work (answer_files.py);
    raises InputError naming the input key and the file."""
    for key, (columns, worker) in ANSWER_FILES.items():
        for path in files.get(key, ()):
            if _is_table(path):
                try:
                    check_answer_file(path, columns, worker)
                except InputError as e:
                    raise InputError(f"inputs.{key}: {e}") from None


def _is_csv(pattern: str) -> bool:
    return pattern.lower().endswith(".csv")


def _is_table(pattern: str) -> bool:
    """Read as rows (answer_files.parse_file): a CSV, or Label Studio's JSON export (a
    `.json` file whose first file starts a JSON array)."""
    if _is_csv(pattern):
        return True
    if not pattern.lower().endswith(".json"):
        return False
    matches = sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
    if not matches:
        return False
    with open_regular_file(matches[0]) as raw:
        return is_labelstudio_export(raw.read(4096))


def _at(line: SourceLine) -> dict:
    """A line-level reject's place: the line's text (or its place, when it has none) as
    item id, its file and line number."""
    return dict(item_id=line.text.strip()[:200] or line.where, file=line.path, line=line.number)


def _line_order(line: SourceLine):
    """Which of two lines comes first: the first in the inputs (its file as listed in the
    config, then its line number; never by content or arrival), as a user reads them."""
    return line.place


def _is_id(value) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, str) and value.strip() != "")


def _label(value) -> Optional[int]:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int) and value in (0, 1):
        return value
    return None


def parse_public_line(line: Union[SourceLine, str], parser: CaptionParser, relations: frozenset):
    """(Example, listed true votes, listed false votes), or (reason, detail)."""
    record = parse_record(line, ("image", "image_link", "caption", "relation"))
    if isinstance(record, tuple):
        return record
    missing = [f for f in PUBLIC_FIELDS if f not in record]
    if missing:
        return reasons.MISSING_FIELD, f"missing field(s): {', '.join(missing)}"
    if not is_file_name(record["image"]):
        return reasons.BAD_FIELD, f"image {record['image'][:100]!r} is not a plain COCO file name"
    if not is_link(record["image_link"]):
        return reasons.BAD_FIELD, f"image_link {record['image_link'][:100]!r} is not an http(s) link"
    if link_file_name(record["image_link"]) != record["image"]:
        # both are published: an example whose link shows another picture than its image
        # names would be labelled on one and looked at on the other (every one of the
        # 12,809 public raw lines agrees)
        return reasons.BAD_FIELD, (f"image_link {record['image_link'][:100]!r} names another file "
                                   f"than image {record['image']!r}")
    label = _label(record["label"])
    if label is None:
        return reasons.BAD_FIELD, f"label must be 0 or 1, got {record['label']!r}"
    if not _is_id(record["annotator_id"]):
        return reasons.BAD_FIELD, f"annotator_id must be an id, got {record['annotator_id']!r}"
    try:
        vote_true = parse_vote_list(record["vote_true_validator_id"])
        vote_false = parse_vote_list(record["vote_false_validator_id"])
    except ValueError as e:
        return reasons.BAD_FIELD, f"vote lists: {e}"
    frame = record.get("reference_frame")
    if frame is not None and (isinstance(frame, bool) or not isinstance(frame, (int, float))):
        return reasons.BAD_FIELD, f"reference_frame must be a number or null, got {frame!r}"
    relation = record["relation"]
    if relation not in relations:
        return reasons.RELATION_NOT_IN_LIST, f"relation {relation!r} is not in Table 1"
    parsed, why = parser.parse(record["caption"])
    if parsed is None:
        return reasons.CAPTION_UNPARSED, f"{record['caption']!r}: {why}"
    subj, parsed_relation, obj = parsed
    if parsed_relation != relation:
        return reasons.RELATION_MISMATCH, (f"caption {record['caption']!r} reads {parsed_relation!r}, "
                                           f"relation field says {relation!r}")
    example = Example(
        example_id=example_id(record["image"], record["caption"]), image=record["image"],
        image_link=record["image_link"], caption=record["caption"], label=label,
        relation=relation, subj=subj, obj=obj, annotator_id=str(record["annotator_id"]),
        source=coco_source(record["image_link"]),
        reference_frame=None if frame is None else float(frame))
    return example, tuple(str(v) for v in vote_true), tuple(str(v) for v in vote_false)


class ReadPublicAnnotations(beam.PTransform):
    """Public raw-layout files -> (Example, true votes, false votes) (main), line rejects.

    The same (image, caption) twice: the first line (file as listed, then line) is kept,
    the others are duplicate_example. With `coco_images` (a PCollection of image file names), a line whose
    image the COCO input lacks is unknown_image."""

    def __init__(self, patterns, relations: frozenset, aliases: Mapping[str, str],
                 coco_images=None):
        super().__init__()
        self._patterns = list(patterns)
        self._relations = frozenset(relations)
        self._aliases = dict(aliases)
        self._coco_images = coco_images

    def expand(self, pbegin):
        lines = pbegin | "Read lines" >> ReadNumberedLines(self._patterns)
        parsed = lines | "Parse" >> stage_pardo(_ParsePublic(self._relations, self._aliases))
        # (SourceLine, Example, true votes, false votes); a line is counted out once it
        # passed the last check
        unique = parsed[MAIN] | "One line per example" >> KeepFirst(
            ANNOTATIONS, "line", key=lambda t: t[1].example_id,
            order=lambda t: _line_order(t[0]), why=_same_example,
            counts_out=self._coco_images is None)
        rejects = [parsed[REJECTS], unique[REJECTS]]
        kept = unique[MAIN]
        if self._coco_images is not None:
            known = {"lines": kept | "Key by image" >> beam.Map(lambda t: (t[1].image, t)),
                     "coco": self._coco_images | "Image names" >> beam.Map(lambda name: (name, True))}
            checked = (known | "Join COCO images" >> beam.CoGroupByKey()
                       | "Known images" >> stage_pardo(_KnownImage()))
            kept = checked[MAIN]
            rejects.append(checked[REJECTS])
        examples = kept | "Drop line" >> beam.Map(lambda t: t[1:])
        return {MAIN: examples, REJECTS: rejects | "Annotation rejects" >> beam.Flatten()}


class _ParsePublic(StageFn):
    stage, level = ANNOTATIONS, "line"
    counts_out = False   # out once it is known to be the only line of its example

    def __init__(self, relations: frozenset, aliases: Dict[str, str]):
        self._relations = relations
        self._aliases = aliases

    def setup(self):
        self._parser = CaptionParser(self._relations, aliases=self._aliases)

    def judge(self, line: SourceLine):
        parsed = parse_public_line(line, self._parser, self._relations)
        if isinstance(parsed[0], Example):
            yield (line, *parsed)
            return
        reason, detail = parsed
        yield self.reject(reason, detail=detail, **_at(line))


def _same_example(later, first) -> dict:
    """A second line with the same image and caption: duplicate_example."""
    line, example = later[0], later[1]
    return dict(reason=reasons.DUPLICATE_EXAMPLE, source=example.source, **_at(line),
                detail=f"same image and caption as example {example.example_id} ({first[0].where})")


class _KnownImage(StageFn):
    stage, level = ANNOTATIONS, "line"
    counts_in = False   # counted in when parsed

    def judge(self, joined):
        image, groups = joined
        known = bool(list(groups["coco"]))
        for item in groups["lines"]:
            if known:
                yield item
                continue
            line, example = item[0], item[1]
            yield self.reject(reasons.UNKNOWN_IMAGE, example.example_id, source=example.source,
                              detail=f"image {image} is not in the COCO input",
                              file=line.path, line=line.number)


class ReadCaptions(beam.PTransform):
    """Writer output -> (Example, (), ()) x 2 per line (main) and line rejects, against
    the sampled `pairs` (ImagePair). A second answer for a pair is duplicate_caption (the
    first line is kept)."""

    def __init__(self, patterns, relations: frozenset, pairs):
        super().__init__()
        self._patterns = list(patterns)
        self._relations = frozenset(relations)
        self._pairs = pairs

    def expand(self, pbegin):
        lines = pbegin | "Read lines" >> ReadAnswerLines(self._patterns, WRITER)
        parsed = lines | "Parse" >> stage_pardo(_ParseCaptionLine())
        # what each writer saw: a pair id is a digest of the pair's images and concepts
        seen = parsed[MAIN] | "What the writer saw" >> CheckShown(
            CAPTIONS, "line", self._pairs | "Pair views" >> beam.Map(lambda p: (p.pair_id, caption_view(p))),
            missing_reason=reasons.UNKNOWN_PAIR, ids_name_content=True)
        joined = ({"answers": seen[MAIN], "pairs": self._pairs | "Key pairs" >> beam.Map(
            lambda p: (p.pair_id, p))}
            | "Join pairs" >> beam.CoGroupByKey()
            | "Examples" >> stage_pardo(_PairExamples(self._relations)))
        return {MAIN: joined[MAIN],
                REJECTS: (parsed[REJECTS], seen[REJECTS], joined[REJECTS])
                | "Caption rejects" >> beam.Flatten()}


class _ParseCaptionLine(StageFn):
    stage, level = CAPTIONS, "line"
    counts_out = False   # counted out once joined to its pair

    def judge(self, line: SourceLine):
        record = parse_record(line, ("pair_id", "relation", "true_image"))
        if not isinstance(record, tuple) and not _is_id(record.get("annotator_id")):
            record = (reasons.MISSING_FIELD if "annotator_id" not in record else reasons.BAD_FIELD,
                      "annotator_id must be an id")
        if isinstance(record, tuple):
            reason, detail = record
            yield self.reject(reason, detail=detail, **_at(line))
            return
        yield Answer(record["pair_id"], carried(record), _at(line), (record["pair_id"], (line, record)))


class _PairExamples(StageFn):
    """Counts three levels: the answer lines (in when parsed), the pairs and the two
    examples each captioned pair gives."""
    stage, level = CAPTIONS, "line"
    counts_in = counts_out = False

    def __init__(self, relations: frozenset):
        self._relations = relations

    def _reject(self, line: SourceLine, reason: str, detail: str):
        return self.reject(reason, detail=detail, **_at(line))

    def judge(self, joined):
        pid, groups = joined
        pairs = list(groups["pairs"])
        answers = sorted(groups["answers"], key=lambda a: _line_order(a[0]))
        if not pairs:
            for line, _ in answers:
                yield self._reject(line, reasons.UNKNOWN_PAIR, f"no sampled pair {pid}")
            return
        pair: ImagePair = pairs[0]     # pair ids are unique: one draw, one id
        self.counts.seen(level="pair")
        yield from self._examples(pid, pair, answers)

    def _examples(self, pid: str, pair: ImagePair, answers):
        names = [image.file_name for image in pair.images]
        taken = False
        for line, record in answers:
            if record["relation"] not in self._relations:
                yield self._reject(line, reasons.RELATION_NOT_IN_LIST,
                                   f"relation {record['relation']!r} is not in Table 1")
            elif record["true_image"] not in names:
                yield self._reject(line, reasons.BAD_FIELD,
                                   f"true_image {record['true_image']!r} is not one of {names}")
            elif taken:
                yield self._reject(line, reasons.DUPLICATE_CAPTION, f"pair {pid} already captioned")
            else:
                taken = True
                self.counts.count_out(level="line")
                caption = render_caption(pair.subj, record["relation"], pair.obj)
                for image in pair.images:
                    self.counts.count_out(level="example")
                    self.counts.seen(level="example")
                    yield (Example(
                        example_id=example_id(image.file_name, caption), image=image.file_name,
                        image_link=image.coco_url, caption=caption,
                        label=int(image.file_name == record["true_image"]),
                        relation=record["relation"], subj=pair.subj, obj=pair.obj,
                        annotator_id=str(record["annotator_id"]), source=image.source,
                        pair_id=pair.pair_id), (), ())
        if taken:
            self.counts.count_out(level="pair")
        else:
            yield self.reject(
                reasons.UNCAPTIONED_PAIR, pid, level="pair", source=pair.images[0].source,
                detail=(f"{len(answers)} answer(s), none accepted" if answers else "no writer answer")
                + f": {pair.subj} / {pair.obj} on {names[0]}, {names[1]}")


def _merge_order(tagged) -> str:
    """A total order of (source, (Example, true, false)) that depends on content only."""
    origin, (example, vote_true, vote_false) = tagged
    return json.dumps([origin, dataclasses.asdict(example), list(vote_true), list(vote_false)],
                      sort_keys=True, default=str)


class MergeExamples(beam.PTransform):
    """{source name: PCollection of (Example, true votes, false votes)} -> one PCollection
    with unique example ids (main) and example rejects (stage examples).

    The same example id (image + caption) from two sources, or twice from one, is kept
    once: the item first by (source name, its content as sorted JSON), a order that never
    depends on arrival or runner; the others are duplicate_example. Counters (stage
    examples, level example): `example.in` and, per source, `example.in_from_<source>`
    (linked to that source's out counter), so validation's input reconciles with the
    sum of the sources' outputs."""

    def __init__(self, stage: str = "examples"):
        super().__init__()
        self._stage = stage

    def expand(self, sources):
        tagged = [pcoll | f"Tag {name}" >> beam.Map(lambda t, name=name: (name, t))
                  for name, pcoll in sorted(sources.items())]
        counted = (tagged | "Flatten sources" >> beam.Flatten()
                   | "Count sources" >> beam.ParDo(_FromSource(self._stage)))
        merged = counted | "One per example id" >> KeepFirst(
            self._stage, "example", key=lambda nt: nt[1][0].example_id, order=_merge_order,
            why=_same_example_id)
        return {MAIN: merged[MAIN] | "Drop source" >> beam.Map(lambda nt: nt[1]),
                REJECTS: merged[REJECTS]}


class _FromSource(StageFn):
    """Counts each example in, in total and per source (`example.in_from_<source>`)."""
    level = "example"
    counts_out = False   # out once it is the only one of its id

    def __init__(self, stage: str):
        self.stage = stage

    def judge(self, tagged):
        self.counts.note(f"example.in_from_{tagged[0]}")
        yield tagged


def _same_example_id(later, first) -> dict:
    origin, (example, _, _) = later
    kept_from, (kept, _, _) = first
    return dict(reason=reasons.DUPLICATE_EXAMPLE, item_id=example.example_id, source=example.source,
                detail=f"from {origin} (writer {example.annotator_id}, label {example.label}): "
                       f"{example.caption!r} on {example.image} is already an example from "
                       f"{kept_from} (writer {kept.annotator_id}, label {kept.label})")


class JoinVotes(beam.PTransform):
    """(examples as (Example, true, false), vote files) -> the same with the votes added,
    and line rejects (stage votes) for bad lines and votes on unknown examples.

    Example ids must be unique (MergeExamples first): a second example with the same id is
    an error, never silently dropped."""

    def __init__(self, patterns):
        super().__init__()
        self._patterns = list(patterns)

    def expand(self, examples):
        lines = examples.pipeline | "Read votes" >> ReadAnswerLines(self._patterns, VALIDATOR)
        parsed = lines | "Parse votes" >> stage_pardo(_ParseLabelLine("votes", VALIDATOR, answers=True))
        # what each validator saw: an example id is a digest of its image and caption
        seen = parsed[MAIN] | "What the validator saw" >> CheckShown(
            "votes", "line", examples | "Example views" >> beam.Map(
                lambda t: (t[0].example_id, validation_view(t[0]))),
            missing_reason=reasons.UNKNOWN_EXAMPLE, ids_name_content=True)
        joined = ({"examples": examples | "Key examples" >> beam.Map(lambda t: (t[0].example_id, t)),
                   "votes": seen[MAIN]}
                  | "Join votes" >> beam.CoGroupByKey()
                  | "Add votes" >> stage_pardo(_AddVotes()))
        return {MAIN: joined[MAIN],
                REJECTS: (parsed[REJECTS], seen[REJECTS], joined[REJECTS])
                | "Vote rejects" >> beam.Flatten()}


class _ParseLabelLine(StageFn):
    """{"example_id", <who>, "label"} -> (example_id, (who, label, SourceLine)); or a reject.
    With `answers`, each wrapped as an Answer with what its row says the worker saw
    (transforms/crowd/shown.py), for CheckShown."""
    level = "line"
    counts_out = False   # counted out once joined to its example

    def __init__(self, stage: str, who: str, answers: bool = False):
        self.stage, self._who, self._answers = stage, who, answers

    def judge(self, line: SourceLine):
        record = parse_record(line, ("example_id",))
        if not isinstance(record, tuple):
            if self._who not in record or "label" not in record:
                record = reasons.MISSING_FIELD, f"needs {self._who} and label"
            elif not _is_id(record[self._who]) or _label(record["label"]) is None:
                record = reasons.BAD_FIELD, f"{self._who} must be an id and label 0 or 1"
        if isinstance(record, tuple):
            reason, detail = record
            yield self.reject(reason, detail=detail, **_at(line))
            return
        keyed = record["example_id"], (str(record[self._who]), _label(record["label"]), line)
        yield Answer(keyed[0], carried(record), _at(line), keyed) if self._answers else keyed


class _AddVotes(StageFn):
    stage, level = "votes", "line"
    counts_in = counts_out = False   # per example, not per vote line: counted below

    def judge(self, joined):
        eid, groups = joined
        examples = list(groups["examples"])
        votes = sorted(groups["votes"], key=lambda v: _line_order(v[2]))
        if not examples:
            for _, _, line in votes:
                yield self.reject(reasons.UNKNOWN_EXAMPLE, detail=f"no example {eid}", **_at(line))
            return
        if len(examples) > 1:   # MergeExamples runs first; never keep one by arrival order
            raise ValueError(f"example id {eid} reached JoinVotes {len(examples)} times: "
                             "de-duplicate the examples first (MergeExamples)")
        self.counts.count_out(len(votes), level="line")
        example, listed_true, listed_false = examples[0]
        yield (example, listed_true + tuple(w for w, label, _ in votes if label == 1),
               listed_false + tuple(w for w, label, _ in votes if label == 0))


class JoinExtraLabels(beam.PTransform):
    """(kept examples as (example_id, label), extra-label files) -> (gold, [extra labels])
    per labelled example, and line rejects (stage extra_labels)."""

    def __init__(self, patterns):
        super().__init__()
        self._patterns = list(patterns)

    def expand(self, gold):
        lines = gold.pipeline | "Read extra labels" >> ReadAnswerLines(self._patterns, LABELLER)
        parsed = lines | "Parse extra labels" >> stage_pardo(
            _ParseLabelLine("extra_labels", LABELLER))
        joined = ({"gold": gold, "extra": parsed[MAIN]} | "Join extra labels" >> beam.CoGroupByKey()
                  | "Gold and extra" >> stage_pardo(_GoldAndExtra()))
        return {MAIN: joined[MAIN],
                REJECTS: (parsed[REJECTS], joined[REJECTS]) | "Extra rejects" >> beam.Flatten()}


class _GoldAndExtra(StageFn):
    stage, level = "extra_labels", "line"
    counts_in = counts_out = False   # per example, not per label line: counted below

    def judge(self, joined):
        eid, groups = joined
        gold, extra = list(groups["gold"]), list(groups["extra"])
        if not extra:
            return
        if not gold:
            for _, _, line in sorted(extra, key=lambda v: _line_order(v[2])):
                yield self.reject(reasons.UNKNOWN_EXAMPLE,
                                  detail=f"{eid} is not in the validated dataset", **_at(line))
            return
        self.counts.count_out(len(extra), level="line")
        yield gold[0], [label for _, label, _ in extra]
