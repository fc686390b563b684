"""A traffic run in the history (space/records/history.py): its row, its record with or
without the prompts (the operator's --traffic-private), and drawn back from it."""
from __future__ import annotations

import json

from space.records.history import History, traffic_run
from tests.helpers.traffic import two_groups
from vis.traffic import traffic_figure


def secret_result():
    r = two_groups()
    r.skipped = ["line 7: unknown role 'SECRET ROLE'"]
    for it in r.items:
        it.compare.speculative.prompt = it.compare.baseline.prompt = "SECRET PROMPT"
        it.compare.speculative.text = "SECRET OUTPUT"
    return r


def test_a_private_record_keeps_figures_and_no_prompt_text():
    r = secret_result()
    full, private = json.dumps(r.to_dict()), json.dumps(r.to_dict(keep_prompts=False))
    assert "SECRET PROMPT" in full and "SECRET OUTPUT" in full
    assert "SECRET" not in private
    d = json.loads(private)
    assert "items" not in d and [p["line"] for p in d["prompts"]] == [1, 2, 3]
    assert d["skipped"] == ["line 7"] and d["answer"].endswith("skipped 1: line 7")
    assert d["answer"].startswith("grouped by the label field 'category'")


def test_saved_as_a_traffic_row_and_drawn_back(tmp_path):
    history = History(tmp_path / "h.sqlite3")
    row = traffic_run(secret_result().to_dict(keep_prompts=False), "default", "ana")
    assert (row.kind, row.method, row.k, row.user) == ("traffic", "ngram", 4, "ana")
    ws, (lo, hi) = two_groups().weighted_speedup, two_groups().weighted_speedup_ci
    assert row.title == f"traffic: 3 prompts of t.jsonl, {ws:.2f}x (90 % CI {lo:.2f}-{hi:.2f})"
    assert row.verdict is None  # the groups disagree: no one verdict for the traffic
    assert row.speedup == two_groups().weighted_speedup
    run_id = history.save(row)
    found = history.get(run_id)
    assert found is not None and found[0].kind == "traffic"
    fig = traffic_figure(json.loads(found[1]))
    assert [t.name for t in fig.data] == ["speedup", "code", "chat"]
    assert history.delete(run_id, "ana")  # its owner deletes it like any run
