"""What a visitor may load (space/runs/offer.py): the offered drafts and pairs, the
refusal that never tells which paths exist, and the prompt bound."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from space.engine import models
from space.records.config import ConfigError, EngineSpec
from space.runs import offer
from space.runs.presets import ModelPair
from space.ui import inputs

HUB_DRAFT = "someone/not-in-any-cache"


def _model_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps({"vocab_size": 49152}))
    return path


def _refusal(o: offer.Offer, draft: str) -> str:
    with pytest.raises(ConfigError) as exc:
        inputs.engine_spec(EngineSpec(), "draft_model", draft, 4, offer=o)
    return str(exc.value)


def test_the_default_offer_is_the_local_bad_draft_and_the_pairs_for_this_model():
    o = offer.build(EngineSpec())
    assert o.drafts == ("default-truncated",)
    assert set(o.pairs) == {"cpu-ngram", "cpu-suffix", "cpu-bad-draft"}  # no GPU target's
    assert not o.allow_any_model and o.max_prompt_chars == 100_000
    labels = [c.id for c in inputs.pair_choices(False, o)]
    assert labels == ["cpu-ngram", "cpu-suffix", "cpu-bad-draft"]


def test_start_draft_then_on_disk_presets_then_named(tmp_path):
    local = _model_folder(tmp_path / "draft-a")
    pairs = [ModelPair("on-disk", "T", "default", "draft_model", 4, False, "", draft=str(local)),
             ModelPair("hub", "T", "default", "draft_model", 4, False, "", draft=HUB_DRAFT),
             ModelPair("other-target", "T", "owner/big", "draft_model", 4, True, "",
                       draft="default-truncated"),
             ModelPair("lookup", "T", "SmolLM2-135M-Instruct", "ngram", 4, False, "")]
    o = offer.build(EngineSpec(method="draft_model", draft_model="default"),
                    offer.split_names(["x/y, ,z/w", "x/y", "default-truncated"]), pairs=pairs)
    # the hub draft is in no cache: a visitor must not start its download
    assert o.drafts == ("default", str(local), "x/y", "z/w", "default-truncated")
    assert o.pairs == ("on-disk", "lookup")  # "default" and its full name are one target
    assert o.offers_draft("SmolLM2-135M-Instruct-TRUNCATED")  # an alias in any spelling
    assert not o.offers_draft(HUB_DRAFT)
    # with free text, every preset for this model is offered (the operator allowed downloads)
    anything = offer.build(EngineSpec(), allow_any_model=True, pairs=pairs)
    assert anything.pairs == ("on-disk", "hub", "lookup")
    assert anything.offers_draft("/etc") and anything.offers_draft(HUB_DRAFT)
    with pytest.raises(ConfigError, match="the draft must be a name, got list"):
        inputs.engine_spec(EngineSpec(), "draft_model", ["/etc"], 4, offer=anything)


def test_a_hub_model_in_the_local_cache_is_on_disk(tmp_path, monkeypatch):
    import huggingface_hub.constants as hub

    # The cache's own layout: refs/main names the snapshot that holds the files.
    repo = tmp_path / "models--owner--cached-draft"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    _model_folder(repo / "snapshots" / ("0" * 40))
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path))
    assert offer.on_disk("owner/cached-draft")
    assert not offer.on_disk("owner/elsewhere")
    pair = ModelPair("p", "T", "default", "draft_model", 4, False, "", draft="owner/cached-draft")
    assert offer.build(EngineSpec(), pairs=[pair]).drafts == ("owner/cached-draft",)


def test_a_draft_not_offered_gets_one_message_whatever_exists(tmp_path):
    """A visitor learns nothing about the server's files: a non-model folder, a
    model folder, a missing path and a hub id get the same words."""
    o = offer.build(EngineSpec())
    model = str(_model_folder(tmp_path / "a-model"))
    tries = {"/etc": "/etc", model: model, "/no/such/folder": "/no/such/folder",
             HUB_DRAFT: HUB_DRAFT}
    messages = {_refusal(o, d).replace(repr(name), "NAME") for d, name in tries.items()}
    assert messages == {"draft model NAME is not offered on this server; pick one from the list"}
    # a pair that is not offered is refused the same way, before its file is read
    with pytest.raises(ConfigError, match="model pair 'gpu-llama8b-ngram' is not offered"):
        inputs.engine_spec(EngineSpec(), "ngram", "", 4, "gpu-llama8b-ngram", offer=o)
    # an offered draft, and no draft, pass
    assert inputs.engine_spec(EngineSpec(), "draft_model", "default-truncated", 4,
                              offer=o).draft_model == "default-truncated"
    assert inputs.engine_spec(EngineSpec(), "ngram", "", 4, "cpu-ngram", offer=o).k == 4


def test_a_refusal_quotes_a_long_name_briefly():
    message = _refusal(offer.Offer(), "x" * 10_000)
    assert len(message) < 200 and "\n" not in message


def test_the_prompt_is_bounded_in_characters_before_tokenizing():
    o = offer.Offer(max_prompt_chars=100_000)
    assert inputs.request("a" * 100_000, 0, 1, 8, 0, offer=o).prompt == "a" * 100_000
    with pytest.raises(ConfigError) as exc:
        inputs.request("a" * 100_001, 0, 1, 8, 0, offer=o)
    assert str(exc.value) == ("the prompt is 100,001 characters; this server takes at most "
                              "100,000")
    with pytest.raises(ConfigError, match="must be text"):
        inputs.request(["a"], 0, 1, 8, 0, offer=o)
    with pytest.raises(ConfigError, match="at least 1"):
        offer.build(EngineSpec(), max_prompt_chars=0)


def test_with_any_model_a_missing_path_and_a_non_model_path_read_the_same(tmp_path, monkeypatch):
    """--allow-any-model sends free text to resolve_model: it too must not tell
    which paths exist. An owner/name folder without config.json is looked up on
    the hub, as a missing one is (offline here: both fail alike)."""
    import huggingface_hub.constants as hub

    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "owner" / "present").mkdir(parents=True)

    def message(name: str) -> str:
        with pytest.raises(models.ModelError) as exc:
            models.resolve_model(name)
        return str(exc.value).replace(name, "NAME")

    assert message("/etc") == message("/no/such/folder") == message(str(tmp_path / "owner"))
    assert message("owner/present") == message("owner/absent")
    assert "download" in message("owner/present")


def test_an_operators_draft_that_is_nowhere_fails_the_start(tmp_path):
    with pytest.raises(ConfigError, match="--drafts ./no-such-draft: no model folder"):
        offer.build(EngineSpec(), ["./no-such-draft"])
    named = [str(_model_folder(tmp_path / "mine")), "owner/on-the-hub"]  # a hub id may download
    assert offer.build(EngineSpec(), named).drafts == ("default-truncated", *named)
