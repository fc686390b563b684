"""Preset files load, validate and say why; GPU pairs are marked."""
import json

import pytest

from space.runs import presets
from space.runs.presets import PresetError

EXPECTED_WORKLOADS = {"structured_output", "code_editing", "summarization", "retrieval_qa",
                      "translation", "math_reasoning", "creative_writing", "long_context",
                      "concurrency"}


def test_all_workloads_load_with_reasons_and_prompts():
    workloads = presets.load_workloads()
    assert {w.id for w in workloads} == EXPECTED_WORKLOADS
    for w in workloads:
        assert w.reason.strip() and "\n" not in w.reason, w.id
        assert 2 <= len(w.prompts) <= 3, w.id
        assert w.max_tokens >= 1 and 0.0 <= w.temperature <= 2.0
        for p in w.prompts:
            assert "{source}" not in p.text, (w.id, p.id)


def test_long_context_prompt_has_3k_tokens():
    # estimated as words x 1.3 (presets.TOKENS_PER_WORD); chars / 4 agrees
    for p in presets.get_workload("long_context").prompts:
        assert p.estimated_tokens >= 3000, p.id
        assert len(p.text) / 4 >= 3000, p.id
        assert p.source_file == "long_passage.txt"


def test_long_context_prompt_has_3k_real_tokens():
    """The estimate checked against SmolLM2's own tokenizer, when setup has built it."""
    from space.common.paths import cache_dir
    from space.engine.models import DEFAULT_MODEL
    path = cache_dir() / "models" / DEFAULT_MODEL / "tokenizer.json"
    tokenizers = pytest.importorskip("tokenizers")
    if not path.is_file():
        pytest.skip(f"no converted default model at {path}")
    tok = tokenizers.Tokenizer.from_file(str(path))
    for p in presets.get_workload("long_context").prompts:
        assert len(tok.encode(p.text).ids) >= 3000, p.id   # 3173-3182 when written


def test_short_workloads_fit_a_small_model():
    for w in presets.load_workloads():
        if w.id != "long_context":
            assert all(p.estimated_tokens < 400 for p in w.prompts), w.id


def test_creative_writing_samples_and_concurrency_defaults():
    creative = presets.get_workload("creative_writing")
    assert creative.temperature == 0.8 and "loop" in creative.reason
    assert presets.get_workload("concurrency").concurrency == 4
    assert presets.get_workload("code_editing").concurrency == 1


def test_code_source_is_inlined():
    prompt = presets.get_workload("code_editing").prompt("rename_variable")
    assert "def restock(items, threshold):" in prompt.text and "cnt" in prompt.text


def test_model_pairs_and_gpu_marks():
    pairs = {p.id: p for p in presets.load_model_pairs()}
    cpu = [p for p in pairs.values() if not p.needs_gpu]
    assert {p.method for p in cpu} == {"ngram", "suffix", "draft_model"}
    assert all(p.target == "default" for p in cpu)
    assert pairs["cpu-suffix"].requires == ("arctic-inference",)
    assert pairs["cpu-bad-draft"].draft == "default-truncated"
    for p in pairs.values():
        if p.needs_gpu:
            assert "Disabled on CPU" in p.note, p.id
            assert p.target != "default"
    assert pairs["gpu-llama8b-eagle3"].method == "eagle3"


def test_speculative_config_uses_vllm_keys():
    pairs = {p.id: p for p in presets.load_model_pairs()}
    assert pairs["cpu-ngram"].engine_spec().speculative_config() == {
        "method": "ngram", "num_speculative_tokens": 4,
        "prompt_lookup_min": 2, "prompt_lookup_max": 5}
    assert pairs["gpu-llama8b-llama1b"].engine_spec().speculative_config() == {
        "method": "draft_model", "num_speculative_tokens": 4,
        "model": "meta-llama/Llama-3.2-1B-Instruct"}
    cfg = pairs["cpu-bad-draft"].engine_spec().speculative_config("/tmp/truncated")
    assert cfg["model"] == "/tmp/truncated"


def _write_workload(tmp_path, **overrides):
    (tmp_path / "workloads").mkdir()
    (tmp_path / "texts").mkdir()
    w = {"id": "w", "title": "W", "reason": "r", "temperature": 0.0, "max_tokens": 8,
         "prompts": [{"id": "p", "text": "hi"}]}
    w.update(overrides)
    (tmp_path / "workloads" / "w.json").write_text(json.dumps(w))
    return tmp_path / "workloads"


@pytest.mark.parametrize("overrides, message", [
    ({"reason": ""}, "'reason' is empty"),
    ({"temperature": 3.0}, "temperature"),
    ({"max_tokens": "8"}, "'max_tokens' has the wrong type"),
    ({"prompts": []}, "'prompts' is empty"),
    ({"promts": []}, "unknown field(s) promts"),
    ({"prompts": [{"id": "p", "text": "x {source}"}]}, "go together"),
    ({"prompts": [{"id": "p", "text": "{source}", "source_file": "nope.txt"}]}, "not found"),
    ({"prompts": [{"id": "p", "text": "a"}, {"id": "p", "text": "b"}]}, "duplicate"),
])
def test_workload_validation_errors(tmp_path, overrides, message):
    with pytest.raises(PresetError, match="w.json") as e:
        presets.load_workloads(_write_workload(tmp_path, **overrides))
    assert message in str(e.value)


@pytest.mark.parametrize("entry, message", [
    ({"method": "magic"}, "unknown method"),
    ({"method": "draft_model"}, "needs a 'draft'"),
    ({"draft": "x"}, "takes no 'draft'"),
    ({"k": 0}, "k must be"),
    ({"needs_gpu": "no"}, "'needs_gpu' has the wrong type"),
    ({"speculative": {"prompt_lookup_min": 5, "prompt_lookup_max": 2}}, "prompt_lookup_min"),
    ({"memory_gib": -3}, "memory_gib must be"),
    ({"memory_gib": True}, "'memory_gib' has the wrong type"),
    ({"fits": ["H100 80 GB", ""]}, "fits must be"),
])
def test_model_pair_validation_errors(tmp_path, entry, message):
    pair = {"id": "p", "title": "P", "target": "default", "method": "ngram", "k": 4,
            "needs_gpu": False, "note": "n"}
    pair.update(entry)
    path = tmp_path / "pairs.json"
    path.write_text(json.dumps({"pairs": [pair]}))
    with pytest.raises(PresetError, match=r"pairs\[0\]") as e:
        presets.load_model_pairs(path)
    assert message in str(e.value)


def test_unreadable_presets_warn_once_and_fall_back(tmp_path, caplog):
    (tmp_path / "model_pairs.json").write_text("{not json")
    with caplog.at_level("WARNING", logger="space.runs.presets"):
        got = presets.load_or_warn(lambda: presets.load_model_pairs(tmp_path / "model_pairs.json"),
                                   "model pairs", "offering none")
    (message,) = caplog.messages
    assert got is None and message.startswith("model pairs: model_pairs.json: cannot read JSON")
    assert message.endswith("; offering none")
    assert presets.load_or_warn(presets.load_model_pairs, "model pairs", "offering none")
