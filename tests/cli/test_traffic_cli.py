"""``python -m space traffic FILE`` as a user runs it: bad files are one line and
exit 2; a small labelled file gives its groups, the answer, CSV and JSON."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from space.judge.traffic import GROUP_COLUMNS, PROMPT_COLUMNS
from tests.helpers.cli import ENGINE_FLAGS, cli_in_process

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traffic"


@pytest.mark.parametrize(("content", "args", "needle"), [
    (None, [], "cannot read the traffic file"),
    ('{"prompt": 1}\n[1]\n', [], "no request could be read from"),
    ('{"prompt": "hi"}\n', ["--label-field", "team"], "no request has the label field 'team'"),
    ('{"prompt": "hi"}\n', ["--per-group", "0"], "--per-group must be at least 1, got 0"),
    ('{"prompt": "hi"}\n', ["--method", "none"], "compares a speculative method"),
    ('{"prompt": "hi"}\n', ["--concurrency", "65"], "concurrency must be 1..64, got 65"),
    ('{"prompt": "hi"}\n', ["--until-decided", "--max-minutes", "0"],
     "--max-minutes must be above 0"),
])
def test_bad_traffic_is_one_line_and_exit_2(tmp_path, content, args, needle):
    path = tmp_path / "t.jsonl"
    if content is not None:
        path.write_text(content)
    r = cli_in_process("traffic", str(path), *args)  # the real process: test_cli.py
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0], r.stderr


@pytest.mark.engine
def test_a_labelled_file_gives_groups_answer_csv_and_json(tmp_path):
    groups, prompts, out = tmp_path / "g.csv", tmp_path / "p.csv", tmp_path / "t.json"
    # in this process, with the engines the other CLI runs built (tests/helpers/cli.py)
    r = cli_in_process("traffic", str(FIXTURES / "prompts.csv"), "--max-tokens", "8",
                       "--repeats", "1", "--concurrency", "2", *ENGINE_FLAGS, "--csv", str(groups),
                       "--prompts-csv", str(prompts), "--json", str(out))
    assert r.returncode == 0, r.stderr
    assert "read 2 requests (csv, labels from label); skipped 2: line 4: the prompt is empty" \
        in r.stdout
    assert "grouped by the label field 'label'" in r.stdout
    assert "speculative decoding: " in r.stdout and "vllm serve " in r.stdout
    assert "measured 2 requests at once" in r.stdout  # each group's prompt, filled to 2
    rows = list(csv.DictReader(groups.open()))
    assert list(rows[0]) == GROUP_COLUMNS and [x["group"] for x in rows] == ["edit", "creative"]
    per_prompt = list(csv.DictReader(prompts.open()))
    assert list(per_prompt[0]) == PROMPT_COLUMNS
    assert [(x["group"], x["line"]) for x in per_prompt] == [("edit", "2"), ("creative", "3")]
    assert int(per_prompt[0]["output_tokens"]) <= 8
    d = json.loads(out.read_text())
    assert d["weighting"] == "measured" and len(d["items"]) == 2 and d["concurrency"] == 2
    assert d["items"][1]["temperature"] == 0.8  # the file's, over the run's 0
    assert d["skipped"][0].startswith("line 4: ")
