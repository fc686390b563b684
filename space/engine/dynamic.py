"""vLLM's own reading of a batch-size schedule of k (``num_speculative_tokens_per_batch_size``),
so that a config SpecLens shows is one vLLM accepts."""
from __future__ import annotations

from space.records.config import ConfigError


def check_schedule(schedule: list[list[int]], num_speculative_tokens: int, max_batch: int,
                   expected: dict[int, int]) -> list[int]:
    """Index b: the k vLLM uses at batch size b (0 unused), checked to be ``expected[batch]``
    at each measured batch size; ``ConfigError`` if vLLM refuses or reads it otherwise."""
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    try:
        lookup = build_dynamic_sd_schedule_lookup(schedule, max_batch, num_speculative_tokens)
    except ValueError as exc:
        raise ConfigError(f"vLLM refuses this schedule: {exc}") from None
    wrong = {b: (k, lookup[b]) for b, k in expected.items() if lookup[b] != k}
    if wrong:
        raise ConfigError("vLLM would read this schedule differently: " + ", ".join(
            f"batch {b}: k {k} expected, {got} used" for b, (k, got) in sorted(wrong.items())))
    return lookup
