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
from transforms.core.sampling import priority
from transforms.core.stage import StageFn, stage_pardo


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
        return sets | "Keep chosen" >> stage_pardo(
            _KeepChosen(self._quota), chosen=beam.pvalue.AsList(chosen))


class _KeepChosen(StageFn):
    """Sets (level "set") and their frames (level "frame") in; the chosen ones out."""
    stage, level = "sampling", "set"

    def __init__(self, quota):
        self._quota = quota
        self._chosen_names = None

    def judge(self, frame_set: FrameSet, chosen):
        if self._chosen_names is None:  # built once per bundle's side input, not per element
            self._chosen_names = frozenset(chosen)
        n_frames = len(frame_set.frame_indices)
        self.counts.seen(n_frames, level="frame")
        if self._quota(frame_set.source) is None or frame_set.set_name in self._chosen_names:
            self.counts.count_out(n_frames, level="frame")
            yield frame_set
            return
        common = dict(reason=reasons.NOT_SAMPLED, source=frame_set.source,
                      video_id=frame_set.video_id, split=frame_set.split)
        yield self.reject(item_id=frame_set.set_name, **common)
        for n in frame_set.frame_indices:
            yield self.reject(item_id=f"{frame_set.set_name}/frame{n}", level="frame", **common)

    def finish_bundle(self):
        self._chosen_names = None
