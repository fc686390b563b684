"""The operator decides what the server loads (issue 9 §3), against the real app:
a visitor picks drafts and pairs from the offered lists only, learns nothing
about the server's paths, starts no download, and a huge prompt is refused
before any tokenizer sees it. The session app has the default offer; one page
with --allow-any-model is served in-process with the real runner (its refusals
come from preflight, so no engine is built for it)."""
from __future__ import annotations

import html
import json
import re
import socket
import urllib.request
from pathlib import Path

import pytest

from space.engine import models
from tests.helpers.page import fetch_record, run

pytestmark = pytest.mark.engine

HUB_ID = "Qwen/Qwen3-0.6B"  # a real draft on the hub, not offered on the CPU default


def _hub_cache(repo_id: str) -> Path:
    import huggingface_hub.constants as hub

    return Path(hub.HF_HUB_CACHE) / ("models--" + repo_id.replace("/", "--"))


def _refusal(call, name: str) -> str:
    """The message the server gives for ``name``, with the name itself taken out."""
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError) as exc:
        call(name)
    assert "Traceback" not in str(exc.value)
    return str(exc.value).replace(name, "NAME")


def test_drafts_not_offered_get_one_message_and_no_download(client, app_url):
    """A non-model folder, a model folder the server has but does not offer, a
    missing path and a hub id: the same words for each, on every entry point
    that takes a draft (runs, sweeps, tipping curves)."""
    model_folder = str(models.prepare_default())  # on disk: the app runs it as the target
    names = ["/etc", model_folder, "/no/such/folder", HUB_ID]
    assert not _hub_cache(HUB_ID).exists()
    calls = {
        "/run": lambda d: run(client, "Hi", method="draft_model", draft=d, max_tokens=8),
        "/sweep": lambda d: client.predict("structured_output", "k", "2", 8, 1, "draft_model",
                                           d, 4, api_name="/sweep"),
        "/tipping": lambda d: client.predict("draft_model", d, 4, None, "length",
                                             api_name="/tipping"),
    }
    for endpoint, call in calls.items():
        messages = {_refusal(call, name) for name in names}
        assert len(messages) == 1, (endpoint, messages)
        assert "not in the list of choices" in messages.pop()
    assert not _hub_cache(HUB_ID).exists()  # nothing was fetched


def test_the_page_offers_the_local_drafts_and_their_pairs_only(client, app_url):
    with urllib.request.urlopen(app_url + "config") as r:
        config = json.load(r)
    props = {c["props"].get("elem_id"): c["props"] for c in config["components"]}
    assert [v for _, v in props["draft"]["choices"]] == ["", "default-truncated"]
    assert props["draft"]["allow_custom_value"] is False
    assert [v for _, v in props["pair"]["choices"]] == ["cpu-ngram", "cpu-suffix",
                                                       "cpu-bad-draft"]
    # a pair the page does not list (a GPU target's) is refused by its id alone
    assert "not in the list of choices" in _refusal(
        lambda p: client.predict(p, api_name="/pair"), "gpu-llama8b-llama1b")


def test_an_offered_draft_runs(client, outputs, app_url):
    """4 tokens: the prefill's, then at least one step the draft proposes for (a CPU
    draft model's steps are slow, and nothing here depends on length)."""
    out = run(client, "Name three colours.", method="draft_model", draft="default-truncated",
              max_tokens=4)
    status = out[outputs.index("Status")]
    assert 'data-kind="done"' in status, status
    spec = fetch_record(app_url, out[outputs.index("Download trace (JSON)")]).speculative
    assert spec.config.draft_model == "default-truncated", spec.config
    assert any(s.num_draft_tokens for s in spec.steps), "the draft proposed nothing"


def test_a_prompt_over_the_bound_is_refused_before_tokenizing(client, outputs):
    out = run(client, "a" * 100_001, max_tokens=8)
    status = out[outputs.index("Status")]
    assert 'data-kind="error"' in status
    assert "the prompt is 100,001 characters; this server takes at most 100,000" in status
    assert "\n" not in status
    # exactly at the bound it goes on to the tokenizer, whose own limit then speaks
    out = run(client, "a " * 50_000, max_tokens=8)
    assert "longer than max_model_len" in out[outputs.index("Status")]


@pytest.fixture(scope="module")
def any_model_client(tmp_path_factory):
    """The page with --allow-any-model, served in-process with the real runner:
    a draft it cannot load fails in preflight, before any engine is built."""
    from gradio_client import Client

    from space.observe.prom import Metrics
    from space.records.config import EngineSpec
    from space.runs import offer
    from space.ui import app, inputs

    spec = EngineSpec()
    demo = app.build_demo(spec, Metrics(), inputs.sample_prompts(),
                          offer=offer.build(spec, allow_any_model=True))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _, local_url, _ = app.launch(demo, Metrics(), port=port)
    yield local_url, Client(local_url, verbose=False)
    demo.close()


def test_with_any_model_missing_and_non_model_paths_read_the_same(any_model_client,
                                                                  tmp_path):
    url, client = any_model_client
    with urllib.request.urlopen(url + "config") as r:
        draft = next(c["props"] for c in json.load(r)["components"]
                     if c["props"].get("elem_id") == "draft")
    assert draft["allow_custom_value"] is True  # the page lets one type a name
    labels = [r["label"] for r in client.view_api(return_format="dict", print_info=False)
              ["named_endpoints"]["/run"]["returns"]]
    (tmp_path / "empty").mkdir()
    (tmp_path / "a-file").write_text("not a model")
    names = ["/etc", "/no/such/folder", str(tmp_path / "empty"), str(tmp_path / "a-file"),
             str(tmp_path / "a-file" / "below")]
    messages = set()
    for name in names:
        out = run(client, "Hi", method="draft_model", draft=name, max_tokens=8)
        status = out[labels.index("Status")]
        assert 'data-kind="error"' in status, status
        messages.add(html.unescape(re.sub(r"<[^>]+>", "", status)).replace(name, "NAME"))
    assert messages == {"\u26a0 model not found: NAME (not a model folder with a config.json, "
                        "not a hub id like owner/name)"}
