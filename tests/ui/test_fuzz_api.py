"""Fuzzing the real app through its API (gradio_client): broken trace files
through the replay endpoint, and any value in any field of a run request
(max_tokens <= 8 where the engine runs). No example may get a server error
(an exception escaping a SpecLens handler), a traceback in what the page
shows, or a server that stops answering; the next normal run works.

What counts as a clean refusal: the status box's one-line error (SpecLens's
checks), or Gradio's own named refusal before any SpecLens code runs ("Value
5 is greater than maximum value 2.", "Value: x is not in the list of
choices"), or SpecLens's one line for a slider given a non-number (a string,
null, a list), raised from Gradio's preprocess. Gradio's unnamed error (an
exception escaping any code) fails the test.
"""
from __future__ import annotations

import json
import re
import urllib.request
from html.parser import HTMLParser

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.helpers.fuzzing import RUN_PARAMS, broken_files, odd_valid_files, run_requests, wrong_type

pytestmark = pytest.mark.engine

WRONG_TYPE = re.compile(r"^.+ must be a number, got .+", re.S)  # panels.refuse_wrong_types
GRADIO_NAMED = re.compile(r"^Value:? .* (is greater than maximum value|is less than minimum "
                          r"value|is not in the list of choices)", re.S)
SETTINGS = dict(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text, self.kind = "", None

    def handle_starttag(self, tag, attrs):
        self.kind = self.kind or dict(attrs).get("data-kind")

    def handle_data(self, data):
        self.text += data


def status_of(html: str) -> tuple[str | None, str]:
    """(data-kind, visible text) of the status box."""
    parser = _Text()
    parser.feed(html if isinstance(html, str) else "")
    return parser.kind, parser.text


def check_outputs(outputs: tuple, labels: list[str]) -> str:
    """The status box says done or one line of error; no traceback anywhere."""
    assert "Traceback (most recent call last)" not in repr(outputs)
    kind, text = status_of(outputs[labels.index("Status")])
    assert kind in ("done", "error"), text
    assert "\n" not in text.strip(), text
    return kind


def refusal(exc: Exception, wrong_type: bool) -> str:
    """Every refusal is one named line: Gradio's range or choice check, or ours for a
    value of the wrong type (never Gradio's unnamed error)."""
    message = str(exc)
    assert "Traceback" not in message
    if GRADIO_NAMED.match(message):
        return "gradio refused, named"
    assert wrong_type and WRONG_TYPE.match(message), f"server error: {message[:300]}"
    return "refused a non-number, named"


def normal_run_works(client, labels, prompt="Say hello.") -> None:
    out = client.predict(prompt, "ngram", "", 4, 0.0, 1.0, 8, 0, 1, None, api_name="/run")
    assert status_of(out[labels.index("Status")])[0] == "done"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@settings(max_examples=30, **SETTINGS)
@given(text=st.one_of(broken_files(), odd_valid_files()))
def test_replay_any_file(client, outputs, folder, text):
    from gradio_client import handle_file

    path = folder / "trace.json"
    path.write_text(text, encoding="utf-8")
    out = client.predict(handle_file(str(path)), api_name="/replay")
    event(f"status {check_outputs(out, outputs)}")


@settings(max_examples=40, **SETTINGS)
@given(req=run_requests())
def test_run_any_request(client, outputs, req):
    any_wrong_type = any(wrong_type(name, req[name]) for name in RUN_PARAMS)
    try:
        out = client.predict(*[req[name] for name in RUN_PARAMS], api_name="/run")
    except Exception as exc:  # gradio_client's AppError: the server refused
        event(refusal(exc, any_wrong_type))
        return
    kind = check_outputs(out, outputs)
    if kind == "error":
        _, text = status_of(out[outputs.index("Status")])
        # "the run failed (...)": an exception inside the run, not a refusal up front
        assert "the run failed" not in text, text
    event(f"status {kind}")


def test_after_the_fuzz_the_server_is_up_and_runs(client, outputs, app_url):
    with urllib.request.urlopen(app_url + "metrics", timeout=10) as r:
        assert r.status == 200
    normal_run_works(client, outputs)
    # the API's own description still loads (the page would)
    assert json.dumps(client.view_api(return_format="dict", print_info=False))
