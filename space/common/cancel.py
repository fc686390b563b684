"""Stopping a run between engine steps: a cancel token and the step guard (pure).

A run or sweep started from the page gets a ``threading.Event``; the page sets
it when its client leaves or presses Stop. ``TracedEngine.run_many`` calls a
``StepGuard`` before every engine step, which raises ``Cancelled`` once the
event is set; the engine loop then aborts its vLLM requests and the pool lock
is released on the way out, so the next queued user starts within about one
engine step.
"""
from __future__ import annotations

import threading
from collections.abc import Sequence


class Cancelled(Exception):
    """The run's client left or pressed Stop; its engine requests were aborted."""


class StepGuard:
    """Called before each engine step of one ``run_many`` of ``prompts`` (kept:
    the test-only fault in tests/helpers/faults.py is a subclass that reads them).

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
        self.cancel, self.prompts = cancel, list(prompts)
        self.steps = 0  # engine steps taken so far

    def __call__(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled(f"the run was stopped after {self.steps} engine steps")
        self.steps += 1


def check(cancel: threading.Event | None, what: str = "the run") -> None:
    """Raise ``Cancelled`` between larger units of work (sweep points, prompts)."""
    if cancel is not None and cancel.is_set():
        raise Cancelled(f"{what} was stopped")
