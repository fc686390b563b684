"""The page measuring the servers: a run through gradio_client gives a server
record, a visitor's other k is one line. (The real-browser rendering of a
server run is not tested yet.)"""
from __future__ import annotations

import socket

import pytest

from space.records.run import SERVER
from tests.helpers.engine import CODE_PROMPT
from tests.helpers.page import fetch_record, run

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def server_page(pair):
    from gradio_client import Client

    from space.observe.prom import Metrics
    from space.records.config import EngineSpec
    from space.runs.servers import page_compare
    from space.ui import app, inputs

    spec = EngineSpec(method="ngram", k=4, max_model_len=2048)
    demo = app.build_demo(spec, Metrics(), inputs.sample_prompts(),
                          compare=page_compare(pair, spec))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _, url, _ = app.launch(demo, Metrics(), port=port)
    yield url, Client(url, verbose=False)
    demo.close()


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
