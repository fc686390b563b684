"""GPU model pairs, validated for configuration only, on CPU, without weights.

What vLLM can check offline:
  - every key of a pair's ``speculative_config`` is a declared field of
    ``vllm.config.SpeculativeConfig``, and its value passes that field's
    declared type and constraints (pydantic, as vLLM's own constructor does);
  - ngram pairs build a complete ``SpeculativeConfig`` (its ``__post_init__``
    and ``_verify_args``): lookup methods need no target or draft config;
  - the exact engine keywords SpecLens passes on a GPU box
    (``engine_kwargs`` with ``gpu_memory_utilization``) build ``EngineArgs``.
What it cannot: a draft_model / eagle3 ``SpeculativeConfig`` builds a
``ModelConfig`` from the draft's (and the target's) config.json on the hub,
and this machine has no hub access, so those pairs stop at the field check.
Suffix pairs need arctic-inference, which is not installed here: vLLM's own
check refuses them, and so does our preflight.
"""
from __future__ import annotations

import dataclasses
import importlib.util
from typing import Annotated, get_args

import pytest

from space.records.config import ConfigError, TracingSettings
from space.runs import presets
from space.runs.workloads import pair_status

pytestmark = pytest.mark.engine

PAIRS = presets.load_model_pairs()
GPU_PAIRS = [p for p in PAIRS if p.needs_gpu]
HAS_ARCTIC = importlib.util.find_spec("arctic_inference") is not None


def _flatten_literal(tp) -> set[str]:
    out = set()
    for a in get_args(tp):
        out |= _flatten_literal(a) if get_args(a) else {a}
    return out


@pytest.fixture(scope="module")
def vllm_spec_fields():
    from vllm.config import SpeculativeConfig

    return SpeculativeConfig.__pydantic_fields__


def test_there_are_gpu_pairs_of_each_kind():
    assert {p.method for p in GPU_PAIRS} >= {"draft_model", "eagle3", "ngram", "suffix"}


def check_fields(cfg: dict, fields) -> None:
    """Each key is a SpeculativeConfig field and its value passes the field's type."""
    from pydantic import TypeAdapter

    unknown = set(cfg) - set(fields)
    assert not unknown, f"not SpeculativeConfig fields: {unknown}"
    for key, value in cfg.items():
        f = fields[key]
        adapter = TypeAdapter(Annotated[(f.annotation, *f.metadata)] if f.metadata
                              else f.annotation)
        adapter.validate_python(value)  # raises on a wrong type or a broken constraint


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p.id)
def test_keys_and_values_are_vllm_fields(pair, vllm_spec_fields):
    cfg = pair.engine_spec().speculative_config()
    check_fields(cfg, vllm_spec_fields)
    assert cfg["method"] in _flatten_literal(vllm_spec_fields["method"].annotation)


@pytest.mark.parametrize("bad", [{"num_speculative_tokens": 0}, {"prompt_lookup_min": "two"},
                                 {"method": "medusa2"}, {"num_draft_tokens": 4}])
def test_the_field_check_catches_bad_entries(bad, vllm_spec_fields):
    with pytest.raises((AssertionError, ValueError)):  # unknown key | pydantic's ValidationError
        check_fields(bad, vllm_spec_fields)


@pytest.mark.parametrize("pair", GPU_PAIRS, ids=lambda p: p.id)
def test_gpu_pair_is_valid_on_gpu_and_off_on_cpu(pair):
    spec = pair.engine_spec()
    spec.validate(on_gpu=True)
    status = pair_status(pair, on_gpu=False)
    assert not status.available and "GPU" in status.reason
    assert pair_status(pair, on_gpu=True).available == (HAS_ARCTIC or "arctic-inference"
                                                         not in pair.requires)
    if pair.method in ("eagle", "eagle3", "mtp"):
        with pytest.raises(ConfigError, match="needs trained heads and a GPU"):
            spec.validate(on_gpu=False)


@pytest.mark.parametrize("pair", [p for p in GPU_PAIRS if p.method == "ngram"],
                         ids=lambda p: p.id)
