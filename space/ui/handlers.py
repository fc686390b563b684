"""The run, replay, stepper and memory panels' handlers: ``{component: value}`` dicts,
each updating only what it changes. Bad input is a toast and a line in the status box;
any other failure is logged and shown as one short line."""
from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from space.engine.hardware import on_gpu
from space.engine.models import ModelError
from space.observe import memory
from space.observe.memory import EngineReading
from space.observe.prom import Metrics
from space.records import replay
from space.records.config import ConfigError, EngineSpec
from space.records.schema import TraceFormatError
from space.records.trace import CompareRecord
from space.runs import offer as offers
from space.runs import presets, runner
from space.runs.events import Publisher
from space.server.client import ServerError
from space.ui import datadir, inputs, views
from space.ui.job_status import JobHandlers, failure_shown
from space.ui.links import job_for
from space.ui.live import Event, LiveCompare, MeasuredRun, Progress, Steps, follow, short
from space.ui.panels import Acceptance, Controls, Files, Memory, Results, Stepper
from space.ui.status import saved_html, status_html
from space.ui.tipping_panel import mini_figure
from vis import text
from vis.memory import memory_figure, memory_html

log = logging.getLogger(__name__)


@dataclass
class UI:
    state: gr.State
    controls: Controls
    results: Results
    timeline: gr.Plot
    acceptance: Acceptance
    stepper: Stepper
    checklist: gr.HTML
    memory: Memory
    files: Files
    tipping: gr.Plot  # this machine's tipping curve, beside the checklist
    anatomy: gr.Checkbox  # the timeline's step-anatomy toggle

    def record_outputs(self) -> list:
        """Everything a run or a replay may change."""
        r, a, f = self.results, self.acceptance, self.files
        return ([self.state, r.status, r.tokens, r.compare, r.table, self.timeline, a.summary,
                 a.per_position, a.histogram, self.checklist, f.trace_json, f.steps_csv]
                + self.stepper.outputs()
                + [self.memory.figure, self.memory.summary, self.tipping, a.draft_probs, self.anatomy])


