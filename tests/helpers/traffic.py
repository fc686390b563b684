"""Hand-made traffic results (space/judge/traffic.py) for the pure tests."""
from __future__ import annotations

from space.judge.curves import DERIVED, StepCosts, TippingCurve
from space.judge.traffic import TrafficItem, TrafficResult, answer
from space.records.run import RunConfig
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


NGRAM_CONFIG = RunConfig.from_dict({
    "model": "default", "method": "ngram", "k": 4, "device": "cpu", "dtype": "bfloat16",
    "speculative_config": {"method": "ngram", "num_speculative_tokens": 4,
                           "prompt_lookup_max": 5}})
# ngram k=4 on a made-up machine: a verified token costs 0.75 ms a request at
# concurrency 1 ((14 - 1 - 10) / 4) and 4.25 ms at 4 ((30 - 1 - 12) / 4); 1 ms lookup
NGRAM_CURVE = TippingCurve(DERIVED, "default", "ngram", None, 4, "cpu", "0.32.0", "2026-12-02",
                           step_costs=[StepCosts(1, 0.010, 0.014, 0.001),
                                       StepCosts(4, 0.012, 0.030, 0.001)])
