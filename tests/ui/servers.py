"""The processes the UI tests start: the app (the one home for its flags, data
folder and fault hook: the session's shared app, in tests/ui/conftest.py, and
any app of a test's own) and Debian's Prometheus scraping it."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from space.common import reaper, versions
from tests.helpers.engine import APP_BUDGET_FLAGS, ENGINE_FLAGS

ROOT = Path(__file__).resolve().parents[2]
# Smaller than the defaults: tests use short prompts, and less KV starts faster.
APP_FLAGS = [*ENGINE_FLAGS, *APP_BUDGET_FLAGS]
READY_TIMEOUT_S = 300
PROMETHEUS = "/usr/bin/prometheus"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str, timeout: float = 5) -> bytes | None:
    """The body of a 200 answer, or None."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read() if r.status == 200 else None
    except (urllib.error.URLError, OSError):
        return None


def tail(path: Path, n: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-n:])


@dataclass
class App:
    proc: subprocess.Popen
    url: str
    log: Path
    data: Path  # its data folder (run history, curves, tmp/)
    started_s: float = field(default_factory=time.monotonic)

    def wait(self, what: str = "engines", timeout_s: float = 300) -> float:
        """Seconds until the page ("page") or the engines ("engines") are ready."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout_s:
            if self.proc.poll() is not None:
                raise AssertionError(f"the app exited ({self.proc.returncode}):\n{tail(self.log)}")
            if what == "page":
                if get(self.url) is not None and get(self.url + "config") is not None:
                    return time.monotonic() - t0
            elif b"speclens_engines_ready 1.0" in (get(self.url + "metrics") or b""):
                return time.monotonic() - t0
            time.sleep(0.2)
        raise AssertionError(f"the app's {what} not ready in {timeout_s} s:\n{tail(self.log)}")

    def kill(self) -> None:
        """SIGKILL: no handler, no atexit, nothing flushed."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()


