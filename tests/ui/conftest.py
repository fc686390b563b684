"""The app in a subprocess on a free port, with the real CPU engine.

One app serves the whole session (building and warming two engines takes
about half a minute); tests drive it through gradio_client or chromium.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path

import pytest

from space.common import reaper, versions
from space.common.cancel import FAULT_ENV
from space.runs import curve_cache
from tests.helpers.engine import APP_BUDGET_FLAGS, ENGINE_FLAGS
from tests.helpers.spans import parse_spans

ROOT = Path(__file__).resolve().parents[2]
# Smaller than the defaults: tests use short prompts, and less KV starts faster.
APP_FLAGS = [*ENGINE_FLAGS, *APP_BUDGET_FLAGS]
READY_TIMEOUT_S = 300
FAULT_STEP = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, n: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-n:])


class AppNotReady(Exception):
    pass


def _wait_ready(url: str, proc: subprocess.Popen, log: Path) -> None:
    """Ready when /metrics says the engines are built: the page serves before."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AppNotReady(f"the app exited with code {proc.returncode}:\n{_tail(log)}")
        try:
            with urllib.request.urlopen(url + "metrics", timeout=5) as r:
                if r.status == 200 and b"speclens_engines_ready 1.0" in r.read():
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(1)
    raise AppNotReady(f"the app was not ready within {READY_TIMEOUT_S} s:\n{_tail(log)}")


def _data_with_curves(folder: Path) -> Path:
    """The app's data folder, holding the stored tipping curves (tests/fixtures/tipping)
    relabelled with this machine's device and vLLM so the page finds them; nothing
    is measured in CI. Each is stored for the dtype the app's engines run in and
    for bf16, the dtype of the saved comparisons the tests replay
    (tests/fixtures/compare-*.json): under SPECLENS_DTYPE=float32 the two differ."""
    import json

    from space.engine.hardware import choose_dtype, on_gpu
    from space.judge import curves

    data = folder / "data"
    for path in sorted((ROOT / "tests" / "fixtures" / "tipping").glob("*.json")):
        curve = curves.TippingCurve.from_dict(json.loads(path.read_text()))
        curve.device, curve.vllm_version = ("gpu" if on_gpu() else "cpu"), versions.public_vllm()
        for dtype in {choose_dtype().dtype, "bfloat16"}:
            curve.dtype = dtype
            curve_cache.save(curve, data)
    return data


def _start(log: Path) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    data = _data_with_curves(log.parent)
    # The test-only fault hook (space/common/cancel.py): only prompts with its marker fail.
    # The data folder (run history, curves, tmp/) is the test's, not the user's.
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", FAULT_ENV: str(FAULT_STEP),
           "SPECLENS_DATA_DIR": str(data)}
    with open(log, "w") as out:
        proc = reaper.spawn([sys.executable, "app.py", "--port", str(port), *APP_FLAGS,
                                 "--data-dir", str(data)],
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, env=env)
    return proc, f"http://127.0.0.1:{port}/"


def _stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """One retry: a start that failed once (seen once, cause not captured) is
    reported as a warning with its log; a second failure fails the tests."""
    folder = tmp_path_factory.mktemp("app")
    for attempt in (1, 2):
        log = folder / f"app-{attempt}.log"
        proc, url = _start(log)
        try:
            _wait_ready(url, proc, log)
            break
        except AppNotReady as exc:
            _stop(proc)
            if attempt == 2:
                pytest.fail(str(exc))
            warnings.warn(f"the app did not start, retrying once: {exc}", stacklevel=2)
    try:
        yield url
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def page():
    """A headless Debian chromium page, one per test module."""
    from tests.helpers.browser import chromium_page

    with chromium_page() as p:
        yield p


@pytest.fixture(scope="session")
def code_edit_prompt() -> str:
    """A code edit where ngram drafts are both accepted and rejected within 32
    tokens (greedy, so the same every run); the renaming prompts copy the code
    so well that no draft is rejected early on."""
    from space.runs.presets import get_workload

    return get_workload("code_editing").prompt("add_rounding").text


@pytest.fixture
def spans():
    """parse_spans: HTML -> list of token spans (attributes + text)."""
    return parse_spans


@pytest.fixture(scope="session")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


@pytest.fixture(scope="session")
def outputs(client) -> list[str]:
    """Labels of the run event's outputs, in order (the API names them so)."""
    api = client.view_api(return_format="dict", print_info=False)
    return [r["label"] for r in api["named_endpoints"]["/run"]["returns"]]
