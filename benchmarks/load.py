"""Load and faults: concurrent visitors on loopback, then faults injected for real.

    python benchmarks/load.py --clients 20 [--url http://127.0.0.1:7860/] [--json load.json]

Without ``--url`` it starts the app on a free port with the test-only engine
fault installed (``python -m tests.helpers.fault_app``). Then:

1. alone: ``--alone-runs`` short runs one after another (the baseline figure);
2. load: ``--clients`` visitors at once, each with its own session, doing one
   short run (``--max-tokens``) and, while it waits or runs, a page load (the
   HTML, /config and the memory panel) and a replay of a saved trace: a
   bounded 3 x clients requests. The server's RSS is sampled throughout;
3. faults, each followed by a normal run that must work: an engine error
   raised inside the step loop (the hook), a client that disconnects mid-run,
   a malformed upload, a sweep cancelled after its first point.

Reports completed requests, errors, server errors (an exception that escaped a
handler) and hangs (no answer within ``--hang-s``), queue waits (submit to the
run's start), server memory before / peak during / after (RSS from /metrics'
process_resident_memory_bytes), and the baseline engine's TPOT in runs under
load against alone. Take figures on a quiet machine: another CPU-heavy process
slows every run on a 2-core box.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: space/ is the project's package

from space.common import reaper  # noqa: E402
from space.records.schema import load  # noqa: E402
from tests.helpers.faults import FAULT_MARKER, FAULT_STEP  # noqa: E402

FLAGS = ["--kv-cache-mib", "256", "--max-model-len", "2048"]
PROMPT = "Name three colours."
LONG_PROMPT = "Write the numbers from 1 to 500 separated by commas."
UNNAMED = "has raised an exception but has not enabled verbose error reporting"
HOSTILE_INDEX = '"><img src=x onerror=alert(1)>'  # where the schema wants an integer


@dataclass
class Outcome:
    """One request of one visitor."""

    kind: str                            # run | replay | page
    client: int
    latency_s: float                     # submit to answer
    ok: bool
    hang: bool = False                   # no answer within --hang-s
    server_error: bool = False           # an exception escaped a handler, or HTTP 5xx
    message: str = ""
    queue_wait_s: float | None = None    # runs: submit to the start of processing
    baseline_tpot_s: float | None = None  # runs: the baseline engine's TPOT (server's trace)


def status_of(html: str) -> tuple[str, str]:
    """(data-kind, visible text) of the page's status box."""
    kind = re.search(r'data-kind="(\w+)"', html or "")
    return (kind.group(1) if kind else "?"), re.sub(r"<[^>]+>", "", html or "").strip()


