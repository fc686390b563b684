"""Page inputs to specs (space/ui/inputs.py): coercion, refusals, pairs, samples."""
from __future__ import annotations

import pytest

from space.records.config import ConfigError, EngineSpec
from space.runs.offer import Offer
from space.ui import inputs

# These tests are about coercion and pairs' keys: any draft is accepted here
# (what a server offers is tests/unit/test_offer.py's).
ANY = Offer(pairs=("cpu-ngram", "gpu-llama8b-ngram"), allow_any_model=True)


def test_inputs_coerce_and_reject():
    base = EngineSpec()
    spec = inputs.engine_spec(base, "ngram", "default-truncated", 6.0, offer=ANY)
    assert spec.k == 6 and spec.draft_model is None  # ngram takes no draft
    assert inputs.engine_spec(base, "draft_model", " d ", 3, offer=ANY).draft_model == "d"
    for bad in ("many", None, 2.5):
        with pytest.raises(ConfigError, match="k must be"):
            inputs.engine_spec(base, "ngram", "", bad, offer=ANY)
    req = inputs.request("hi", "0.5", 1, 64.0, "", offer=ANY)
    assert (req.temperature, req.max_tokens, req.seed) == (0.5, 64, None)
    with pytest.raises(ConfigError):
        inputs.repeats(0)


def test_a_pairs_vllm_keys_travel_only_with_its_method():
    def window(spec):
        return spec.prompt_lookup_min, spec.prompt_lookup_max

    # started with a --pair whose window starts at 3 and a key vLLM takes as is
    base = EngineSpec(prompt_lookup_min=3, extra_speculative=(("some_key", 1),))
    assert window(inputs.engine_spec(base, "ngram", "", 4, offer=ANY)) == (3, 5)
    assert inputs.engine_spec(base, "ngram", "", 6, offer=ANY).extra_speculative == \
        (("some_key", 1),)
    # the cpu-ngram pair chosen in the page brings its own window, and no other keys
    chosen = inputs.engine_spec(base, "ngram", "", 4, "cpu-ngram", offer=ANY)
    assert window(chosen) == (2, 5) and chosen.extra_speculative == ()
    # the method changed after the pair was chosen: the keys stay behind
    spec = inputs.engine_spec(base, "draft_model", "default-truncated", 4, "cpu-ngram",
                              offer=ANY)
    assert spec.extra_speculative == ()
    assert inputs.engine_spec(base, "draft_model", "d", 4, offer=ANY).extra_speculative == ()
    # a GPU pair's target is not this app's: the command line's settings stay
    gpu = inputs.engine_spec(base, "ngram", "", 4, "gpu-llama8b-ngram", offer=ANY)
    assert window(gpu) == (3, 5) and gpu.extra_speculative == (("some_key", 1),)
    with pytest.raises(ConfigError, match="model pair 'no-such-pair' is not offered"):
        inputs.engine_spec(base, "ngram", "", 4, "no-such-pair", offer=ANY)
    listed = Offer(pairs=("no-such-pair",))  # an operator's typo: the presets say so
    with pytest.raises(ConfigError, match="no model pair"):
        inputs.engine_spec(base, "ngram", "", 4, "no-such-pair", offer=listed)


def test_samples_cover_structured_and_creative():
    samples = inputs.sample_prompts(on_gpu=False)
    labels = " ".join(s.label.lower() for s in samples)
    assert "structured" in labels and "creative" in labels and "code" in labels
    assert all(s.text.strip() for s in samples)
    assert "concurrency" not in labels  # one request at a time in the page


def test_changing_method_or_k_keeps_one_baseline():
    base = EngineSpec()
    changed = inputs.engine_spec(base, "draft_model", "default-truncated", 7, offer=ANY)
    assert changed.baseline() == base.baseline()

