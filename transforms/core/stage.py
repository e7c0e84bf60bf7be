"""The stage contract: every stage counts what comes in, what goes out and what it
rejects (by reason), and sends rejects to a tagged output that ends in rejects/.

Usage inside a DoFn::

    counts = StageCounts("shots")
    counts.seen()                       # one item in
    yield counts.passed(shot)           # one item out
    yield counts.rejected(Reject(...))  # one item rejected, tagged REJECTS

A stage PTransform returns ``ParDo(...).with_outputs(REJECTS, main=MAIN)``, so callers
read ``result[MAIN]`` and ``result[REJECTS]``.
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam.metrics import Metrics

from schemas.rejects import Reject

MAIN = "out"
REJECTS = "rejects"
COUNTER_NAMESPACE_PREFIX = "stage."


class StageCounts:
    """Beam counters for one stage; read back into the manifest after the run.

    A stage may count items at several levels (video, shot, frame, set): `level`
    prefixes the counter names so each level reconciles on its own:
    ``<level>.in == <level>.out + sum(<level>.rejected.*)``.
    """

    def __init__(self, stage: str):
        self.stage = stage
        self._namespace = COUNTER_NAMESPACE_PREFIX + stage
        self._counters = {}

    def _counter(self, name: str):
        if name not in self._counters:
            self._counters[name] = Metrics.counter(self._namespace, name)
        return self._counters[name]

    def seen(self, n: int = 1, level: str = "item") -> None:
        self._counter(f"{level}.in").inc(n)

    def passed(self, value, n: int = 1, level: str = "item"):
        self._counter(f"{level}.out").inc(n)
        return value

    def count_out(self, n: int = 1, level: str = "item") -> None:
        self._counter(f"{level}.out").inc(n)

    def rejected(self, reject: Reject):
        self._counter(f"{reject.level}.rejected.{reject.reason}").inc()
        return beam.pvalue.TaggedOutput(REJECTS, reject)

    def note(self, name: str, n: int = 1) -> None:
        """A counter outside the in/out/rejected contract (e.g. "frame.quality_checks")."""
        self._counter(name).inc(n)

    def count_rejected(self, level: str, reason: str, n: int = 1) -> None:
        """Count rejects that are reported in bulk rather than one element each."""
        self._counter(f"{level}.rejected.{reason}").inc(n)


# --- reading the counters back (driver side) ------------------------------------------

def read_stage_counts(pipeline_result) -> dict:
    """{stage: {"<level>.in": n, "<level>.out": n, "<level>.rejected.<reason>": n}}."""
    counts: dict = {}
    for counter in pipeline_result.metrics().query()["counters"]:
        namespace = counter.key.metric.namespace
        if not namespace.startswith(COUNTER_NAMESPACE_PREFIX):
            continue
        stage = namespace[len(COUNTER_NAMESPACE_PREFIX):]
        value = counter.committed if counter.committed is not None else counter.attempted
        by_name = counts.setdefault(stage, {})
        by_name[counter.key.metric.name] = by_name.get(counter.key.metric.name, 0) + value
    return {stage: dict(sorted(names.items())) for stage, names in sorted(counts.items())}


def reconcile(stage_counts: dict) -> list:
    """Problems where, for a stage and level, in != out + rejected. Empty when all agree."""
    problems = []
    for stage, names in stage_counts.items():
        levels = {name.split(".", 1)[0] for name in names}
        for level in sorted(levels):
            n_in = names.get(f"{level}.in", 0)
            n_out = names.get(f"{level}.out", 0)
            n_rejected = sum(v for k, v in names.items() if k.startswith(f"{level}.rejected."))
            if n_in != n_out + n_rejected:
                problems.append(f"{stage}/{level}: in {n_in} != out {n_out} + rejected {n_rejected}")
    return problems


def check_links(stage_counts: dict, links) -> list:
    """Problems where what one stage passed on is not what the next one took in.

    `links` holds pairs like ("manifest", "line.out", "shots", "video.in").
    """
    problems = []
    for stage_a, name_a, stage_b, name_b in links:
        a = stage_counts.get(stage_a, {}).get(name_a, 0)
        b = stage_counts.get(stage_b, {}).get(name_b, 0)
        if a != b:
            problems.append(f"{stage_a}.{name_a} = {a} but {stage_b}.{name_b} = {b}")
    return problems
