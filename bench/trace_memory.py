"""What holds the memory of a run at its peak: Python's tracemalloc around any module.

    python -m bench.trace_memory [--top 15] [--frames 30] MODULE [ARGS ...]
    e.g. python -m bench.trace_memory pipelines fg build --config sample ... --quiet

Runs MODULE as `python -m MODULE ARGS` in this process with tracemalloc on, takes a
snapshot whenever the traced memory passes its highest level so far by 10% (checked
every 0.5 s), and at the end prints the allocation sites of the highest snapshot, each
with the innermost frames of the project (pipelines/, transforms/, schemas/) or, when
none, the innermost frame, largest first. numpy arrays are traced (numpy reports its
buffers to tracemalloc); memory that C++ libraries allocate themselves (FAISS, torch's
allocator) is not. Tracing slows a run down several times: use it on small inputs.
"""
from __future__ import annotations

import argparse
import os
import runpy
import signal
import sys
import threading
import tracemalloc

PROJECT = tuple(os.sep + p + os.sep for p in ("pipelines", "transforms", "schemas", "bench"))


def _site(trace: tracemalloc.Traceback) -> str:
    ours = [f for f in trace if any(p in f.filename for p in PROJECT)]
    frames = ours[-2:] if ours else list(trace)[-1:]
    return " <- ".join(f"{_short(f.filename)}:{f.lineno}" for f in reversed(frames))


def _short(path: str) -> str:
    for marker in ("site-packages" + os.sep, *PROJECT):
        at = path.find(marker)
        if at >= 0:
            return path[at + (len(marker) if marker.startswith("site") else 1):]
    return path


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--frames", type=int, default=12)
    parser.add_argument("module")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    a = parser.parse_args(argv)
    tracemalloc.start(a.frames)
    best = {"level": 0, "snapshot": None}
    stop = threading.Event()

    def watch():
        while not stop.wait(0.5):
            current, _ = tracemalloc.get_traced_memory()
            if current > 1.1 * best["level"]:
                best["level"] = current
                best["snapshot"] = tracemalloc.take_snapshot()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    sys.argv = [a.module, *a.args]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))   # `timeout` still gets the report
    try:
        runpy.run_module(a.module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code not in (0, None):
            print(f"trace_memory: {a.module} exited {e.code}", file=sys.stderr)
    finally:
        stop.set()
        watcher.join()
        _, peak = tracemalloc.get_traced_memory()
        snapshot = best["snapshot"]
        print(f"\ntrace_memory: traced peak {peak / 2 ** 20:.0f} MiB; at the highest snapshot "
              f"{best['level'] / 2 ** 20:.0f} MiB held by:", file=sys.stderr)
        if snapshot is not None:
            sites = {}
            for stat in snapshot.statistics("traceback"):
                site = _site(stat.traceback)
                size, count = sites.get(site, (0, 0))
                sites[site] = (size + stat.size, count + stat.count)
            for site, (size, count) in sorted(sites.items(), key=lambda kv: -kv[1][0])[:a.top]:
                print(f"  {size / 2 ** 20:8.1f} MiB {count:9d} blocks  {site}", file=sys.stderr)


if __name__ == "__main__":
    main()
