"""Placeholder drafts and prefix-cache hits in the records and views (issue 8), on
hand-made traces: vLLM's counts beside SpecLens's with the reason, the cached
prefill in the timeline, version-2 files, and the flag that picks the policy."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from space.cli.main import _parser, spec_from_args
from space.engine.build import build_steps, token_texts
from space.records.config import ConfigError, EngineSpec
from space.records.schema import TraceFormatError, load
from space.records.trace import DRAFTER_SKIPPED, PADDING, PREFILL, TRACE_VERSION, RunTrace, dumps
from space.ui import views
from tests.helpers.traces import views_run as make_trace
from vis.acceptance import acceptance_summary_html
from vis.timeline import timeline_figure

FIXTURES = Path(__file__).parents[1] / "fixtures"


def cached_trace() -> RunTrace:
    """make_trace() as a warm repeat: 8 of its 12 prompt tokens from the prefix cache,
    its prefill padded with 4 placeholder drafts that vLLM counted (5 spec steps and
    15 draft tokens against the trace's 4 and 11)."""
    run = make_trace()
    steps = run.steps[1:]
    steps[0].num_placeholder_draft_tokens, steps[0].placeholder_cause = 4, PADDING
    return dataclasses.replace(run, steps=steps, num_cached_tokens=8, vllm_spec_metrics={
        "num_spec_steps": 5, "num_draft_tokens": 15, "num_accepted_draft_tokens": 7})


def test_vllm_counts_beside_speclens_with_the_reason():
    run = cached_trace()
    assert run.num_placeholder_draft_tokens == 4
    diff = run.draft_count_difference
    assert (diff.vllm_num_drafts, diff.vllm_num_draft_tokens) == (5, 15)
    assert (diff.num_drafts, diff.num_draft_tokens) == (4, 11)
    assert "step 1: 4 placeholder ids (-1) padding a one-token prefill" in diff.reason
    assert run.acceptance_rate == 7 / 11  # SpecLens's rate counts only proposed drafts


def test_zeros_from_a_skipped_drafter_have_their_own_reason():
    """Near max_model_len vLLM skips the drafter and verifies zeros in its place."""
    run = make_trace()
    run.steps[5].num_placeholder_draft_tokens, run.steps[5].placeholder_cause = 1, \
        DRAFTER_SKIPPED
    run.vllm_spec_metrics = {"num_spec_steps": 5, "num_draft_tokens": 12}
    run.recompute()
    reason = run.draft_count_difference.reason
    assert "step 5: 1 zeros the model runner put in place of drafts" in reason
    assert "max_model_len" in reason


def test_no_difference_no_record():
    run = make_trace()
    assert run.draft_count_difference is None  # no vLLM figures at all
    run.vllm_spec_metrics = {"num_spec_steps": 4, "num_draft_tokens": 11}
    assert run.draft_count_difference is None
    run.vllm_spec_metrics = {"num_spec_steps": "4", "num_draft_tokens": True}  # a hand-made file
    assert run.draft_count_difference is None


def test_json_carries_cached_tokens_and_the_difference():
    run = cached_trace()
    d = json.loads(dumps(run))
    assert d["version"] == TRACE_VERSION >= 3  # these fields came with version 3
    assert d["num_cached_tokens"] == 8
    assert d["steps"][0]["num_placeholder_draft_tokens"] == 4
    assert d["steps"][0]["placeholder_cause"] == "padding"
    assert d["draft_count_difference"]["vllm_num_draft_tokens"] == 15
    again = load(json.dumps(d))
    assert again.to_dict() == run.to_dict()


def test_version_2_files_load_with_defaults():
    text = (FIXTURES / "compare-v2.json").read_text()
    assert json.loads(text)["version"] == 2
    record = load(text)
    for run in (record.baseline, record.speculative):
        assert run.num_cached_tokens == 0 and run.num_placeholder_draft_tokens == 0
        assert run.draft_count_difference is None
    assert 'data-status="accepted"' in views.render(record).token_html


@pytest.mark.parametrize("mutate, expected", [
    (lambda d: d["config"].update(prefix_cache="hot"), "config.prefix_cache must be one of"),
    (lambda d: d["steps"][0].update(num_placeholder_draft_tokens=-4),
     "steps[0].num_placeholder_draft_tokens must be an integer"),
    (lambda d: d.update(num_cached_tokens="768"), "num_cached_tokens must be an integer"),
    (lambda d: d["steps"][0].update(placeholder_cause="<b>"),
     "steps[0].placeholder_cause must be one of padding, drafter_skipped"),
])
def test_schema_checks_the_new_fields(mutate, expected):
    d = cached_trace().to_dict()
    mutate(d)
    with pytest.raises(TraceFormatError, match="not a SpecLens trace") as err:
        load(json.dumps(d))
    assert expected in str(err.value)


def test_acceptance_panel_shows_both_figures_when_they_differ():
    shown = acceptance_summary_html(cached_trace())
    assert "63.6%" in shown  # SpecLens: 7 of 11
    assert "vLLM&#x27;s own counters differ" in shown or "vLLM's own counters differ" in shown
    assert "vLLM 15 drafted tokens over 5 spec steps (acceptance rate 46.7%)" in shown
    assert "SpecLens 11 over 4 verify steps (63.6%)" in shown
    assert "placeholder" in shown
    assert "counters differ" not in acceptance_summary_html(make_trace())


def test_timeline_labels_the_cached_prefill():
    fig = timeline_figure(cached_trace())
    prefill = next(t for t in fig.data if t.name == PREFILL)
    assert list(prefill.text) == ["cached prefill"]
    label = prefill.customdata[0][1]
    assert "cached: 8 of 12 prompt tokens from the prefix cache" in label
    assert "4 placeholder drafts" in label
    assert "prefix cache: speculative 8" in fig.layout.title.text
    plain = timeline_figure(make_trace())
    assert not any(t for b in plain.data if b.type == "bar" for t in b.text)
    assert "prefix cache" not in plain.layout.title.text


def test_build_steps_keeps_placeholders_out_of_the_drafts():
    raw = SimpleNamespace(num_scheduled_tokens=5, num_computed_before=768,
                          num_prompt_tokens=769, draft_token_ids=[], sampled_token_ids=[504],
                          kept_token_ids=[504], output_offset=0, num_placeholder_drafts=4,
                          placeholder_cause=PADDING)
    (step,) = build_steps([raw], [(1.0, 1.1, 0.0)])
    assert step.kind == PREFILL and step.draft_token_ids == []
    assert step.num_placeholder_draft_tokens == 4 and step.num_accepted_tokens == 0
    assert step.placeholder_cause == PADDING


def test_token_texts_never_decodes_an_id_outside_the_vocabulary():
    class Tokenizer:
        def __len__(self):
            return 100

        def decode(self, ids, skip_special_tokens=False):
            assert all(0 <= t < 100 for t in ids), ids  # the OverflowError of issue 8
            return f"t{ids[0]}"

    assert token_texts(Tokenizer(), [-1, 5, 100, 2**40], {}) == {5: "t5"}


def test_prefix_cache_flag():
    def spec(*extra):
        return spec_from_args(_parser().parse_args(["trace", "--prompt", "x", *extra]))

    assert spec().prefix_cache == "cold"
    assert spec("--prefix-cache", "warm").prefix_cache == "warm"
    with pytest.raises(SystemExit):
        spec("--prefix-cache", "hot")
    with pytest.raises(ConfigError, match="prefix cache must be one of cold, warm"):
        EngineSpec(prefix_cache="hot").validate(on_gpu=False)
    assert EngineSpec(prefix_cache="warm").baseline().prefix_cache == "warm"
