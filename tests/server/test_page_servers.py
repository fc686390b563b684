"""The page measuring the servers: a run through gradio_client gives a server
record, a visitor's other k is one line, the Traffic tab runs through them (the
page: ``server_page`` in conftest.py; in Chromium: test_browser_servers.py)."""
from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from space.records.run import SERVER
from tests.helpers.engine import CODE_PROMPT
from tests.helpers.page import fetch_record, run

pytestmark = pytest.mark.engine


def test_page_run_through_servers(server_page):
    url, client = server_page
    out = run(client, CODE_PROMPT, max_tokens=24)
    labels = [r["label"] for r in client.view_api(return_format="dict", print_info=False)
              ["named_endpoints"]["/run"]["returns"]]
    record = fetch_record(url, out[labels.index("Download trace (JSON)")])
    assert record.speculative.config.source == SERVER == record.baseline.config.source
    assert "through a vLLM" in str(out[labels.index("Status")])


def test_page_refuses_another_k(server_page):
    _, client = server_page
    out = run(client, CODE_PROMPT, k=2, max_tokens=8)
    labels = [r["label"] for r in client.view_api(return_format="dict", print_info=False)
              ["named_endpoints"]["/run"]["returns"]]
    assert "runs ngram with k=4" in str(out[labels.index("Status")])


def test_sweep_and_tipping_tabs_measure_the_servers(server_page, no_engines, monkeypatch):
    """Concurrency is swept through the servers; k, and the tipping curve, are one
    line each; nothing builds an in-process engine."""
    from space.runs import sweep, tipping

    # the sweep runs the one pipeline through the servers (no_engines fails any engine
    # built here); a grid and a curve are refused before they start
    for name, module in (("run_grid", sweep), ("build_curve", tipping)):
        monkeypatch.setattr(module, name, _refuse)
    _, client = server_page
    status, _plot, table, *_ = client.predict("code_editing", "concurrency", "1,2", 8, 1,
                                              "ngram", "", 4, None, api_name="/sweep")
    assert 'data-kind="done"' in status and "2 points of code_editing" in status
    assert [row[0] for row in table["data"]] == [1, 2]  # the table's concurrency column
    status = client.predict("code_editing", "k", "2,4", 8, 1, "ngram", "", 4, None,
                            api_name="/sweep")[0]
    assert 'data-kind="error"' in status and "fixed by its --speculative-config" in status
    status = client.predict("ngram", "", 4, None, "length", api_name="/tipping")[1]
    assert "a server cannot give" in status and "python -m space tipping" in status


def _refuse(*_a, **_kw):
    raise AssertionError("an in-process sweep or tipping curve ran on a page measuring servers")


def test_traffic_tab_through_servers(server_page, tmp_path):
    from gradio_client import handle_file

    _, client = server_page
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"prompt": CODE_PROMPT, "category": "code"}) + "\n")
    out = client.predict(handle_file(str(path)), "", 1, 4, 1, 1, "ngram", "", 4, None,
                         api_name="/traffic")
    labels = [r["label"] for r in client.view_api(return_format="dict", print_info=False)
              ["named_endpoints"]["/traffic"]["returns"]]
    assert "done: 1 prompts in 1 groups" in str(out[0])  # the status
    value = out[labels.index("Download everything (JSON)")]["value"]
    if isinstance(value, dict):  # the app's file data, not fetched by the client
        with urllib.request.urlopen(value["url"]) as r:
            d = json.loads(r.read().decode())
    else:
        d = json.loads(Path(value).read_text(encoding="utf-8"))
    (it,) = d["items"]
    assert it["compare"]["speculative"]["config"]["source"] == SERVER
    assert it["compare"]["baseline"]["config"]["source"] == SERVER
