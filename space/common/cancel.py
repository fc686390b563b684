"""Stopping a run between engine steps: a cancel token and the step guard (pure).

A run or sweep started from the page gets a ``threading.Event``; the page sets
it when its client leaves or presses Stop. ``TracedEngine.run_many`` calls a
``StepGuard`` before every engine step, which raises ``Cancelled`` once the
event is set; the engine loop then aborts its vLLM requests and the pool lock
is released on the way out, so the next queued user starts within about one
engine step.

Test-only fault hook: with ``SPECLENS_FAULT_AT_STEP=N`` in the server's
environment, a run whose prompt contains ``FAULT_MARKER`` raises
``InjectedFault`` before its engine step N (from 0), as an engine error
mid-run would. Without the variable the hook does nothing.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Sequence

FAULT_ENV = "SPECLENS_FAULT_AT_STEP"
FAULT_MARKER = "SPECLENS-INJECT-FAULT"


class Cancelled(Exception):
    """The run's client left or pressed Stop; its engine requests were aborted."""


class InjectedFault(RuntimeError):
    """The test-only fault hook fired (``SPECLENS_FAULT_AT_STEP``)."""


def fault_step(prompts: Sequence[str]) -> int | None:
    """The engine step at which the fault hook fires for these prompts, or None
    (always None unless the server was started with ``SPECLENS_FAULT_AT_STEP``)."""
    value = os.environ.get(FAULT_ENV, "").strip()
    if not value.isdigit() or not any(FAULT_MARKER in p for p in prompts):
        return None
    return int(value)


class StepGuard:
    """Called before each engine step of one ``run_many``.

    Example:
        >>> stop = threading.Event()
        >>> guard = StepGuard(stop, ["hello"])
        >>> guard(); guard(); guard.steps
        2
        >>> stop.set(); guard()
        Traceback (most recent call last):
        ...
        space.common.cancel.Cancelled: the run was stopped after 2 engine steps
    """

    def __init__(self, cancel: threading.Event | None, prompts: Sequence[str]) -> None:
        self.cancel = cancel
        self.fault_at = fault_step(prompts)
        self.steps = 0  # engine steps taken so far

    def __call__(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled(f"the run was stopped after {self.steps} engine steps")
        if self.fault_at is not None and self.steps == self.fault_at:
            raise InjectedFault(f"injected engine fault at step {self.steps} ({FAULT_ENV})")
        self.steps += 1


def check(cancel: threading.Event | None, what: str = "the run") -> None:
    """Raise ``Cancelled`` between larger units of work (sweep points, prompts)."""
    if cancel is not None and cancel.is_set():
        raise Cancelled(f"{what} was stopped")
