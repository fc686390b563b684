"""Stop and progress of a server run, on hand-written streams (no server): the
stream is left before the next chunk once the token is set; progress lines name
the server, the tokens and the repeat; the page's Sweep and Tipping tabs in
server mode answer in one line and build nothing."""
from __future__ import annotations

import json
import threading
from types import SimpleNamespace

import httpx
import pytest

from space.common.cancel import Cancelled
from space.records.config import ConfigError, EngineSpec
from space.runs.source import Servers
from space.server.build import Declared
from space.server.client import Server, _read_stream
from space.server.compare import ServerPair, _progress_line

SERVER = Server("speculative", "http://gpu-box:8001/v1")
PAIR = ServerPair(Server("baseline", "http://gpu-box:8000/v1"), SERVER,
                  Declared(method="ngram", k=4))


def _response(n_chunks: int) -> httpx.Response:
    lines = [json.dumps({"choices": [{"token_ids": [i], "text": f"t{i}"}]})
             for i in range(n_chunks)]
    body = "".join(f"data: {line}\n\n" for line in lines)
    return httpx.Response(200, content=body.encode())


def test_a_set_token_leaves_the_stream_before_the_next_chunk():
    stop, seen = threading.Event(), []

    def on_chunk(chunk):
        seen.append(chunk.token_ids)
        if len(seen) == 2:
            stop.set()  # Stop pressed while the second chunk is shown

    with pytest.raises(Cancelled, match="closed after 2 tokens"):
        _read_stream(SERVER, _response(5), 0.0, stop, on_chunk)
    assert seen == [[0], [1]]


def test_progress_lines_name_the_server_tokens_and_repeat(monkeypatch):
    from space.server import compare

    monkeypatch.setattr(compare, "PROGRESS_S", 3600.0)  # one line an hour, after the first
    heard = []
    told = _progress_line(lambda f, m: heard.append((f, m)), "baseline", 2, 4, "repeat 2/2", 1)
    told(0, 64)
    told(10, 64)  # within PROGRESS_S of the first: not shown
    assert heard == [(0.5, "baseline server: 0/64 tokens, repeat 2/2")]
    assert _progress_line(None, "baseline", 0, 2, "repeat 1/1", 1) is None


def test_the_sweep_tab_through_servers_sweeps_concurrency_only():
    from space.ui.sweep_panel import SweepHandlers

    h = SweepHandlers(SimpleNamespace(), EngineSpec(method="ngram", k=4),  # type: ignore[arg-type]
                      source=Servers(PAIR))
    with pytest.raises(ConfigError, match=r"k is fixed by its --speculative-config \(ngram, k=4\)"):
        h._plan("code_editing", "k", "1,2", 8, 1, "ngram", "", 4, None)
    spec, plan = h._plan("code_editing", "concurrency", "1,2", 8, 1, "draft_model", "", 2, None)
    assert (spec.method, spec.k, plan.values) == ("ngram", 4, [1, 2])  # the servers' own


def test_the_tipping_tab_through_servers_says_why_in_one_sentence(monkeypatch):
    from space.runs import tipping
    from space.ui.tipping_panel import TippingHandlers

    monkeypatch.setattr(tipping, "build_curve", None)  # calling it would fail the test
    h = TippingHandlers(SimpleNamespace(status="status"), EngineSpec(method="ngram", k=4),
                        source=Servers(PAIR))
    status = h.measure("ngram", "", 4, progress=lambda *a, **kw: None)["status"]
    assert "a server cannot give" in status and "python -m space tipping" in status
