"""Processes that die with their parent, even when it is SIGKILLed: each gets a watchdog
that polls the parent twice a second, remembers the child's tree, and once the parent is gone
sends that tree (and the child's group) SIGTERM, SIGKILL 3 s later. ``PR_SET_PDEATHSIG`` fires
when the forking *thread* exits and reaches neither vLLM's workers nor Chromium's renderers.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

# ``python -c WATCHDOG parent_pid child_pid``; create_time guards against reused pids.
WATCHDOG = r"""
import contextlib, os, signal, sys, time
import psutil

parent, child = int(sys.argv[1]), int(sys.argv[2])
seen = {}  # pid -> create_time: the child's tree as last seen
try:  # a child started in a session of its own leads a group: signal it whole
    group = child if os.getpgid(child) == child else None
except OSError:
    group = None

def running(pids):  # pid -> create_time (None: any): those still running
    left = []
    for pid, created in pids.items():
        with contextlib.suppress(psutil.Error):
            p = psutil.Process(pid)
            if created in (None, p.create_time()) and p.status() != psutil.STATUS_ZOMBIE:
                left.append(p)
    return left

def remember():
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(child)
        for p in [root, *root.children(recursive=True)]:
            seen.setdefault(p.pid, p.create_time())

def signal_all(sig):
    if group is not None:
        with contextlib.suppress(OSError):
            os.killpg(group, sig)
    for p in running(seen):
        with contextlib.suppress(psutil.Error):
            p.send_signal(sig)

while True:
    remember()
    if not running(seen):
        sys.exit(0)           # the child ended first: nothing to do
    if not running({parent: None}):
        break
    time.sleep(0.5)
signal_all(signal.SIGTERM)
deadline = time.monotonic() + 3
while running(seen) and time.monotonic() < deadline:
    time.sleep(0.1)
signal_all(signal.SIGKILL)
"""


def watch(child_pid: int) -> subprocess.Popen:
    """A watchdog that takes down ``child_pid``'s tree when this process dies (in a
    session of its own, so the signals that end this group do not end it first)."""
    return subprocess.Popen([sys.executable, "-I", "-c", WATCHDOG, str(os.getpid()), str(child_pid)],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)


def stop(proc: subprocess.Popen, wait_s: float = 30) -> None:
    """SIGTERM, then SIGKILL when ``proc`` has not ended within ``wait_s``."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def spawn(cmd: Sequence[str], **popen_kwargs) -> subprocess.Popen:
    """``subprocess.Popen`` with a watchdog (``watch``)."""
    proc = subprocess.Popen(list(cmd), **popen_kwargs)
    watch(proc.pid)
    return proc
