"""Real vLLM servers of the CPU build on loopback, started once for this package.

Three ``python -m vllm.entrypoints.openai.api_server`` processes on the default
model, started together: a plain one, an ngram k=4 one with
``--per-request-spec-decode-metrics detailed``, and an ngram one without the
flag and with an API key (for the faults, which run first; the kill-mid-run
test kills it, last of them).
Their settings are the in-process test engines' own (``engine_kwargs``), so
that at temperature 0 both sources run the same computation.
"""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

from space.records.config import EngineSpec  # noqa: E402
from space.runs.source import Servers  # noqa: E402
from space.server.build import Declared  # noqa: E402
from space.server.client import Server  # noqa: E402
from space.server.compare import ServerPair  # noqa: E402
from tests.helpers.engine import ENGINE_SPEC  # noqa: E402
from tests.helpers.servers import FAULT_KEY, ServerProcess, free_port, start_all  # noqa: E402

SPEC = ENGINE_SPEC
PAGE_MAX_TOKENS = 32  # the page's first sample rejects drafts within these (greedy)


@pytest.fixture(scope="package")
def servers(tmp_path_factory) -> dict[str, ServerProcess]:
    logs = tmp_path_factory.mktemp("server-logs")
    procs = start_all(SPEC, logs, {
        "baseline": ([], False),
        "speculative": (["--per-request-spec-decode-metrics", "detailed"], True),
        "no_flag": (["--api-key", FAULT_KEY], True),
    })
    yield procs
    for p in procs.values():
        p.stop()


@pytest.fixture(scope="package")
def pair(servers) -> ServerPair:
    return ServerPair(Server("baseline", servers["baseline"].url),
                      Server("speculative", servers["speculative"].url),
                      Declared(method="ngram", k=4, prompt_lookup_min=SPEC.prompt_lookup_min,
                               prompt_lookup_max=SPEC.prompt_lookup_max))


@pytest.fixture(scope="package")
def server_page(pair):
    """The page measuring ``pair`` (served in this process on a free port): its URL
    and a gradio_client. 32 tokens at most by default (the browser test's run)."""
    from gradio_client import Client

    from space.observe.prom import Metrics
    from space.ui import app, inputs

    spec = EngineSpec(method="ngram", k=4, max_model_len=2048)
    demo = app.build_demo(spec, Metrics(), inputs.sample_prompts(), max_tokens=PAGE_MAX_TOKENS,
                          source=Servers(pair))
    _, url, _ = app.launch(demo, Metrics(), port=free_port())
    yield url, Client(url, verbose=False)
    demo.close()


@pytest.fixture
def no_engines(monkeypatch):
    """Fails a test that builds an in-process engine (the servers are measured)."""
    from space.engine.pool import EnginePool

    def refuse(*_a, **_kw):
        raise AssertionError("an in-process engine was built on a page measuring servers")

    monkeypatch.setattr(EnginePool, "baseline", refuse)
    monkeypatch.setattr(EnginePool, "speculative", refuse)


@pytest.fixture
def engines(pool):
    """In-process baseline and ngram engines with the servers' settings (the
    session's pool: built once, while they fit its budget)."""
    return pool.baseline(SPEC), pool.speculative(SPEC)


def pytest_collection_modifyitems(items):
    """The faults run first in this package, the kill-mid-run fault last of them:
    it kills the fault server, whose memory (a whole vLLM server) is then free for
    the rest of the package. Not first of the session: the package's servers would
    be started a second time for the other packages' tests in between."""
    here = [i for i in items if "tests/server/" in i.nodeid]
    if not here:
        return
    kill = [i for i in here if i.name == "test_server_killed_mid_run"]
    faults = [i for i in here if "test_faults.py" in i.nodeid and i not in kill]
    ordered = faults + kill + [i for i in here if i not in faults and i not in kill]
    at = items.index(here[0])
    rest = [i for i in items if i not in here]
    items[:] = rest[:at] + ordered + rest[at:]
