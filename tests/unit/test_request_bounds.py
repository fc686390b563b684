"""A request's values are checked up front with one line (space.records.config.RequestSpec),
so the page and the CLI never start a run that fails half-way on them."""
from __future__ import annotations

import pytest

from space.records.config import MAX_SEED, ConfigError, RequestSpec


@pytest.mark.parametrize("seed", [None, 0, 7, MAX_SEED])
def test_seeds_in_range_pass(seed):
    RequestSpec("hi", seed=seed).validate()


@pytest.mark.parametrize("seed", [-1, -(2**63) - 1025, MAX_SEED + 1, 2**80])
def test_seeds_out_of_range_are_refused_in_one_line(seed):
    """Found by tests/ui/test_fuzz_api.py: a seed below -2**63 failed inside the
    run ("Overflow when unpacking long long"), after the slot was taken."""
    with pytest.raises(ConfigError, match=r"^seed must be in 0\.\.\d+, got -?\d+$"):
        RequestSpec("hi", seed=seed).validate()
