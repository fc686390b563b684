"""The counters every finished run adds to, one table for both namings.

``/metrics`` exports each count as ``speclens_*`` (``space.observe.prom``) and
under vLLM's name (``space.observe.prom_vllm``); one table keeps them from
drifting apart. Counts come from the trace's verify steps, vLLM's definitions.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

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


@dataclass(frozen=True)
class PositionCounter:
    """Verify steps that accepted the draft at each position (one series per position)."""

    speclens: str
    speclens_doc: str
    vllm: str
    vllm_doc: str

    @staticmethod
    def counts(run: RunTrace) -> list[int]:
        return list(run.num_accepted_tokens_per_pos)


PER_POSITION = PositionCounter(
    "speclens_spec_decode_num_accepted_tokens_per_pos",
    "Verify steps that accepted the draft at this position.",
    "vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.")
