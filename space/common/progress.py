"""How long work reports how far it got: ``progress(fraction, message)``."""
from __future__ import annotations

import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

Progress = Callable[[float, str], None]  # fraction done in [0, 1], what is being done


def to_log(frac: float, msg: str) -> None:
    """The ``Progress`` used when the caller gives none."""
    log.info("%3.0f%% %s", frac * 100, msg)


def to_terminal(frac: float, msg: str) -> None:
    """A ``Progress`` for the terminal: '  [ 40%] building the ngram engine'."""
    print(f"  [{frac:4.0%}] {msg}", flush=True)


def share(progress: Progress, i: int, n: int, prefix: str) -> Progress:
    """``progress`` for part ``i`` of ``n``: its share of the bar, messages prefixed."""
    return lambda f, msg: progress((i + min(max(f, 0.0), 1.0)) / n, f"{prefix}: {msg}")
