"""Stopping a run between engine steps (pure): the page sets a run's ``threading.Event``
when its client leaves or presses Stop, and the next ``StepGuard`` call raises ``Cancelled``,
so the next queued user starts within about one engine step."""
from __future__ import annotations

import threading
from collections.abc import Sequence


class Cancelled(Exception):
    """The run's client left or pressed Stop; its engine requests were aborted."""


class StepGuard:
    """Called before each engine step of one ``run_many`` of ``prompts`` (kept for
    tests/helpers/faults.py, a subclass that reads them).

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
        self.steps = 0

    def __call__(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise Cancelled(f"the run was stopped after {self.steps} engine steps")
        self.steps += 1


def check(cancel: threading.Event | None, what: str = "the run") -> None:
    """Raise ``Cancelled`` between larger units of work (sweep points, prompts)."""
    if cancel is not None and cancel.is_set():
        raise Cancelled(f"{what} was stopped")
