"""Every file of the repository a guide names is there: a newcomer who follows README.md,
docs/ or a benchmark's README to `pipelines/imagecode/video/mining.py` finds it. A module
moved or renamed takes every mention of it along (issue 46: no old path left behind)."""
import re
import subprocess

from tests.paths import ROOT

# a path from the repository root, as the guides write them (`pipelines/vsr/records.py`)
NAMED_PATH = re.compile(r"\b(?:pipelines|transforms|schemas|tests|bench|scripts|docs|docker)"
                        r"/[A-Za-z0-9_/.-]+\.(?:py|md|yaml|html|tsv|json|sh)\b")


def guides():
    listed = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout.split()
    return [path for path in listed if not path.startswith("samples/")]


def test_every_path_a_guide_names_exists():
    named = {(guide, path) for guide in guides()
             for path in NAMED_PATH.findall((ROOT / guide).read_text(encoding="utf-8"))}
    assert len(named) > 100, "the guides name few paths: the pattern finds nothing"
    assert sorted((guide, path) for guide, path in named if not (ROOT / path).exists()) == []
