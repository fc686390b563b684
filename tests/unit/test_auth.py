"""Logins and the failed-login limiter (space/ui/auth.py, space/ui/login_guard.py,
prom.mount_metrics): pure, with a fake clock; the guards on tiny Starlette apps."""
from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import pytest

from space.common.ratelimit import Backoff, LoginLimiter
from space.ui import auth
from space.ui.auth import AuthError, LoginTable

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-never-shown"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- the login table and its sources -----------------------------------------

def test_table_checks_name_and_password():
    t = LoginTable([("ada", "lovelace"), ("alan", "x:y")])
    assert t.check("ada", "lovelace") and t.check("alan", "x:y")
    assert not t.check("ada", "Lovelace") and not t.check("ada", "")
    assert not t.check("bob", "lovelace") and not t.check("", "")
    assert t.names == ["ada", "alan"] and len(t) == 2


def test_a_name_given_twice_is_refused():
    with pytest.raises(AuthError, match="'ada' is given twice"):
        LoginTable([("ada", "a"), ("ada", "b")])


def test_auth_file_with_comments_blank_lines_and_colons(tmp_path):
    f = tmp_path / "logins"
    f.write_text("# the team\n\nada:lovelace\n  alan : p:w  \r\n# end\n")
    assert auth.read_auth_file(f) == [("ada", "lovelace"), ("alan", " p:w")]


@pytest.mark.parametrize("bad", [SECRET, f":{SECRET}", "ada:", f"   :{SECRET}"])
def test_a_bad_line_names_its_number_and_never_the_password(tmp_path, bad):
    f = tmp_path / "logins"
    f.write_text(f"ada:lovelace\n# comment\n{bad}\n")
    with pytest.raises(AuthError) as e:
        auth.read_auth_file(f)
    assert f"{f} line 3: expected user:password" in str(e.value)
    assert SECRET not in str(e.value)


def test_missing_and_binary_auth_files(tmp_path):
    with pytest.raises(AuthError, match="no such file"):
        auth.read_auth_file(tmp_path / "nope")
    (tmp_path / "bin").write_bytes(b"\xff\xfe\x00ada")
    with pytest.raises(AuthError, match="not UTF-8"):
        auth.read_auth_file(tmp_path / "bin")


def test_logins_from_every_source(tmp_path):
    f1, f2 = tmp_path / "a", tmp_path / "b"
    f1.write_text("ann:1\n")
    f2.write_text("bea:2\n")
    env = {auth.ENV_AUTH: "cat:3, dan:4,", auth.ENV_AUTH_FILE: str(f2)}
    t = auth.collect_logins(["eve:5"], str(f1), env)
    assert t.names == ["ann", "bea", "cat", "dan", "eve"]
    assert t.check("dan", "4") and t.check("bea", "2")
    assert not len(auth.collect_logins([], None, {}))
    with pytest.raises(AuthError, match=r"\$SPECLENS_AUTH entry 2") as e:
        auth.collect_logins([], None, {auth.ENV_AUTH: f"ann:1,{SECRET}"})
    assert SECRET not in str(e.value)


def test_readable_by_others(tmp_path):
    f = tmp_path / "logins"
    f.write_text("a:b\n")
    f.chmod(0o600)
    assert not auth.readable_by_others(f)
    f.chmod(0o644)
    assert auth.readable_by_others(f)


@pytest.mark.parametrize("host,share,logins,insecure,refused", [
    ("127.0.0.1", False, 0, False, False),
    ("localhost", False, 0, False, False),
    ("::1", False, 0, False, False),
    ("0.0.0.0", False, 0, False, True),
    ("::", False, 0, False, True),
    ("192.168.1.20", False, 0, False, True),
    ("myhost.example", False, 0, False, True),
    ("127.0.0.1", True, 0, False, True),
    ("0.0.0.0", False, 1, False, False),
    ("0.0.0.0", True, 0, True, False),
])
def test_a_reachable_server_needs_a_login(host, share, logins, insecure, refused):
    table = LoginTable([("ada", "x")] * logins)
    message = auth.login_required_error(host, share, table, insecure)
    assert (message is not None) == refused
    if refused:
        assert "--auth-file" in message and "--insecure-no-auth" in message


