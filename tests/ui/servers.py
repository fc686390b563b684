"""Processes the team tests start: an app of their own (fresh counters, its own
data folder) and Debian's Prometheus scraping it."""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from space.common import reaper
from tests.helpers.engine import APP_BUDGET_FLAGS, ENGINE_FLAGS

ROOT = Path(__file__).resolve().parents[2]
APP_FLAGS = [*ENGINE_FLAGS, *APP_BUDGET_FLAGS]
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
              data: Path | None = None) -> App:
    """The app on a free port, logging to <folder>/<name>.log. Its data folder (run
    history, tmp/) is ``data``, else <folder>/data: a restart on the same folder
    finds the runs of the app before it. The app locks it, so two apps at once
    need two."""
    port = port or free_port()
    log = folder / f"{name}.log"
    data = data or folder / "data"
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "SPECLENS_DATA_DIR": str(data)}
    with open(log, "w") as out:
        proc = reaper.spawn([sys.executable, "app.py", "--port", str(port), *APP_FLAGS,
                                 "--data-dir", str(data), *args],
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    return App(proc, f"http://127.0.0.1:{port}/", log)


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
