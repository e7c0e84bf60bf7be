"""The user's own model outputs, joined to this build's candidates (F10, F13).

A details file (`inputs.details`) or a merged-sentences file (`inputs.merged`) is JSON
Lines, one prompt per line:
    {"image_id": "...", "caption_index": 0-4, "prompt": "<the prompt words>", "noun": "...",
     "detail": "<d_g>"}            (details; "merged": "<d_f>" for merged sentences)
`prompt` is the prompt as this build makes it (Candidate.prompt, e.g. "the color of the
dog"; the review sheet and rejects show it), `noun` is informative. A line that is not
a JSON object with these fields is a reject (bad_json, missing_field, bad_field) naming
its file and line; a second line for the same prompt is duplicate_line; a line for a
prompt this build did not make is unknown_prompt; a candidate without a line is
`missing_reason` (no_detail, merge_failed).
"""
from __future__ import annotations

import dataclasses

import apache_beam as beam

from pipelines.fg import reasons
from pipelines.fg.records import parse_caption_line
from transforms.core.stage import MAIN, REJECTS, StageFn, stage_pardo
from transforms.io.lines import ReadNumberedLines


def prompt_key(image_id: str, index: int, prompt: str) -> str:
    return f"{image_id}#{index}#{' '.join(prompt.lower().split())}"


class _ParseLine(StageFn):
    level = "line"
    counts_out = False   # a parsed line is counted out (or rejected) when it is joined

    def __init__(self, stage: str, field: str):
        self.stage, self._field = stage, field

    def judge(self, line):
        record = parse_caption_line(line, ("image_id", "prompt", self._field))
        if isinstance(record, tuple):
            yield self.reject(record[0], line.where, detail=record[1], file=line.path,
                              line=line.number)
            return
        index = record["caption_index"]
        yield prompt_key(record["image_id"], index, record["prompt"]), (line.path, line.number, record[self._field])


class _Join(StageFn):
    level = "candidate"
    counts_in = False

    def __init__(self, stage: str, field: str, missing_reason: str):
        self.stage, self._field, self._missing = stage, field, missing_reason

    def judge(self, keyed):
        key, groups = keyed
        candidates = groups["candidates"]
        lines = sorted(groups["lines"])
        self.counts.seen(len(candidates), level="candidate")
        for path, number, _ in (lines[1:] if candidates else lines):
            reason = reasons.DUPLICATE_LINE if candidates else reasons.UNKNOWN_PROMPT
            yield self.reject(reason, f"{path}:{number}", level="line", file=path, line=number,
                              detail=f"prompt {key}")
        for candidate in candidates:
            text = lines[0][2].strip() if lines else ""
            if not text:
                yield self.reject(self._missing, candidate.label,
                                  detail=f"no {self._field} for prompt {candidate.prompt!r}")
                continue
            yield dataclasses.replace(candidate, **{self._field: text})
        if candidates and lines:
            self.counts.count_out(level="line")


class JoinFileTexts(beam.PTransform):
    """Candidates + the user's JSON Lines file -> {MAIN: candidates with `field` set,
    REJECTS: line and candidate rejects}, counted under `stage` (levels "line" and
    "candidate")."""

    def __init__(self, stage: str, path: str, field: str, missing_reason: str):
        super().__init__()
        self._stage, self._path, self._field, self._missing = stage, path, field, missing_reason

    def expand(self, candidates):
        lines = candidates.pipeline | "Read lines" >> ReadNumberedLines([self._path])
        parsed = lines | "Parse lines" >> stage_pardo(_ParseLine(self._stage, self._field))
        keyed = candidates | "Key candidates" >> beam.Map(
            lambda c: (prompt_key(c.image_id, c.index, c.prompt), c))
        joined = ({"candidates": keyed, "lines": parsed[MAIN]} | "Join" >> beam.CoGroupByKey()
                  | "Assign" >> stage_pardo(_Join(self._stage, self._field, self._missing)))
        return {MAIN: joined[MAIN], REJECTS: (parsed[REJECTS], joined[REJECTS])
                | "Rejects" >> beam.Flatten()}


