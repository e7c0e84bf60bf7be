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

from schemas.records import Reject

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

    def count_rejected(self, level: str, reason: str, n: int = 1) -> None:
        """Count rejects that are reported in bulk rather than one element each."""
        self._counter(f"{level}.rejected.{reason}").inc(n)
