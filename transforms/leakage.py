"""Split leakage checks for a release (recorded in the manifest).

Video sets keep their video's split, so no video should appear in two splits; this
checks it on what was actually released rather than trusting the construction. For
static sets, the same image can be a neighbour in sets of different splits (the paper
samples kNN sets from one collection); that overlap is measured and reported.
"""
from __future__ import annotations

import apache_beam as beam


class CheckLeakage(beam.PTransform):
    """(video sets, static set rows) -> one report dict."""

    def expand(self, inputs):
        video_sets, static_rows = inputs
        videos = (video_sets
                  | "Video splits" >> beam.Map(lambda s: (f"{s.source}/{s.video_id}", s.split))
                  | "Per video" >> beam.GroupByKey()
                  | "Videos in several splits" >> beam.FlatMap(
                      lambda kv: [(kv[0], sorted(set(kv[1])))] if len(set(kv[1])) > 1 else [])
                  | "Video list" >> beam.combiners.ToList())
        images = (static_rows
                  | "Image splits" >> beam.FlatMap(lambda r: [(i, r["split"]) for i in r["image_ids"]])
                  | "Per image" >> beam.GroupByKey()
                  | "Splits per image" >> beam.Map(lambda kv: len(set(kv[1])))
                  | "Image overlap" >> beam.combiners.Count.PerElement()
                  | "Image overlap dict" >> beam.combiners.ToDict())
        return (videos | "Report" >> beam.Map(_report, images=beam.pvalue.AsSingleton(images)))


def _report(videos_in_several_splits, images) -> dict:
    shared = sum(n for splits, n in images.items() if splits > 1)
    return {
        "videos_in_several_splits": sorted(videos_in_several_splits),
        "video_leakage": bool(videos_in_several_splits),
        "static_images": sum(images.values()),
        "static_images_in_several_splits": shared,
    }
