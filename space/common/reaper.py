"""Processes that die with their parent, even when the parent is SIGKILLed.

``PR_SET_PDEATHSIG`` is not enough: it fires when the forking *thread* exits,
reaches only the direct child (not vLLM's workers nor Chromium's renderers), and
new sessions miss signals to pytest's group. So each process gets a watchdog of
its own: it polls the parent twice a second, remembers the child's tree as it
grows, and once the parent is gone sends SIGTERM to that tree (and the child's
group), SIGKILL 3 s later; it exits by itself once the tree has gone.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

# ``python -c WATCHDOG parent_pid child_pid``; create_time guards against reused pids.
WATCHDOG = r"""
import os, signal, sys, time
import psutil

parent, child = int(sys.argv[1]), int(sys.argv[2])

def alive(pid):
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False

seen = {}  # pid -> create_time: the child's tree as last seen
try:  # a child started in a session of its own leads a group: signal it whole
    group = os.getpgid(child) if os.getpgid(child) == child else None
except OSError:
    group = None

def remember():
    try:
        root = psutil.Process(child)
        for p in [root, *root.children(recursive=True)]:
            seen.setdefault(p.pid, p.create_time())
    except psutil.Error:
        pass

def survivors():
    left = []
    for pid, created in seen.items():
        try:
            p = psutil.Process(pid)
            if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                left.append(p)
        except psutil.Error:
            pass
    return left

def signal_all(sig):
    if group is not None:
        try:
            os.killpg(group, sig)
        except OSError:
            pass
    for p in survivors():
        try:
            p.send_signal(sig)
        except psutil.Error:
            pass

while True:
    remember()
    if not survivors():
        sys.exit(0)           # the child ended first: nothing to do
    if not alive(parent):
        break
    time.sleep(0.5)
signal_all(signal.SIGTERM)
deadline = time.monotonic() + 3
while survivors() and time.monotonic() < deadline:
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
