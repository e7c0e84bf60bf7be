"""Split leakage checks for a release (recorded in the manifest).

Video sets keep their video's split, and one manifest line per video content is mined
(the bytes: transforms/video/manifest.py; the decoded frames: video_content.py), so no
video should appear in two splits. This checks it on what was actually released, by the
digest of the videos' decoded frames rather than their ids or bytes: one file listed
under two ids, or one video muxed two ways, is one video. It also reports the manifest
lines that were rejected because their content was listed in another split
(`same_content_other_split`, found on the bytes or on the frames), with the first few of
them, so `leakage.on_conflict: fail` can name them.

For static sets, the same image can be a neighbour in sets of different splits (the paper
samples kNN sets from one collection); that overlap is measured and reported.
"""
from __future__ import annotations

import apache_beam as beam

from pipelines.imagecode import reasons

EXAMPLES = 10  # split conflicts listed by name in the report (all are in rejects/)
# a conflict is one manifest line: its shots and frames are rejects with the same reason
LINE_LEVELS = ("line", "video")


def video_content(video) -> str:
    """What a video is judged by: its decoded frames' digest, else (a ref never decoded
    here) its bytes' sha256, else its id; prefixed with which it is."""
    if video.frames_sha256:
        return f"frames:{video.frames_sha256}"
    if video.content_sha256:
        return f"bytes:{video.content_sha256}"
    return f"id:{video.key}"


class CheckLeakage(beam.PTransform):
    """{"video_sets": FrameSet, "videos": VideoRef (the videos mined, with their frame
    digests), "video_rejects": Reject (the manifest's and video_content's), "static_rows":
    static set rows} -> one report dict."""

    def expand(self, inputs):
        sets_by_video = (inputs["video_sets"] | "Set splits" >> beam.Map(
            lambda s: (f"{s.source}/{s.video_id}", s.split)))
        content_by_video = (inputs["videos"] | "Video contents" >> beam.Map(
            lambda v: (v.key, video_content(v))))
        videos = (
            {"splits": sets_by_video, "content": content_by_video}
            | "Join sets and contents" >> beam.CoGroupByKey()
            | "Released content" >> beam.FlatMap(_released_content)
            | "Per content" >> beam.GroupByKey()
            | "Contents in several splits" >> beam.FlatMap(_in_several_splits))
        conflicts = (
            inputs["video_rejects"]
            | "Split conflicts" >> beam.Filter(lambda r: r.reason == reasons.SAME_CONTENT_OTHER_SPLIT
                                               and r.level in LINE_LEVELS)
            | "Name conflicts" >> beam.Map(lambda r: f"{r.file}:{r.line} ({r.source}/{r.video_id}, "
                                                     f"{r.split}): {r.detail}")
            | "Conflict count and examples" >> beam.CombineGlobally(
                _CountAndFirst(EXAMPLES)).without_defaults())
        images = (inputs["static_rows"]
                  | "Image splits" >> beam.FlatMap(lambda r: [(i, r["split"]) for i in r["image_ids"]])
                  | "Per image" >> beam.GroupByKey()
                  | "Splits per image" >> beam.Map(lambda kv: len(set(kv[1])))
                  | "Image overlap" >> beam.combiners.Count.PerElement())
        # one report, made once from the three summaries read whole (each is small: the
        # leaking videos, one (count, examples) pair or none, a count per number of splits)
        return (inputs["video_sets"].pipeline | "Once" >> beam.Impulse()
                | "Report" >> beam.Map(_report, videos=beam.pvalue.AsList(videos),
                                       conflicts=beam.pvalue.AsList(conflicts),
                                       images=beam.pvalue.AsDict(images)))


def _released_content(joined):
    video_key, parts = joined
    contents = list(parts["content"]) or [f"id:{video_key}"]  # sets always come from a listed video
    for split in set(parts["splits"]):
        yield contents[0], (video_key, split)


def _in_several_splits(keyed):
    content, videos = keyed
    videos = set(videos)
    splits = sorted({split for _, split in videos})
    if len(splits) > 1:
        yield {"content": content, "videos": sorted({key for key, _ in videos}),
               "splits": splits}


class _CountAndFirst(beam.CombineFn):
    """(how many, the first `k` in sorted order): the same on every runner."""

    def __init__(self, k: int):
        self._k = k

    def create_accumulator(self):
        return 0, []

    def add_input(self, acc, item):
        n, first = acc
        return n + 1, sorted(first + [item])[: self._k]

    def merge_accumulators(self, accs):
        accs = list(accs)
        return (sum(n for n, _ in accs),
                sorted(item for _, first in accs for item in first)[: self._k])

    def extract_output(self, acc):
        return acc


def _report(_, videos, conflicts, images) -> dict:
    """`conflicts`: [(count, examples)], or [] when there were none."""
    shared = sum(n for splits, n in images.items() if splits > 1)
    n_conflicts, examples = conflicts[0] if conflicts else (0, [])
    return {
        "videos_in_several_splits": sorted(videos, key=lambda v: v["content"]),
        "video_leakage": bool(videos),
        "video_split_conflicts_rejected": n_conflicts,
        "video_split_conflict_examples": examples,
        "static_images": sum(images.values()),
        "static_images_in_several_splits": shared,
    }
