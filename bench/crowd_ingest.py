"""Describe-round ingestion throughput: describer output rows per second through Beam.

    python -m bench.crowd_ingest [--rows 100000] [--sets 20000]

Writes a describer-output CSV for synthetic sets (with a few bad rows), then times
ReadDescriptions (parse, validate against the sets, drop duplicates, reject bad rows) on
Beam's in-process runner. Prints rows/s; the figure includes Beam's start-up, so it is
a floor for larger files.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import tempfile
import time

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from pipelines.imagecode.rounds import ReadDescriptions
from pipelines.imagecode.rounds_schema import AnnotationSet
from pipelines.runners import runner_for
from transforms.core.stage import MAIN, REJECTS, read_stage_counts


def make_inputs(folder: str, n_rows: int, n_sets: int):
    sets = [AnnotationSet(f"msr-vtt-videov{i}-shot0_0", "msr-vtt", ("train", "valid", "test")[i % 3],
                          True, tuple(f"compat/image-sets/s{i}/img{k}.jpg" for k in range(10)))
            for i in range(n_sets)]
    path = os.path.join(folder, "descriptions.csv")
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["set_name", "target_index", "text", "worker"])
        for r in range(n_rows):
            s = sets[r % n_sets]
            target = 12 if r % 1000 == 7 else (r // n_sets) % 10  # a few out-of-range indices
            writer.writerow([s.set_name, target, f"The person on the left raises a hand, take {r}.",
                             f"w{r % 97}"])
    return sets, path


def run(n_rows: int, n_sets: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        sets, path = make_inputs(folder, n_rows, n_sets)
        options = PipelineOptions([])
        pipeline = beam.Pipeline(runner=runner_for(options), options=options)
        known = pipeline | "Sets" >> beam.Create(sets)
        read = pipeline | ReadDescriptions(path, known)
        _ = read[MAIN] | "Count kept" >> beam.combiners.Count.Globally()
        _ = read[REJECTS] | "Count rejected" >> beam.combiners.Count.Globally()
        start = time.perf_counter()
        result = pipeline.run()
        result.wait_until_finish()
        seconds = time.perf_counter() - start
    counts = read_stage_counts(result).get("describe", {})
    return {"rows": n_rows, "sets": n_sets, "seconds": round(seconds, 2),
            "rows_per_second": round(n_rows / seconds, 1), "counters": counts}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--sets", type=int, default=20_000)
    args = parser.parse_args(argv)
    result = run(args.rows, args.sets)
    print(json.dumps(result, indent=2))
    print(f"\ndescribe-round ingestion: {result['rows_per_second']:.0f} rows/s "
          f"({args.rows} rows, {args.sets} sets, in-process runner)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
