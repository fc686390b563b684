"""``python -m space lesson``: a saved comparison or a history run in, one HTML file out.
In-process (``space.cli.main.main``): the command builds no engine."""
from __future__ import annotations

import json

import pytest

from space.cli.main import main
from space.records.history import FILENAME, History, compare_run
from space.records.trace import dumps
from tests.helpers.hostile import hostile_compare
from tests.helpers.lessons import problems, views_compare


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def compare_file(tmp_path):
    path = tmp_path / "compare.json"
    path.write_text(dumps(views_compare()))
    return path


def test_a_saved_comparison_becomes_a_lesson_with_notes(tmp_path, capsys, compare_file):
    notes = tmp_path / "notes.json"
    notes.write_text(json.dumps({"4": "the draft was far off <here>"}))
    out = tmp_path / "lesson.html"
    code, stdout, stderr = run(capsys, "lesson", str(compare_file), "-o", str(out),
                               "--notes", str(notes))
    assert (code, stderr) == (0, "")
    assert stdout.startswith(f"wrote {out} (") and "1 notes" in stdout
    page = out.read_text(encoding="utf-8")
    assert 'data-note-step="4"' in page and "far off &lt;here&gt;" in page
    assert "compare.json" in page and problems(page) == []


def test_a_history_run_becomes_a_lesson(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path))
    run_id = History(tmp_path / FILENAME).save(compare_run(views_compare(), None),
                                               now_s=1_796_400_000.0)
    out = tmp_path / "lesson.html"
    code, stdout, stderr = run(capsys, "lesson", str(run_id), "-o", str(out))
    assert (code, stderr) == (0, "")
    page = out.read_text(encoding="utf-8")
    assert f"run history #{run_id}" in page and "2026-12-04 16:00 UTC" in page


def test_a_hostile_comparison_is_escaped(tmp_path, capsys):
    src = tmp_path / "hostile.json"
    src.write_text(json.dumps(hostile_compare()))
    out = tmp_path / "lesson.html"
    assert run(capsys, "lesson", str(src), "-o", str(out))[0] == 0
    assert problems(out.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("case, needle", [
    ("missing", "cannot read"),
    ("not a trace", "not a SpecLens trace"),
    ("note off the run", "a note on engine step 99, which the lesson does not step through"),
    ("bad notes", "notes are not valid JSON"),
    ("no history", "there is no run history"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, compare_file, case,
                                          needle):
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path / "data"))
    notes = tmp_path / "notes.json"
    notes.write_text({"note off the run": '{"99": "x"}', "bad notes": "{"}.get(case, "{}"))
    (tmp_path / "other.json").write_text('{"prompts": []}')
    source = {"missing": str(tmp_path / "nope.json"), "not a trace": str(tmp_path / "other.json"),
              "no history": "7"}.get(case, str(compare_file))
    out = tmp_path / "lesson.html"
    code, stdout, stderr = run(capsys, "lesson", source, "-o", str(out), "--notes", str(notes))
    assert code == 2 and stdout == "" and not out.exists()
    assert len(stderr.strip().splitlines()) == 1 and needle in stderr
    assert not (tmp_path / "data").exists()  # no empty history made on the way
