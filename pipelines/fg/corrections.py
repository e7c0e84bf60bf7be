"""F15 (§3.2.4): manual correction of renovated texts.

The paper sampled 100 renovated texts, found minor errors in about 40% and had students
fix them "with as few words as possible". A release therefore writes the review sheet a
correction round starts from (review/review_sheet.jsonl: `corrections.review_size`
renovated captions chosen by a seeded hash of their key, each with the original, the
model's text, `human_text` to edit and `task_fingerprint`, the digest of the text to
correct), and a build with `inputs.corrections` applies the edited lines:
    {"image_id": "...", "caption_index": 0-4, "model_text": "...", "human_text": "..."}
A line is applied only where its worker corrected what this build shows
(transforms/crowd/shown.py): the line names the text it corrected (`model_text`), so the
evidence is that text's digest, compared with the text this build renovated the caption
to (stale_answer otherwise, naming both texts: the correction was made against another
build); a line for a caption this build did not renovate is unknown_caption, a second
line for one caption duplicate_line. Stage "corrections", level "line".
"""
from __future__ import annotations

import apache_beam as beam

from pipelines.fg import reasons
from pipelines.fg.records import caption_key, parse_caption_line
from transforms.core.sampling import priority
from transforms.core.stage import MAIN, REJECTS, StageFn, stage_pardo
from transforms.crowd.shown import Evidence, TaskView, judge, view
from transforms.io.lines import ReadNumberedLines

FIELDS = ("image_id", "model_text", "human_text")


def correction_view(model_text: str) -> TaskView:
    """What a corrector is asked to fix: the renovated caption's text."""
    text = model_text.strip()
    return view({"model_text": text}, {"model_text": text})


class _ParseCorrection(StageFn):
    stage, level = "corrections", "line"
    counts_out = False

    def judge(self, line):
        record = parse_caption_line(line, FIELDS)
        if isinstance(record, tuple):
            yield self.reject(record[0], line.where, detail=record[1], file=line.path,
                              line=line.number)
            return
        index = record["caption_index"]
        yield caption_key(record["image_id"], index), (line.path, line.number, record["model_text"],
                                                       record["human_text"])


class _Apply(StageFn):
    stage, level = "corrections", "line"
    counts_in = False

    def judge(self, keyed):
        key, groups = keyed
        lines = sorted(groups["lines"])
        if not lines:
            return
        renovated = groups["renovated"][0] if groups["renovated"] else None
        first, rest = lines[0], lines[1:]
        for path, number, _, _ in rest:
            yield self.reject(reasons.DUPLICATE_LINE, f"{path}:{number}", file=path, line=number,
                              detail=f"a second correction of {key}")
        path, number, model_text, human_text = first
        where = {"file": path, "line": number}
        if renovated is None:
            yield self.reject(reasons.UNKNOWN_CAPTION, key, detail="this build did not renovate it", **where)
            return
        # the line carries the text its worker corrected: that is the evidence
        seen = correction_view(model_text)
        problem = judge(key, Evidence(seen.fingerprint, seen.labels), correction_view(renovated))
        if problem is not None:
            yield self.reject(problem[0], key, detail=problem[1][:500], **where)
        else:
            yield key, human_text.strip()


class ApplyCorrections(beam.PTransform):
    """(caption key, renovated text) -> {MAIN: (caption key, corrected text), REJECTS}."""

    def __init__(self, path: str):
        super().__init__()
        self._path = path

    def expand(self, renovated):
        lines = renovated.pipeline | "Read corrections" >> ReadNumberedLines([self._path])
        parsed = lines | "Parse corrections" >> stage_pardo(_ParseCorrection())
        applied = ({"renovated": renovated, "lines": parsed[MAIN]} | "Join corrections" >> beam.CoGroupByKey()
                   | "Apply corrections" >> stage_pardo(_Apply()))
        return {MAIN: applied[MAIN],
                REJECTS: (parsed[REJECTS], applied[REJECTS]) | "Correction rejects" >> beam.Flatten()}


def review_sheet(picked: list, seed: int, size: int) -> list:
    """The review sheet's rows: `size` of the renovated captions with the lowest seeded
    priority of their key, in key order (the same rows on every runner)."""
    chosen = sorted(picked, key=lambda row: priority(seed, caption_key(row["image_id"], row["caption_index"])))
    return sorted(chosen[:size], key=lambda row: (row["image_id"], row["caption_index"]))
