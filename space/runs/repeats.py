"""Measured runs: a short warm-up, then repeats alternating which engine goes first
(pure: engines are passed in)."""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from space.common.progress import Progress

# A short unmeasured run pays an engine's first-run costs (buffer allocation,
# kernel selection for each new batch shape) so that measured runs don't.
WARMUP_TOKENS = 16

E = TypeVar("E")  # an engine (space.engine.core.TracedEngine)
T = TypeVar("T")  # what one measured run returns
OnRepeat = Callable[[int, int], None]  # (repeat index from 0, repeats): a measured run starts


def alternate(base: E, speculative: E, repeats: int,
              run: Callable[[E, bool], T], progress: Progress | None = None,
              label: str = "", on_repeat: OnRepeat | None = None) -> tuple[list[T], list[T]]:
    """``repeats`` measured runs of each engine: (baseline results, speculative results).

    Even repeats run the baseline first, odd ones the speculative engine, so that
    slow drift of the machine hits both sides alike. ``run(engine, last)`` does one
    run; ``last`` marks the final repeat (the app streams it).

    Example:
        >>> seen = []
        >>> alternate("B", "S", 3, lambda e, last: seen.append(e) or e)
        (['B', 'B', 'B'], ['S', 'S', 'S'])
        >>> seen
        ['B', 'S', 'S', 'B', 'B', 'S']
    """
    bases: list[T] = []
    specs: list[T] = []
    for i in range(repeats):
        if progress:
            progress(i / repeats, f"{label}measured run {i + 1}/{repeats}")
        if on_repeat:
            on_repeat(i, repeats)
        order = (base, speculative) if i % 2 == 0 else (speculative, base)
        for engine in order:
            out = run(engine, i == repeats - 1)
            (specs if engine is speculative else bases).append(out)
    return bases, specs
