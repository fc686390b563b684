"""Each fault produced for real, one clear line each; the kill-mid-run fault is
last (it kills the fault server, which no other test uses)."""
from __future__ import annotations

import threading
import time

import pytest

from space.records.config import ConfigError
from space.server.build import Declared
from space.server.client import DETAILED_FLAG, Server, ServerError, completion_body, describe
from space.server.compare import ServerPair, compare_servers, run_prompts
from tests.helpers.engine import CODE_PROMPT, req
from tests.helpers.servers import FAULT_KEY, free_port

pytestmark = pytest.mark.engine
IDS = [1, 9690, 198, 2683, 359, 253, 5356, 5646]  # any prompt as token ids


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg and "127.0.0.1" not in msg  # one line, no host
    return msg


def test_wrong_scheme_is_refused_at_start():
    with pytest.raises(ConfigError, match="http:// or https://"):
        Server.from_flag("baseline", "ftp://gpu-box:8000/v1")


def test_server_down():
    down = Server("baseline", f"http://127.0.0.1:{free_port()}/v1")
    with pytest.raises(ServerError) as exc:
        describe(down)
    assert "down or unreachable" in _one_line(exc)


def test_wrong_api_key_is_refused_at_start(servers, monkeypatch):
    monkeypatch.setenv("SPECLENS_SPECULATIVE_API_KEY", "not-the-key")
    s = Server.from_flag("speculative", servers["no_flag"].url)
    with pytest.raises(ServerError) as exc:
        describe(s)
    assert "refused the API key" in _one_line(exc) and "SPECLENS_SPECULATIVE_API_KEY" in str(exc.value)


def test_error_answer(pair):
    info = describe(pair.speculative)
    body = completion_body(info.model, IDS, req(CODE_PROMPT), 100_000)  # > max_model_len
    from space.server.client import stream_completion

    with pytest.raises(ServerError) as exc:
        stream_completion(pair.speculative, body)
    assert "HTTP 400" in _one_line(exc) and "max_tokens" in str(exc.value)


def test_silent_server(servers):
    """A server that accepts the connection and never answers (the fault server,
    stopped): one line once the read timeout passes. (A 1 ms timeout against a
    running server was not a fault: an idle loopback server can answer in time.)"""
    fault = servers["no_flag"]
    with fault.paused(), pytest.raises(ServerError) as exc:
        describe(Server("speculative", fault.url, FAULT_KEY, read_timeout_s=1.0))
    assert "did not answer within 1 s" in _one_line(exc)


def _fault_pair(servers) -> ServerPair:
    return ServerPair(Server("baseline", servers["baseline"].url),
                      Server("speculative", servers["no_flag"].url, FAULT_KEY),
                      Declared(method="ngram", k=4))


def test_missing_detailed_flag_names_it(servers):
    with pytest.raises(ServerError) as exc:
        compare_servers(_fault_pair(servers), req(CODE_PROMPT, max_tokens=8), IDS, repeats=1)
    assert DETAILED_FLAG in _one_line(exc)


def test_server_killed_mid_run(servers):
    """Last: SIGKILL the fault server while it streams a long answer."""
    fault = _fault_pair(servers).speculative
    info = describe(fault)
    r = req(CODE_PROMPT, max_tokens=1500, ignore_eos=True)
    killer = threading.Timer(1.5, servers["no_flag"].kill)
    killer.start()
    t0 = time.monotonic()
    with pytest.raises(ServerError) as exc:
        run_prompts(fault, info, Declared(method="ngram", k=4), [r], [IDS])
    killer.join()
    assert "mid-stream" in _one_line(exc) and time.monotonic() - t0 < 60
