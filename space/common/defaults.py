"""The defaults a user meets (CLI flags, page controls, run signatures), one home each:
sized for a first answer in minutes on CPU (~45 ms a token, docs/performance.md).
"""
from __future__ import annotations

# Output tokens per request (a compare, a traffic request, a tipping-curve point).
MAX_TOKENS = 64
PAGE_MAX_TOKENS = 32  # the page's sweeps and traffic runs measure many requests a click
REPEATS = 2  # measured runs per engine and request: the median of 2 alternating runs
# Prompts per traffic group: ~12 s a prompt on CPU, so 48 in all stay near 10 minutes.
PROMPTS_PER_GROUP = 6
PAGE_PROMPTS_PER_GROUP = 3  # "Measure more" adds to it
