"""The Sweep tab: one workload across a range of one variable (``space.runs.sweep_plan``),
speedup and acceptance plotted against it, the table downloadable as CSV."""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import gradio as gr

from space.common import defaults
from space.engine.models import ModelError
from space.records.config import GRID, ConfigError, EngineSpec
from space.runs import presets
from space.runs.sweep_plan import SweepPlan
from space.server.client import ServerError
from space.ui import datadir, inputs
from space.ui.job_status import JobHandlers
from space.ui.links import job_for
from space.ui.status import asset, saved_html, status_html

# Short: every point runs every prompt of the workload on both engines.
DEFAULT_VALUES = {"k": "1,2,4", "concurrency": "1,2,4", "input_length": "128,512,1024",
                  "temperature": "0,0.5,1",
                  GRID: "1,2,4 x 1,2,4"}  # k values x concurrencies: a deployable schedule of k
INTRO = asset("sweep_intro.md")
SERVERS_NOTE = asset("sweep_servers_note.md")


@dataclass
class SweepPanel:
    workload: gr.Dropdown
    variable: gr.Radio
    values: gr.Textbox
    max_tokens: gr.Number
    repeats: gr.Number
    run: gr.Button
    stop: gr.Button
    status: gr.HTML
    plot: gr.Plot
    table: gr.Dataframe
    csv: gr.DownloadButton
    deploy: gr.Markdown  # k x concurrency: the deployable config

    def inputs(self) -> list:
        """In the order of ``SweepHandlers.sweep``'s first parameters (and of the API)."""
        return [self.workload, self.variable, self.values, self.max_tokens, self.repeats]

    def outputs(self) -> list:
        return [self.status, self.plot, self.table, self.csv, self.deploy]


def build_sweep_panel(workload_id: str | None = None, vary_k: bool = True) -> SweepPanel:
    """``vary_k`` false: the source fixes k (running servers); concurrency is swept."""
    gr.Markdown(INTRO)
    if not vary_k:
        gr.Markdown(SERVERS_NOTE, elem_id="sweep-servers-note")
    first = "k" if vary_k else "concurrency"
    workloads = presets.load_or_warn(presets.load_workloads, "sweep workloads", "offering none")
    choices = [(f"{w.title} ({w.id})", w.id) for w in workloads or []]
    ids = [v for _, v in choices]  # the asked workload, else code_editing, else the first
    value = next((w for w in (workload_id, "code_editing", *ids) if w in ids), None)
    with gr.Row():
        workload = gr.Dropdown(choices, value=value, label="Workload", elem_id="sweep-workload")
        variable = gr.Radio(list(DEFAULT_VALUES), value=first, label="Variable",
                            elem_id="sweep-variable")
    with gr.Row():
        values = gr.Textbox(DEFAULT_VALUES[first], label="Values (comma-separated)",
                            elem_id="sweep-values")
        max_tokens = gr.Number(defaults.PAGE_MAX_TOKENS, precision=0, minimum=1, maximum=1024,
                               label="Max tokens per request")
        repeats = gr.Number(1, precision=0, minimum=1, maximum=10,
                            label="Measured runs per engine and point")
    with gr.Row():
        run = gr.Button("Run sweep", variant="primary", elem_id="sweep-run")
        stop = gr.Button("Stop", variant="stop", elem_id="sweep-stop", scale=0)
    status = gr.HTML("", label="Sweep status", elem_id="sweep-status")
    plot = gr.Plot(label="Speedup and acceptance", elem_id="sweep-plot")
    table = gr.Dataframe(label="One row per point", interactive=False, elem_id="sweep-table")
    csv = gr.DownloadButton("Download table (CSV)", interactive=False, elem_id="sweep-csv")
    deploy = gr.Markdown("", elem_id="sweep-deploy")
    return SweepPanel(workload, variable, values, max_tokens, repeats, run, stop, status, plot,
                      table, csv, deploy)


def display_table(table, drop: tuple[str, ...] = ("variable",)):
    """The table as shown: floats to 3 places, NaN as empty (NaN is not JSON)."""
    shown = table.drop(columns=list(drop)).round(3).astype(object)
    return shown.where(shown.notna(), None)


