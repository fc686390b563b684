"""A run's speculative-decoding counts, and the rates derived from them (pure).

One mechanism for run-level counts, whatever they come from. A ``RunTrace``
takes its counts from one of two sources (``RunTrace.counts_from``):

- ``"steps"``: its own step records, where each verify step was seen (the
  in-process engine's hooks);
- ``"vllm_metrics"``: vLLM's own per-request metrics
  (``RequestSpecDecodeMetrics``: the ordered ``per_step_accepted`` /
  ``per_step_drafted`` arrays at ``detailed``, else the summary and its
  histogram), where the steps are not all seen one by one: a server's stream
  whose chunks merged steps (space/server/), or an in-process run whose hooks
  are missing. Steps may then be placed approximately or not at all; the
  counts never come from a placement.

Both go through ``SpecCounts.from_per_step``, so the rates are derived in one
place with vLLM's definitions (vllm/v1/spec_decode/metrics.py):
  acceptance_rate            = num_accepted_tokens / num_draft_tokens
  mean_acceptance_length     = 1 + num_accepted_tokens / num_drafts
  per_position_acceptance[p] = num_accepted_tokens_per_pos[p] / num_drafts
where num_drafts counts verify steps (a draft is one step's proposal) and vLLM
accepts a prefix of the drafts: position p is accepted iff more than p were.
"""
from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeGuard, get_args

CountsSource = Literal["steps", "vllm_metrics"]
FROM_STEPS: Final = "steps"               # the step records (each verify step seen)
FROM_VLLM_METRICS: Final = "vllm_metrics"  # vLLM's per-request metrics (RunTrace.vllm_spec_metrics)
COUNTS_SOURCES: tuple[CountsSource, ...] = get_args(CountsSource)
# Draft positions counted one by one: vLLM's k is rarely above 16; a file
# claiming more positions than this is hostile, not a run.
MAX_POSITIONS: Final = 64


@dataclass(frozen=True)
class SpecCounts:
    """Integer counts of one run (or of several, added); rates derived below.

    Example: verify steps that accepted [4, 1, 0] of [4, 4, 4] drafts
      >>> c = SpecCounts.from_per_step([4, 1, 0], [4, 4, 4])
      >>> c.num_accepted_tokens_per_pos, c.acceptance_rate, c.mean_acceptance_length
      ((2, 1, 1, 1), 0.4166666666666667, 2.666666666666667)
    """

    num_drafts: int = 0            # verify steps
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_accepted_tokens_per_pos: tuple[int, ...] = ()

    @classmethod
    def from_per_step(cls, accepted: Sequence[int], drafted: Sequence[int]) -> SpecCounts:
        """From each verify step's accepted and drafted counts, in any order."""
        if len(accepted) != len(drafted):
            raise ValueError(f"{len(accepted)} accepted counts for {len(drafted)} drafts")
        # Positions past MAX_POSITIONS are not counted one by one: a hostile file's
        # "drafted 2**31" would otherwise build a tuple of 2**31 counts.
        k = min(max(drafted, default=0), MAX_POSITIONS)
        return cls(len(drafted), sum(drafted), sum(accepted),
                   tuple(sum(1 for a in accepted if a > p) for p in range(k)))

    @classmethod
    def from_vllm_metrics(cls, m: Mapping[str, Any] | None) -> SpecCounts | None:
        """From vLLM's per-request metrics (a server's ``metrics.speculative_decoding``
        or the in-process ``spec_decode_metrics``, as ``RunTrace.vllm_spec_metrics``
        holds them); None when they hold no counts.

        The per-step arrays when they are there and agree with the summary;
        otherwise the summary's totals, with per-position counts from its
        histogram (``histogram[j]``: verify steps that accepted j drafts).
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
        """None when nothing was drafted: no drafts means no rate, not zero."""
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
