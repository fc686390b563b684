"""Step anatomy: where one engine step's time went, part by part (pure). The engine
(``space/engine/anatomy.py``, docs/vllm-hooks.md) times vLLM's own methods in each step;
``other`` is the remainder, never recorded: intervals lie inside the step, never overlapping.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

# forward: target forward and logits; sampling: on steps that verify nothing; rejection: the
# rejection sampler; proposer: drafting for the next step; recording: SpecLens's bookkeeping.
AnatomyPart = Literal["scheduling", "forward", "sampling", "rejection", "proposer", "recording"]
ANATOMY_PARTS: tuple[AnatomyPart, ...] = get_args(AnatomyPart)
SCHEDULING, FORWARD, SAMPLING, REJECTION, PROPOSER, RECORDING = ANATOMY_PARTS
OTHER: Final = "other"
# How the parts are drawn, bottom to top.
SHOWN_PARTS: tuple[str, ...] = (FORWARD, SAMPLING, REJECTION, PROPOSER, SCHEDULING,
                                RECORDING, OTHER)
BEFORE_ANATOMY: Final = "recorded before step anatomy (trace version 4 or older)"
# A step left untimed in a run whose other steps were timed (a GPU times one step in n).
NOT_TIMED_STEP: Final = ("this step was not timed: on a GPU one engine step in n is "
                         "(config.tracing_settings.step_anatomy)")


@dataclass
class PartInterval:
    part: AnatomyPart
    start_s: float
    end_s: float


@dataclass
class StepAnatomy:
    """The timed parts of one engine step, in time order."""

    intervals: list[PartInterval] = field(default_factory=list)
    num_drafter_forwards: int = 0  # the draft model's forward passes in this step

    def seconds(self, part: str) -> float:
        return sum(i.end_s - i.start_s for i in self.intervals if i.part == part)

    def has(self, part: str) -> bool:
        return any(i.part == part for i in self.intervals)


def to_json(anatomy: StepAnatomy, step_start_s: float) -> dict[str, Any]:
    """The compact form trace files hold: the parts, and where each starts and ends
    in whole microseconds after the step's start (floored: monotone, so order,
    non-overlap and containment survive it)."""
    def us(t: float) -> int:
        return math.floor((t - step_start_s) * 1e6 + 1e-6)  # 1e-6 us: 0.0001 s is 100, not 99

    return {"parts": [i.part for i in anatomy.intervals],
            "start_us": [us(i.start_s) for i in anatomy.intervals],
            "end_us": [us(i.end_s) for i in anatomy.intervals],
            "num_drafter_forwards": anatomy.num_drafter_forwards}


def from_json(d: dict[str, Any], step_start_s: float, step_end_s: float) -> StepAnatomy:
    """A step's anatomy from a file: the compact form (``to_json``) or the older
    ``intervals``. A compact time within 1 us past the step's end is the step's end."""
    forwards = d.get("num_drafter_forwards", 0)
    if "intervals" in d:
        return StepAnatomy([PartInterval(i["part"], i["start_s"], i["end_s"])
                            for i in d["intervals"]], forwards)

    def at(us: int) -> float:
        t = step_start_s + us / 1e6
        return step_end_s if step_end_s < t <= step_end_s + 1e-6 else t

    return StepAnatomy([PartInterval(p, at(a), at(b)) for p, a, b
                        in zip(d["parts"], d["start_us"], d["end_us"], strict=True)], forwards)


def breakdown(anatomy: StepAnatomy, duration_s: float) -> dict[str, float]:
    """Seconds per shown part, ``other`` included."""
    out: dict[str, float] = {p: anatomy.seconds(p) for p in ANATOMY_PARTS}
    out[OTHER] = duration_s - sum(i.end_s - i.start_s for i in anatomy.intervals)
    return {p: out[p] for p in SHOWN_PARTS}


def problems(anatomy: StepAnatomy, start_s: float, end_s: float) -> list[str]:
    """Parts out of order, overlapping or outside the step; empty when none."""
    out = []
    last = start_s
    for n, i in enumerate(anatomy.intervals):
        if i.end_s < i.start_s:
            out.append(f"interval {n} ({i.part}) ends before it starts")
        if i.start_s < last:
            out.append(f"interval {n} ({i.part}) overlaps the one before it or starts "
                       "before the step")
        last = max(last, i.end_s)
    if last > end_s:
        out.append("an interval ends after the step")
    return out


@dataclass(frozen=True)
class KindCosts:
    """Median costs per step kind: decode_* of the baseline's decode steps,
    verify_* and the rest of the speculative run's verify steps (the anatomy table)."""

    decode_step_s: float | None = None
    decode_forward_s: float | None = None
    verify_step_s: float | None = None
    verify_forward_s: float | None = None
    verify_tokens: int | None = None          # 1 + k: tokens one verify forward reads
    rejection_s: float | None = None
    proposer_s: float | None = None
    num_drafter_forwards: int | None = None   # median per verify step (draft models)
    overhead_s: float | None = None           # scheduling + recording + other per verify step
    num_decode_steps: int = 0                 # timed steps the medians are over
    num_verify_steps: int = 0

    @property
    def forward_ratio(self) -> float | None:
        """Verify forward / decode forward: ~1 memory-bound, ~1+k compute-bound."""
        if self.verify_forward_s is None or not self.decode_forward_s:
            return None
        return self.verify_forward_s / self.decode_forward_s

    @property
    def draft_cost_ratio(self) -> float | None:
        """c: proposer time per verify step / one baseline decode step."""
        if self.proposer_s is None or not self.decode_step_s:
            return None
        return self.proposer_s / self.decode_step_s

    def excess_over_decode_s(self) -> dict[str, float]:
        """What a verify step adds to a decode step: the target forward over 1 + k
        tokens, the proposer, and the rejection sampler with the rest of the step."""
        decode_rest = (self.decode_step_s or 0.0) - (self.decode_forward_s or 0.0)
        return {
            FORWARD: (self.verify_forward_s or 0.0) - (self.decode_forward_s or 0.0),
            PROPOSER: self.proposer_s or 0.0,
            "rest": (self.rejection_s or 0.0) + (self.overhead_s or 0.0) - decode_rest,
        }


