"""The Traffic tab: a visitor's file of prompts (or ``--traffic FILE``), a verdict per
group and what to deploy (``space.runs.traffic``). The upload's size is checked before
it is read, and it goes when the session ends."""
from __future__ import annotations

import dataclasses
import html
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr

from space.common import defaults
from space.engine.models import ModelError
from space.records.config import ConfigError, EngineSpec
from space.runs import offer as offers
from space.runs.events import Publisher
from space.runs.source import Source
from space.runs.sweep import MAX_CONCURRENCY
from space.runs.traffic_file import Bounds, check_size
from space.server.client import ServerError
from space.ui import datadir, inputs
from space.ui.job_status import JobHandlers
from space.ui.links import job_for
from space.ui.panels import download_row
from space.ui.status import asset, saved_html, status_html

MAX_TOKENS = 256        # per request, the file's own max_tokens included
MAX_PER_GROUP = 10
MAX_PROMPTS = 48        # in all, whatever the groups: a page job stays near 10 minutes
MORE_MINUTES = 10       # "Measure more": one page job's budget of wall time
INTRO = asset("traffic_intro.md")


@dataclass
class TrafficPanel:
    file: gr.File
    label_field: gr.Textbox
    per_group: gr.Number
    max_tokens: gr.Number
    repeats: gr.Number
    concurrency: gr.Number  # a group's prompts this many at once
    run: gr.Button
    stop: gr.Button
    status: gr.HTML
    plot: gr.Plot
    groups: gr.Dataframe
    answer: gr.Textbox
    prompts: gr.Dataframe
    csv: gr.DownloadButton
    json: gr.DownloadButton
    records: gr.State     # {choice label: CompareRecord} of the session's last run
    pick: gr.Dropdown     # a measured prompt, to open in the token view
    open: gr.Button
    more: gr.Button       # "Measure more": unseen prompts of the undecided groups
    last: gr.State        # the session's last run (TrafficSession), for "Measure more"

    def inputs(self) -> list:
        """In the order of ``TrafficHandlers.run``'s first parameters (and of the API)."""
        return [self.file, self.label_field, self.per_group, self.max_tokens, self.repeats,
                self.concurrency]

    def outputs(self) -> list:
        return [self.status, self.plot, self.groups, self.answer, self.prompts, self.csv,
                self.json, self.records, self.pick]


def build_traffic_panel(operator_file: str | None = None) -> TrafficPanel:
    gr.Markdown(INTRO)
    if operator_file:
        gr.Markdown(f"Without an upload, the server's own traffic file is used "
                    f"(`{html.escape(Path(operator_file).name)}`).")
    with gr.Row():
        file = gr.File(label="Traffic file", file_types=[".jsonl", ".json", ".csv", ".txt"],
                       type="filepath", elem_id="traffic-file")
        label_field = gr.Textbox("", label="Label field (empty: category, label or task)",
                                 elem_id="traffic-label")
    with gr.Row():
        per_group = gr.Number(defaults.PAGE_PROMPTS_PER_GROUP, precision=0, minimum=1, maximum=MAX_PER_GROUP,
                              label="Prompts per group", elem_id="traffic-per-group")
        max_tokens = gr.Number(defaults.PAGE_MAX_TOKENS, precision=0, minimum=1, maximum=MAX_TOKENS,
                               label="Max tokens (where the file gives none)",
                               elem_id="traffic-max-tokens")
        repeats = gr.Number(1, precision=0, minimum=1, maximum=10,
                            label="Measured runs per engine and prompt")
        concurrency = gr.Number(1, precision=0, minimum=1, maximum=MAX_CONCURRENCY,
                                label="Requests at once (a group's prompts in batches)",
                                elem_id="traffic-concurrency")
    with gr.Row():
        run = gr.Button("Run traffic", variant="primary", elem_id="traffic-run")
        more = gr.Button("Measure more", elem_id="traffic-more")
        stop = gr.Button("Stop", variant="stop", elem_id="traffic-stop", scale=0)
    status = gr.HTML("", elem_id="traffic-status")
    plot = gr.Plot(label="Speedup per group; acceptance vs speedup per prompt",
                   elem_id="traffic-plot")
    groups = gr.Dataframe(label="One row per group", interactive=False, elem_id="traffic-groups")
    answer = gr.Textbox(label="What to deploy", lines=12, interactive=False,
                        elem_id="traffic-answer")
    prompts = gr.Dataframe(label="One row per measured prompt", interactive=False,
                           elem_id="traffic-prompts")
    csv, js = download_row(("Download per prompt (CSV)", "traffic-csv"),
                           ("Download everything (JSON)", "traffic-json"))
    with gr.Row():
        pick = gr.Dropdown([], label="Open a measured prompt in the token view",
                           elem_id="traffic-pick")
        open_ = gr.Button("Open", elem_id="traffic-open", scale=0)
    return TrafficPanel(file, label_field, per_group, max_tokens, repeats, concurrency, run,
                        stop, status, plot, groups, answer, prompts, csv, js, gr.State({}),
                        pick, open_, more, gr.State(None))


