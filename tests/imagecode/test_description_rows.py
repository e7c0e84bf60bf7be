"""The descriptions' token counts load spaCy on the first description, not when the step
starts: a build with no description to count (a video-only build, a same-config
rebuild without crowd rounds) never imports spaCy (issue 34: ~2 CPU s of its fixed cost)."""
import os
import subprocess
import sys

from pipelines.imagecode import release
from tests.paths import ROOT

SETUP_ONLY = ("import sys\n"
              "from pipelines.imagecode.release import DescriptionRows\n"
              "DescriptionRows().setup()\n"
              "assert 'spacy' not in sys.modules, 'spaCy imported before a description came'\n")


def test_description_rows_start_without_spacy():
    done = subprocess.run([sys.executable, "-c", SETUP_ONLY], cwd=str(ROOT),
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_description_rows_count_tokens_from_the_first_description(monkeypatch):
    monkeypatch.setattr(release, "description_to_row", lambda kept, tokens: (kept.text, tokens))

    class Kept:
        def __init__(self, text):
            self.text = text

    step = release.DescriptionRows()
    step.setup()
    rows = [row for text in ("a dog runs  past the red car", "two cats")
            for row in step.process(Kept(text))]
    assert rows == [("a dog runs  past the red car", 7), ("two cats", 2)]
