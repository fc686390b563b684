"""Grouping, sampling and the answer of a traffic run on fixed numbers
(space/runs/traffic_groups.py, space/judge/traffic.py): no engine."""
from __future__ import annotations

import json
import shlex

import pytest

from space.judge.traffic import (
    GROUP_COLUMNS,
    PROMPT_COLUMNS,
    answer,
    describe,
    to_csv,
)
from space.records.verdict import NOT_WORTH_IT, UNDECIDED, WORTH_IT
from space.runs.traffic_file import TrafficFile, TrafficRequest
from space.runs.traffic_groups import HOW_BY_LOOK, group_of, kind_of, length_of, plan
from tests.helpers.traffic import item, two_groups

CODE = "Rename x:\n```python\ndef f(x):\n    return x\n```"


def R(line: int, prompt: str, **kw) -> TrafficRequest:
    return TrafficRequest(line, prompt, **kw)


def test_requests_grouped_by_look_without_labels():
    assert kind_of(R(1, CODE)) == "code"
    assert kind_of(R(1, "def f():\n    pass\nreturn 1\nimport os")) == "code"
    assert kind_of(R(1, 'Fix this record: {"name": "Ana", "age": 3}')) == "JSON"
    assert kind_of(R(1, "Is {this} JSON?")) == "chat"  # braces that do not parse
    assert kind_of(R(1, "Summarize.", context=(("user", "x " * 500),))) == "document"
    assert [length_of(R(1, "y" * n)) for n in (10, 499, 500, 1999, 2000)] == [
        "short", "short", "medium", "medium", "long"]
    assert group_of(R(1, CODE), labelled=False) == "code, short"
    assert group_of(R(1, "hi", label="faq"), labelled=True) == "faq"
    assert group_of(R(1, "hi"), labelled=True) == "(no label)"


def test_plan_samples_at_most_n_per_group_with_a_seed_and_says_how():
    reqs = [R(i, CODE if i % 3 == 0 else f"question {i}?") for i in range(1, 31)]
    f = TrafficFile("text", reqs)
    p = plan(f, per_group=4, seed=7)
    assert p.counts() == {"chat, short": 20, "code, short": 10}
    assert {g: len(v) for g, v in p.sample.items()} == {"chat, short": 4, "code, short": 4}
    assert p.how.startswith(HOW_BY_LOOK) and p.how.endswith("at most 4 prompts a group, "
                                                            "sampled with seed 7")
    again = plan(f, per_group=4, seed=7)
    assert again.sample == p.sample  # the seed decides
    assert plan(f, per_group=4, seed=8).sample != p.sample
    # the groups take turns, so a run stopped early has measured each of them
    assert [g for g, _ in p.sampled][:4] == ["chat, short", "code, short"] * 2
    # many groups: fewer per group, so that the run stays bounded
    assert {len(v) for v in plan(f, per_group=10, max_prompts=6).sample.values()} == {3}


def test_answer_per_group_weighted_by_measured_output_tokens():
    r = two_groups()
    code, chat = r.groups
    assert (code.group, code.requests, code.prompts) == ("code", 10, 2)
    assert code.acceptance_rate == pytest.approx(0.75)  # 12 of 16 drafts, pooled
    assert code.mean_acceptance_length == pytest.approx(4.0)  # 1 + 12 / 4 verify steps
    # TTFT (a 20 ms prefill) is over 20 % of these short requests: end-to-end decides.
    # Request time per output token, ratio of totals: 2 x 80 ms / 9 tokens against
    # (40 + 50 ms) / 10 tokens; on TPOT 2 x 10 ms against 5 + 6.25 ms
    assert code.figures and code.figures.basis == "end-to-end"
    assert code.speedup == pytest.approx((0.16 / 9) / (0.09 / 10))
    assert code.figures.tpot_speedup == pytest.approx(0.020 / 0.01125)
    assert code.speedup_spread == (1.6, 2.0)  # per-prompt TPOT ratios, as context
    assert code.figures.ci is not None and code.figures.ci[0] > 1.10  # two prompts
    assert chat.figures and chat.figures.ci is None  # one run: no interval
    assert chat.speedup_spread is None  # one prompt of one repeat: no spread
    assert (code.output_tokens, chat.output_tokens) == (100.0, 300.0)  # requests x mean output
    # chat: one prompt of one run has no interval, so a group's verdict cannot be decided
    assert code.verdict == WORTH_IT and chat.verdict == UNDECIDED
    assert chat.prompts_to_decide == 2  # a second prompt gives an interval
    assert code.checklist and code.checklist.check("task type").value == "code"
    assert r.weighting == "measured" and r.gaining_share == pytest.approx(0.25)
    # on TPOT: 400 tokens at 10 ms each without speculation, 100 x 5.625 + 300 x 12.5 ms
    assert r.weighted_speedup == pytest.approx(4.0 / (100 * 0.005625 + 300 * 0.0125))
    d = r.deployment
    assert (d.speculation, d.without_routing, d.k, d.route_groups) == ("route", "off", 4,
                                                                       ["code"])
    cfg = json.loads(shlex.split(d.command)[-1])
    assert cfg == {"method": "ngram", "num_speculative_tokens": 4}
    assert "--speculative-config" not in d.plain_command
    text = describe(r)
    assert "25% of the output tokens are in groups that gain" in text
    assert "weights from the measured output tokens" in text
    assert "route code to a speculative deployment (k=4)" in text


