"""Run-level speculative-decoding counts in vLLM's vocabulary (pure).

One record for the counts a run's truth comes from when SpecLens has no
per-step trace of it: vLLM's own per-request metrics
(``RequestSpecDecodeMetrics``, ``per_request_spec_decode_metrics``), or a
server's. Integers only; rates are derived where they are shown (STYLE 11).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SpecCounts:
    """Example: 3 verify steps of k=4 accepting 2, 0 and 4 drafts
    -> SpecCounts(accepted=6, drafted=12, drafts=3, accepted_per_position=(2, 2, 1, 1))."""

    accepted: int                          # accepted draft tokens
    drafted: int                           # draft tokens verified
    drafts: int                            # verify steps (one proposal each)
    accepted_per_position: tuple[int, ...]  # verify steps that accepted position p
