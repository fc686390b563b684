"""The page measuring the servers: a run through gradio_client gives a server
record, a visitor's other k is one line (the page: ``server_page`` in conftest.py;
in Chromium: test_browser_servers.py)."""
from __future__ import annotations

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