class App:
    """The server: started here (the fault hook on), or one already running at ``url``."""

    def __init__(self, url: str | None, log_dir: Path, fault_hook: bool = False) -> None:
        self.proc: subprocess.Popen | None = None
        self.url = url or self._start(log_dir)
        self.fault_hook = fault_hook or url is None  # started here: always on
        self._wait_ready()

    def _start(self, log_dir: Path) -> str:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False"}
        self.log = log_dir / "app.log"
        with open(self.log, "w") as out:
            # Its own data folder: the app locks the one it uses (the default may be in use).
            # The test-only engine fault installed (tests/helpers/fault_app.py).
            self.proc = reaper.spawn([sys.executable, "-m", "tests.helpers.fault_app",
                                      "--fault-at", str(FAULT_STEP), "--port", str(port),
                                      *FLAGS, "--data-dir", str(log_dir / "data")],
                                     cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
        return f"http://127.0.0.1:{port}/"

    def _wait_ready(self, timeout_s: float = 300) -> None:
        deadline = time.monotonic() + timeout_s
        while b"speclens_engines_ready 1.0" not in self._metrics():
            if (self.proc and self.proc.poll() is not None) or time.monotonic() > deadline:
                raise SystemExit(f"the app did not get ready (log: {getattr(self, 'log', '-')})")
            time.sleep(0.5)

    def _metrics(self) -> bytes:
        try:
            with urllib.request.urlopen(self.url + "metrics", timeout=5) as r:
                return r.read()
        except OSError:
            return b""

    def rss_bytes(self) -> int | None:
        found = re.search(rb"^process_resident_memory_bytes (\S+)$", self._metrics(), re.M)
        return int(float(found.group(1))) if found else None

    def close(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Visitor:
    """One browser's worth of requests, in its own Gradio session."""

    def __init__(self, url: str, index: int, hang_s: float) -> None:
        from gradio_client import Client

        self.url, self.index, self.hang_s = url, index, hang_s
        self.last_trace = ""  # the JSON of the last run's trace
        self.client = Client(url, verbose=False)
        self.labels = [r["label"] for r in self.client.view_api(
            return_format="dict", print_info=False)["named_endpoints"]["/run"]["returns"]]

    def run(self, prompt: str = PROMPT, max_tokens: int = 16) -> Outcome:
        from gradio_client.utils import Status

        t0 = time.monotonic()
        job = self.client.submit(prompt, "ngram", "", 4, 0.0, 1.0, max_tokens, 0, 1, None,
                                 api_name="/run")
        started = None
        while not job.done():
            if started is None and job.status().code in (Status.PROCESSING, Status.ITERATING,
                                                          Status.PROGRESS):
                started = time.monotonic()
            if time.monotonic() - t0 > self.hang_s:
                job.cancel()
                return Outcome("run", self.index, time.monotonic() - t0, False, hang=True)
            time.sleep(0.05)
        out = self._result(job, "run", t0)
        if isinstance(out, Outcome):
            return out
        kind, text = status_of(out[self.labels.index("Status")])
        result = Outcome("run", self.index, time.monotonic() - t0, kind == "done",
                         server_error="the run failed" in text and FAULT_MARKER not in prompt,
                         message=text[:200], queue_wait_s=(started or time.monotonic()) - t0)
        if kind == "done":
            record = self._record(out[self.labels.index("Download trace (JSON)")])
            result.baseline_tpot_s = record.baseline.tpot_s
        return result

    def _result(self, job, kind: str, t0: float):
        try:
            return job.result(timeout=self.hang_s)
        except TimeoutError:
            return Outcome(kind, self.index, time.monotonic() - t0, False, hang=True)
        except Exception as exc:  # gradio_client's AppError: the server refused or failed
            return Outcome(kind, self.index, time.monotonic() - t0, False,
                           server_error=UNNAMED in str(exc), message=str(exc)[:200])

    def _record(self, update):
        """The run's trace, from the page's download button (kept for replays).
        gradio_client has already fetched the file: the value is its own copy,
        or, when it did not download, the file's data with the app's URL."""
        value = update["value"] if isinstance(update, dict) else update
        if isinstance(value, dict):
            with urllib.request.urlopen(value["url"], timeout=30) as r:
                self.last_trace = r.read().decode()
        else:
            self.last_trace = Path(value).read_text(encoding="utf-8")
        return load(self.last_trace)

    def replay(self, path: Path) -> Outcome:
        from gradio_client import handle_file

        t0 = time.monotonic()
        out = self._result(self.client.submit(handle_file(str(path)), api_name="/replay"),
                           "replay", t0)
        if isinstance(out, Outcome):
            return out
        kind, text = status_of(out[self.labels.index("Status")])
        return Outcome("replay", self.index, time.monotonic() - t0, kind == "done",
                       message=text[:200])

    def page_load(self) -> Outcome:
        """What a browser opening the link asks for: the HTML, /config, the memory panel."""
        t0 = time.monotonic()
        try:
            for path in ("", "config"):
                r = httpx.get(self.url + path, timeout=self.hang_s)
                if r.status_code != 200:
                    return Outcome("page", self.index, time.monotonic() - t0, False,
                                   server_error=r.status_code >= 500, message=str(r.status_code))
        except httpx.TimeoutException:
            return Outcome("page", self.index, time.monotonic() - t0, False, hang=True)
        out = self._result(self.client.submit(fn_index=memory_fn(self.client.config)), "page", t0)
        return out if isinstance(out, Outcome) else Outcome("page", self.index,
                                                            time.monotonic() - t0, True)


def memory_fn(config: dict) -> int:
    """The event behind the Memory tab's Refresh button (the page runs it on load too)."""
    button = next(c["id"] for c in config["components"]
                  if c.get("props", {}).get("elem_id") == "memory-refresh")
    return next(d["id"] for d in config["dependencies"]
                if [button, "click"] in [list(t) for t in d["targets"]])


class MemoryWatch:
    """The server's RSS every ``every_s`` while the load runs: the peak."""

    def __init__(self, app: App, every_s: float = 0.5) -> None:
        self.app, self.every_s, self.peak = app, every_s, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(self.every_s):
            self.peak = max(self.peak, self.app.rss_bytes() or 0)

    def __enter__(self) -> MemoryWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def one_visitor(url: str, index: int, trace: Path, max_tokens: int, hang_s: float,
                start: threading.Barrier) -> list[Outcome]:
    """A run, and beside it (while the run waits or runs) a page load and a replay."""
    v = Visitor(url, index, hang_s)
    start.wait(timeout=hang_s)  # a visitor that could not connect breaks it for all
    with ThreadPoolExecutor(1) as side:
        others = side.submit(lambda: [v.page_load(), v.replay(trace)])
        ran = v.run(max_tokens=max_tokens)
        return [ran, *others.result()]


def load_phase(app: App, clients: int, trace: Path, max_tokens: int,
               hang_s: float) -> tuple[list[Outcome], int, float]:
    """Every visitor at once; returns the outcomes, the peak RSS and the wall time."""
    start = threading.Barrier(clients)
    t0 = time.monotonic()
    with MemoryWatch(app) as watch, ThreadPoolExecutor(clients) as pool:
        futures = [pool.submit(one_visitor, app.url, i, trace, max_tokens, hang_s, start)
                   for i in range(clients)]
        outcomes = [o for f in futures for o in f.result()]
    return outcomes, watch.peak, time.monotonic() - t0


class LeavingClient:
    """A page that starts a run and goes away: Gradio's queue/join, then the
    event stream, closed once the run holds the engines."""

    def __init__(self, url: str, data: list) -> None:
        import uuid

        session = uuid.uuid4().hex
        config = httpx.get(url + "config").json()
        fn = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "run")
        httpx.post(url + "gradio_api/queue/join", json={
            "data": data, "fn_index": fn, "session_hash": session, "event_data": None,
            "trigger_id": None}).raise_for_status()
        self._stream = httpx.stream("GET", f"{url}gradio_api/queue/data",
                                    params={"session_hash": session}, timeout=60)

    def leave_once(self, text: str) -> bool:
        """Read updates until one contains ``text``, then close the connection."""
        with self._stream as response:
            return any(line.startswith("data:") and text in line
                       for line in response.iter_lines())


def fault_engine_error(v: Visitor) -> dict:
    out = v.run(f"{PROMPT} {FAULT_MARKER}", max_tokens=32)
    return {"outcome": out.message, "refused_in_one_line": not out.ok and "\n" not in
            out.message and "InjectedFault" in out.message and not out.server_error}


def fault_disconnect(v: Visitor) -> dict:
    leaving = LeavingClient(v.url, [LONG_PROMPT, "ngram", "", 4, 0.0, 1.0, 1024, 0, 3, None, False])
    left = leaving.leave_once("running the baseline engine")
    return {"outcome": "left mid-run" if left else "the stream ended first",
            "refused_in_one_line": None}


def fault_malformed_upload(v: Visitor, trace: Path) -> dict:
    """A saved trace with markup where a step's index should be."""
    record = json.loads(trace.read_text())
    record["speculative"]["steps"][0]["index"] = HOSTILE_INDEX
    path = trace.with_name("malformed.json")
    path.write_text(json.dumps(record))
    out = v.replay(path)
    return {"outcome": out.message, "refused_in_one_line": not out.ok and "\n" not in
            out.message and "must be an integer" in out.message}


def fault_sweep_cancelled(v: Visitor, hang_s: float, max_tokens: int) -> dict:
    """A 3-point sweep of short runs, cancelled (the page's Stop) once its second
    point starts."""
    from gradio_client import Client

    sweeper = Client(v.url, verbose=False)  # its own session: the cancel is its own
    job = sweeper.submit("structured_output", "temperature", "0,0.5,1", max_tokens, 1, "ngram",
                         "", 4, api_name="/sweep")
    deadline = time.monotonic() + hang_s
    while not any("point 2/3" in str(o[0]) for o in job.outputs()):
        if job.done() or time.monotonic() > deadline:
            return {"outcome": "the sweep ended before its second point", "cancelled": False}
        time.sleep(0.1)
    job.cancel()
    return {"outcome": "cancelled at point 2/3", "cancelled": True}


def faults_phase(app: App, trace: Path, hang_s: float, max_tokens: int) -> list[dict]:
    """Each fault, then a normal run: it must work, and how long it took is reported."""
    v = Visitor(app.url, -1, hang_s)
    faults = [("an engine error mid-run (test hook)", lambda: fault_engine_error(v)),
              ("a client disconnecting mid-run", lambda: fault_disconnect(v)),
              ("a malformed upload", lambda: fault_malformed_upload(v, trace)),
              ("a sweep cancelled halfway", lambda: fault_sweep_cancelled(v, hang_s, max_tokens))]
    rows = []
    for name, inject in faults:
        if name.startswith("an engine error") and not app.fault_hook:
            rows.append({"fault": name, "outcome": "skipped: the server has no fault hook"})
            continue
        row = {"fault": name, **inject()}
        after = v.run(max_tokens=max_tokens)
        row.update(next_run_ok=after.ok, next_run_s=round(after.latency_s, 2),
                   next_run_message=after.message[:120])
        rows.append(row)
    return rows


def _stats(values: list[float], digits: int = 3) -> dict | None:
    if not values:
        return None
    return {"median": round(statistics.median(values), digits), "max": round(max(values), digits)}


def summarize(clients: int, outcomes: list[Outcome], alone: list[Outcome],
              memory: dict[str, int | None], wall_s: float, faults: list[dict]) -> dict:
    by_kind = {k: [o for o in outcomes if o.kind == k] for k in ("run", "replay", "page")}
    tpot_alone = [o.baseline_tpot_s for o in alone if o.baseline_tpot_s]
    tpot_load = [o.baseline_tpot_s for o in by_kind["run"] if o.baseline_tpot_s]
    mib = {k: round(v / 2**20) if v else None for k, v in memory.items()}
    before, after = memory["before"], memory["after"]
    return {
        "clients": clients, "wall_s": round(wall_s, 1),
        "requests": {k: len(v) for k, v in by_kind.items()},
        "completed": {k: sum(o.ok for o in v) for k, v in by_kind.items()},
        "errors": [asdict(o) for o in outcomes if not o.ok],
        "server_errors": sum(o.server_error for o in outcomes),
        "hangs": sum(o.hang for o in outcomes),
        "queue_wait_s": _stats([o.queue_wait_s for o in by_kind["run"] if o.queue_wait_s]),
        "latency_s": {k: _stats([o.latency_s for o in v]) for k, v in by_kind.items()},
        "memory_mib": {**mib, "after_vs_before": round(after / before, 3)
                       if before and after else None},
        "baseline_tpot_ms": {"alone": _stats([t * 1e3 for t in tpot_alone], 2),
                             "under_load": _stats([t * 1e3 for t in tpot_load], 2),
                             "ratio_of_medians": round(statistics.median(tpot_load)
                                                       / statistics.median(tpot_alone), 3)
                             if tpot_alone and tpot_load else None},
        "faults": faults,
    }


def benchmark(url: str | None, clients: int, max_tokens: int = 16, alone_runs: int = 3,
              hang_s: float = 300, fault_hook: bool = False) -> dict:
    """Start (or attach to) the app, then alone runs, the load, the faults; the report."""
    with tempfile.TemporaryDirectory(prefix="speclens-load-") as tmp:
        folder = Path(tmp)
        app = App(url, folder, fault_hook)
        try:
            v = Visitor(app.url, -1, hang_s)
            v.run(max_tokens=max_tokens)  # warm-up; its trace is what visitors replay
            trace = folder / "trace.json"
            trace.write_text(v.last_trace)
            alone = [v.run(max_tokens=max_tokens) for _ in range(alone_runs)]
            before = app.rss_bytes()
            outcomes, peak, wall_s = load_phase(app, clients, trace, max_tokens, hang_s)
            faults = faults_phase(app, trace, hang_s, max_tokens)
            time.sleep(2.0)  # let the last requests' buffers go
            memory = {"before": before, "peak_during": peak, "after": app.rss_bytes()}
            return summarize(clients, outcomes, alone, memory, wall_s, faults)
        finally:
            app.close()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--clients", type=int, default=20)
    p.add_argument("--url", help="an app already running, instead of starting one")
    p.add_argument("--fault-hook", action="store_true",
                   help="the app at --url was started by tests/helpers/fault_app.py "
                        f"(its prompts with {FAULT_MARKER} fail at step {FAULT_STEP})")
    p.add_argument("--max-tokens", type=int, default=16, help="per run (short runs)")
    p.add_argument("--alone-runs", type=int, default=3)
    p.add_argument("--hang-s", type=float, default=300, help="no answer by then: a hang")
    p.add_argument("--json", type=Path, help="also write the report here")
    a = p.parse_args()
    report = benchmark(a.url, a.clients, a.max_tokens, a.alone_runs, a.hang_s, a.fault_hook)
    text = json.dumps(report, indent=1)
    print(text)
    if a.json:
        a.json.write_text(text)


if __name__ == "__main__":
    main()
