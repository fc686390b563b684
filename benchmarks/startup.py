"""How soon the link works: start command to a usable page, and to the first result.

    python benchmarks/startup.py --runs 3

Each start runs ``python app.py`` on a free port (the CPU default, ngram k=4),
then times, from just before the process starts:
  page:    the page's HTML and Gradio's /config both answer 200;
  usable:  in Chromium (launched before the start, so its own start is not
           counted), the prompt box takes typed text and the Run button is
           enabled: what a visitor needs (the target: 5 s on 2 cores);
  result:  a run submitted through the page's API right after the page answered
           (32 tokens of the first sample prompt) has finished; before the engines
           are ready it waits in the queue, as a visitor's would;
  engines_ready: /metrics reads speclens_engines_ready 1 (built and warmed).
Run it on a quiet machine: another CPU-heavy process slows every figure.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: space/ is the project's package

from space.common import reaper  # noqa: E402

FLAGS = ["--kv-cache-mib", "128", "--max-model-len", "2048"]
CHROMIUM = "/usr/bin/chromium"
PROMPT = "Rename x to total: def f(x): return x + 1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False


def engines_ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "metrics", timeout=2) as r:
            return b"speclens_engines_ready 1.0" in r.read()
    except (urllib.error.URLError, OSError):
        return False


def usable_at(page, url: str, t0: float, timeout_s: float) -> float:
    """Seconds from ``t0`` until the page at ``url`` takes a prompt and its Run
    button is enabled (the page is loaded again until the server answers)."""
    while time.monotonic() - t0 < timeout_s:
        # Polled over plain HTTP first: a browser retrying a refused connection
        # every 50 ms renders an error page each time, and on 2 cores that load
        # slows the app's own start (a visitor reloads far less often).
        if not answers(url):
            time.sleep(0.05)
            continue
        try:
            page.goto(url, wait_until="commit", timeout=5_000)
            box = page.wait_for_selector("#prompt textarea:not([disabled])", timeout=30_000)
            page.wait_for_selector("#run:not([disabled])", timeout=30_000)
            box.fill("ready?")
            if box.input_value() == "ready?":
                return time.monotonic() - t0
        except Exception:  # not serving yet: connection refused, or a half-built page
            time.sleep(0.05)
    raise SystemExit("the page did not become usable")


def one_start(timeout_s: float, page=None) -> dict[str, float]:
    from gradio_client import Client

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryDirectory() as data, open(Path(data) / "app.log", "w") as log:
        env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "SPECLENS_DATA_DIR": data}
        t0 = time.monotonic()
        proc = reaper.spawn([sys.executable, "app.py", "--port", str(port), *FLAGS,
                                 "--data-dir", str(Path(data) / "data")],
                                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            usable_s = usable_at(page, url, t0, timeout_s) if page is not None else float("nan")
            while not (answers(url) and answers(url + "config")):
                if proc.poll() is not None or time.monotonic() - t0 > timeout_s:
                    raise SystemExit(f"the app did not serve; see {log.name}")
                time.sleep(0.1)
            page_s = time.monotonic() - t0
            ready: dict[str, float] = {}

            def watch() -> None:
                while not engines_ready(url) and proc.poll() is None:
                    time.sleep(0.1)
                ready["engines_s"] = time.monotonic() - t0

            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            client = Client(url, verbose=False)
            client.predict(PROMPT, "ngram", "", 4, 0.0, 1.0, 32, 0, 1, api_name="/run")
            result_s = time.monotonic() - t0
            watcher.join(timeout_s)
            return {"usable_s": usable_s, "page_s": page_s,
                    "engines_ready_s": ready.get("engines_s", float("nan")),
                    "first_result_s": result_s}
        finally:
            reaper.stop(proc)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--no-browser", action="store_true", help="skip the 'usable' figure")
    a = p.parse_args()
    from space.engine import hardware

    choice = hardware.choose_dtype()
    print(f"machine: {hardware.cpu_model()}, {os.cpu_count()} cores, native bf16: "
          f"{', '.join(hardware.cpu_bf16_flags()) or 'none'}; engines in "
          f"{choice.dtype} ({choice.reason})")
    if a.no_browser or not Path(CHROMIUM).exists():
        rows = [one_start(a.timeout) for _ in range(a.runs)]
    else:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM,
                                         args=["--headless", "--no-sandbox", "--disable-gpu"])
            rows = []
            for _ in range(a.runs):
                page = browser.new_page()
                rows.append(one_start(a.timeout, page))
                page.close()
            browser.close()
    for r in rows:
        print(json.dumps({k: round(v, 2) for k, v in r.items()}))
    print(json.dumps({f"median_{k}": round(statistics.median(r[k] for r in rows), 2)
                      for k in ("usable_s", "page_s", "first_result_s")}))


if __name__ == "__main__":
    main()
