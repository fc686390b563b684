"""Whether each of SpecLens's hooks into vLLM attached, and why not (pure). A run completes
either way; what a missing hook would have measured is absent, never made up. States travel in
``config.tracing_settings["hooks"]``."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

HookName = Literal["tracing scheduler", "step clock: forward", "step clock: sampling",
                   "step clock: scheduling", "proposer timer", "why-rejected hook"]
HOOK_NAMES: tuple[HookName, ...] = get_args(HookName)
TRACING_SCHEDULER, CLOCK_FORWARD, CLOCK_SAMPLING, CLOCK_SCHEDULING, PROPOSER_TIMER, WHY_REJECTED = HOOK_NAMES

HookStateName = Literal["attached", "missing"]
ATTACHED, MISSING = get_args(HookStateName)

# What a run loses when the hook is missing, in the page's words.
CONSEQUENCE: dict[str, str] = {
    TRACING_SCHEDULER: "no per-step trace; the run's counts are vLLM's own per-request "
                       "metrics (placeholder drafts included)",
    CLOCK_FORWARD: "the target's forward pass is in 'other' in the step anatomy",
    CLOCK_SAMPLING: "sampling and rejection are in 'other' in the step anatomy",
    CLOCK_SCHEDULING: "scheduling is in 'other' in the step anatomy",
    PROPOSER_TIMER: "the proposer's time is not measured (propose time 0, drafter-skipped "
                    "slots not told apart)",
    WHY_REJECTED: "--explain cannot score drafts (no target views)",
}


@dataclass(frozen=True)
class HookState:
    """One hook point: ``attached``, or ``missing`` with ``why`` (one line)."""

    name: HookName
    state: HookStateName
    why: str = ""

    @property
    def attached(self) -> bool:
        return self.state == ATTACHED

    def sentence(self, vllm_version: str | None = None) -> str:
        on = f" on vLLM {vllm_version}" if vllm_version else ""
        why = f" ({self.why})" if self.why else ""
        return f"{self.name}: did not attach{on}{why}; {CONSEQUENCE.get(self.name, '')}".rstrip("; ")


def attached(name: HookName) -> HookState:
    return HookState(name, ATTACHED)


def missing(name: HookName, why: str) -> HookState:
    return HookState(name, MISSING, " ".join(why.split()))  # one line


def to_json(states: Iterable[HookState]) -> list[dict[str, str]]:
    return [asdict(s) for s in states]


def from_config(config: Any) -> list[HookState]:
    """The hook states a run's ``RunConfig`` carries (empty: none recorded)."""
    settings = getattr(config, "tracing_settings", None) or {}
    return [HookState(d["name"], d["state"], str(d.get("why") or "")) for d in settings.get("hooks") or []
            if isinstance(d, dict) and d.get("name") in HOOK_NAMES and d.get("state") in (ATTACHED, MISSING)]


def missing_in(config: Any) -> list[HookState]:
    return [s for s in from_config(config) if not s.attached]


def is_missing(config: Any, name: HookName) -> bool:
    return any(s.name == name for s in missing_in(config))


def missing_lines(config: Any) -> list[str]:
    """One line per missing hook, for the page and the terminal."""
    return [s.sentence(getattr(config, "vllm_version", None)) for s in missing_in(config)]
