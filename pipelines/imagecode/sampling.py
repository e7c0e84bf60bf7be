"""Sampling sets per source (§3.1: "we randomly sample ... per source"), seeded and
parallel-safe.

Each set gets a priority from a hash of (seed, set name) (transforms.core.sampling); a
source keeps its `quota` sets of lowest priority. The choice depends only on the seed
and the names, never on arrival order, so every runner and worker count gives the same
sample. The top-k runs as a Beam combiner over (priority, name) pairs: no worker holds
more than k per source.
"""
from __future__ import annotations

from typing import Dict, Optional

import apache_beam as beam

from pipelines.imagecode import reasons
from pipelines.imagecode.records import FrameSet
from schemas.rejects import Reject
from transforms.core.sampling import priority
from transforms.core.stage import MAIN, REJECTS, StageCounts


class SampleSetsPerSource(beam.PTransform):
    """FrameSet -> the sampled FrameSets (main) and set + frame Rejects (not_sampled).

    `quotas` maps a source to how many sets it keeps; sources not listed keep
    `default` sets, where None means all of them.
    """

    def __init__(self, seed: int, quotas: Dict[str, int], default: Optional[int]):
        super().__init__()
        self._seed = seed
        self._quotas = dict(quotas)
        self._default = default

    def _quota(self, source: str) -> Optional[int]:
        return self._quotas.get(source, self._default)

    def expand(self, sets):
        seed = self._seed
        quotas = [q for q in list(self._quotas.values()) + [self._default] if q is not None]
        largest = max(quotas, default=0)
        chosen = (
            sets
            | "Bounded sources" >> beam.Filter(lambda s, q=self._quota: q(s.source) is not None)
            | "Key by source" >> beam.Map(lambda s: (s.source, (priority(seed, s.set_name), s.set_name)))
            | "Lowest priorities" >> beam.combiners.Top.PerKey(largest, reverse=True)
            | "Trim to quota" >> beam.FlatMap(
                lambda kv, q=self._quota: [name for _, name in kv[1][: q(kv[0])]]))
        return sets | "Keep chosen" >> beam.ParDo(
            _KeepChosen(self._quota), chosen=beam.pvalue.AsList(chosen)
        ).with_outputs(REJECTS, main=MAIN)


class _KeepChosen(beam.DoFn):
    def __init__(self, quota):
        self._quota = quota
        self._counts = StageCounts("sampling")
        self._chosen_names = None

    def process(self, frame_set: FrameSet, chosen):
        if self._chosen_names is None:  # built once per bundle's side input, not per element
            self._chosen_names = frozenset(chosen)
        n_frames = len(frame_set.frame_indices)
        self._counts.seen(level="set")
        self._counts.seen(n_frames, level="frame")
        if self._quota(frame_set.source) is None or frame_set.set_name in self._chosen_names:
            self._counts.count_out(n_frames, level="frame")
            yield self._counts.passed(frame_set, level="set")
            return
        common = dict(stage="sampling", reason=reasons.NOT_SAMPLED, source=frame_set.source,
                      video_id=frame_set.video_id, split=frame_set.split)
        yield self._counts.rejected(Reject(level="set", item_id=frame_set.set_name, **common))
        for n in frame_set.frame_indices:
            yield self._counts.rejected(Reject(
                level="frame", item_id=f"{frame_set.set_name}/frame{n}", **common))

    def finish_bundle(self):
        self._chosen_names = None
