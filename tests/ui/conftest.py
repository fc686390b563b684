"""The app in a subprocess on a free port, with the real CPU engine.

One app serves the whole session (building and warming two engines takes
about half a minute); tests drive it through gradio_client or chromium.
test_prometheus.py runs first and watches it from its start (falling back to
an app of its own when it is not fresh); test_killed_app.py runs last and
kills it. How the app is started: tests/ui/servers.py.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers.spans import parse_spans
from tests.ui.servers import SessionApp

HERE = Path(__file__).resolve().parent
# Watches the session's app from its start (its counters at zero, its engines
# building): first of the tier, before anyone else runs on it.
FIRST = HERE / "test_prometheus.py"
# Kills the session's app: last of the tier.
LAST = HERE / "test_killed_app.py"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """This tier's items in their places, test_prometheus.py's moved to the front and
    test_killed_app.py's to the end (the other items keep their order)."""
    at = [n for n, item in enumerate(items) if HERE in item.path.parents]
    here = [items[n] for n in at]
    first = [i for i in here if i.path == FIRST]
    last = [i for i in here if i.path == LAST]
    ordered = first + [i for i in here if i.path not in (FIRST, LAST)] + last
    for n, item in zip(at, ordered, strict=True):
        items[n] = item


@pytest.fixture(scope="session")
def session_app(tmp_path_factory) -> Iterator[SessionApp]:
    """The session's app, started (not yet ready: ``app_url`` waits for its engines)."""
    app = SessionApp(tmp_path_factory.mktemp("app"))
    try:
        yield app
    finally:
        app.stop()


@pytest.fixture(scope="session")
def app_url(session_app) -> str:
    """The session's app once its engines are built and warm."""
    return session_app.url()


@pytest.fixture(scope="module")
def page():
    """A headless Debian chromium page, one per test module."""
    from tests.helpers.browser import chromium_page

    with chromium_page() as p:
        yield p


@pytest.fixture(scope="session")
def code_edit_prompt() -> str:
    """A code edit where ngram drafts are both accepted and rejected within 32
    tokens (greedy, so the same every run); the renaming prompts copy the code
    so well that no draft is rejected early on."""
    from space.runs.presets import get_workload

    return get_workload("code_editing").prompt("add_rounding").text


@pytest.fixture
def spans():
    """parse_spans: HTML -> list of token spans (attributes + text)."""
    return parse_spans


@pytest.fixture(scope="session")
def client(app_url):
    from gradio_client import Client

    return Client(app_url, verbose=False)


@pytest.fixture(scope="session")
def outputs(client) -> list[str]:
    """Labels of the run event's outputs, in order (the API names them so)."""
    api = client.view_api(return_format="dict", print_info=False)
    return [r["label"] for r in api["named_endpoints"]["/run"]["returns"]]
