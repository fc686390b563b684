"""The trace records and their JSON contract (space/records/trace.py, space/records/schema.py):
counts, rates derived from them, the version, old files, and the schema's one-line errors."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Literal  # noqa: F401 (the probe record's hints resolve here)

import pytest

from space.records.run import IN_PROCESS, RequestRecord, prompt_hash
from space.records.schema import TraceFormatError, load
from space.records.trace import TRACE_VERSION, CompareRecord, RunTrace, dumps, make_compare
from space.records.verdict import Checklist
from space.ui import views

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_counts_are_integers_and_rates_derive_from_them(spec_trace):
    t = spec_trace
    # verify steps accepted 1 of 4, 3 of 3, 0 of 1, 3 of 3 (the last cut by max_tokens)
    assert (t.num_drafts, t.num_draft_tokens, t.num_accepted_tokens) == (4, 11, 7)
    assert t.num_accepted_tokens_per_pos == [3, 2, 2, 0]
    assert t.acceptance_rate == 7 / 11
    assert t.mean_acceptance_length == 1 + 7 / 4
    assert t.per_position_acceptance == [3 / 4, 2 / 4, 2 / 4, 0.0]


def test_no_drafts_means_no_rate(base_trace):
    assert base_trace.num_drafts == 0 and base_trace.acceptance_rate is None
    assert base_trace.mean_acceptance_length is None
    assert base_trace.per_position_acceptance == []


def test_json_writes_version_counts_and_the_rates(spec_trace):
    d = json.loads(dumps(spec_trace))
    assert d["version"] == TRACE_VERSION
    assert d["num_drafts"] == 4 and d["num_accepted_tokens_per_pos"] == [3, 2, 2, 0]
    assert d["acceptance_rate"] == pytest.approx(7 / 11)
    assert d["mean_acceptance_length"] == pytest.approx(2.75)
    assert d["per_position_acceptance"] == [0.75, 0.5, 0.5, 0.0]
    assert d["steps"][2]["num_accepted_tokens"] == 1 and "num_accepted" not in d["steps"][2]


def test_round_trip(spec_trace, base_trace):
    cmp = make_compare([base_trace], [spec_trace])
    cmp.checklist = Checklist(verdict="borderline")
    again = load(dumps(cmp))
    assert isinstance(again, CompareRecord) and again.to_dict() == cmp.to_dict()
    assert isinstance(again.checklist, Checklist)
    assert load(dumps(spec_trace)).to_dict() == spec_trace.to_dict()


@pytest.mark.parametrize("name", ["compare-v1.json", "trace-v1-handmade.json"])
def test_version_1_files_still_replay_in_every_view(name):
    """Files written before the rename (no version key, steps' ``num_accepted``)."""
    text = (FIXTURES / name).read_text()
    old = json.loads(text)
    assert "version" not in old
    record = load(text)
    run, _ = views.runs(record)
    old_run = old.get("speculative", old)
    assert run.num_accepted_tokens == old_run["num_accepted_tokens"]
    assert run.num_drafts == old_run["num_drafts"]
    assert run.acceptance_rate == pytest.approx(old_run["acceptance_rate"])
    assert run.per_position_acceptance == pytest.approx(old_run["per_position_acceptance"])
    assert [s.num_accepted_tokens for s in run.steps] == [s["num_accepted"]
                                                          for s in old_run["steps"]]
    shown = views.render(record)
    assert 'data-status="accepted"' in shown.token_html
    if isinstance(record, CompareRecord):
        assert record.checklist is not None and "data-verdict" in shown.checklist_html


def _bad(mutate) -> str:
    d = json.loads((FIXTURES / "compare-v1.json").read_text())
    mutate(d)
    with pytest.raises(TraceFormatError) as err:
        load(json.dumps(d))
    message = str(err.value)
    assert "\n" not in message and message.startswith(("not a SpecLens trace", "this trace"))
    return message


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["speculative"]["steps"][3].update(index='"><img src=x onerror=alert(1)>'),
     "speculative.steps[3].index must be an integer"),
    (lambda d: d["speculative"]["steps"][0].update(kind="<script>"),
     "speculative.steps[0].kind must be one of prefill, verify, decode"),
    (lambda d: d["baseline"]["steps"][1].update(draft_token_ids=[-1]),
     "baseline.steps[1].draft_token_ids[0] must be an integer"),
    (lambda d: d["speculative"].update(arrival_s=float("inf")),
     "speculative.arrival_s must be a finite number"),
    (lambda d: d["speculative"]["token_text"].update({"<b>": "x"}), "a token id"),
    (lambda d: d["speculative"]["token_text"].update({"5": 5}), "must be a string"),
    (lambda d: d["speculative"].pop("steps"), "speculative.steps must be present"),
    (lambda d: d["checklist"].update(verdict="<i>yes</i>"), "checklist.verdict must be one of"),
    (lambda d: d["checklist"]["checks"][0].update(passed="yes"), "passed must be true or false"),
    (lambda d: d["speculative"]["config"].update(model=["x"]), "config.model must be a string"),
    (lambda d: d.update(speedup="fast"), "speedup must be a finite number"),
    (lambda d: d.update(version=99), "written by a newer SpecLens (version 99"),
])
def test_schema_names_the_first_bad_field(mutate, expected):
    assert expected in _bad(mutate)