def kind_costs(baselines: Iterable, speculatives: Iterable) -> KindCosts:
    """Medians over the baseline runs' decode steps and the speculative runs' verify steps
    (``RunTrace``s) that carry an anatomy. The kinds are trace.py's DECODE and VERIFY, spelt
    out: trace.py imports this module."""
    base = [s for r in baselines for s in r.steps if s.kind == "decode" and s.anatomy is not None]
    ver = [s for r in speculatives for s in r.steps if s.kind == "verify" and s.anatomy is not None]

    def med(steps, fn) -> float | None:
        return statistics.median(fn(s) for s in steps) if steps else None

    forwards = med(ver, lambda s: s.anatomy.num_drafter_forwards)
    tokens = med(ver, lambda s: s.num_scheduled_tokens)
    return KindCosts(
        decode_step_s=med(base, lambda s: s.duration_s),
        decode_forward_s=med(base, lambda s: s.anatomy.seconds(FORWARD)),
        verify_step_s=med(ver, lambda s: s.duration_s),
        verify_forward_s=med(ver, lambda s: s.anatomy.seconds(FORWARD)),
        verify_tokens=None if tokens is None else round(tokens),
        rejection_s=med(ver, lambda s: s.anatomy.seconds(REJECTION)),
        proposer_s=med(ver, lambda s: s.anatomy.seconds(PROPOSER)),
        num_drafter_forwards=None if forwards is None else round(forwards),
        overhead_s=med(ver, lambda s: s.duration_s - s.anatomy.seconds(FORWARD)
                       - s.anatomy.seconds(REJECTION) - s.anatomy.seconds(PROPOSER)),
        num_decode_steps=len(base), num_verify_steps=len(ver),
    )
