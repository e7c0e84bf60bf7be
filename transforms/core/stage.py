"""The stage contract, written once: every stage counts what comes in, what goes out and
what it rejects (by reason), and sends rejects to a tagged output that ends in rejects/.

A stage's DoFn subclasses `StageFn`, names its stage and level once, and yields what
passes and what it rejects; the base counts and tags (datatrove's filter base is the
model)::

    class ParseLine(StageFn):
        stage, level = "manifest", "line"

        def judge(self, line):
            if bad:
                yield self.reject(reasons.BAD_JSON, item_id, detail="...")
                return
            yield record                                  # counted line.out

    parsed = lines | "Parse" >> stage_pardo(ParseLine())  # {MAIN: ..., REJECTS: ...}

A stage that counts several levels (video, shot, frame) uses `self.counts` for the
others. What a stage counts of the data (in, out, rejected, a note such as
`line.respelled`) describes the release; what it counts of its own work (a cache hit or
miss, an entry written, a model loaded or run, a frame decoded again) follows the cache
and the runner, so it is counted apart (`StageCounts.work`, namespace `work.<stage>`):
the release keeps the first, the build record (BUILD.json) the second. `KeepFirst` is the one dedupe: of the items that share a key, the first by a
stable order passes and the others are rejects. Counters are read back into the manifest
(`read_stage_counts`) and must reconcile per stage and level (`reconcile`) and across
stages (`check_links`).

`apply_in_process` runs a stage's DoFn on a few items in hand, outside any pipeline, and
`first_per_key` is KeepFirst's rule on a list: for a caller that needs a stage's
decisions before a build (the ImageCoDe sample's sets, pipelines/imagecode/sample/expected_sets.py).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Dict, Iterable, List

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas.rejects import Reject
from transforms.core import tallies
from transforms.core.counts import check_links, data_counts, reconcile  # noqa: F401 (the contract's checks)

MAIN = "out"
REJECTS = "rejects"
COUNTER_NAMESPACE_PREFIX = "stage."
WORK_NAMESPACE_PREFIX = "work."


class StageCounts:
    """Beam counters for one stage; read back into the manifest after the run.

    A stage may count items at several levels (video, shot, frame, set): `level`
    prefixes the counter names so each level reconciles on its own:
    ``<level>.in == <level>.out + sum(<level>.rejected.*)``.
    """

    def __init__(self, stage: str):
        self.stage = stage
        self._counters = {}

    def _inc(self, name: str, n: int = 1, prefix: str = COUNTER_NAMESPACE_PREFIX) -> None:
        if (prefix, name) not in self._counters:
            self._counters[prefix, name] = Metrics.counter(prefix + self.stage, name)
        self._counters[prefix, name].inc(n)
        tallies.record(self.stage, name, n)  # for the local progress lines (a no-op unless asked)

    def seen(self, n: int = 1, level: str = "item") -> None:
        self._inc(f"{level}.in", n)

    def passed(self, value, n: int = 1, level: str = "item"):
        self._inc(f"{level}.out", n)
        return value

    def count_out(self, n: int = 1, level: str = "item") -> None:
        self._inc(f"{level}.out", n)

    def rejected(self, reject: Reject):
        self._inc(f"{reject.level}.rejected.{reject.reason}")
        return beam.pvalue.TaggedOutput(REJECTS, reject)

    def note(self, name: str, n: int = 1) -> None:
        """A counter outside the in/out/rejected contract (e.g. "frame.quality_checks")."""
        self._inc(name, n)

    def work(self, name: str, n: int = 1) -> None:
        """A count of what this run did rather than of what the data holds: a cache hit or
        miss, an entry written, a model loaded or run, a frame decoded again. A warm cache
        or another runner changes it and nothing in the release, so it goes to the build
        record, never the release's counters (read_work_counts)."""
        self._inc(name, n, prefix=WORK_NAMESPACE_PREFIX)

    def count_rejected(self, level: str, reason: str, n: int = 1) -> None:
        """Count rejects that are reported in bulk rather than one element each."""
        self._inc(f"{level}.rejected.{reason}", n)


class StageFn(beam.DoFn):
    """A stage's DoFn. Subclasses set `stage` and `level` and implement `judge`.

    `judge(element, *side_inputs)` yields passed items, `self.reject(...)` rejects, and
    (for stages with more outputs) beam.pvalue.TaggedOutput values, which pass through
    uncounted. The base counts `<level>.in` once per element and `<level>.out` per passed
    item; `counts_in` / `counts_out` = False leave that to another step of the same chain
    (a step that only annotates, or the last of several steps over the same items)."""

    stage: str = ""
    level: str = "item"
    counts_in: bool = True
    counts_out: bool = True

    @property
    def counts(self) -> StageCounts:
        counts = self.__dict__.get("_stage_counts")
        if counts is None:  # made on the worker: counters are not pickled with the DoFn
            counts = self.__dict__["_stage_counts"] = StageCounts(self.stage)
        return counts

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_stage_counts", None)
        return state

    def reject(self, reason: str, item_id: str, level: str = "", **fields) -> Reject:
        """A Reject of this stage (at `level`, default the stage's level)."""
        return Reject(stage=self.stage, level=level or self.level, reason=reason,
                      item_id=str(item_id)[:200], **fields)

    def process(self, element, *args, **kwargs):
        if self.counts_in:
            self.counts.seen(level=self.level)
        for result in self.judge(element, *args, **kwargs):
            if isinstance(result, Reject):
                yield self.counts.rejected(result)
            elif isinstance(result, beam.pvalue.TaggedOutput):
                yield result
            else:
                if self.counts_out:
                    self.counts.count_out(level=self.level)
                yield result

    def judge(self, element, *args, **kwargs):
        raise NotImplementedError


