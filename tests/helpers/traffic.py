"""Hand-made traffic results (space/judge/traffic.py) for the pure tests."""
from __future__ import annotations

from space.judge.traffic import TrafficItem, TrafficResult, answer
from tests.helpers.traces import compare_with_repeats, timed_baseline, timed_run


def item(group: str, line: int, speedup: float) -> TrafficItem:
    """A measured request: 10 output tokens, 6 of 8 drafts accepted in 2 verify steps."""
    c = compare_with_repeats(timed_baseline(), timed_run(), [0.010], [0.010 / speedup])
    c.speedup = speedup
    return TrafficItem(group, line, c)


def two_groups() -> TrafficResult:
    """"code" (1.6x and 2.0x, 10 requests in the file) and "chat" (0.8x, 30 requests)."""
    items = [item("code", 1, 2.0), item("chat", 2, 0.8), item("code", 3, 1.6)]
    return answer("t.jsonl", "grouped by the label field 'category'", items,
                  {"code": 10, "chat": 30}, None, repeats=1, max_tokens=32)
