"""The session's engines, within a memory budget, and closed between tiers.

Every in-process engine of the suite lives in one pool, the CLI's own
(``space.runs.runner.POOL``), so that the CLI tier's engines serve the engine
tier too (same flags: tests/helpers/engine.py). The pool's budget keeps the
suite's engines under ``TEST_BUDGET_GIB`` whatever the dtype (float32 engines
hold twice a bf16 one's bytes); when a test needs one more, the least recently
used closes. When the run moves on to a tier that starts processes of its own
(servers, apps, Chromium), the pool's engines are closed first, so that the
tiers' peaks do not add up (benchmarks/suite_memory.py measures them).

Engine fixtures hand out ``pool.speculative(spec)`` per module, never an engine
kept across modules: the budget may have closed it since.
"""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")

TEST_BUDGET_GIB = 5.0  # a float32 engine of the default model: 1.0-1.6 GiB
# Tiers that share the session's engines: moving between them keeps them.
SHARING_TIERS = {"cli", "engine"}
_last_tier: list[str] = []


def _tier(item: pytest.Item) -> str:
    parts = item.nodeid.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else ""


def pytest_configure(config: pytest.Config) -> None:
    from space.engine.pool import budget_from_flag
    from space.runs import runner

    runner.POOL.set_budget(budget_from_flag(TEST_BUDGET_GIB))


def pytest_runtest_setup(item: pytest.Item) -> None:
    tier = _tier(item)
    if _last_tier and _last_tier[-1] != tier and not {_last_tier[-1], tier} <= SHARING_TIERS:
        from space.runs import runner

        runner.POOL.close_all()
    _last_tier[:] = [tier]


@pytest.fixture(scope="session")
def pool():
    """The session's engine pool (the CLI's ``runner.POOL``, within the test budget)."""
    from space.runs import runner

    yield runner.POOL
    runner.POOL.close_all()
