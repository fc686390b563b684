"""The headless CLI as a user runs it: ``python -m space ...``.

``cli`` runs it in a subprocess: the exit code and the output of the real
process. ``cli_in_process`` calls the same ``main`` in this process, for the
runs that build engines: a new interpreter importing torch and vLLM again costs
about 10 s a call, and the engines it builds stay in ``space.runs.runner.POOL`` for
the next call with the same flags (ENGINE_FLAGS).
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

from space.common import reaper

# Every in-process run that builds engines passes these, so they share engines.
from tests.helpers.engine import ENGINE_FLAGS  # noqa: F401 (re-exported to the CLI tests)

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess that dies with pytest (space/common/reaper.py)."""
    cmd = [sys.executable, "-m", "space", *args]
    proc = reaper.spawn(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def cli_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``main(args)`` with stdout and stderr captured, as a CompletedProcess."""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # as space.engine sets it
    # vLLM binds its log handler to sys.stdout when first imported: import it
    # outside the redirection, or its handler would keep a closed buffer.
    import vllm  # noqa: F401

    from space.__main__ import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's own errors
            code = exc.code if isinstance(exc.code, int) else 2
    return subprocess.CompletedProcess(["python", "-m", "space", *args], code,
                                       out.getvalue(), err.getvalue())
