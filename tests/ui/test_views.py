"""The page's pure parts, on hand-written traces: no engine, no server."""
from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from space.checklist import ChecklistInputs, evaluate
from space.config import ConfigError, EngineSpec
from space.trace import dumps, load, make_compare
from space.ui import inputs, views
from space.ui.live import (
    HEARTBEAT_S,
    Done,
    Heartbeat,
    LiveCompare,
    LiveJob,
    MeasuredRun,
    Progress,
    Steps,
)
from tests.helpers.traces import ngram_run, short_baseline
from vis import text


def lanes(fig) -> set[str]:
    return {y for t in fig.data if t.type == "bar" for y in t.y}


@pytest.fixture
def cmp():
    return make_compare([short_baseline()], [ngram_run()])


def test_render_compare_fills_every_view(cmp):
    v = views.render(cmp)
    assert v.token_html.count('data-status="rejected"') == 3 + 4  # steps 1 and 3
    assert "TPOT speedup" in v.compare_html
    assert list(v.compare_table["metric"])[:2] == ["TTFT ms", "TPOT ms"]
    assert lanes(v.timeline) == {"speculative", "baseline"}
    assert "Acceptance rate" in v.acceptance_html
    assert v.checklist_html == views.NO_VERDICT
    assert "TPOT speedup" in v.summary


def test_render_single_trace_has_no_baseline():
    v = views.render(ngram_run())
    assert v.compare_html == views.NO_BASELINE and v.compare_table is None
    assert lanes(v.timeline) == {"speculative"}


def test_checklist_from_the_record(cmp):
    checklist = evaluate(ChecklistInputs(method="ngram", k=4, speedup_median=1.5,
                                         speedup_spread=(1.4, 1.6)))
    cmp.checklist = checklist
    html = views.render(load(dumps(cmp))).checklist_html  # as read back from a saved JSON
    assert f'data-verdict="{checklist.verdict}"' in html


def test_step_view_clamps_and_describes(cmp):
    first = views.step_view(cmp, -5)
    assert first.position == 0 and first.count == 5 and "prefill" in first.title_html
    last = views.step_view(cmp, 99)
    assert last.position == 4 and "decoded" in last.title_html
    assert "Pass 5 of 5." in last.title_html and "Engine step" in last.title_html
    rejected = views.step_view(cmp, 1)
    assert rejected.drafts_html.count('data-status="rejected"') == 3
    assert views.step_view(None, 0) is None


def test_exports_round_trip(cmp):
    json_path, csv_path = views.write_exports(cmp)
    assert load(Path(json_path).read_text()).to_dict() == cmp.to_dict()
    frame = pd.read_csv(csv_path)
    assert list(frame.columns[:2]) == ["run", "index"]
    assert (frame["run"] == "speculative").sum() == len(cmp.speculative.steps)
    assert (frame["run"] == "baseline").sum() == len(cmp.baseline.steps)


def test_live_view_shows_steps_so_far():
    run = ngram_run()
    html = views.live_token_html(run.steps[:2], {})
    assert html.count('data-status="accepted"') == 1
    assert html.count('data-status="rejected"') == 3
    assert "no output tokens" in views.live_token_html([], {})


def test_inputs_coerce_and_reject():
    base = EngineSpec()
    spec = inputs.engine_spec(base, "ngram", "default-truncated", 6.0)
    assert spec.k == 6 and spec.draft_model is None  # ngram takes no draft
    assert inputs.engine_spec(base, "draft_model", " d ", 3).draft_model == "d"
    for bad in ("many", None, 2.5):
        with pytest.raises(ConfigError, match="k must be"):
            inputs.engine_spec(base, "ngram", "", bad)
    req = inputs.request("hi", "0.5", 1, 64.0, "")
    assert (req.temperature, req.max_tokens, req.seed) == (0.5, 64, None)
    with pytest.raises(ConfigError):
        inputs.repeats(0)