@dataclass
class TrafficSession:
    """What "Measure more" continues: the last run's settings, plan and measured items."""

    spec: EngineSpec
    plan: Any             # space.runs.traffic_groups.Plan
    source: str
    max_tokens: int
    repeats: int
    concurrency: int
    skipped: list[str]
    items: list           # space.judge.traffic.TrafficItem


class TrafficHandlers(JobHandlers):
    panel: TrafficPanel

    def __init__(self, panel: TrafficPanel, base_spec: EngineSpec,
                 offer: offers.Offer | None = None, operator_file: str | None = None,
                 bounds: Bounds = Bounds(),  # noqa: B008 (frozen)
                 show_record: Callable[[Any, str], dict] | None = None,
                 publisher: Publisher | None = None, source: Source | None = None) -> None:
        super().__init__(panel, base_spec, offer, publisher, source)
        self.operator_file, self.bounds = operator_file, bounds
        self.show_record = show_record  # Handlers.show: a comparison in every view

    def run(self, file, label_field, per_group, max_tokens, repeats, concurrency, method, draft,
            k, pair_id=None, progress=gr.Progress(),  # noqa: B008 (Gradio injects it)
            request: gr.Request | None = None) -> Iterator[dict]:
        """Read, group, sample and measure the file; Stop or a client that leaves
        closes this generator, and the run stops before its next engine step."""
        page_job = job_for(self.publisher, request)  # who asked; who hears how it ends

        def body():
            if file:
                datadir.claim_upload(file)  # gone when the session ends
            traffic, session = self._plan(file, label_field, per_group, max_tokens, repeats,
                                          concurrency, method, draft, k, pair_id)
            yield {self.panel.status: status_html(traffic.describe() + self.source.through,
                                                  "working")}
            return session, (yield from self._measure(session, page_job, progress, None))

        yield from self._finish(body(), page_job)

    def more(self, last: TrafficSession | None,
             progress=gr.Progress(),  # noqa: B008 (Gradio injects it)
             request: gr.Request | None = None) -> Iterator[dict]:
        """"Measure more": unseen prompts of the last run's undecided groups until they
        are decided or the budget (MAX_PROMPTS in all, MORE_MINUTES) is spent."""
        from space.runs.traffic import Budget

        if last is None or not last.items:
            yield {self.panel.status: status_html("run the traffic first; then Measure more "
                                                  "samples its undecided groups", "error")}
            return
        page_job = job_for(self.publisher, request)

        def body():
            yield {self.panel.status: status_html("measuring more: unseen prompts of the "
                                                  "undecided groups", "working")}
            budget = Budget(MAX_PROMPTS, MORE_MINUTES)
            return last, (yield from self._measure(last, page_job, progress, budget))

        yield from self._finish(body(), page_job)

    def _measure(self, s: TrafficSession, page_job, progress, budget):
        from space.runs.traffic import run_traffic  # imports vLLM lazily

        return (yield from self._follow(lambda _on_step, report, cancel: run_traffic(
            s.spec, s.plan, file_name=s.source, repeats=s.repeats, max_tokens=s.max_tokens,
            progress=report, cancel=cancel, skipped=s.skipped, max_tokens_cap=MAX_TOKENS,
            concurrency=s.concurrency, job=page_job, source=self.source,
            until_decided=budget, previous=s.items or None), progress, "the traffic run"))

    def _finish(self, body, page_job) -> Iterator[dict]:
        """``body`` returns (session, result): the result shown, the session kept."""
        done = yield from self._guarded(
            body, "the traffic run", "traffic run stopped; the remaining prompts were not run",
            (ConfigError, ModelError, ServerError))
        if done is not None:
            last, result = done
            session = dataclasses.replace(last, items=list(getattr(result, "items", [])))
            yield {**self.show(result, saved_html(page_job.replies.get("history"))),
                   self.panel.last: session}

    def _plan(self, file, label_field, per_group, max_tokens, repeats, concurrency, method,
              draft, k, pair_id) -> tuple[Any, TrafficSession]:
        """The file read (a ``TrafficFile``) and the run's settings checked;
        ``ConfigError`` with one line if not."""
        from space.runs.traffic_file import parse
        from space.runs.traffic_groups import plan

        spec = inputs.speculative_spec(self.base_spec, method, draft, k, pair_id,
                                       offer=self.offer)
        spec = self.source.spec_for(spec)  # servers: theirs, or one line
        path = file or self.operator_file
        if not path:
            raise ConfigError("upload a traffic file first")
        check_size(Path(path).stat().st_size, self.bounds)  # before reading it
        field = str(label_field or "").strip() or None
        traffic = parse(Path(path).read_bytes(), Path(path).name, field, self.bounds)
        if not traffic.requests:
            raise ConfigError(f"no request could be read: {traffic.describe()}")
        n = inputs.whole_in(per_group, "prompts per group", 1, MAX_PER_GROUP)
        tokens = inputs.whole_in(max_tokens, "max tokens", 1, MAX_TOKENS)
        at_once = inputs.whole_in(concurrency, "requests at once", 1, MAX_CONCURRENCY)
        n_repeats = inputs.repeats(repeats)
        return traffic, TrafficSession(spec, plan(traffic, n, MAX_PROMPTS), Path(path).name, tokens,
                                       n_repeats, at_once, [str(s) for s in traffic.skipped], [])

    def show(self, result, saved: str = "") -> dict:
        from space.judge.traffic import PROMPT_COLUMNS, to_csv

        folder = datadir.export_folder("speclens-traffic-")
        csv_path, json_path = folder / "traffic-prompts.csv", folder / "traffic.json"
        csv_path.write_text(to_csv(result.rows(), PROMPT_COLUMNS))
        json_path.write_text(json.dumps(result.to_dict()))
        records = {f"line {it.line} ({it.group})": it.compare for it in result.items}
        return {**self.show_summary(result.summary(), done_line(result.summary()), csv_path,
                                    json_path, saved),
                self.panel.records: records,
                self.panel.pick: gr.Dropdown(choices=list(records), value=None)}

    def open_prompt(self, records: dict, choice: str | None) -> dict:
        """One measured prompt of the session's last run in every view, as a replay."""
        record = (records or {}).get(choice or "")
        if record is None or self.show_record is None:
            return {self.panel.status: status_html("run the traffic first, then pick one of "
                                                   "its prompts", "error")}
        return self.show_record(record, f"traffic run, {choice}: shown in every view")

    def show_summary(self, summary: dict, message: str, csv_path: Path | None = None,
                     json_path: Path | None = None, saved: str = "") -> dict:
        """A run's summary (``TrafficResult.summary()``, or one saved in the history)."""
        from vis.traffic import group_table, prompt_table, traffic_figure

        p = self.panel

        def download(path: Path | None) -> gr.DownloadButton:
            return gr.DownloadButton(value=str(path) if path else None,
                                     interactive=path is not None)

        return {p.status: status_html(message, "done", saved), p.plot: traffic_figure(summary),
                p.groups: group_table(summary), p.answer: str(summary.get("answer", "")),
                p.prompts: prompt_table(summary), p.csv: download(csv_path),
                p.json: download(json_path), p.records: {},
                p.pick: gr.Dropdown(choices=[], value=None)}


def done_line(summary: dict) -> str:
    """'done: 6 prompts in 2 groups; traffic-weighted speedup 1.32x (90 % CI 1.1-1.5); ...'"""
    ws, ci = summary.get("weighted_speedup"), summary.get("weighted_speedup_ci")
    ci_txt = f" (90 % CI {ci[0]:.2f}-{ci[1]:.2f})" if ci else ""
    open_ = [g["group"] for g in summary.get("groups", []) if g.get("verdict") == "undecided"]
    return (f"done: {len(summary.get('prompts', []))} prompts in "
            f"{len(summary.get('groups', []))} groups; "
            + (f"traffic-weighted speedup {ws:.2f}x{ci_txt}; " if ws is not None else "")
            + (f"undecided: {', '.join(open_)} (Measure more); " if open_ else "")
            + f"{summary.get('gaining_share', 0):.0%} of output tokens in groups that gain")
