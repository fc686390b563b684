"""Nothing outlives its parent: a pytest-like parent killed by SIGKILL leaves no
process behind (space/common/reaper.py).

The parent starts what the suite starts, the way the suite starts it: a server
in a session of its own that has a child of its own (as a vLLM server and its
engine core), and Chromium through Playwright's driver (tests/helpers/browser.py).
Then it is SIGKILLed: no handler, no atexit, no fixture teardown runs.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.helpers.browser import CHROMIUM

ROOT = Path(__file__).resolve().parents[2]

# A server-like child: its own session, and a child of its own that has no
# parent-death watch (vLLM's EngineCore has none).
SERVER = "import subprocess, time; subprocess.Popen(['sleep', '600']); time.sleep(600)"

PARENT = r"""
import json, subprocess, sys, time
import psutil
sys.path.insert(0, sys.argv[1])
from space.common import reaper

server = reaper.spawn([sys.executable, "-c", sys.argv[2]], start_new_session=True)
browser = sys.argv[3] == "1"
if browser:
    from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, playwright_session
    session = playwright_session()
    p = session.__enter__()
    p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
me = psutil.Process()
deadline = time.monotonic() + 60
while time.monotonic() < deadline:  # until the server's own child is up
    if psutil.Process(server.pid).children():
        break
    time.sleep(0.05)
time.sleep(1.0)  # the watchdogs' first look at the trees (every 0.5 s)
print(json.dumps([c.pid for c in me.children(recursive=True)]), flush=True)
time.sleep(600)
"""


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def test_a_sigkilled_parent_leaves_no_process_behind():
    browser = Path(CHROMIUM).exists()
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(ROOT), SERVER, "1" if browser else "0"],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    started: list[int] = []
    try:
        line = parent.stdout.readline()
        assert line, "the parent died before it started its children"
        started = json.loads(line)
        names = {psutil.Process(p).name() for p in started if _alive(p)}
        assert "sleep" in names  # the server's own child is among them
        if browser:
            assert any("chrom" in n for n in names), names
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in started):
            time.sleep(0.2)
        left = [(p, psutil.Process(p).cmdline()[:3]) for p in started if _alive(p)]
        assert not left, f"alive 10 s after the parent's SIGKILL: {left}"
    finally:
        for p in started:  # whatever a failure left: not for the next test
            if _alive(p):
                os.kill(p, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()


def test_the_watchdog_leaves_a_child_that_ended_first():
    """A child that ends by itself takes its watchdog with it: nothing accumulates."""
    from space.common import reaper

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    dog = reaper.watch(child.pid)
    child.wait(10)
    assert dog.wait(10) == 0


def test_without_a_watchdog_the_server_would_outlive_its_parent():
    """The control: the same server-like child without the watchdog survives the
    parent's SIGKILL, so the first test proves the watchdog, not the setup."""
    code = ("import subprocess, sys, time; "
            f"s = subprocess.Popen([sys.executable, '-c', {SERVER!r}], start_new_session=True); "
            "print(s.pid, flush=True); time.sleep(600)")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    server = int(parent.stdout.readline())
    try:
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(10)
        time.sleep(1.5)
        assert _alive(server)
    finally:
        os.killpg(server, signal.SIGKILL)