class SweepHandlers(JobHandlers):
    panel: SweepPanel

    def values_for(self, variable: str) -> str:
        return DEFAULT_VALUES.get(variable, "")

    def sweep(self, workload_id, variable, values, max_tokens, repeats, method, draft, k,
              pair_id=None, progress=gr.Progress(),  # noqa: B008 (Gradio injects it)
              request: gr.Request | None = None) -> Iterator[dict]:
        """Run the sweep; Stop or a client that leaves closes this generator, and the
        sweep stops before its next engine step."""
        from space.runs import sweep_plan  # its runs import vLLM lazily

        page_job = job_for(self.publisher, request)  # who asked; who hears how it ends

        def body():
            spec, plan = self._plan(workload_id, variable, values, max_tokens, repeats, method,
                                    draft, k, pair_id)
            result = yield from self._follow(lambda _on_step, report, cancel: sweep_plan.run(
                spec, plan, progress=report, cancel=cancel, job=page_job, source=self.source),
                progress, "the sweep")
            return plan, result

        done = yield from self._guarded(
            body(), "the sweep", "sweep stopped; the remaining points were not run",
            (ConfigError, ModelError, presets.PresetError, ServerError))
        if done is not None:
            plan, result = done
            yield self._show(plan, result, saved_html(page_job.replies.get("history")))

    def _plan(self, workload_id, variable, values, max_tokens, repeats, method, draft, k,
              pair_id) -> tuple[EngineSpec, SweepPlan]:
        """The sweep settings checked, or ``ConfigError``; a source that fixes k keeps its own."""
        from space.runs import sweep_plan

        plan = sweep_plan.plan(str(workload_id or ""), str(variable), str(values or ""),
                               inputs.repeats(repeats),
                               inputs.whole_in(max_tokens, "max tokens", 1, 1024), source=self.source)
        if not self.source.can.vary_k:
            return self.base_spec, plan
        return inputs.speculative_spec(self.base_spec, method, draft, k, pair_id,
                                       offer=self.offer), plan

    def _show(self, plan: SweepPlan, result, saved: str = "") -> dict:
        """The finished sweep; ``saved``: its history link for the status line."""
        p, variable = self.panel, plan.variable
        if plan.is_grid:  # k x concurrency: best k per concurrency, the deployable config
            from vis.tipping import anatomy_markdown, grid_figure

            cfg = result.deploy
            best = ", ".join(f"{c.concurrency}: k={c.k}" for c in cfg.choices)
            done = f"done: k x concurrency sweep of {plan.workload.id}; best k per concurrency {best}"
            csv_path = datadir.export_folder("speclens-grid-") / "sweep-k-x-concurrency.csv"
            figure = grid_figure(result.table, cfg.choices,
                                 title=f"{plan.workload.title}: best k per concurrency")
            table = display_table(result.table, drop=())
            # the same step figures as the Checklist tab
            deploy = deploy_markdown(cfg) + anatomy_markdown(result.step_costs())
        else:
            from vis.sweep import sweep_figure

            cross = ("the speedup never crosses 1 here" if result.crossover is None
                     else f"speedup crosses 1 at {variable} = {result.crossover:.3g}")
            done = f"done: {len(plan.values)} points of {plan.workload.id}; {cross}"
            csv_path = datadir.export_folder("speclens-sweep-") / f"sweep-{variable}.csv"
            figure = sweep_figure(result, title=f"{plan.workload.title}: sweep over {variable}")
            table, deploy = display_table(result.table), ""
        result.to_csv(csv_path)
        return {p.status: status_html(done, "done", saved), p.plot: figure, p.table: table,
                p.csv: gr.DownloadButton(value=str(csv_path), interactive=True), p.deploy: deploy}


def deploy_markdown(cfg) -> str:
    """The deployable config as Markdown: best k per concurrency, and the command."""
    rows = "\n".join(f"| {c.concurrency} | {c.k} | {c.speedup:.2f}x |" for c in cfg.choices)
    out = ("#### Deployable config\n| concurrency | best k (0: off) | speedup |\n|---|---|---|\n"
           f"{rows}\n\n")
    if cfg.speculative_config is None:
        return out + "Speculation loses at every measured concurrency: serve without it.\n"
    return (out + f"```\n--speculative-config '{json.dumps(cfg.speculative_config)}'\n```\n"
            f"Full command (checked with vLLM's own schedule reader):\n```\n"
            f"{cfg.command}\n```\n")
