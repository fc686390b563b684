"""The test-only engine fault: a run whose prompt holds ``FAULT_MARKER`` raises
``InjectedFault`` before its engine step N (from 0), as an engine error mid-run
would; every other run is untouched.

Production code has no such hook. ``faulty_guard(N)`` is a ``StepGuard`` (the
check ``space.engine.core`` makes before every engine step) that also fires the
fault; in-process tests patch it into ``space.engine.core`` with monkeypatch,
and an app in a subprocess gets it from ``tests/helpers/fault_app.py``.
"""
from __future__ import annotations

from collections.abc import Sequence

from space.common.cancel import StepGuard

FAULT_MARKER = "SPECLENS-INJECT-FAULT"
FAULT_STEP = 3  # the step at which the test apps' fault fires


class InjectedFault(RuntimeError):
    """The test-only fault fired (the prompt held ``FAULT_MARKER``)."""


def faulty_guard(step: int) -> type[StepGuard]:
    """A ``StepGuard`` that raises ``InjectedFault`` before engine step ``step`` of
    a run whose prompts hold ``FAULT_MARKER``."""
    class FaultyGuard(StepGuard):
        def __init__(self, cancel, prompts: Sequence[str]) -> None:
            super().__init__(cancel, prompts)
            self.fault_at = step if any(FAULT_MARKER in p for p in self.prompts) else None

        def __call__(self) -> None:
            stopped = self.cancel is not None and self.cancel.is_set()
            if not stopped and self.steps == self.fault_at:
                raise InjectedFault(f"injected engine fault at step {self.steps} (test hook)")
            super().__call__()

    return FaultyGuard
