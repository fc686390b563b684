"""``python -m space tipping``: bad input is one line and exit code 2, before
any engine is built (the measurement itself is not run in CI)."""
from __future__ import annotations

import pytest

from space.common import paths
from tests.helpers.cli import cli_in_process

BAD = {
    "concurrency not a number": (["--concurrency", "1,four"], "--concurrency must be whole"),
    "one point": (["--points", "1"], "at least 2 points"),
    "no speculation": (["--method", "none"], "needs a speculative method"),
    "ngram without a measured curve": (["--pair", "cpu-ngram"], "measure one first"),
    "gpu pair on cpu": (["--pair", "gpu-llama8b-llama1b"], "not available here"),
}


@pytest.mark.parametrize("case", list(BAD), ids=list(BAD))
def test_bad_input_is_one_line_and_exit_2(case, tmp_path, monkeypatch):

    # an empty data folder; the models stay where they are
    (tmp_path / "models").symlink_to(paths.cache_dir() / "models")
    monkeypatch.setenv("SPECLENS_CACHE", str(tmp_path))
    args, message = BAD[case]
    r = cli_in_process("tipping", *args)  # the real process: tests/cli/test_cli.py
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
