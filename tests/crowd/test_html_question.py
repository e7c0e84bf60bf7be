"""MTurk's API route (issue 44, item 7): each HIT's HTMLQuestion, rendered from a round's
worker page and one row of its batch input, is valid against MTurk's HTMLQuestion schema
(tests/crowd/data/HTMLQuestion.xsd, as MTurk's API reference documents it: no download),
and holds exactly the page the requester UI route would show for that row, every
placeholder filled. Every round of every benchmark (tests/crowd/rounds.py), and the
`htmlquestions` command on a release's files."""
import csv
import os
import xml.etree.ElementTree as ElementTree

import pytest
import xmlschema   # requirements-dev.txt

from pipelines.crowd import htmlquestions
from tests.crowd.rounds import ROUNDS
from transforms.core.errors import InputError
from transforms.crowd.html_question import MAX_QUESTION_CHARS, NAMESPACE, html_question, questions
from transforms.crowd.pages import fill, page_template
from transforms.crowd.task_files import csv_line

SCHEMA = xmlschema.XMLSchema(os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "HTMLQuestion.xsd"))


def as_batch_row(task: dict) -> dict:
    """A task row as the batch input CSV holds it (and csv.DictReader gives it back)."""
    return next(csv.DictReader([csv_line(task), csv_line(task.values())]))


def content(question: str) -> str:
    return ElementTree.fromstring(question.encode("utf-8")).find(f"{{{NAMESPACE}}}HTMLContent").text


@pytest.mark.parametrize("round_", ROUNDS, ids=[r.id for r in ROUNDS])
def test_every_pages_hit_is_a_valid_html_question(round_):
    template = page_template(round_.page, "https://cdn.example.org/release/")
    row = as_batch_row(round_.task)
    [(number, question)] = list(questions(template, [row]))
    assert number == 1 and SCHEMA.is_valid(question), SCHEMA.validate(question)
    page = content(question)
    assert page == fill(template, row) and "${" not in page
    assert page.startswith("<!DOCTYPE html>") and 'name="assignmentId"' in page and "externalSubmit" in page
    assert len(question) <= MAX_QUESTION_CHARS


def test_a_text_that_would_end_the_cdata_section_stays_inside_it():
    retrieve = next(r for r in ROUNDS if r.id == "imagecode-retrieve")
    row = dict(as_batch_row(retrieve.task), text="A ]]> B & <i>C</i>")
    [(_, question)] = list(questions(page_template(retrieve.page), [row]))
    assert SCHEMA.is_valid(question)
    assert "A ]]&gt; B &amp; &lt;i&gt;C&lt;/i&gt;" in content(question)   # escaped as the preview escapes it
    raw = "<p>x]]>y</p>"
    assert content(html_question(raw)) == raw


def test_the_command_writes_a_question_per_batch_row(tmp_path, capsys):
    describe = next(r for r in ROUNDS if r.id == "imagecode-describe")
    release = tmp_path / "imagecode" / "1.0.0"
    (release / "crowd" / "pages").mkdir(parents=True)
    (release / "crowd" / "pages" / "describe.html").write_text(page_template(describe.page, "https://cdn/x/"))
    rows = [describe.task, dict(describe.task, target_index=7, set_name="open-images-2")]
    (release / "crowd" / "describe_tasks.csv").write_text(
        "\n".join([csv_line(describe.task)] + [csv_line(r.values()) for r in rows]) + "\n")
    out = tmp_path / "hits"
    assert htmlquestions.main([str(release), "describe", "--output", str(out), "--frame-height", "900"]) == 0
    written = sorted(os.listdir(out))
    assert written == ["describe-1.xml", "describe-2.xml"]
    second = (out / "describe-2.xml").read_text()
    assert SCHEMA.is_valid(second) and 'value="open-images-2"' in content(second) and "<FrameHeight>900<" in second
    assert htmlquestions.main([str(release), "retrieve", "--output", str(out)]) == 2
    assert "no worker page retrieve" in capsys.readouterr().err
    with pytest.raises(InputError, match="row 1 of the batch input: the page asks for"):
        list(questions(page_template(describe.page), [{"set_name": "s"}]))
