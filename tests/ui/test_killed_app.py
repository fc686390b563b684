"""A killed app keeps its runs and serves them again: SIGKILL (no shutdown of any
kind) to the session's app right after a run's save returned, then a restart on
the same data folder. Every run the app counted is in the file, which checks
clean, and the restarted page lists the same runs as the app did before.

It kills the session's app, with every run of the tier in its history: it runs
last of the tier (tests/ui/conftest.py).
"""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from space.records.history import FILENAME, History
from tests.helpers.page import run
from tests.ui.servers import start_app

pytestmark = pytest.mark.engine


def listed(client) -> tuple[list[int], int]:
    """The History tab's first page: its runs' ids, and how many runs it counts."""
    table, note, *_ = client.predict("any", "any", "any", 1, None, None, api_name="/history")
    total = re.search(r"\((\d+) runs\)", note)
    assert total, note
    return [int(i) for i in re.findall(r'href="\?run=(\d+)"', table)], int(total.group(1))


def test_a_killed_app_keeps_its_runs_and_serves_them_again(session_app, client, outputs):
    from gradio_client import Client

    out = run(client, "Name three colours.", max_tokens=8)
    saved = re.search(r"saved as run #(\d+)", out[outputs.index("Status")])
    assert saved, out[outputs.index("Status")]
    ids, total = listed(client)
    assert int(saved.group(1)) in ids
    app = session_app.app
    app.kill()
    path = app.data / FILENAME
    rows, stored = History(path).runs(limit=len(ids))
    assert stored == total and [r.id for r in rows] == ids
    assert sqlite_ok(path)
    again = start_app(session_app.folder, name="restart", data=app.data)
    try:
        again.wait("page", timeout_s=120)
        assert listed(Client(again.url, verbose=False)) == (ids, total)
    finally:
        again.stop()


def sqlite_ok(path: Path) -> bool:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()
