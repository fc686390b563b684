"""The page served in-process with a fake engine: login, /metrics, replay,
and what a user sees when a run fails. No engine is built."""
from __future__ import annotations

import base64
import json
import socket
import time
import urllib.error
import urllib.request

import pytest

from space.observe.prom import Metrics
from space.records.config import EngineSpec
from space.records.replay import MAX_TRACE_BYTES, MAX_TRACE_STEPS
from space.records.trace import dumps, make_compare
from space.ui import inputs
from tests.helpers.page import fake_compare
from tests.helpers.traces import long_compare, ngram_run, short_baseline

AUTH = ("ada", "lovelace")


@pytest.fixture(scope="module")
def url():
    from space.ui import app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo = app.build_demo(EngineSpec(), Metrics(), inputs.sample_prompts(), compare=fake_compare)
    _, local_url, _ = app.launch(demo, Metrics(), port=port, auth=AUTH)
    yield local_url
    demo.close()


@pytest.fixture(scope="module")
def client(url):
    from gradio_client import Client

    return Client(url, auth=AUTH, verbose=False)


def status_of(client, out) -> str:
    api = client.view_api(return_format="dict", print_info=False)
    labels = [r["label"] for r in api["named_endpoints"]["/run"]["returns"]]
    return out[labels.index("Status")]


def run(client, prompt):
    return client.predict(prompt, "ngram", "", 4, 0.0, 1.0, 16, 0, 1, api_name="/run")


def test_login_is_required_for_the_page_and_metrics(url):
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url + "config")
    assert e.value.code == 401
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url + "metrics")
    assert e.value.code == 401 and "Basic" in e.value.headers["WWW-Authenticate"]
    wrong = base64.b64encode(f"{AUTH[0]}:nope".encode()).decode()
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(urllib.request.Request(
            url + "metrics", headers={"Authorization": f"Basic {wrong}"}))
    assert e.value.code == 401
    token = base64.b64encode(f"{AUTH[0]}:{AUTH[1]}".encode()).decode()
    with urllib.request.urlopen(urllib.request.Request(
            url + "metrics", headers={"Authorization": f"Basic {token}"})) as r:
        assert b"speclens_requests_total" in r.read()


def test_a_failing_run_says_so_briefly_and_the_next_works(client):
    status = status_of(client, run(client, "boom"))
    assert 'data-kind="error"' in status
    assert "the run failed (RuntimeError: engine exploded)" in status
    assert "Traceback" not in status
    status = status_of(client, run(client, "Write a haiku."))
    assert 'data-kind="done"' in status


def test_replay_a_saved_record_and_reject_other_json(client, tmp_path):
    from gradio_client import handle_file

    saved = tmp_path / "cmp.json"
    saved.write_text(dumps(make_compare([short_baseline()], [ngram_run()])))
    out = client.predict(handle_file(str(saved)), api_name="/replay")
    status = status_of(client, out)
    assert "replaying the saved comparison cmp.json" in status
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    status = status_of(client, client.predict(handle_file(str(other)), api_name="/replay"))
    assert 'data-kind="error"' in status and "not a SpecLens trace" in status


def test_the_largest_allowed_replay_opens(url, client, tmp_path):
    """The largest file the bounds allow replays in full. Its cost is a time and is
    not asserted (it was 1.8-4.2 s of CPU, page and all, on the machines measured);
    process_time here counts the server's whole replay and the client's side, and
    is printed (``-s``)."""
    from gradio_client import Client, handle_file

    saved = tmp_path / "largest.json"
    saved.write_text(dumps(long_compare(MAX_TRACE_STEPS // 2)))
    assert saved.stat().st_size <= MAX_TRACE_BYTES
    quiet = Client(url, auth=AUTH, verbose=False, download_files=False)  # as a page: no copies
    t0 = time.process_time()
    out = quiet.predict(handle_file(str(saved)), api_name="/replay")
    print(f"\nlargest replay: {time.process_time() - t0:.2f} s of CPU")
    assert "replaying the saved comparison largest.json" in status_of(client, out)


def test_a_replay_over_the_step_limit_gets_one_line(client, tmp_path):
    from gradio_client import handle_file

    saved = tmp_path / "longer.json"
    # Compact JSON: the limit is on steps, and json.dumps writes it in a third of the time.
    saved.write_text(json.dumps(long_compare(MAX_TRACE_STEPS // 2 + 1).to_dict()))
    status = status_of(client, client.predict(handle_file(str(saved)), api_name="/replay"))
    assert 'data-kind="error"' in status and "20,002 engine steps, more than the 20,000" in status