def start_app(folder: Path, *args: str, port: int | None = None, name: str = "app",
              data: Path | None = None, fault_hook: bool = False) -> App:
    """The app on a free port, logging to <folder>/<name>.log; returns at once (the
    page serves within seconds, the engines build behind it: ``App.wait``). Its
    data folder (run history, tmp/) is ``data``, else <folder>/data: a restart on
    the same folder finds the runs of the app before it. The app locks it, so two
    apps at once need two. ``fault_hook``: started by tests/helpers/fault_app.py,
    the test-only fault installed (only prompts with its marker fail, at step
    ``FAULT_STEP``)."""
    port = port or free_port()
    log = folder / f"{name}.log"
    data = data or folder / "data"
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "SPECLENS_DATA_DIR": str(data)}
    launch = ["-m", "tests.helpers.fault_app"] if fault_hook else ["app.py"]
    with open(log, "w") as out:
        proc = reaper.spawn([sys.executable, *launch, "--port", str(port), *APP_FLAGS,
                             "--data-dir", str(data), *args],
                            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    return App(proc, f"http://127.0.0.1:{port}/", log, data)


def data_with_curves(folder: Path) -> Path:
    """<folder>/data, holding the stored tipping curves (tests/fixtures/tipping)
    relabelled with this machine's device and vLLM so the page finds them; nothing
    is measured in CI. Each is stored for the dtype the app's engines run in and
    for bf16, the dtype of the saved comparisons the tests replay
    (tests/fixtures/compare-*.json): under SPECLENS_DTYPE=float32 the two differ."""
    from space.engine.hardware import choose_dtype, on_gpu
    from space.judge import curves
    from space.runs import curve_cache

    data = folder / "data"
    for path in sorted((ROOT / "tests" / "fixtures" / "tipping").glob("*.json")):
        curve = curves.TippingCurve.from_dict(json.loads(path.read_text()))
        curve.device, curve.vllm_version = ("gpu" if on_gpu() else "cpu"), versions.public_vllm()
        for dtype in {choose_dtype().dtype, "bfloat16"}:
            curve.dtype = dtype
            curve_cache.save(curve, data)
    return data


# Counters that move with the first run, whatever its kind, and the build's gauge.
_RUNS = re.compile(rb"^speclens_(?:requests|jobs)_total\{[^}]*\} (\S+)$", re.M)
_BUILT = b"speclens_engines_ready 1.0"


class SessionApp:
    """The UI tier's shared app (tests/ui/conftest.py), started at once: its page
    serves within seconds and its engines build behind it, so the first test may
    watch it from its start (tests/ui/test_prometheus.py: ``fresh``); the others
    wait for its engines (``url``). Flags as every test app's, the fault hook on,
    a data folder with the stored curves."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.data = folder, data_with_curves(folder)
        self.attempts = 0
        self.app = self._start()
        self.waited = False  # someone waited for its engines: others run on it now

    def _start(self) -> App:
        self.attempts += 1
        return start_app(self.folder, name=f"app-{self.attempts}", data=self.data,
                         fault_hook=True)

    def url(self) -> str:
        """Its URL once its engines are built. One retry: a start that failed once
        (seen once, cause not captured) is reported as a warning with its log; a
        second failure fails the tests."""
        if not self.waited:
            try:
                self.app.wait("engines", READY_TIMEOUT_S)
            except AssertionError as exc:
                self.app.stop()
                warnings.warn(f"the app did not start, retrying once: {exc}", stacklevel=2)
                self.app = self._start()
                self.app.wait("engines", READY_TIMEOUT_S)
            self.waited = True
        return self.app.url

    def fresh(self, page_timeout_s: float = 120) -> App | None:
        """The app, once its page serves, if nothing has run on it yet and its engines
        are still building (no one else has used it); else None."""
        if self.waited or self.attempts > 1:
            return None
        self.app.wait("page", page_timeout_s)
        metrics = get(self.app.url + "metrics") or b""
        counts = [float(v) for v in _RUNS.findall(metrics)]
        if not counts or any(counts) or _BUILT in metrics:
            return None
        return self.app

    def stop(self) -> None:
        self.app.stop()


@dataclass
class Prometheus:
    proc: subprocess.Popen
    url: str
    log: Path

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        """An instant query's result vector (scalars come back as one sample)."""
        params = {"query": expr, **({"time": f"{at:.3f}"} if at is not None else {})}
        body = get(self.url + "api/v1/query?" + urllib.parse.urlencode(params), timeout=10)
        assert body is not None, f"Prometheus refused the query {expr!r}:\n{tail(self.log)}"
        data = json.loads(body)["data"]
        if data["resultType"] == "scalar":
            return [{"metric": {}, "value": data["result"]}]
        return data["result"]

    def series(self, match: str) -> list[dict]:
        body = get(self.url + "api/v1/series?" + urllib.parse.urlencode({"match[]": match}))
        assert body is not None
        return json.loads(body)["data"]

    def scrapes(self, job: str) -> float:
        """How many scrapes of ``job`` Prometheus has stored (its own ``up`` samples)."""
        r = self.query(f'count_over_time(up{{job="{job}"}}[1h])')
        return float(r[0]["value"][1]) if r else 0.0

    def wait_scrapes(self, job: str, n: int, timeout_s: float = 30) -> None:
        """Until ``n`` more scrapes of ``job`` happened than when called."""
        target = self.scrapes(job) + n
        t0 = time.monotonic()
        while self.scrapes(job) < target:
            assert time.monotonic() - t0 < timeout_s, f"no scrape of {job}:\n{tail(self.log)}"
            time.sleep(0.25)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def start_prometheus(folder: Path, app_url: str, job: str = "speclens") -> Prometheus:
    """Debian's Prometheus on loopback, scraping ``app_url`` every second."""
    target = urllib.parse.urlparse(app_url).netloc
    conf = folder / "prometheus.yml"
    conf.write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        f"scrape_configs:\n  - job_name: {job}\n    metrics_path: /metrics\n"
        f"    static_configs:\n      - targets: ['{target}']\n")
    port = free_port()
    log = folder / "prometheus.log"
    data = folder / "tsdb"
    shutil.rmtree(data, ignore_errors=True)
    with open(log, "w") as out:
        proc = reaper.spawn([PROMETHEUS, f"--config.file={conf}",
                                 f"--storage.tsdb.path={data}",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=out, stderr=subprocess.STDOUT)
    p = Prometheus(proc, f"http://127.0.0.1:{port}/", log)
    t0 = time.monotonic()
    while get(p.url + "-/ready") is None:
        assert proc.poll() is None, f"Prometheus exited:\n{tail(log)}"
        assert time.monotonic() - t0 < 30, f"Prometheus not ready:\n{tail(log)}"
        time.sleep(0.2)
    return p
