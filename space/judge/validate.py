"""``--validate`` (pure): does the second half of a group's prompts (in sampled order)
fall inside the first half's prediction interval for that many, on the same basis?"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from space.judge import estimate, intervals  # words: space.judge.traffic.validation_text
from space.records.trace import CompareRecord

MIN_PROMPTS = 4  # two halves of at least two prompts: a prediction needs two


@dataclass
class Check:
    group: str
    first_prompts: int
    second_prompts: int
    basis: str
    first_speedup: float                        # the first half's ratio of totals
    prediction: tuple[float, float] | None      # for ``second_prompts`` new prompts
    second_speedup: float                       # what the second half measured
    inside: bool | None                         # None: no prediction


def validate(groups: Mapping[str, Sequence[CompareRecord]]) -> tuple[list[Check], list[str]]:
    """Per group with enough prompts, the halves' check; the groups without, in one line
    (tests/unit/test_validate.py works an example)."""
    checks, short = [], []
    for group, cmps in groups.items():
        if len(cmps) < MIN_PROMPTS:
            short.append(f"{group} ({len(cmps)})")
            continue
        half = len(cmps) // 2
        first, second = list(cmps[:half]), list(cmps[half:])
        fig = intervals.group_figures(first, predict_prompts=len(second))
        got = estimate.ratio_of_totals(intervals.paired(second, fig.basis))
        pred = fig.prediction
        inside = None if pred is None else pred[0] <= got <= pred[1]
        checks.append(Check(group, len(first), len(second), fig.basis, fig.speedup, pred, got,
                            inside))
    too_few = ([f"--validate needs at least {MIN_PROMPTS} prompts per group (two halves of "
                f"two); too few in {', '.join(short)}"] if short else [])
    return checks, too_few


def summary(checks: Sequence[Check], short: Sequence[str]) -> dict:
    """For the JSON: every check, the short groups' lines, and how many fell inside."""
    judged = [c for c in checks if c.inside is not None]
    return {"checks": [asdict(c) for c in checks], "too_few": list(short),
            "inside": sum(bool(c.inside) for c in judged), "judged": len(judged)}
