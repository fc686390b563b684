"""Failed logins, counted and slowed down: the one limiter of ``/login`` and
``/metrics`` (standard library only, so ``app.py`` builds it before vLLM and Gradio).
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """``free_failures`` wrong passwords in a row are free; each further one
    locks the key for ``base_lockout_s`` doubled per failure, up to
    ``max_lockout_s``. A key with no failure for ``forget_after_s`` starts over."""
    free_failures: int = 5
    base_lockout_s: float = 30.0
    max_lockout_s: float = 900.0
    forget_after_s: float = 3600.0

    def lockout_s(self, failures: int) -> float:
        if failures < self.free_failures:
            return 0.0
        return min(self.max_lockout_s, self.base_lockout_s * 2.0 ** (failures - self.free_failures))


# Per name at one address: the fast one, locking that client out of that name only
# (knowing a colleague's name is no button to lock them out).
USER_BACKOFF = Backoff(free_failures=5)
# Per address: many names from one client (an office behind one NAT shares one).
ADDRESS_BACKOFF = Backoff(free_failures=20)
# Per name from anywhere: locking a colleague out costs a hundred guesses from 5+ clients.
NAME_BACKOFF = Backoff(free_failures=100)


@dataclass
class _Key:
    failures: int = 0
    last_failure_s: float = 0.0
    locked_until_s: float = 0.0


class LoginLimiter:
    """Failed logins per name at an address, per address and per name (a lockout for
    "ada" at one address leaves her other addresses free)."""

    def __init__(self, user: Backoff = USER_BACKOFF, address: Backoff = ADDRESS_BACKOFF,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = 10_000,
                 name: Backoff = NAME_BACKOFF) -> None:
        self.user, self.address, self.name = user, address, name
        self.clock, self.max_keys = clock, max_keys
        self._keys: dict[tuple[str, ...], _Key] = {}
        self._lock = threading.Lock()  # /metrics checks run in Starlette's thread pool

    def _pairs(self, address: str, user: str | None) -> Iterator[tuple[tuple[str, ...], Backoff]]:
        yield ("address", address), self.address
        if user:
            yield ("user", user, address), self.user
            yield ("name", user), self.name

    def retry_after_s(self, address: str, user: str | None = None) -> float:
        """Seconds until this address and name may try again (0: now)."""
        now = self.clock()
        with self._lock:
            waits = [k.locked_until_s - now for key, _ in self._pairs(address, user)
                     if (k := self._keys.get(key)) is not None]
        return max([0.0, *waits])

    def failed(self, address: str, user: str | None = None) -> None:
        now = self.clock()
        with self._lock:
            for key, policy in self._pairs(address, user):
                k = self._keys.pop(key, None)
                if k is None or now - k.last_failure_s > policy.forget_after_s:
                    k = _Key()
                k.failures += 1
                k.last_failure_s = now
                k.locked_until_s = now + policy.lockout_s(k.failures)
                self._keys[key] = k  # re-inserted: the dict stays ordered by last failure
            if len(self._keys) > self.max_keys:  # made-up names: drop the forgotten, then the oldest
                horizon = max(p.forget_after_s for p in (self.user, self.address, self.name))
                for key in [k for k, v in self._keys.items()
                            if now - v.last_failure_s > horizon and v.locked_until_s <= now]:
                    del self._keys[key]
                while len(self._keys) > self.max_keys:
                    del self._keys[next(iter(self._keys))]

    def succeeded(self, address: str, user: str | None = None) -> None:
        """A right password clears the name's count at this address only: one valid
        login must not buy more guesses at other names, nor reset a guesser elsewhere."""
        with self._lock:
            if user:
                self._keys.pop(("user", user, address), None)


def retry_after_header(wait_s: float) -> str:
    """Whole seconds, rounded up (Retry-After takes an integer). Example:
        >>> retry_after_header(0.2), retry_after_header(30.0)
        ('1', '30')
    """
    return str(max(1, math.ceil(wait_s)))


def too_many_message(wait_s: float) -> str:
    """The one line a locked client gets, on the page and from /metrics."""
    return (f"too many failed logins from this address or for this name: "
            f"try again in {retry_after_header(wait_s)} s")
