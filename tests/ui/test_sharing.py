"""Sharing safely, against the real Gradio server on loopback (the fake engine of
tests/helpers/page.py; no vLLM engine is built): password guessing on /login and
/metrics gets 429, uploads have a size limit, a session's files go when it ends,
and the start emptied tmp/ but nothing else."""
from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from space.common.ratelimit import Backoff, LoginLimiter
from space.observe.prom import Metrics
from space.records.config import EngineSpec
from space.records.trace import dumps, make_compare
from space.ui import datadir, inputs
from space.ui.auth import LoginTable
from tests.helpers.page import fake_compare, run
from tests.helpers.traces import ngram_run, short_baseline

ADA, ALAN = ("ada", "lovelace"), ("alan", "turing")
FREE_FAILURES, LOCKOUT_S = 3, 1.0
MAX_UPLOAD_MB = 1


@dataclass
class Served:
    url: str
    data: datadir.DataDir


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from space.ui import app

    root = tmp_path_factory.mktemp("sharing") / "data"
    (root / "tmp" / "old-session").mkdir(parents=True)
    (root / "tmp" / "old-session" / "trace.json").write_text("{}")
    (root / "keep.txt").write_text("mine")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADIO_TEMP_DIR", "restored-after-the-module")
        mp.setenv("GRADIO_HEARTBEAT_INTERVAL", "0.5")  # a closed page is noticed at once
        mp.setattr(datadir, "ACTIVE", None)
        data = datadir.prepare(root)  # before the page is built, as app.py does
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        demo = app.build_demo(EngineSpec(), Metrics(), inputs.sample_prompts(),
                              compare=fake_compare)
        limiter = LoginLimiter(Backoff(FREE_FAILURES, LOCKOUT_S, LOCKOUT_S), Backoff(1000))
        _, url, _ = app.launch(demo, Metrics(), port=port, auth=LoginTable([ADA, ALAN]),
                               limiter=limiter, max_upload_mb=MAX_UPLOAD_MB)
        try:
            yield Served(url, data)
        finally:
            demo.close()
            data.close()


def login(url: str, user: str, password: str) -> httpx.Response:
    return httpx.post(url + "login", data={"username": user, "password": password})


def scrape(url: str, user: str, password: str) -> httpx.Response:
    return httpx.get(url + "metrics", auth=(user, password))


def test_start_emptied_tmp_and_kept_the_rest(served):
    root = served.data.root
    assert not (root / "tmp" / "old-session").exists()
    assert (root / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("attempt, user", [(login, ADA[0]), (scrape, ALAN[0])])
def test_guessing_gets_429_then_the_right_password_works(served, attempt, user):
    right = dict([ADA, ALAN])[user]
    wrong_status = 400 if attempt is login else 401
    for _ in range(FREE_FAILURES):
        assert attempt(served.url, user, "guess").status_code == wrong_status
    locked = attempt(served.url, user, right)
    assert locked.status_code == 429, locked.text
    assert locked.headers["Retry-After"] == "1" and "try again in 1 s" in locked.text
    time.sleep(LOCKOUT_S + 0.1)
    r = attempt(served.url, user, right)
    assert r.status_code == 200, r.text


def test_the_login_name_reaches_the_server(served):
    with httpx.Client() as c:
        assert c.post(served.url + "login",
                      data={"username": ADA[0], "password": ADA[1]}).status_code == 200
        # gr.Request.username is this route's answer: the name the login used.
        assert c.get(served.url + "gradio_api/user").json() == ADA[0]


def test_an_oversize_upload_gets_a_clear_message(served):
    with httpx.Client() as c:
        c.post(served.url + "login", data={"username": ADA[0], "password": ADA[1]})
        big = b"x" * ((MAX_UPLOAD_MB << 20) + 1)
        r = c.post(served.url + "gradio_api/upload", files={"files": ("big.json", big)})
        assert r.status_code == 413
        assert f"maximum allowed size of {MAX_UPLOAD_MB << 20} bytes" in r.text
        small = c.post(served.url + "gradio_api/upload", files={"files": ("ok.json", b"{}")})
        assert small.status_code == 200


def _session_files(served, client) -> list[Path]:
    """The downloads the server made for this client's session (the client's own
    copies of them are elsewhere)."""
    folder = served.data.session_folder(client.session_hash)
    return sorted(p for p in folder.rglob("*") if p.is_file())


def _wait_gone(paths, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not any(p.exists() for p in paths):
            return True
        time.sleep(0.1)
    return False


def test_a_session_that_ends_removes_its_files(served, tmp_path):
    from gradio_client import Client, handle_file

    leaving, staying = (Client(served.url, auth=ADA, verbose=False, download_files=False)
                        for _ in range(2))
    try:
        run(leaving, "Write a haiku.")
        run(staying, "Write a haiku.")
        mine, theirs = _session_files(served, leaving), _session_files(served, staying)
        assert {p.name for p in mine} == {"speclens-compare.json", "speclens-steps.csv"}
        assert {p.name for p in theirs} == {p.name for p in mine}
        saved = tmp_path / "cmp.json"
        saved.write_text(dumps(make_compare([short_baseline()], [ngram_run()])))
        before = set(served.data.tmp.rglob("cmp.json"))
        leaving.predict(handle_file(str(saved)), api_name="/replay")
        uploads = set(served.data.tmp.rglob("cmp.json")) - before
        assert len(uploads) == 1  # the upload itself, in Gradio's cache under tmp/
        mine = _session_files(served, leaving)  # the replay's downloads too
    finally:
        leaving.close()  # its heartbeat stops: Gradio's unload event
    assert _wait_gone(mine + list(uploads)), "the ended session's files are still there"
    assert not served.data.session_folder(leaving.session_hash).exists()
    assert all(p.exists() for p in theirs)
    staying.close()
