"""Reading released NLVR2 files (PUBLIC=): one JSON Lines line -> one Example, or a reject
naming the file and line (stage `public`, level line).

A released line is the output of the validation rounds (§3.3, §3.4) for one example, in the
layout of ../shared/specs/nlvr2.md ("The public layout"). A line is taken only when its
values can be written back (compat.public_line): the keys of compat.PUBLIC_KEYS (and
`directory` on train), each once, and nothing else; `identifier` in the grammar, its split deciding the
example's split; `label` "True" or "False" and equal to the single writer-time judgement;
worker ids non-empty strings; judgements "True" or "False". What the paper's rules say
about whole examples and groups (extra judgements, 2 True / 2 False) is checked later, on
examples (pipelines/nlvr2/rules.py), because the public files themselves break two of them.
A line taken whose text is not its public spelling (keys in another order, other
separators, raw non-ASCII characters) holds the same values but cannot come back byte for
byte: it is counted (`line.respelled`) and named in the data card, never passed silently.
"""
from __future__ import annotations

from typing import Optional, Tuple, Union

import apache_beam as beam

from pipelines.nlvr2 import reasons
from pipelines.nlvr2.compat import LABELS, PUBLIC_KEYS, TRAIN_KEY, public_line
from pipelines.nlvr2.records import IDENTIFIER, Example, Judgements
from schemas.tfexample import INT64_MAX
from transforms.core.stage import StageFn
from transforms.io.lines import SourceLine, parse_json_object

TEXT_KEYS = ("sentence", "left_url", "right_url", "synset", "query", "identifier")
RESPELLED = "respelled"     # ParsePublicLine's output of lines taken but not in the public spelling
FIRST_RESPELLED = 5         # how many of them the report names
Problem = Tuple[str, str]   # (reason, detail)


def parse_public_line(line: SourceLine) -> Union[Example, Problem]:
    """An Example (origin = file and line) or (reason, detail)."""
    record = parse_json_object(line, TEXT_KEYS)
    if isinstance(record, tuple):
        return record
    missing = [k for k in PUBLIC_KEYS if k not in record]
    if missing:
        return reasons.MISSING_FIELD, f"missing field(s): {', '.join(missing)}"
    unknown = [k for k in record if k not in PUBLIC_KEYS and k != TRAIN_KEY]
    if unknown:
        return reasons.UNKNOWN_KEY, f"key(s) outside the public layout: {', '.join(unknown)}"
    match = IDENTIFIER.fullmatch(record["identifier"])   # `$` would let "dev-1-0-0\n" pass
    if not match:
        return reasons.BAD_IDENTIFIER, (f"identifier {record['identifier']!r} is not "
                                        "split-set-pair-sentence")
    split, set_id, pair, sentence_id = match.group(1), *map(int, match.groups()[1:])
    if str(set_id) != match.group(2):   # "dev-007-1-0" would be written back as dev-7-1-0
        return reasons.BAD_IDENTIFIER, f"identifier {record['identifier']!r}: set id with leading zeros"
    if set_id > INT64_MAX:   # the set_id column (Parquet, TFRecord) is an int64
        return reasons.BAD_IDENTIFIER, (f"identifier {record['identifier'][:60]!r}: set id beyond "
                                        "the 64-bit integer range a release holds")
    writer = record["writer"]
    if not isinstance(writer, str) or not writer.strip():
        return reasons.BAD_WORKER, f"writer must be a non-empty string, got {writer!r}"
    problem, validation = _judgements(record["validation"], "validation")
    if problem:
        return problem
    problem, extra = _judgements(record["extra_validations"], "extra_validations")
    if problem:
        return problem
    label = record["label"]
    if label not in LABELS:
        return reasons.BAD_LABEL, f"label must be the string \"True\" or \"False\", got {label!r}"
    if len(validation) != 1:
        return reasons.LABEL_NOT_VALIDATION, (f"validation must hold the one writer-time judgement "
                                              f"(§3.3), it holds {len(validation)}")
    if validation[0][1] != label:
        return reasons.LABEL_NOT_VALIDATION, (f"label {label} differs from the writer-time "
                                              f"judgement {validation[0][1]} (§3.3)")
    directory = record.get(TRAIN_KEY)
    if split == "train":
        if isinstance(directory, bool) or not isinstance(directory, int) or directory < 0:
            return reasons.BAD_DIRECTORY, (f"a train line needs `directory`, a non-negative "
                                           f"integer; got {directory!r}")
    elif TRAIN_KEY in record:
        return reasons.BAD_DIRECTORY, f"a {split} line has `directory` (train lines only)"
    return Example(split=split, set_id=set_id, pair=pair, sentence_id=sentence_id,
                   sentence=record["sentence"], left_url=record["left_url"],
                   right_url=record["right_url"], writer=writer, validation=validation,
                   label=label == LABELS[0], synset=record["synset"], query=record["query"],
                   extra_validations=extra, directory=directory,
                   origin=(line.path, line.number))


def _judgements(value, key: str) -> Tuple[Optional[Problem], Judgements]:
    """(None, ((worker, "True"/"False"), ...) in the file's order), or (problem, ())."""
    if not isinstance(value, dict):
        return (reasons.BAD_FIELD, f"{key} must be an object {{worker: judgement}}, "
                                   f"got {type(value).__name__}"), ()
    for worker, judgement in value.items():
        if not worker.strip():   # JSON object keys are strings already; an empty one is no id
            return (reasons.BAD_WORKER, f"{key}: a worker id is empty"), ()
        if judgement not in LABELS:
            return (reasons.BAD_LABEL, f"{key}[{worker!r}] must be the string \"True\" or "
                                       f"\"False\", got {judgement!r}"), ()
    return None, tuple(value.items())


class ParsePublicLine(StageFn):
    """SourceLine -> Example; a bad line is a reject with its file and line. A line taken
    whose text is not its public spelling (other key order, separators or escapes: the
    same values) also goes to RESPELLED as (file, line, identifier): its compat line will
    not be byte for byte, and the release counts and names such lines."""
    stage, level = "public", "line"

    def judge(self, line: SourceLine):
        parsed = parse_public_line(line)
        if isinstance(parsed, Example):
            if public_line(parsed) != line.text:
                self.counts.note("line.respelled")
                yield beam.pvalue.TaggedOutput(RESPELLED, (line.path, line.number, parsed.identifier))
            yield parsed
            return
        reason, detail = parsed
        yield self.reject(reason, line.where, detail=detail, file=line.path, line=line.number)


class RespelledSummary(beam.PTransform):
    """RESPELLED places -> one report {"lines": n, "first": [[file, line, identifier], ...]}
    (the first FIRST_RESPELLED by file and line), for the data card."""

    def expand(self, places):
        first = places | "First places" >> beam.combiners.Top.Smallest(FIRST_RESPELLED)
        return (places | "Count" >> beam.combiners.Count.Globally()
                | "Report" >> beam.Map(lambda n, first: {"lines": n, "first": [list(p) for p in first]},
                                       first=beam.pvalue.AsSingleton(first)))