def test_answer_weighted_by_the_files_responses():
    items = [item("code", 1, 1.8), item("chat", 2, 0.8), item("code", 3, 1.8),
             item("chat", 4, 0.8)]
    r = answer("t", "how", items, {"code": 2, "chat": 2}, {"code": 900, "chat": 100},
               repeats=1, max_tokens=32)
    assert [g.verdict for g in r.groups] == [WORTH_IT, NOT_WORTH_IT]
    assert r.weighting == "responses"
    assert [g.output_token_share for g in r.groups] == [pytest.approx(0.9), pytest.approx(0.1)]
    assert r.weighted_speedup == pytest.approx(1000 / (900 / 1.8 + 100 / 0.8))  # 1.6x
    assert r.deployment.without_routing == "on"


def test_every_group_gains_or_none_does():
    on = answer("t", "how", [item("a", 1, 1.8), item("b", 2, 1.5), item("a", 3, 1.8),
                             item("b", 4, 1.5)], {}, None, repeats=1, max_tokens=8)
    assert on.deployment.speculation == "on" and on.gaining_share == 1.0
    off = answer("t", "how", [item("a", 1, 0.9), item("a", 2, 0.9)], {}, None, repeats=1,
                 max_tokens=8)
    assert (off.deployment.speculation, off.deployment.k) == ("off", None)
    assert "--speculative-config" not in off.deployment.command


def test_tables_and_json_keep_every_prompt():
    r = answer("t", "how", [item("a", 4, 1.5), item("b", 9, 0.9)], {}, None, repeats=1,
               max_tokens=8, skipped=["line 2: the prompt is empty"])
    groups = to_csv(r.group_rows(), GROUP_COLUMNS).splitlines()
    assert groups[0] == ",".join(GROUP_COLUMNS) and len(groups) == 3
    prompts = to_csv(r.rows(), PROMPT_COLUMNS).splitlines()
    assert prompts[1].startswith("a,4,1.5,0.75,4.0,6,10,,True,")
    d = json.loads(json.dumps(r.to_dict()))
    assert [it["line"] for it in d["items"]] == [4, 9]
    assert d["items"][0]["compare"]["speculative"]["output_token_ids"][:2] == [100, 101]
    assert d["skipped"] == ["line 2: the prompt is empty"]
    # one run a group: no interval, both undecided, nothing routed
    assert d["deployment"]["speculation"] == "off" and d["deployment"]["undecided"] == ["a", "b"]


def test_an_undecided_group_is_never_routed_and_the_answer_names_it():
    items = [item("code", 1, 2.0), item("code", 2, 1.9), item("code", 3, 2.1),
             item("mixed", 4, 0.7), item("mixed", 5, 1.8), item("mixed", 6, 1.0)]
    r = answer("t", "how", items, {"code": 3, "mixed": 3}, None, repeats=1, max_tokens=8)
    code, mixed = r.groups
    assert code.verdict == WORTH_IT and mixed.verdict == "undecided"
    assert mixed.prompts_to_decide is not None and mixed.prompts_to_decide > 3
    d = r.deployment
    assert (d.speculation, d.route_groups, d.undecided) == ("route", ["code"], ["mixed"])
    text = describe(r)
    assert "left undecided, not routed: mixed" in text
    assert f"about {mixed.prompts_to_decide} prompts in all would decide it" in text
    assert "decided on end-to-end time" in text
    row = json.loads(json.dumps(r.summary()))["groups"][1]
    lo, hi = row["speedup_ci"]
    assert lo < row["speedup"] < hi and row["verdict"] == "undecided"
    assert len(row["prediction_interval"]) == 2 and row["prediction_prompts"] == 3
    assert row["speedup_text"].startswith(f"{row['speedup']:.2f}x (90 % CI ")
    assert len(json.loads(json.dumps(r.summary()))["weighted_speedup_ci"]) == 2
    header, first, second = to_csv(r.group_rows(), GROUP_COLUMNS).splitlines()
    assert "speedup_ci,prediction_interval,prediction_prompts" in header
    assert f"[{round(lo, 4)}, {round(hi, 4)}]" in second
