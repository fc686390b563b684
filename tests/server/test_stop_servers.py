"""Stop and progress on a page that measures running servers: the streams close
(vLLM aborts the requests, the slot is free), the run ends in the page's one-line
"stopped", nothing is published as finished, and the next run works."""
from __future__ import annotations

import re
import threading
import time
from types import SimpleNamespace

import pytest

from space.records.config import EngineSpec, RequestSpec
from space.records.events import RunFailed, RunFinished, RunStarted
from space.runs.events import Publisher
from space.runs.source import Servers, encoder
from space.server import compare as server_compare
from space.server.client import (
    completion_body,
    describe,
    read_metrics,
    requests_running,
    stream_completion,
)
from space.server.compare import wait_idle
from space.ui.handlers import Handlers
from tests.helpers.page import fetch_record, run

pytestmark = pytest.mark.engine

# runs to its max_tokens (greedy), so a stop always lands mid-stream
LONG = "Write the numbers from 1 to 500 separated by commas."
STREAMING = re.compile(r"(baseline|speculative) server: [1-9]\d*/\d+ tokens, repeat 1/3")
PAGE_SPEC = EngineSpec(method="ngram", k=4, max_model_len=2048)
SHORT = RequestSpec(prompt="Name three colours.", max_tokens=8)
HANG_S = 300  # a hang fails here, not at the CI's limit


def _free(record) -> bool:
    """Neither server ran another request around this run: the stopped one is gone."""
    return not any(r.server["other_traffic"] for r in (record.baseline, record.speculative))


def _readings(record) -> dict:
    """What each server's gauge read around the run (for a failure's message)."""
    return {role: {k: v for k, v in getattr(record, role).server.items() if "request" in k}
            for role in ("baseline", "speculative")}


def test_stop_mid_stream_ends_in_one_line_and_frees_the_servers(pair, no_engines):
    """Through the page's handler, with Stop pressed (the run's cancel token set, as
    the handler's ``finally`` sets it) once a server has streamed tokens."""
    real, heard, shown = Servers(pair).compare, [], []
    publisher = Publisher()
    publisher.subscribe("heard", heard.append)

    def pressing_stop(spec, req, **kw):
        def progress(frac: float, message: str) -> None:
            kw["progress"](frac, message)
            if STREAMING.search(message):
                kw["cancel"].set()  # what Stop does to the run's token
        return real(spec, req, **{**kw, "progress": progress})

    ui = SimpleNamespace(results=SimpleNamespace(status="status", tokens="tokens"))
    h = Handlers(ui, PAGE_SPEC, None, [], compare=pressing_stop, publisher=publisher)
    for update in h.run(LONG, "ngram", "", 4, 0.0, 1.0, 1024, 0, 3, explain=False):
        shown.append(str(update.get("status", "")))
    assert any(STREAMING.search(s) for s in shown)  # progress while the server streamed
    assert "stopped; the engines are free for the next run" in shown[-1]
    assert "\n" not in shown[-1]
    assert [type(e) for e in heard] == [RunStarted]  # neither finished nor failed
    assert not [e for e in heard if isinstance(e, RunFinished | RunFailed)]
    record = Servers(pair).compare(PAGE_SPEC, SHORT, repeats=1)
    assert len(record.speculative.output_token_ids) == 8
    assert _free(record), _readings(record)


def test_the_pages_stop_button_closes_the_streams(server_page, no_engines):
    """Gradio's /cancel (the Stop button) closes the handler; the next run starts and
    finds both servers idle."""
    url, client = server_page
    job = client.submit(LONG, "ngram", "", 4, 0.0, 1.0, 1024, 0, 3, api_name="/run")
    deadline = time.monotonic() + HANG_S
    while not any(STREAMING.search(str(o)) for o in job.outputs()):
        assert time.monotonic() < deadline and not job.done(), job.outputs()[-1:]
        time.sleep(0.05)
    job.cancel()
    out = run(client, "Name three colours.", max_tokens=8)
    labels = [r["label"] for r in client.view_api(return_format="dict", print_info=False)
              ["named_endpoints"]["/run"]["returns"]]
    assert 'data-kind="done"' in str(out[labels.index("Status")])
    record = fetch_record(url, out[labels.index("Download trace (JSON)")])
    assert _free(record), _readings(record)


def test_a_run_waits_for_a_request_still_running(pair, monkeypatch):
    """A request streaming on the baseline server when a run starts (as a stopped
    run's does until vLLM aborts it): the run waits for it to end, and says so. The
    bound is raised to the hang limit, so no machine's speed decides the outcome."""
    monkeypatch.setattr(server_compare, "SETTLE_S", float(HANG_S))
    r = RequestSpec(prompt=LONG, max_tokens=24)
    ids, _ = encoder(PAGE_SPEC, r)
    body = completion_body(describe(pair.baseline).model, ids, r, 24)
    first, told = threading.Event(), []
    other = threading.Thread(target=stream_completion, args=(pair.baseline, body),
                             kwargs={"on_chunk": lambda _c: first.set()})
    other.start()
    assert first.wait(HANG_S)
    wait_idle(pair, progress=lambda _f, message: told.append(message))
    assert requests_running(read_metrics(pair.baseline)) == 0  # it ended first
    assert told == [f"waiting up to {HANG_S} s for the baseline server's running "
                    "requests to end"]
    other.join(HANG_S)
    told.clear()
    wait_idle(pair, progress=lambda _f, message: told.append(message))
    assert told == []  # idle servers: no wait, no line