def test_app_refuses_to_start_reachable_without_login(tmp_path):
    """The real entry point: one line on stderr, exit code 2, before anything loads."""
    f = tmp_path / "logins"
    f.write_text(f"ada:x\n{SECRET}\n")
    cases = [(["--host", "0.0.0.0"], "--host 0.0.0.0 lets others reach the app"),
             (["--share"], "--share link"),
             (["--host", "0.0.0.0", "--auth-file", str(f)], "line 2: expected user:password")]
    for args, expected in cases:
        p = subprocess.run([sys.executable, "app.py", *args], cwd=ROOT, capture_output=True,
                           text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
        assert p.returncode == 2, p.stderr
        assert p.stdout == "" and len(p.stderr.strip().splitlines()) == 1
        assert expected in p.stderr and SECRET not in p.stderr
        assert p.stderr.startswith("error: ")


# --- the limiter -----------------------------------------------------------------

def test_backoff_doubles_up_to_its_cap():
    b = Backoff(free_failures=3, base_lockout_s=10, max_lockout_s=60)
    assert [b.lockout_s(n) for n in range(1, 8)] == [0, 0, 10, 20, 40, 60, 60]


def test_user_lockout_with_a_fake_clock():
    clock = Clock()
    lim = LoginLimiter(Backoff(3, 10, 100), Backoff(100), clock=clock)
    for _ in range(2):
        lim.failed("1.1.1.1", "ada")
        assert lim.retry_after_s("1.1.1.1", "ada") == 0
    lim.failed("1.1.1.1", "ada")
    assert lim.retry_after_s("1.1.1.1", "ada") == 10  # the name is locked at this address
    assert lim.retry_after_s("9.9.9.9", "ada") == 0   # not from her own
    assert lim.retry_after_s("1.1.1.1", "bob") == 0   # nor other names
    clock.now += 9.5
    assert lim.retry_after_s("1.1.1.1", "ada") == pytest.approx(0.5)
    clock.now += 0.5
    assert lim.retry_after_s("1.1.1.1", "ada") == 0
    lim.failed("1.1.1.1", "ada")                       # fourth in a row: doubled
    assert lim.retry_after_s("1.1.1.1", "ada") == 20
    clock.now += 20
    lim.succeeded("1.1.1.1", "ada")                   # the right password clears the name
    lim.failed("1.1.1.1", "ada")
    assert lim.retry_after_s("1.1.1.1", "ada") == 0


def test_knowing_a_name_is_no_button_to_lock_its_owner_out():
    """Tried from outside before: five wrong passwords for a name locked it, and the
    owner's right password was refused too. Now the guesser's address is locked
    for that name, and the owner logs in from hers."""
    clock = Clock()
    lim = LoginLimiter(clock=clock)  # the app's defaults
    for _ in range(50):
        lim.failed("6.6.6.6", "ada")
    assert lim.retry_after_s("6.6.6.6", "ada") > 0
    assert lim.retry_after_s("10.1.1.1", "ada") == 0
    lim.succeeded("10.1.1.1", "ada")


def test_guessing_one_name_from_many_addresses_stays_bounded():
    """The slow, global count per name: 100 wrong passwords from anywhere lock it."""
    clock = Clock()
    lim = LoginLimiter(clock=clock)
    for i in range(99):
        lim.failed(f"10.0.0.{i % 20}", "ada")  # five per address: under their own limits
    assert lim.retry_after_s("10.9.9.9", "ada") == 0
    lim.failed("10.0.1.1", "ada")
    assert lim.retry_after_s("10.9.9.9", "ada") == 30  # the hundredth: the name, everywhere
    assert lim.retry_after_s("10.9.9.9", "bob") == 0
    lim.succeeded("10.9.9.9", "ada")  # the owner's login does not reset a guesser
    assert lim.retry_after_s("10.0.2.2", "ada") == 30


def test_address_lockout_covers_every_name():
    clock = Clock()
    lim = LoginLimiter(Backoff(100), Backoff(3, 30, 30), clock=clock)
    for name in ("a", "b", "c"):
        lim.failed("6.6.6.6", name)
    assert lim.retry_after_s("6.6.6.6", "zed") == 30
    assert lim.retry_after_s("6.6.6.6") == 30
    assert lim.retry_after_s("7.7.7.7", "zed") == 0
    lim.succeeded("6.6.6.6", "a")  # one valid login does not unlock the address
    assert lim.retry_after_s("6.6.6.6", "zed") == 30


def test_failures_are_forgotten_after_a_quiet_hour():
    clock = Clock()
    lim = LoginLimiter(Backoff(2, 10, 10, forget_after_s=3600), Backoff(100), clock=clock)
    lim.failed("1.1.1.1", "ada")
    clock.now += 3601
    lim.failed("1.1.1.1", "ada")
    assert lim.retry_after_s("1.1.1.1", "ada") == 0


def test_memory_stays_bounded_under_made_up_names():
    clock = Clock()
    lim = LoginLimiter(Backoff(5), Backoff(10**9), clock=clock, max_keys=50)
    for i in range(1000):
        clock.now += 1
        lim.failed(f"10.0.{i // 256}.{i % 256}", f"user{i}")
    assert len(lim._keys) <= 50


# --- the guards, on tiny Starlette apps ---------------------------------------

def _gradio_like_app(limiter, logins):
    """/login answers like Gradio's (200 right, 400 wrong); /metrics is ours."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from space.observe.prom import Metrics, mount_metrics
    from space.ui.login_guard import LoginGuard

    async def login(request: Request):
        form = await request.form()
        if logins.check(str(form.get("username", "")).strip(), str(form.get("password", ""))):
            return JSONResponse({"success": True})
        return JSONResponse({"detail": "Incorrect credentials."}, status_code=400)

    app = Starlette(routes=[Route("/login", login, methods=["POST"])],
                    middleware=[Middleware(LoginGuard, limiter=limiter)])
    mount_metrics(app, Metrics(), logins=logins, limiter=limiter)
    return app


def _basic(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.fixture
def guarded():
    from starlette.testclient import TestClient

    clock = Clock()
    limiter = LoginLimiter(Backoff(3, 60, 600), Backoff(50), clock=clock)
    app = _gradio_like_app(limiter, LoginTable([("ada", "lovelace")]))
    with TestClient(app) as client:
        yield client, clock


def test_login_route_is_locked_after_failures_then_works(guarded):
    client, clock = guarded
    for _ in range(3):
        assert client.post("/login", data={"username": "ada", "password": "x"}).status_code == 400
    r = client.post("/login", data={"username": " ada ", "password": "lovelace"})
    assert r.status_code == 429 and r.headers["Retry-After"] == "60"
    assert "try again in 60 s" in r.json()["detail"]
    assert client.post("/login", data={"username": "bob", "password": "y"}).status_code == 400
    clock.now += 60
    assert client.post("/login", data={"username": "ada", "password": "lovelace"}).status_code == 200
    # multipart is a form too
    assert client.post("/login", files={"username": (None, "ada"), "password": (None, "x")}
                       ).status_code == 400


def test_login_route_refuses_a_huge_form(guarded):
    client, _ = guarded
    r = client.post("/login", data={"username": "ada", "password": "x" * (70 << 10)})
    assert r.status_code == 413


def test_metrics_basic_auth_is_locked_after_failures_then_works(guarded):
    client, clock = guarded
    r = client.get("/metrics")  # no credentials yet: the challenge, not a failure
    assert r.status_code == 401 and "Basic" in r.headers["WWW-Authenticate"]
    for _ in range(3):
        assert client.get("/metrics", headers=_basic("ada", "nope")).status_code == 401
    r = client.get("/metrics", headers=_basic("ada", "lovelace"))
    assert r.status_code == 429 and r.headers["Retry-After"] == "60"
    clock.now += 61
    r = client.get("/metrics", headers=_basic("ada", "lovelace"))
    assert r.status_code == 200 and b"speclens_requests_total" in r.content


def test_login_and_metrics_share_one_count(guarded):
    client, _ = guarded
    client.post("/login", data={"username": "ada", "password": "x"})
    client.get("/metrics", headers=_basic("ada", "y"))
    client.get("/metrics", headers={"Authorization": "Basic !!!"})  # malformed: counts too
    client.post("/login", data={"username": "ada", "password": "z"})
    assert client.post("/login", data={"username": "ada", "password": "lovelace"}
                       ).status_code == 429
