"""The stage contract's arithmetic on counters already read back (no Beam): a command
that only reads a release, such as `verify`, checks a manifest's counters with it.

    {stage: {"<level>.in": n, "<level>.out": n, "<level>.rejected.<reason>": n, ...}}

`reconcile`: per stage and level, in == out + rejected. `check_links`: what one stage
passed on is what the next took in. `data_counts`: a run's counters less those of its
work (transforms/core/stage.py StageCounts.work), i.e. what it counted of the data.
"""
from __future__ import annotations


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


def data_counts(counts: dict, work: dict) -> dict:
    """`counts` less the counters of `work`: what the run counted of the data."""
    kept = {stage: {name: n for name, n in names.items() if name not in work.get(stage, {})}
            for stage, names in counts.items()}
    return {stage: names for stage, names in kept.items() if names}


def merged(stages: dict, work: dict) -> dict:
    """A run's counters whole again: the data's and its work's (a release's MANIFEST.json
    `stages` and its BUILD.json `work`)."""
    out = {stage: dict(names) for stage, names in stages.items()}
    for stage, names in work.items():
        out.setdefault(stage, {}).update(names)
    return {stage: dict(sorted(names.items())) for stage, names in sorted(out.items())}