class Handlers(JobHandlers):
    """The run's status box is its results panel's."""

    def __init__(self, ui: UI, base_spec: EngineSpec, metrics: Metrics,
                 samples: list[inputs.Sample], compare: runner.CompareRunner | None = None,
                 offer: offers.Offer | None = None, publisher: Publisher | None = None) -> None:
        super().__init__(ui.results, base_spec, offer, publisher)
        self.ui, self.metrics, self.samples = ui, metrics, samples
        self.compare = compare  # None: space.runs.runner.compare (the page tests pass a fake)

    def run(self, prompt, method, draft, k, temperature, top_p, max_tokens, seed,
            repeats, pair_id=None, explain=True,
            request: gr.Request | None = None) -> Iterator[dict]:
        """Baseline + speculative run of the prompt, the speculative one streamed live;
        ``explain`` then scores its drafts with the target (after the timed runs).
        Stop or a client that leaves closes this generator, which stops the run."""
        status = self.ui.results.status
        job = job_for(self.publisher, request)

        def body():
            spec = inputs.engine_spec(self.base_spec, method, draft, k, pair_id, offer=self.offer)
            req = inputs.request(prompt, temperature, top_p, max_tokens, seed, offer=self.offer)
            live = LiveCompare(spec, req, inputs.repeats(repeats), compare=self.compare,
                               explain=bool(explain), job=job)
            yield {status: status_html("checking the input", "working")}
            return (yield from follow(live, self._live_update, "the run"))

        record = yield from self._guarded(body(), "the run",
                                          "stopped; the engines are free for the next run",
                                          (ConfigError, ModelError, ServerError), detail=True)
        if record is None:  # stopped, or failed: said in the status box
            return
        yield {**self.show(record, f"done: {text.summary(record)}",
                           saved=job.replies.get("history")), **self.memory()}

    def _live_update(self, ev: Event) -> dict | None:
        status, tokens = self.ui.results.status, self.ui.results.tokens
        if isinstance(ev, MeasuredRun):
            waiting = "running the baseline engine; the speculative run streams here next"
            return {status: status_html(f"measured run {ev.index + 1}/{ev.count}: {waiting}",
                                        "working"),
                    tokens: views.LIVE_PLACEHOLDER}
        if isinstance(ev, Progress):
            return {status: status_html(ev.message, "working")}
        if isinstance(ev, Steps):
            n = sum(len(s.emitted_token_ids) for s in ev.steps)
            return {status: status_html(f"speculative run: {n} tokens so far", "working"),
                    tokens: views.live_token_html(ev.steps, ev.texts)}
        return None

    def show(self, record: views.Record, message: str, source: str | None = None,
             saved: object = None) -> dict:
        """``record`` in every view; ``saved``: the history's answer for it."""
        ui, v = self.ui, views.render(record)
        r, a, f = ui.results, ui.acceptance, ui.files
        json_path, csv_path = views.write_exports(record, source)
        return {
            ui.state: record, r.status: status_html(message, "done", saved_html(saved)),
            r.tokens: v.token_html, r.compare: v.compare_html, r.table: v.compare_table,
            ui.timeline: v.timeline, a.summary: v.acceptance_html,
            a.per_position: v.per_position, a.histogram: v.histogram,
            ui.checklist: v.checklist_html, ui.tipping: mini_figure(record),
            a.draft_probs: v.draft_probs, ui.anatomy: False,  # the anatomy figure is per step
            f.trace_json: gr.DownloadButton(value=json_path, interactive=True),
            f.steps_csv: gr.DownloadButton(value=csv_path, interactive=True),
            **self.step(record, 1),
        }

    def replay(self, path: str | None) -> dict:
        """Show a saved trace or comparison in every view; nothing runs. The upload
        goes when the session ends."""
        if not path:
            return {}
        datadir.claim_upload(path)
        name = Path(path).name
        try:
            record = replay.read_record(path)  # bounded: bytes, then engine steps
        except TraceFormatError as exc:  # one line naming the first bad field
            return failure_shown(self.ui.results.status, f"{name}: {short(exc)}")
        kind = "comparison" if isinstance(record, CompareRecord) else "trace"
        return self.show(record, f"replaying the saved {kind} {name}: "
                                  f"{text.summary(record)}", source=path)

    def step(self, record: views.Record | None, value, delta: int = 0) -> dict:
        """The stepper at slider ``value`` (1-based) moved by ``delta``."""
        s = self.ui.stepper
        sv = views.step_view(record, int(value or 1) - 1 + delta) or views.NO_STEP
        # A slider needs maximum > minimum; with one step, position 2 clamps to 1.
        return {s.slider: gr.Slider(minimum=1, maximum=max(sv.count, 2), value=sv.position + 1),
                s.title: sv.title_html, s.context: sv.context_html,
                s.drafts: sv.drafts_html, s.emitted: sv.emitted_html}

    def pair(self, pair_id) -> dict:
        """Fill method / draft / k from a model-pair preset, or say why it cannot run here."""
        c = self.ui.controls
        if not pair_id:
            return {c.pair_note: ""}
        choice = next((p for p in inputs.pair_choices(on_gpu(), self.offer)
                       if p.id == pair_id), None)
        if choice is None:  # one message, whatever the id: the offered ones are in the list
            return {c.pair_note: status_html(
                f"model pair {offers.quote(pair_id)} is not offered on this server; "
                "pick one from the list", "error")}
        if not choice.available:
            return {c.pair_note: status_html(f"{choice.label}: {choice.reason}; not applied",
                                             "error")}
        pair = presets.get_model_pair(choice.id)
        if pair.target != self.base_spec.model:
            return {c.pair_note: status_html(
                f"{pair.title} uses the target {pair.target}, but this app runs "
                f"{self.base_spec.model}: the target is fixed at start with --model; restart "
                f"with `python app.py --pair {pair.id}`; not applied", "error")}
        keys = ", ".join(f"{k}={v}" for k, v in pair.speculative.items())
        note = f"{pair.title}: {pair.note}" + (f" Also sets {keys}." if keys else "")
        return {c.method: pair.method, c.draft: pair.draft or "", c.k: pair.k,
                c.pair_note: status_html(note, "info")}

    def sample(self, index) -> dict:
        c = self.ui.controls
        if index is None or not 0 <= int(index) < len(self.samples):
            return {}
        s = self.samples[int(index)]
        return {c.prompt: s.text, c.temperature: s.temperature}

    def memory(self) -> dict:
        """What each engine holds, and the GPU or host beside it; feeds /metrics too.
        Never waits for a run: while one holds the engines, their last reading shows."""
        m = self.ui.memory
        try:
            reading = runner.engine_memory()
        except Exception:  # an engine half-closed by a rebuild: show the device only
            log.exception("engine memory reading failed")
            reading = EngineReading([], None, False)
        gpu = memory.gpu_memory(memory.nvml_index(0))
        self.metrics.observe_memory(reading.engines, gpu)
        system = None if gpu else memory.system_memory()
        rss = None if gpu else memory.process_memory()
        # The figure leaves the host's RAM out (its bar would flatten the engines'); the table names it.
        return {m.figure: memory_figure(reading.engines, gpu, None, rss),
                m.summary: views.reading_note(reading)
                + memory_html(reading.engines, gpu, system, rss, runner.POOL.budget())}

