"""The doctor's report (``python -m space doctor``): what works on this machine,
and the proof (pure). A check is passed (True), failed (False) or not run here
(None: ``detail`` says why); only a failed one makes the doctor exit non-zero.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from space.records import hooks
from space.records.anatomy import FORWARD
from space.records.trace import VERIFY, RunTrace

CheckName = Literal["every hook attached", "counts equal vLLM's per-request metrics",
                    "a forward part on every timed step",
                    "NVML memory delta matches weights + KV"]
CHECK_NAMES: tuple[CheckName, ...] = get_args(CheckName)
HOOKS_ATTACHED, COUNTS_EQUAL, FORWARD_TIMED, NVML_MEMORY = CHECK_NAMES
REPORT_VERSION: Final = 1


@dataclass(frozen=True)
class Check:
    name: CheckName
    passed: bool | None   # None: not run on this machine (``detail`` says why)
    detail: str


@dataclass(frozen=True)
class MethodState:
    name: str             # a space.records.methods.Method
    available: bool
    why: str


@dataclass
class DoctorReport:
    machine: dict[str, Any]      # device, gpu {name, compute_capability, memory_bytes, driver,
    #                              cuda} or None, cpu {model, bf16_units}
    vllm: dict[str, Any]         # distribution, version, build, tested, is_tested, warning
    dtype: dict[str, str]        # value, reason
    hooks: list[hooks.HookState] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)
    methods: list[MethodState] = field(default_factory=list)
    date: str = ""               # UTC, ISO 8601
    elapsed_s: float = 0.0

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.passed is False]

    def to_dict(self) -> dict[str, Any]:
        # The version, date and time lead, as in every report written so far.
        head = {"version": REPORT_VERSION, "date": self.date, "elapsed_s": self.elapsed_s}
        return head | dataclasses.asdict(self)


def problems(d: Any) -> list[str]:
    """What makes ``d`` not a doctor report (empty: it is one)."""
    if not isinstance(d, dict):
        return ["not a JSON object"]
    out = [f"{key}: not an object" for key in ("machine", "vllm", "dtype")
           if not isinstance(d.get(key), dict)]
    dtype = d["dtype"] if isinstance(d.get("dtype"), dict) else {}
    out += [f"dtype.{k}: not a string" for k in ("value", "reason") if not isinstance(dtype.get(k), str)]
    shapes: dict[str, dict[str, type | tuple[type, ...]]] = {"hooks": {"name": str, "state": str, "why": str},
              "checks": {"name": str, "passed": (bool, type(None)), "detail": str},
              "methods": {"name": str, "available": bool, "why": str}}
    for key, shape in shapes.items():
        items = d.get(key)
        if not isinstance(items, list):
            out.append(f"{key}: not a list")
            continue
        for i, item in enumerate(items):
            if not isinstance(item, dict) or set(item) != set(shape):
                out.append(f"{key}[{i}]: keys must be {sorted(shape)}")
                continue
            out += [f"{key}[{i}].{k}: wrong type" for k, tp in shape.items()
                    if not isinstance(item[k], tp)]
    if isinstance(d.get("hooks"), list):
        out += [f"hooks: unknown state {h.get('state')!r}" for h in d["hooks"]
                if isinstance(h, dict) and h.get("state") not in (hooks.ATTACHED, hooks.MISSING)]
    if isinstance(d.get("checks"), list):
        names = [c.get("name") for c in d["checks"] if isinstance(c, dict)]
        if COUNTS_EQUAL not in names:
            out.append(f"checks: no {COUNTS_EQUAL!r}")
        out += [f"checks: unknown check {n!r}" for n in names if n not in CHECK_NAMES]
    return out


def hooks_check(states: list[hooks.HookState]) -> Check:
    gone = [s for s in states if not s.attached]
    if not states:
        return Check(HOOKS_ATTACHED, False, "no hook states recorded")
    if gone:
        return Check(HOOKS_ATTACHED, False, "; ".join(s.sentence() for s in gone))
    return Check(HOOKS_ATTACHED, True, f"{len(states)} of {len(states)}: "
                 + ", ".join(s.name for s in states))


def counts_check(run: RunTrace) -> Check:
    """The trace's per-step drafted and accepted counts equal vLLM's own arrays
    (placeholder drafts counted as drafted, as vLLM counts them)."""
    m = run.vllm_spec_metrics
    if not m or "per_step_drafted" not in m:
        return Check(COUNTS_EQUAL, False, "vLLM reported no detailed per-request metrics")
    counted = [s for s in run.steps if s.kind == VERIFY or s.num_placeholder_draft_tokens]
    drafted = [s.num_draft_tokens + s.num_placeholder_draft_tokens for s in counted]
    accepted = [s.num_accepted_tokens for s in counted]
    if drafted != list(m["per_step_drafted"]) or accepted != list(m["per_step_accepted"]):
        return Check(COUNTS_EQUAL, False,
                     f"trace drafted {drafted} accepted {accepted}; vLLM drafted "
                     f"{m['per_step_drafted']} accepted {m['per_step_accepted']}")
    if not counted:
        return Check(COUNTS_EQUAL, False, "no verify step: nothing was compared")
    placeholders = sum(s.num_placeholder_draft_tokens for s in counted)
    extra = f", {placeholders} of them placeholders" if placeholders else ""
    return Check(COUNTS_EQUAL, True,
                 f"{len(counted)} verify steps, {sum(drafted)} drafted{extra}, "
                 f"{sum(accepted)} accepted: equal step by step")


def forward_check(runs: list[RunTrace]) -> Check:
    """Every step that carries an anatomy has a forward part (at least one does)."""
    timed = [(r, s) for r in runs for s in r.steps if s.anatomy is not None]
    if not timed:
        return Check(FORWARD_TIMED, False, "no step carries a step anatomy")
    lacking = [f"{r.config.method or 'baseline'} step {s.index}" for r, s in timed
               if s.anatomy is not None and not s.anatomy.has(FORWARD)]
    if lacking:
        return Check(FORWARD_TIMED, False, f"{len(lacking)} of {len(timed)} timed steps "
                     f"have no forward part: {', '.join(lacking[:5])}")
    return Check(FORWARD_TIMED, True, f"{len(timed)} of {len(timed)} timed steps")


def memory_check(delta_bytes: int | None, expected_bytes: int, why_not: str | None) -> Check:
    """NVML's used-memory delta over building the engines against their weights + KV:
    within 10 % below, and 10 % + 2 GiB above (the CUDA context, graphs and
    activations; a first guess, no GPU report yet)."""
    if why_not is not None or delta_bytes is None:
        return Check(NVML_MEMORY, None, why_not or "no NVML reading")
    gib = 1 << 30
    low, high = expected_bytes * 0.9, expected_bytes * 1.1 + 2 * gib
    ok = low <= delta_bytes <= high
    return Check(NVML_MEMORY, ok, f"NVML delta {delta_bytes / gib:.2f} GiB; weights + KV "
                 f"{expected_bytes / gib:.2f} GiB (allowed {low / gib:.2f}-{high / gib:.2f})")
