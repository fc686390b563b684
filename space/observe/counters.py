"""The counters every finished run adds to, one table for both namings (``speclens_*``
and vLLM's) so that they cannot drift apart; counts are vLLM's, from the verify steps.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter

from space.records.trace import RunTrace


@dataclass(frozen=True)
class RunCounter:
    """One count per finished run. A name of None: not exported under that naming."""

    speclens: str | None   # without the ``_total`` that prometheus_client adds
    speclens_doc: str
    vllm: str | None
    vllm_doc: str
    count: Callable[[RunTrace], int]


RUN_COUNTERS: tuple[RunCounter, ...] = (
    RunCounter("speclens_spec_decode_num_drafts", "Verify steps (draft proposals checked).",
               "vllm:spec_decode_num_drafts", "Number of spec decoding drafts.",
               lambda r: r.num_drafts),
    RunCounter("speclens_spec_decode_num_draft_tokens", "Draft tokens proposed and verified.",
               "vllm:spec_decode_num_draft_tokens", "Number of draft tokens.",
               lambda r: r.num_draft_tokens),
    RunCounter("speclens_spec_decode_num_accepted_tokens", "Draft tokens the target accepted.",
               "vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
               lambda r: r.num_accepted_tokens),
    RunCounter(None, "", "vllm:generation_tokens", "Number of generation tokens processed.",
               lambda r: len(r.output_token_ids)),
    RunCounter(None, "", "vllm:prompt_tokens", "Number of prefill tokens processed.",
               lambda r: len(r.prompt_token_ids)),
)
# naming -> (name, doc) of the verify steps that accepted each draft position
PER_POSITION = {
    "speclens": ("speclens_spec_decode_num_accepted_tokens_per_pos",
                 "Verify steps that accepted the draft at this position."),
    "vllm": ("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position."),
}


class RunCounters:
    """The table's counters under one naming ("speclens" or "vllm") on ``registry``."""

    def __init__(self, naming: str, labels: list[str], registry: CollectorRegistry) -> None:
        self.counters = [(Counter(getattr(c, naming), getattr(c, f"{naming}_doc"), labels,
                                  registry=registry), c.count)
                         for c in RUN_COUNTERS if getattr(c, naming) is not None]
        self.per_pos = Counter(*PER_POSITION[naming], [*labels, "position"], registry=registry)

    def register(self, k: int, **labels: str) -> None:
        """Create the series of ``labels`` at zero, positions 0..k-1 included."""
        for c, _count in self.counters:
            c.labels(**labels)
        for p in range(k):
            self.per_pos.labels(**labels, position=str(p))

    def observe(self, run: RunTrace, **labels: str) -> None:
        for c, count in self.counters:
            c.labels(**labels).inc(count(run))
        for p, n in enumerate(run.num_accepted_tokens_per_pos):
            self.per_pos.labels(**labels, position=str(p)).inc(n)
