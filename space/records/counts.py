"""A run's speculative-decoding counts and their rates (pure): from the step records, or from
vLLM's per-request metrics where steps were not all seen one by one (merged chunks, missing hooks),
never from a step placement. Rates follow vllm/v1/spec_decode/metrics.py (num_drafts: verify steps).
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeGuard

CountsSource = Literal["steps", "vllm_metrics"]
FROM_STEPS: Final = "steps"
FROM_VLLM_METRICS: Final = "vllm_metrics"  # RunTrace.vllm_spec_metrics
# Draft positions counted one by one: a file claiming more is hostile, not a run
# (its "drafted 2**31" would otherwise build a tuple of 2**31 counts).
MAX_POSITIONS: Final = 64


@dataclass(frozen=True)
class SpecCounts:
    """Integer counts of one run (or of several, added), and their rates."""

    num_drafts: int = 0            # verify steps
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_accepted_tokens_per_pos: tuple[int, ...] = ()

    @classmethod
    def from_per_step(cls, accepted: Sequence[int], drafted: Sequence[int]) -> SpecCounts:
        """From each verify step's accepted and drafted counts, in any order."""
        if len(accepted) != len(drafted):
            raise ValueError(f"{len(accepted)} accepted counts for {len(drafted)} drafts")
        k = min(max(drafted, default=0), MAX_POSITIONS)
        return cls(len(drafted), sum(drafted), sum(accepted),
                   tuple(sum(1 for a in accepted if a > p) for p in range(k)))

    @classmethod
    def from_vllm_metrics(cls, m: Mapping[str, Any] | None) -> SpecCounts | None:
        """From vLLM's per-request metrics (None: they hold no counts): the per-step
        arrays when they agree with the summary, else the summary's totals with
        per-position counts from its histogram (``[j]``: steps that accepted j drafts).
        """
        if not m:
            return None
        acc, dra = m.get("per_step_accepted"), m.get("per_step_drafted")
        steps, tokens = m.get("num_spec_steps"), m.get("num_draft_tokens")
        if _counts(acc) and _counts(dra) and len(acc) == len(dra) and (
                steps is None or steps == len(dra)):
            return cls.from_per_step(acc, dra)
        hist = m.get("histogram", m.get("acceptance_histogram"))
        accepted = m.get("num_accepted_draft_tokens")
        if not (_count(steps) and _count(tokens)):
            return None
        if not _count(accepted):
            if not _counts(hist):
                return None
            accepted = sum(j * n for j, n in enumerate(hist))
        per_pos: tuple[int, ...] = ()
        if _counts(hist):  # per_pos[p] = steps that accepted more than p drafts
            per_pos = tuple(list(itertools.accumulate(reversed(hist[1:])))[::-1][:MAX_POSITIONS])
        return cls(steps, tokens, accepted, per_pos)

    @property
    def acceptance_rate(self) -> float | None:
        """None when nothing was drafted: no rate, not zero."""
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens else None

    @property
    def mean_acceptance_length(self) -> float | None:
        return 1 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else None

    @property
    def per_position_acceptance(self) -> list[float]:
        if not self.num_drafts:
            return []
        return [c / self.num_drafts for c in self.num_accepted_tokens_per_pos]


def _count(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _counts(v: Any) -> TypeGuard[list[int]]:
    return isinstance(v, list) and all(_count(x) for x in v)