@pytest.mark.parametrize("text", ["", "[]", "{}", '{"steps": 3}', "nul", "[" * 100_000,
                                  '{"baseline": {}, "speculative": {}}'])
def test_not_a_trace_at_all(text):
    with pytest.raises(TraceFormatError) as err:
        load(text)
    assert str(err.value).startswith("not a SpecLens trace")


@pytest.mark.parametrize("mutate, expected", [
    # numbers past a float's range, keys that are digits to str.isdigit but not to int():
    # one line each, never an OverflowError or a ValueError of int()
    (lambda d: d["speculative"].update(arrival_s=10**400), "arrival_s must be a finite number"),
    (lambda d: d["checklist"]["checks"][0].update(value=10**400), "value must be a finite number"),
    (lambda d: d["speculative"]["token_text"].update({"\u00b2": "x"}), "must be a token id"),
    (lambda d: d["speculative"]["token_text"].update({"1" * 5000: "x"}), "must be a token id"),
    (lambda d: d["baseline_runs"][0].update({"<b>\n" * 50: "x"}), "baseline_runs[0]['<b>\\n<b>"),
    (lambda d: d["speculative"]["config"].update(source=None), "config.source must be one of"),
    (lambda d: d["speculative"].update(token_text=None), "token_text must be an object"),
])
def test_hostile_values_are_refused_in_one_line(mutate, expected):
    message = _bad(lambda d: (d.update(version=TRACE_VERSION, checklist=_checklist()), mutate(d)))
    assert expected in message and len(message) < 200


def _checklist() -> dict:
    return {"verdict": "worth-it", "checks": [{"name": "measured speedup", "value": 1.5,
                                               "threshold": 1.1, "passed": True, "detail": ""}]}


def test_null_reads_as_the_default_where_from_dict_drops_it():
    """Config fields (RunConfig.from_dict drops nulls) and a run's request."""
    d = json.loads((FIXTURES / "compare-v6.json").read_text())
    d["speculative"]["config"].update(model=None, k=None, device=None)
    d["speculative"]["request"] = None
    run = load(json.dumps(d)).speculative
    assert (run.config.model, run.config.device, run.request) == ("default", "cpu", RequestRecord())


def test_an_emoji_escaped_as_a_surrogate_pair_loads(spec_trace):
    d = json.loads(dumps(spec_trace))
    d["prompt"] = "\U0001f600"
    text = json.dumps(d)  # ensure_ascii: the emoji as a pair of surrogate escapes
    assert "\\ud83d\\ude00" in text and load(text).prompt == "\U0001f600"


def test_the_schema_is_derived_from_the_type_hints():
    """A field is checked as soon as it is declared: its type hint says how."""
    import dataclasses

    from space.records import schema

    @dataclasses.dataclass
    class Probe:
        count: int
        names: list[str] = dataclasses.field(default_factory=list)
        kind: Literal["a", "b"] | None = None
        scores: dict[str, float] = dataclasses.field(default_factory=dict)
        derived: int = dataclasses.field(init=False, default=0)

    check = schema._record(Probe)
    check({"count": 1, "names": ["x"], "kind": None, "scores": {"a": 1}, "derived": "x", "new": 1})
    for value, expected in [({}, ("present", ".count")), ({"count": True}, "an integer in 0.."),
                            ({"count": 1, "names": ["x", 2]}, ("a string", ".names[1]")),
                            ({"count": 1, "kind": "c"}, ("one of a, b", ".kind")),
                            ({"count": 1, "scores": {"a": "x"}}, ("a finite number", ".scores['a']"))]:
        with pytest.raises(schema._Bad) as err:
            check(value)
        assert err.value.args == expected or err.value.args[0].startswith(expected)

    @dataclasses.dataclass
    class Unknown:
        pairs: tuple[int, str]

    with pytest.raises(TypeError, match="Unknown.pairs: no check"):
        schema._record(Unknown)


def test_the_schema_tables_name_real_fields():
    """The tables add what a hint cannot say by "Record.field": a renamed field would
    silently lose its limit."""
    import dataclasses
    from typing import get_args, get_type_hints

    from space.records import schema

    records, todo = {}, [CompareRecord]
    while todo:  # every record a trace holds, through lists and optionals
        hint = todo.pop()
        todo += get_args(hint)
        if dataclasses.is_dataclass(hint) and hint.__name__ not in records:
            records[hint.__name__] = hint
            todo += [get_type_hints(hint)[f.name] for f in dataclasses.fields(hint)]
    assert {"StepRecord", "RunConfig", "TargetView", "StepAnatomy", "PartInterval", "Check"} < set(records)
    for key in [*schema.LEAVES, *schema.MAX_ITEMS, *schema.NULL_IS_DEFAULT]:
        name, _, field = key.partition(".")
        fields = {f.name for f in dataclasses.fields(records[name])}
        assert not field or field in fields | set(schema.EXTRA_KEYS.get(records[name], {})), key


