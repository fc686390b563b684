"""The defaults a user meets, one home each: the CLI's flags, the page's controls and
the runs' signatures read them here.

A CPU run of the default model takes ~45 ms a token (2 cores; docs/performance.md),
so a default is sized for a first answer in minutes there; a GPU box answers sooner.
"""
from __future__ import annotations

# Output tokens per request: a compare, a traffic request (where the file gives none),
# a tipping-curve point. One baseline and one speculative run stay under a minute.
MAX_TOKENS = 64
# The page's sweeps and traffic runs measure many requests a click: half as long.
PAGE_MAX_TOKENS = 32

# Measured runs per engine and request: the median of 2 alternating runs steadies
# the timings; acceptance is the same in each at temperature 0.
REPEATS = 2

# Prompts measured per traffic group: at 64 tokens and 2 repeats, ~12 s a prompt on
# CPU, so the CLI's default of 48 prompts in all stays near 10 minutes.
PROMPTS_PER_GROUP = 6
# The page's: a first answer in a few minutes on CPU ("Measure more" adds to it).
PAGE_PROMPTS_PER_GROUP = 3
