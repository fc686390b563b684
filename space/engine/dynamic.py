"""vLLM's own reading of a batch-size schedule of k (``num_speculative_tokens_per_batch_size``).

The scheduler expands the schedule with ``build_dynamic_sd_schedule_lookup``
(``vllm/v1/spec_decode/dynamic/utils.py``, the same in 0.32 and 0.33): it
validates the entries, carries a k across gaps and past the last range, and
caps every k at ``num_speculative_tokens``. SpecLens validates the schedules
it derives (``space/judge/deploy.py``) with that function, so a config that
SpecLens shows is one vLLM accepts.
"""
from __future__ import annotations

from space.records.config import ConfigError


def schedule_lookup(schedule: list[list[int]], num_speculative_tokens: int,
                    max_batch: int) -> list[int]:
    """vLLM's dense lookup: index b holds the k vLLM uses at batch size b (index 0 unused).

    Raises ``ConfigError`` with vLLM's own message for a schedule vLLM refuses.
    """
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    try:
        return build_dynamic_sd_schedule_lookup(schedule, max_batch, num_speculative_tokens)
    except ValueError as exc:
        raise ConfigError(f"vLLM refuses this schedule: {exc}") from None


def check_schedule(schedule: list[list[int]], num_speculative_tokens: int, max_batch: int,
                   expected: dict[int, int]) -> list[int]:
    """Validate ``schedule`` and check that vLLM uses ``expected[batch]`` k at each
    measured batch size; returns the lookup."""
    lookup = schedule_lookup(schedule, num_speculative_tokens, max_batch)
    wrong = {b: (k, lookup[b]) for b, k in expected.items() if lookup[b] != k}
    if wrong:
        raise ConfigError("vLLM would read this schedule differently: " + ", ".join(
            f"batch {b}: k {k} expected, {got} used" for b, (k, got) in sorted(wrong.items())))
    return lookup