def test_version_4_files_replay_without_step_anatomy():
    """Files written before step anatomy (version 4) load and render; no step has one."""
    text = (FIXTURES / "compare-v4.json").read_text()
    assert json.loads(text)["version"] == 4
    record = load(text)
    assert isinstance(record, CompareRecord)
    steps = record.baseline.steps + record.speculative.steps
    assert steps and all(s.anatomy is None for s in steps)
    assert 'data-status="accepted"' in views.render(record).token_html


@pytest.mark.parametrize("name", ["compare-v1.json", "compare-v2.json", "compare-v2-ngram.json",
                                  "compare-v4.json", "compare-v5.json"])
def test_older_files_get_the_typed_run_config(name):
    """Version 6 types what was run: an older file's method and k (wherever the
    file kept them) are the config's fields, the source is in-process, and the
    request, never recorded then, is unknown rather than made up."""
    old = json.loads((FIXTURES / name).read_text())
    record = load((FIXTURES / name).read_text())
    assert isinstance(record, CompareRecord)
    spec_cfg = old["speculative"]["config"]["speculative_config"]
    assert (record.speculative.config.method, record.speculative.config.k) == (
        spec_cfg["method"], spec_cfg["num_speculative_tokens"])
    assert (record.baseline.config.method, record.baseline.config.k) == (None, 0)
    assert record.speculative.config.source == IN_PROCESS
    assert record.speculative.request == RequestRecord()
    again = load(dumps(record))  # written as today's version, read back the same
    assert again.to_dict() == record.to_dict() and again.to_dict()["version"] == TRACE_VERSION


def test_a_trace_records_its_request_and_says_it_was_in_process(spec_trace):
    spec_trace.request = RequestRecord(temperature=0.7, top_p=0.9, seed=3, max_tokens=64,
                                       prompt_sha256=prompt_hash("hi"))
    d = json.loads(dumps(spec_trace))
    assert d["version"] == TRACE_VERSION and d["config"]["source"] == "in-process"
    assert d["request"]["prompt_sha256"].startswith("8f434346648f")
    assert load(dumps(spec_trace)).request == spec_trace.request


def test_in_process_files_have_no_server_fields():
    """A server run has a step split, server notes and steps' unreported drafts;
    a file of an in-process run (version 6) reads them as none and 0."""
    record = load((FIXTURES / "compare-v6.json").read_text())
    assert isinstance(record, CompareRecord)
    for run in (record.baseline, record.speculative):
        assert run.step_split is None and run.server is None
        assert all(s.num_unreported_draft_tokens == 0 for s in run.steps)
        assert run.counts_from == "steps" and {s.placement for s in run.steps} == {"exact"}
    assert json.loads(dumps(record))["version"] == TRACE_VERSION == 7


def test_version_6_server_runs_take_the_servers_counts():
    """A version-6 server run whose chunks fitted no placement had its counts made
    up from the chunks (a 5-token chunk: 4 of 4 accepted); read back, its counts
    are the server's metrics it carries, and its guessed steps say uncertain."""
    from space.server.build import build_trace
    from tests.helpers.server_records import INFO, NGRAM, REQ, spec_decode, stream

    run = build_trace(stream([[1], [2, 3, 4, 5, 6]], spec_decode([3, 0], [4, 4])),
                      INFO, NGRAM, REQ)
    d = json.loads(dumps(run))
    d["version"] = 6
    del d["counts_from"]
    d["step_split"] = {"exact": False, "note": "the step split is approximate: ..."}
    d["steps"] = [{k: v for k, v in st.items() if k != "placement"} for st in d["steps"]]
    d["steps"][1].update(kind="verify", num_accepted_tokens=4, num_unreported_draft_tokens=4,
                         draft_token_ids=[], emitted_token_ids=[2, 3, 4, 5, 6])
    del d["steps"][2:]
    old = load(json.dumps(d))
    assert isinstance(old, RunTrace) and old.counts_from == "vllm_metrics"
    assert (old.num_drafts, old.num_accepted_tokens, old.acceptance_rate) == (2, 3, 3 / 8)
    assert [s.placement for s in old.steps] == ["exact", "uncertain"]


def test_version_6_verdicts_stay_as_recorded_decided_by_the_spread_rule():
    """Version 7 decides by an interval and adds "undecided"; an older file's verdict
    is kept, and its checklist says the older rule reached it."""
    raw = json.loads((FIXTURES / "compare-v6.json").read_text())
    record = load(json.dumps(raw))
    assert isinstance(record, CompareRecord) and record.checklist is not None
    assert record.checklist.verdict == raw["checklist"]["verdict"]
    assert record.checklist.rule == "spread"
    assert json.loads(dumps(record))["checklist"]["rule"] == "spread"  # kept when saved again
