"""One video per decoded content, judged once the videos are decoded (between the
shots and the miner).

The manifest stage keeps one line per byte content (transforms/video/manifest.py). One
video muxed two ways (with and without `-movflags +faststart`, another container) has
other bytes and the same frames; it is found here, on the digest of every decoded frame
that the shots stage took while it decoded the video anyway (VideoRef.frames_sha256, kept
in the cached shot list, so a rebuild that replays the list knows it without decoding).
Of the plans with one frame digest, the first manifest line's (by file, then line
number) is mined; each later one is a reject with the manifest's reasons and rule
(`same_content_reject`): same_content_other_split in another split, else
duplicate_video_content, its detail naming the kept line and saying the frames gave it
away. Its shots and frames are rejects with the same reason, so every level reconciles
and the miner never sees them: no set of a later duplicate is ever published.

Exact: a re-encode (other pixels) is another content and is not caught here.

Counters (stage "video_content"): video/shot/frame in (every plan: the videos the shots
stage passed, their shots and frames), out (the kept plans'), rejected by reason.
"""
from __future__ import annotations

import apache_beam as beam

from pipelines.imagecode.records import VideoPlan
from transforms.core.stage import StageFn, stage_pardo
from transforms.video.manifest import same_content_reject

STAGE = "video_content"


class OnePlanPerContent(beam.PTransform):
    """VideoPlan (its video with frames_sha256) -> {MAIN: the plan of the first manifest
    line per frame digest, REJECTS: the others, at video, shot and frame level}."""

    def expand(self, plans):
        return (plans
                | "Key by frames" >> beam.Map(lambda plan: (plan.video.frames_sha256, plan))
                | "Plans per content" >> beam.GroupByKey()
                | "First line per content" >> stage_pardo(_KeepFirstPlan()))


class _KeepFirstPlan(StageFn):
    stage, level = STAGE, "video"
    counts_in = counts_out = False  # a plan is counted at three levels, below

    def judge(self, keyed):
        _, plans = keyed
        plans = sorted(plans, key=lambda plan: plan.video.listed_order)
        for plan in plans:
            self._count(plan, "in")
        first = plans[0]
        self._count(first, "out")
        yield first
        for later in plans[1:]:
            yield from self._reject(later, first)

    def _count(self, plan: VideoPlan, direction: str) -> None:
        count = self.counts.seen if direction == "in" else self.counts.count_out
        count(level="video")
        count(len(plan.shots), level="shot")
        count(sum(len(shot.frame_indices) for shot in plan.shots), level="frame")

    def _reject(self, later: VideoPlan, kept: VideoPlan):
        fields = same_content_reject(later.video, kept.video, by_frames=True)
        yield self.reject(**fields)
        reason, video = fields["reason"], later.video
        inside = f"in {video.where} ({video.key}): {fields['detail']}"
        where = dict(source=video.source, video_id=video.video_id, split=video.split)
        for shot in later.shots:
            yield self.reject(reason, shot.key, level="shot", detail=inside, **where)
            for number in shot.frame_indices:
                yield self.reject(reason, f"{shot.key}/frame{number}", level="frame",
                                  detail=inside, **where)
