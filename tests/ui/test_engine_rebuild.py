"""A new k on the page builds a new speculative engine, keeps the baseline, and
streams tokens before the end: on a page served in this process whose runs go to
an engine pool of its own, so that which engines exist is this test's alone (not
the shared app's, whatever other tests ran on it)."""
from __future__ import annotations

import functools
import socket

import pytest

from space.observe.prom import Metrics
from space.records.config import EngineSpec
from space.ui import inputs
from tests.helpers.engine import KV, MAX_MODEL_LEN

pytestmark = pytest.mark.engine

# as the shared app's (tests/ui/servers.py APP_FLAGS): short prompts, less KV
SPEC = EngineSpec(kv_cache_bytes=KV, max_model_len=MAX_MODEL_LEN)


@pytest.fixture(scope="module")
def own_page():
    """(client, run labels) of a page whose pool holds only the baseline engine."""
    from gradio_client import Client

    from space.engine.pool import EnginePool
    from space.runs import runner
    from space.ui import app

    pool = EnginePool()
    pool.baseline(SPEC)  # built before the page: the run below must keep it
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo = app.build_demo(SPEC, Metrics(), inputs.sample_prompts(),
                          compare=functools.partial(runner.compare, pool=pool))
    _, url, _ = app.launch(demo, Metrics(), port=port)
    client = Client(url, verbose=False)
    api = client.view_api(return_format="dict", print_info=False)
    yield client, [r["label"] for r in api["named_endpoints"]["/run"]["returns"]]
    demo.close()
    pool.close_all()


def test_new_k_rebuilds_with_progress_and_streams_tokens(own_page, spans):
    client, outputs = own_page
    job = client.submit("Name three colours.", "ngram", "", 7, 0.0, 1.0, 24, 0, 1,
                        api_name="/run")
    final = job.result(timeout=300)
    updates = job.outputs()
    statuses = [u[outputs.index("Status")] for u in updates]
    assert any("building the ngram engine" in str(s) for s in statuses)
    assert not any("building the baseline engine" in str(s) for s in statuses)  # kept
    assert 'data-kind="done"' in final[outputs.index("Status")]
    n_final = len([s for s in spans(final[outputs.index("Tokens")]) if "data-out" in s])
    live = [u[outputs.index("Tokens")] for u in updates[:-1]
            if isinstance(u[outputs.index("Tokens")], str)]
    counts = [len([s for s in spans(h) if "data-out" in s]) for h in live]
    assert any(0 < n < n_final for n in counts), counts  # a partial view was streamed