def test_a_pairs_vllm_keys_travel_only_with_its_method():
    def window(spec):
        return spec.prompt_lookup_min, spec.prompt_lookup_max

    # started with a --pair whose window starts at 3 and a key vLLM takes as is
    base = EngineSpec(prompt_lookup_min=3, extra_speculative=(("some_key", 1),))
    assert window(inputs.engine_spec(base, "ngram", "", 4)) == (3, 5)
    assert inputs.engine_spec(base, "ngram", "", 6).extra_speculative == (("some_key", 1),)
    # the cpu-ngram pair chosen in the page brings its own window, and no other keys
    chosen = inputs.engine_spec(base, "ngram", "", 4, "cpu-ngram")
    assert window(chosen) == (2, 5) and chosen.extra_speculative == ()
    # the method changed after the pair was chosen: the keys stay behind
    spec = inputs.engine_spec(base, "draft_model", "default-truncated", 4, "cpu-ngram")
    assert spec.extra_speculative == ()
    assert inputs.engine_spec(base, "draft_model", "d", 4).extra_speculative == ()
    # a GPU pair's target is not this app's: the command line's settings stay
    gpu = inputs.engine_spec(base, "ngram", "", 4, "gpu-llama8b-ngram")
    assert window(gpu) == (3, 5) and gpu.extra_speculative == (("some_key", 1),)
    with pytest.raises(ConfigError, match="no model pair"):
        inputs.engine_spec(base, "ngram", "", 4, "no-such-pair")


def test_samples_cover_structured_and_creative():
    samples = inputs.sample_prompts(on_gpu=False)
    labels = " ".join(s.label.lower() for s in samples)
    assert "structured" in labels and "creative" in labels and "code" in labels
    assert all(s.text.strip() for s in samples)
    assert "concurrency" not in labels  # one request at a time in the page


def test_live_compare_streams_then_finishes(cmp):
    def fake_compare(spec, req, repeats, on_step, progress, warmup, cancel=None,
                     on_repeat=None):
        progress(0.0, "building")
        on_repeat(0, 1)
        for s in cmp.speculative.steps:
            on_step("r", s, {})
        return cmp

    events = list(LiveCompare(EngineSpec(), None, compare=fake_compare))
    assert isinstance(events[0], Progress) and isinstance(events[-1], Done)
    assert MeasuredRun(0, 1) in events  # a typed event, not a message to match
    steps = [e for e in events if isinstance(e, Steps)]
    assert steps and len(steps[-1].steps) == len(cmp.speculative.steps)
    assert events[-1].record is cmp


def test_live_compare_raises_the_runs_error():
    def failing(*a, **kw):
        raise ConfigError("the prompt is empty")

    with pytest.raises(ConfigError, match="empty"):
        list(LiveCompare(EngineSpec(), None, compare=failing))


def test_closing_the_stream_stops_the_work():
    """Gradio closes the handler's generator when its client leaves or presses Stop."""
    stopped = threading.Event()

    def work(_on_step, progress, cancel):
        progress(0.0, "running")
        if cancel.wait(10):  # the engine loop checks the token before each step
            stopped.set()

    events = iter(LiveJob(work))
    assert isinstance(next(events), Progress)
    t0 = time.monotonic()
    events.close()
    assert stopped.wait(5) and time.monotonic() - t0 < 1.0


def test_a_quiet_worker_sends_heartbeats():
    """So the handler yields, and Gradio notices a client that left, during a baseline run."""
    out = list(LiveJob(lambda _s, _p, _c: time.sleep(2.5 * HEARTBEAT_S) or "ok"))
    assert sum(isinstance(e, Heartbeat) for e in out) >= 2
    assert isinstance(out[-1], Done) and out[-1].record == "ok"


def test_the_memory_panel_marks_an_old_reading():
    from space.memory import EngineReading

    assert views.reading_note(EngineReading([], 100.0, True), now=130.0) == ""
    old = views.reading_note(EngineReading([], 100.0, False), now=130.0)
    assert 'data-fresh="0"' in old and "from 30 s ago" in old
    assert "busy" in views.reading_note(EngineReading([], None, False))


def test_summary_names_the_config(cmp):
    cmp.speculative = dataclasses.replace(cmp.speculative, config={
        "speculative_config": {"method": "ngram", "num_speculative_tokens": 4},
        "model_path": "/c/SmolLM2-135M-Instruct", "device": "cpu"})
    assert text.summary(cmp).startswith("ngram, k=4, on SmolLM2-135M-Instruct (cpu)")


def test_changing_method_or_k_keeps_one_baseline():
    base = EngineSpec()
    changed = inputs.engine_spec(base, "draft_model", "default-truncated", 7)
    assert changed.baseline() == base.baseline()
