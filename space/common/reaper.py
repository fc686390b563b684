"""Processes that die with their parent, even when the parent is SIGKILLed.

``PR_SET_PDEATHSIG`` alone is not enough for what SpecLens starts:
- it fires when the parent *thread* that forked the child exits, not the
  parent process (a fixture's thread may end long before pytest does);
- it reaches only the direct child: vLLM's EngineCore and workers, and
  Chromium's renderers, have no parent-death watch of their own;
- the test servers run in a new session (``start_new_session=True``), so a
  signal to pytest's process group never reaches them.

So every process is watched by a small watchdog process of its own: it polls
the parent's pid twice a second, remembers the child's whole tree as it grows,
and when the parent is gone it sends SIGTERM to that tree (and to the child's
process group), then SIGKILL to whatever is left 3 s later. The watchdog exits
by itself once the child's tree has gone.

    proc = reaper.spawn([sys.executable, "-m", "vllm...", ...], stdout=log)
    reaper.watch(pid)   # a process someone else started (Playwright's driver)
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

# Run as ``python -c WATCHDOG parent_pid child_pid``. Uses psutil (a SpecLens
# requirement) to follow the tree; create_time guards against reused pids.
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


def watch(child_pid: int, parent_pid: int | None = None) -> subprocess.Popen:
    """Start a watchdog that takes down ``child_pid``'s tree when ``parent_pid``
    (default: this process) dies. The watchdog is in a session of its own, so
    the signals that end the parent's group do not end it first."""
    parent = os.getpid() if parent_pid is None else parent_pid
    return subprocess.Popen([sys.executable, "-I", "-c", WATCHDOG, str(parent), str(child_pid)],
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
    """``subprocess.Popen(cmd, **popen_kwargs)`` with a watchdog: the process and
    everything it starts die when this process dies, by SIGKILL too."""
    proc = subprocess.Popen(list(cmd), **popen_kwargs)
    watch(proc.pid)
    return proc
