"""Driving the page's run endpoint through gradio_client, and reading what it served."""
from __future__ import annotations

import json
import re
import threading
import time
import urllib.request
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import httpx

from space.common.progress import Progress
from space.records.config import EngineSpec, RequestSpec
from space.records.run import RequestRecord
from space.records.schema import load
from space.records.trace import CompareRecord, make_compare
from space.runs.events import Job
from space.runs.repeats import OnRepeat
from tests.helpers.traces import ngram_run, short_baseline

if TYPE_CHECKING:  # space.engine.core imports vLLM
    from space.engine.core import StepCallback

DEFAULTS = dict(method="ngram", draft="", k=4, temperature=0.0, top_p=1.0, max_tokens=48,
                seed=0, repeats=1)


def fake_compare(spec: EngineSpec, req: RequestSpec, *, repeats: int,
                 on_step: StepCallback | None, progress: Progress | None,
                 warmup: bool | Literal["once"], cancel: threading.Event | None,
                 on_repeat: OnRepeat | None, explain: bool,
                 job: Job | None = None) -> CompareRecord:
    """A fake engine for pages served in-process (a ``space.runs.runner.CompareRunner``,
    like the real one: tests/unit/test_compare_runner.py checks both): the
    hand-written comparison, streamed, and told to the page's observers as the real
    runner tells them (``space.runs.events.published``); the prompt 'boom' fails like a bug would."""
    from space.runs.events import published

    def make() -> CompareRecord:
        if req.prompt == "boom":
            raise RuntimeError("engine exploded")
        cmp = make_compare([short_baseline()], [ngram_run()])
        cmp.speculative.request = cmp.baseline.request = RequestRecord.of(req)  # as the engine
        for s in cmp.speculative.steps:
            if on_step is not None:
                on_step("r", s, {})
        return cmp

    req.validate()
    return published(job or Job(), spec, req, make)


def run(client, prompt, **kw):
    a = {**DEFAULTS, **kw}
    return client.predict(prompt, a["method"], a["draft"], a["k"], a["temperature"],
                          a["top_p"], a["max_tokens"], a["seed"], a["repeats"], api_name="/run")


METRIC_LINE = re.compile(r'^(speclens_\w+)\{([^}]*)\} ([0-9.e+-]+)$')


def scrape(app_url: str) -> dict[tuple[str, frozenset], float]:
    """The app's labelled speclens_* series on /metrics: (name, labels) -> value."""
    with urllib.request.urlopen(app_url + "metrics") as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = METRIC_LINE.match(line)
        if m:
            labels = frozenset(tuple(kv.split("=", 1)) for kv in m.group(2).split(","))
            out[(m.group(1), labels)] = float(m.group(3))
    return out


def delta(before, after, name, **labels) -> float:
    """How much the series ``name{labels}`` moved between two ``scrape``s."""
    key = (name, frozenset((k, f'"{v}"') for k, v in labels.items()))
    return after.get(key, 0.0) - before.get(key, 0.0)


def fetch_record(app_url: str, update: dict) -> CompareRecord:
    """The trace JSON behind the page's download button. With gradio_client's
    default (download_files=True) the value is the client's own copy, already
    fetched from the app at ``app_url``; otherwise it is the app's file data,
    fetched here. (The app's own path lies under its data folder.)"""
    value = update["value"]
    if isinstance(value, dict):
        with urllib.request.urlopen(value["url"]) as r:
            return load(r.read().decode())
    return load(Path(value).read_text(encoding="utf-8"))


class LeavingClient:
    """A page that starts an event and then goes away: Gradio's own protocol
    (queue/join, then the queue/data event stream), with the stream closed mid-run."""

    def __init__(self, app_url: str, api_name: str, data: list) -> None:
        self.url, self.session = app_url, uuid.uuid4().hex
        config = httpx.get(app_url + "config").json()
        fn = next(d["id"] for d in config["dependencies"] if d.get("api_name") == api_name)
        r = httpx.post(app_url + "gradio_api/queue/join",
                       json={"data": data, "fn_index": fn, "session_hash": self.session,
                             "event_data": None, "trigger_id": None})
        r.raise_for_status()
        self._stream = httpx.stream("GET", f"{app_url}gradio_api/queue/data",
                                    params={"session_hash": self.session}, timeout=60)
        self._response = self._stream.__enter__()
        self._lines = self._response.iter_lines()  # one iterator: a stream reads once

    def wait_for(self, text: str, timeout_s: float = 120) -> None:
        """Read the event stream until an update contains ``text``."""
        deadline = time.monotonic() + timeout_s
        for line in self._lines:
            if line.startswith("data:") and text in json.dumps(json.loads(line[5:])):
                return
            assert time.monotonic() < deadline, f"no update with {text!r}"
        raise AssertionError(f"the stream ended before {text!r}")

    def running(self) -> bool:
        """True while the event goes on: its next message is not its end."""
        for line in self._lines:
            if line.startswith("data:"):
                return json.loads(line[5:]).get("msg") != "process_completed"
        return False

    def leave(self) -> None:
        self._stream.__exit__(None, None, None)  # the connection closes: the client is gone
