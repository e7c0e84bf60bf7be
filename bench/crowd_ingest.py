"""Describe-round ingestion throughput: describer output rows per second through Beam.

    python -m bench.crowd_ingest [--rows 100000] [--sets 20000]

Writes a describer-output CSV for synthetic sets (with a few bad rows; each row carries
its describe task's task_fingerprint, as a platform export does), then times
ReadDescriptions (parse, validate against the sets, check what each worker saw against
the describe tasks, drop duplicates, reject bad rows) on Beam's in-process runner. Prints rows/s; the figure includes Beam's start-up, so it is
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

from pipelines.beam_runners import runner_for
from pipelines.imagecode.crowd.rounds import MakeDescribeTasks, ReadDescriptions, describe_tasks
from pipelines.imagecode.crowd.records import AnnotationSet, frame_identity
from transforms.core.stage import MAIN, REJECTS, read_stage_counts


SEED = 0


def make_inputs(folder: str, n_rows: int, n_sets: int):
    sets = [AnnotationSet(f"msr-vtt-videov{i}-shot0_0", "msr-vtt", ("train", "valid", "test")[i % 3],
                          True, tuple(f"compat/image-sets/s{i}/img{k}.jpg" for k in range(10)),
                          tuple(frame_identity(f"{i:064x}", k) for k in range(10)))
            for i in range(n_sets)]
    tasks = [describe_tasks(s, SEED) for s in sets]
    path = os.path.join(folder, "descriptions.csv")
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["set_name", "target_index", "text", "worker", "task_fingerprint"])
        for r in range(n_rows):
            task = tasks[r % n_sets][(r // n_sets) % 3]
            target = 12 if r % 1000 == 7 else task.target_index  # a few out-of-range indices
            writer.writerow([task.set_name, target, f"The person on the left raises a hand, take {r}.",
                             f"w{r % 97}", task.view().fingerprint])
    return sets, path


def run(n_rows: int, n_sets: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        sets, path = make_inputs(folder, n_rows, n_sets)
        options = PipelineOptions([])
        pipeline = beam.Pipeline(runner=runner_for(options), options=options)
        known = pipeline | "Sets" >> beam.Create(sets)
        tasks = known | MakeDescribeTasks(SEED)
        read = pipeline | ReadDescriptions(path, known, tasks[MAIN])
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
