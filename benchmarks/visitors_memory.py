"""The app's memory while 5 visitors pick 5 different model pairs in turn.

    python benchmarks/visitors_memory.py [--dtype float32] [--budget-gb N]

Starts ``python app.py`` (the CPU default, 128 MiB KV) with its default memory
budget (or ``--budget-gb``), then 5 visitors, one after the other, each run one
prompt (24 tokens) on another speculative setup: the page's Method, Draft and
k. After each run it prints the summed RSS of the app and every process it
started, and what the Memory tab says about the budget. Without a budget the
pool kept 2 engines besides the baseline whatever they weighed; now it keeps
what fits and closes the least recently used first.
Run it alone: on 2 cores anything beside it slows it several-fold.
"""
from __future__ import annotations

import argparse
import datetime
import html
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run as a script: space/ is the project's package

from space.common import reaper  # noqa: E402
from space.engine import hardware  # noqa: E402

FLAGS = ["--kv-cache-mib", "128", "--max-model-len", "2048", "--drafts", "default"]
PROMPT = "Rename x to total in: def f(x):\n    y = x + 1\n    return y * x"
# (method, draft, k): five setups a visitor can pick on the page
SETUPS = [("ngram", "", 2), ("ngram", "", 6), ("draft_model", "default-truncated", 3),
          ("draft_model", "default", 3), ("draft_model", "default", 5)]


def tree_rss(pid: int) -> int:
    try:
        root = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [root, *root.children(recursive=True)])
    except psutil.Error:
        return 0


def engines_ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "metrics", timeout=5) as r:
            return b"speclens_engines_ready 1.0" in r.read()
    except OSError:
        return False


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dtype", default="float32", help="SPECLENS_DTYPE for the app (default float32)")
    p.add_argument("--budget-gb", type=float, help="--memory-budget-gb for the app (default: its own)")
    a = p.parse_args()
    from gradio_client import Client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    budget = ["--memory-budget-gb", str(a.budget_gb)] if a.budget_gb else []
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, hardware.DTYPE_ENV: a.dtype, "GRADIO_ANALYTICS_ENABLED": "False"}
        log = open(Path(tmp) / "app.log", "w")  # noqa: SIM115 (open while the app runs)
        proc = reaper.spawn([sys.executable, "app.py", "--port", str(port), *FLAGS, *budget,
                             "--data-dir", str(Path(tmp) / "data")],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env=env)
        try:
            while not engines_ready(url):
                if proc.poll() is not None:
                    raise SystemExit(f"the app exited: {Path(tmp, 'app.log').read_text()[-2000:]}")
                time.sleep(0.5)
            print(f"machine: {hardware.cpu_model()}, {os.cpu_count()} cores, "
                  f"{psutil.virtual_memory().total / 1e9:.0f} GB; dtype {a.dtype}; "
                  f"{datetime.date.today()}")
            print(f"{'after':<42} {'app RSS GB':>10}  memory budget (the Memory tab)")
            print(f"{'start (baseline + ngram k=4)':<42} {tree_rss(proc.pid) / 1e9:10.2f}")
            for i, (method, draft, k) in enumerate(SETUPS, 1):
                client = Client(url, verbose=False)  # a visitor of its own
                labels = [r["label"] for r in client.view_api(
                    return_format="dict", print_info=False)["named_endpoints"]["/run"]["returns"]]
                out = client.predict(PROMPT, method, draft, k, 0.0, 1.0, 24, 0, 1, api_name="/run")
                status = re.sub(r"<[^>]+>", "", str(out[labels.index("Status")])).strip()
                mem = client.predict(api_name="/memory") if "/memory" in client.view_api(
                    return_format="dict", print_info=False)["named_endpoints"] else None
                budget_line = ""
                if mem is not None:
                    found = re.search(r'class="budget">([^<]*)<', str(mem[-1]))
                    budget_line = html.unescape(found.group(1)) if found else ""
                name = f"visitor {i}: {method} {draft} k={k}".replace("  ", " ")
                print(f"{name:<42} {tree_rss(proc.pid) / 1e9:10.2f}  {budget_line or status[:90]}")
        finally:
            reaper.stop(proc)
            log.close()


if __name__ == "__main__":
    main()
