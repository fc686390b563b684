"""A checklist's verdict and lines, as records (the Judge's ``evaluate`` makes them):
a saved comparison carries its checklist, read back and shown without the Judge."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from space.records.dicts import build

# "undecided": the speedup's interval straddles a bar (trace version 7): measure more prompts.
Verdict = Literal["worth-it", "borderline", "not-worth-it", "undecided"]
WORTH_IT, BORDERLINE, NOT_WORTH_IT, UNDECIDED = get_args(Verdict)
# The checklist's lines, as the page and the CLI show them.
CheckName = Literal["measured speedup", "acceptance rate", "mean acceptance length",
                    "per-token acceptance vs draft cost", "predicted speedup (ideal)",
                    "predicted speedup (measured step times)", "spare memory", "concurrency",
                    "context length", "temperature", "task type", "repetition", "prompts",
                    "acceptance headroom", "hardware"]
CHECK_NAMES: tuple[CheckName, ...] = get_args(CheckName)
(SPEEDUP, ACCEPTANCE_RATE, ACCEPTANCE_LENGTH, ALPHA_VS_COST, PREDICTED_IDEAL, PREDICTED_MEASURED,
 SPARE_MEMORY, CONCURRENCY, CONTEXT_LENGTH, TEMPERATURE, TASK_TYPE, REPETITION, PROMPTS, HEADROOM,
 HARDWARE) = CHECK_NAMES
CHECK_OPS = (">=", ">", "<=", "<", "")
# each line's comparison op and unit (Check.op, Check.unit); context lines have neither
CHECK_SHAPES: dict[CheckName, tuple[str, str]] = {
    SPEEDUP: (">=", "x"), ACCEPTANCE_RATE: (">", "%"), ACCEPTANCE_LENGTH: (">", "tokens"),
    ALPHA_VS_COST: (">", ""), PREDICTED_IDEAL: (">", "x"), PREDICTED_MEASURED: (">", "x"),
    SPARE_MEMORY: (">", "bytes"), CONCURRENCY: ("<", "requests"), CONTEXT_LENGTH: ("<", "tokens"),
    REPETITION: ("<=", "%"), HEADROOM: (">", "%"), PROMPTS: ("<=", "prompts"),
}


@dataclass
class Check:
    """One checklist line. ``passed`` None means context only or not measured."""

    name: CheckName
    value: float | str | None
    threshold: float | str | None
    passed: bool | None
    detail: str
    decisive: bool = False   # this line decided the verdict
    op: str = ""             # how value compares with threshold to pass (CHECK_OPS; '': context only)
    unit: str = ""           # 'x', '%' (fraction shown as percent), 'bytes', 'tokens', 'requests'

    def __post_init__(self) -> None:
        if not (self.op or self.unit):  # the Judge's lines leave both to the name's shape
            self.op, self.unit = CHECK_SHAPES.get(self.name, ("", ""))


# How a verdict was decided: the speedup's confidence interval against the bars, or
# (older files) every repeat or prompt at or above 1.00x.
DecisionRule = Literal["interval", "spread"]


@dataclass
class Checklist:
    verdict: Verdict
    checks: list[Check] = field(default_factory=list)
    rule: DecisionRule = "interval"

    def check(self, name: CheckName) -> Check:
        return next(c for c in self.checks if c.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "rule": self.rule,
                "checks": [dataclasses.asdict(c) for c in self.checks]}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Checklist:
        return build(cls, d | {"checks": [build(Check, c) for c in d.get("checks", [])]})
