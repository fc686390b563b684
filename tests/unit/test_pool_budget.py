"""The engine pool's memory budget (space/engine/pool.py): which engines close, in
which order, and the one line when an engine cannot fit. The eviction rule is
pure; the pool around it is driven with stand-in engines that only record
their closing (real engines: tests/engine/test_lifecycle.py)."""
from __future__ import annotations

import pytest

from space.engine import pool as pool_mod
from space.engine.pool import EnginePool, NoRoom, budget_from_flag, plan_closes
from space.observe.memory import GiB
from space.records.config import ConfigError, EngineSpec


def test_plan_closes_least_recently_used_first_and_only_what_is_needed():
    held = [("a", 3), ("b", 2), ("c", 2), ("base", 4)]
    assert plan_closes(held, {"base"}, need=3, budget=14) == []   # 11 + 3 fits
    assert plan_closes(held, {"base"}, need=3, budget=11) == ["a"]
    assert plan_closes(held, {"base"}, need=3, budget=10) == ["a", "b"]
    assert plan_closes(held, {"base"}, need=3, budget=8) == ["a", "b", "c"]
    assert plan_closes(held, {"base"}, need=3, budget=6) is None  # base 4 + 3 > 6


def test_plan_closes_never_closes_what_is_kept_and_says_when_nothing_helps():
    held = [("a", 3), ("base", 4)]
    assert plan_closes(held, {"base"}, need=4, budget=8) == ["a"]
    assert plan_closes(held, {"base"}, need=4, budget=7) is None  # base alone + 4 > 7
    assert plan_closes(held, set(), need=4, budget=7) == ["a", "base"]
    assert plan_closes([], set(), need=7, budget=6) is None


class StandIn:
    """What the pool needs of an engine: its spec, a memory reading, close()."""

    closed: list[str] = []

    def __init__(self, spec: EngineSpec, size: int) -> None:
        self.spec, self.size = spec, size

    def close(self) -> None:
        StandIn.closed.append(self.spec.method or "baseline")


@pytest.fixture
def pool(monkeypatch):
    """A pool of stand-ins: every engine is 1 GiB (estimated and measured)."""
    StandIn.closed = []
    monkeypatch.setattr(pool_mod, "estimate_bytes", lambda spec: GiB)

    def build(self, spec, progress):
        self._held[spec] = self._measured[spec] = GiB
        return StandIn(spec, GiB)

    monkeypatch.setattr(EnginePool, "_build", build)
    return EnginePool(budget_bytes=3 * GiB)


def spec(method: str | None = "ngram", k: int = 4) -> EngineSpec:
    return EngineSpec(method=method, k=k, dtype="float32")


def test_the_pool_keeps_engines_while_they_fit_and_closes_the_oldest(pool):
    pool.baseline(spec())
    a, b, c = spec(k=2), spec(k=3), spec(k=4)
    pool.speculative(a)
    pool.speculative(b)                      # baseline + 2 = 3 GiB: all kept
    assert StandIn.closed == [] and pool.cached_specs() == [a, b]
    pool.speculative(a)                      # used again: b is now the oldest
    pool.speculative(c)
    assert StandIn.closed == ["ngram"] and pool.cached_specs() == [a, c]
    budget = pool.budget()
    assert budget.budget_bytes == 3 * GiB and budget.held_bytes == 3 * GiB
    assert [label for label, _ in budget.held] == ["baseline", "ngram", "ngram"]


def test_an_engine_that_cannot_fit_beside_the_baseline_is_one_line(pool, monkeypatch):
    pool.baseline(spec())
    monkeypatch.setattr(pool_mod, "estimate_bytes", lambda s: 5 * GiB)
    with pytest.raises(NoRoom) as e:
        pool.speculative(spec(method="draft_model"))
    line = str(e.value)
    assert "\n" not in line and "--memory-budget-gb" in line and "5.00 GiB" in line
    assert isinstance(e.value, ConfigError)  # the page and the CLI show it as bad input
    assert StandIn.closed == []  # refused before anything was closed


def test_a_new_target_may_close_every_speculative_engine(pool):
    pool.baseline(spec())
    pool.speculative(spec(k=2))
    pool.speculative(spec(k=3))
    other = EngineSpec(model="/elsewhere", method="ngram", k=2, dtype="float32")
    pool.baseline(other)
    assert StandIn.closed[0] == "baseline"  # the old target's baseline first
    assert pool.budget().held_bytes <= 3 * GiB


@pytest.mark.parametrize("value", [0, -1.0, float("nan")])
def test_a_bad_budget_flag_is_refused(value):
    with pytest.raises(ConfigError, match="--memory-budget-gb"):
        budget_from_flag(value)


def test_the_default_budget_is_a_share_of_what_the_machine_can_spare(monkeypatch):
    from space.engine import hardware
    from space.observe import memory

    monkeypatch.setattr(hardware, "on_gpu", lambda: False)
    monkeypatch.setattr(memory, "system_memory",
                        lambda: memory.SystemMemory(24 * GiB, 10 * GiB, 14 * GiB))
    budget, source = pool_mod.default_budget()
    assert budget == int(10 * GiB * pool_mod.DEFAULT_SHARE) and "RAM available" in source