def test_ngram_gpu_pair_builds_vllm_speculative_config(pair):
    from vllm.config import SpeculativeConfig

    sc = SpeculativeConfig(**pair.engine_spec().speculative_config())
    assert sc.method == "ngram" and sc.num_speculative_tokens == pair.k
    assert (sc.prompt_lookup_min, sc.prompt_lookup_max) == (
        pair.speculative["prompt_lookup_min"], pair.speculative["prompt_lookup_max"])


@pytest.mark.skipif(HAS_ARCTIC, reason="arctic-inference is installed")
@pytest.mark.parametrize("pair", [p for p in PAIRS if p.method == "suffix"], ids=lambda p: p.id)
def test_suffix_pairs_are_refused_without_arctic_inference(pair):
    from vllm.config import SpeculativeConfig

    from space.runs.preflight import preflight

    with pytest.raises(ImportError, match="Arctic Inference"):
        SpeculativeConfig(**pair.engine_spec().speculative_config())
    assert not pair_status(pair, on_gpu=True).available
    spec = dataclasses.replace(pair.engine_spec(), model="default")
    with pytest.raises(ConfigError, match="arctic-inference"):
        preflight(spec, [])


@pytest.mark.parametrize("pair", GPU_PAIRS, ids=lambda p: p.id)
def test_gpu_engine_keywords_build_vllm_engine_args(pair, monkeypatch):
    """The keywords TracedEngine passes on a GPU box are EngineArgs fields (no hub read)."""
    from vllm import EngineArgs

    from space.engine import core

    monkeypatch.setattr(core, "on_gpu", lambda: True)
    spec = pair.engine_spec()
    kw = core.engine_kwargs(spec, pair.target, pair.draft, TracingSettings())
    assert kw["gpu_memory_utilization"] == spec.gpu_memory_utilization
    assert "kv_cache_memory_bytes" not in kw  # the CPU-only setting
    args = EngineArgs(**kw)
    assert args.speculative_config == pair.engine_spec().speculative_config(pair.draft)
    assert args.per_request_spec_decode_metrics == "detailed"


def test_the_methods_table_speaks_vllms_config(vllm_spec_fields):
    """Every method SpecLens offers is a vLLM SpeculativeMethod, and every key
    the table lets travel with a method is a SpeculativeConfig field."""
    from space.records.methods import METHODS, SYNTHETIC_VLLM_KEYS

    vllm_methods = set(_flatten_literal(vllm_spec_fields["method"].annotation))
    assert set(METHODS) <= vllm_methods
    keys = {k for row in METHODS.values() for k in row.vllm_keys} | set(SYNTHETIC_VLLM_KEYS)
    assert keys <= set(vllm_spec_fields), keys - set(vllm_spec_fields)


@pytest.mark.parametrize("pair", GPU_PAIRS, ids=lambda p: p.id)
def test_gpu_pairs_state_their_memory_and_the_gpus_that_hold_it(pair):
    """Each GPU pair says what an in-process compare holds and which GPUs fit it;
    every GPU named has that much memory (its name carries its GB)."""
    import re

    assert pair.memory_gib and pair.fits, pair.id
    for gpu in pair.fits:
        gb = int(re.search(r"(\d+) GB", gpu).group(1))
        assert pair.memory_gib * 2**30 / 1e9 <= gb, (pair.id, gpu)
    if pair.method in ("draft_model", "eagle3"):  # hub checkpoints: what is not checked is said
        assert "Not checked here (no hub access)" in pair.note


def test_the_blackwell_pairs_are_there():
    by_id = {p.id: p for p in GPU_PAIRS}
    nvfp4 = by_id["gpu-qwen3-32b-nvfp4-0.6b"]
    assert (nvfp4.target, nvfp4.draft) == ("RedHatAI/Qwen3-32B-NVFP4", "Qwen/Qwen3-0.6B")
    assert all("Blackwell" in g or "B200" in g for g in nvfp4.fits)
    assert any("RTX PRO 6000" in g for g in nvfp4.fits)
    heads = {p.draft for p in GPU_PAIRS if p.method == "eagle3"}
    assert {"RedHatAI/gpt-oss-120b-speculator.eagle3", "RedHatAI/Qwen3-8B-speculator.eagle3",
            "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3"} <= heads