def stage_pardo(fn: beam.DoFn, *args, outputs=(), main_type=None, **kwargs):
    """`ParDo(fn)` with its REJECTS output tagged (and any `outputs` named): the result
    is read as result[MAIN], result[REJECTS], result[<output>]. `main_type`: the type of
    MAIN's elements, for a record with a coder of its own (schemas/records.py)."""
    pardo = beam.ParDo(fn, *args, **kwargs)
    if main_type is not None:
        pardo = pardo.with_output_types(main_type)
    return pardo.with_outputs(REJECTS, *outputs, main=MAIN)


class _KeepFirstFn(StageFn):
    def __init__(self, stage, level, order, why, counted_in, counts_out):
        self.stage, self.level = stage, level
        self.counts_in, self.counts_out = not counted_in, counts_out
        self._order, self._why = order, why

    def process(self, keyed):
        _, items = keyed
        items = sorted(items, key=self._order)
        if self.counts_in:
            self.counts.seen(len(items), level=self.level)
        first = items[0]
        if self.counts_out:
            self.counts.count_out(level=self.level)
        yield first
        for later in items[1:]:
            yield self.counts.rejected(self.reject(**self._why(later, first)))


def first_per_key(items: Iterable, key: Callable, order: Callable) -> List:
    """KeepFirst's rule on items in hand: the first item per key by `order` (the others
    dropped), in the order the kept items first appear."""
    groups: Dict = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return [min(group, key=order) for group in groups.values()]


class KeepFirst(beam.PTransform):
    """items -> {MAIN: the first item per key, REJECTS: the others}: the one dedupe.

    `key(item)` groups; `order(item)` is a stable order (a path, a file and line number,
    an id: never arrival order), so every runner keeps the same item; `why(later, first)`
    returns the fields of a later item's Reject: {"reason", "item_id", "detail", ...}
    (its stage and level are this stage's). Items
    already counted in at `level` by an earlier step of the stage (`counted_in=True`)
    are counted out or rejected here only; `counts_out=False` leaves counting the kept
    ones out to a later step."""

    def __init__(self, stage: str, level: str, key, order, why, counted_in: bool = True,
                 counts_out: bool = True):
        super().__init__()
        self._fn = _KeepFirstFn(stage, level, order, why, counted_in, counts_out)
        self._key = key

    def expand(self, items):
        key = self._key
        return (items
                | "Key" >> beam.Map(lambda item: (key(item), item))
                | "Group" >> beam.GroupByKey()
                | "Keep first" >> stage_pardo(self._fn))


def apply_in_process(fn: beam.DoFn, elements: Iterable) -> Dict[str, list]:
    """`fn` applied to `elements` here, outside any pipeline, through a DoFn's life
    (setup, one bundle, teardown): {MAIN: its main outputs, tag: the values of each tagged
    output (REJECTS, ...)}, in order. Its counters count nowhere: Beam's metrics belong to
    a running pipeline. Element by element, with no grouping: only for a DoFn whose
    outputs depend on its element alone."""
    outputs: Dict[str, list] = defaultdict(list)
    fn.setup()
    try:
        fn.start_bundle()
        for element in elements:
            for out in fn.process(element) or ():
                if isinstance(out, beam.pvalue.TaggedOutput):
                    outputs[out.tag].append(out.value)
                else:
                    outputs[MAIN].append(out)
        fn.finish_bundle()
    finally:
        fn.teardown()
    return dict(outputs)


# --- reading the counters back (driver side) ------------------------------------------

def read_stage_counts(pipeline_result) -> dict:
    """Every counter of the run, its work's included: {stage: {"<level>.in": n,
    "<level>.out": n, "<level>.rejected.<reason>": n, ...}}."""
    return _read_counts(pipeline_result, (COUNTER_NAMESPACE_PREFIX, WORK_NAMESPACE_PREFIX))


def read_work_counts(pipeline_result) -> dict:
    """The counters of the run's work alone (StageCounts.work), as read_stage_counts."""
    return _read_counts(pipeline_result, (WORK_NAMESPACE_PREFIX,))


def _read_counts(pipeline_result, prefixes) -> dict:
    counts: dict = {}
    for counter in pipeline_result.metrics().query()["counters"]:
        namespace = counter.key.metric.namespace
        prefix = next((p for p in prefixes if namespace.startswith(p)), None)
        if prefix is None:
            continue
        stage = namespace[len(prefix):]
        value = counter.committed if counter.committed is not None else counter.attempted
        by_name = counts.setdefault(stage, {})
        by_name[counter.key.metric.name] = by_name.get(counter.key.metric.name, 0) + value
    return {stage: dict(sorted(names.items())) for stage, names in sorted(counts.items())}
