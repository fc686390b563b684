"""The headless CLI as a user runs it: ``python -m space ...`` in a subprocess."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "space", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
