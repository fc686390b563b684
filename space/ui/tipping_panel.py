"""The tipping point on the page: the cached curves (Sweep tab), a "measure" button,
a small curve beside the checklist, and the k x concurrency sweep's deployable config."""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import gradio as gr

from space.engine.models import ModelError
from space.judge import curves, theory
from space.records.config import ConfigError
from space.records.run import SERVER
from space.records.trace import CompareRecord, RunTrace
from space.runs import curve_cache, machine_inputs
from space.runs.source import Source
from space.ui import datadir, inputs
from space.ui.job_status import JobHandlers, failure_shown
from space.ui.links import job_for
from space.ui.status import asset, saved_html, status_html

log = logging.getLogger(__name__)

INTRO = asset("tipping_intro.md")
MINI_NOTE = ("<small>This machine's tipping curve for the pair (points measured with forced, "
             "synthetic acceptance; see the Sweep tab). The vertical line is this run's "
             "acceptance.</small>")
MINI_NOTE_SERVERS = ("<small>A run through servers has no tipping curve here: the servers' "
                     "machine is not this one (see the Sweep tab).</small>")
NO_CURVE = "no curve measured yet: press Measure, or run `python -m space tipping`"


@dataclass
class TippingPanel:
    curve: gr.Dropdown
    axis: gr.Radio
    measure: gr.Button
    status: gr.HTML
    plot: gr.Plot
    csv: gr.DownloadButton
    anatomy: gr.HTML  # the step anatomy of the curve's runs (vis.tipping.anatomy_html)

    def outputs(self) -> list:
        return [self.curve, self.status, self.plot, self.csv, self.anatomy]


def curve_choices() -> list[tuple[str, str]]:
    """(label, cache file name) of every cached curve, newest first."""
    return [(f"{c.label} ({'measured' if c.kind == curves.MEASURED else 'derived'}, "
             f"{c.date[:10]})", curves.cache_name(c)) for c in curve_cache.all_curves()]


def build_tipping_panel(source: Source) -> TippingPanel:
    """A ``source`` that cannot force acceptance (running servers): Measure says why."""
    gr.Markdown(INTRO)
    if not source.can.forced_acceptance:
        gr.Markdown(source.refusal("forced_acceptance"), elem_id="tipping-servers-note")
    choices = curve_choices()
    with gr.Row():
        curve = gr.Dropdown(choices, value=choices[0][1] if choices else None,
                            label="Cached curves", elem_id="tipping-curve", scale=3)
        axis = gr.Radio([("mean acceptance length", "length"), ("acceptance rate", "rate")],
                        value="length", label="x axis", elem_id="tipping-axis", scale=2)
        measure_ = gr.Button("Measure this pair's curve", elem_id="tipping-measure", scale=1)
    status = gr.HTML("", label="Tipping status", elem_id="tipping-status")
    plot = gr.Plot(label="Speedup against acceptance", elem_id="tipping-plot")
    csv = gr.DownloadButton("Download curve (CSV)", interactive=False, elem_id="tipping-csv")
    anatomy = gr.HTML("", elem_id="tipping-anatomy")
    return TippingPanel(curve, axis, measure_, status, plot, csv, anatomy)


class TippingHandlers(JobHandlers):
    panel: TippingPanel

    def show(self, name: str | None, axis: str = "length", saved: str = "") -> dict:
        """Draw a cached curve; ``saved``: the history link of a curve just measured."""
        from vis.tipping import anatomy_html, tipping_figure

        p = self.panel
        curve = curve_cache.load(curve_cache.curves_dir() / Path(str(name or "")).name) if name else None
        if curve is None:
            return {p.status: status_html(NO_CURVE), p.plot: None,
                    p.csv: gr.DownloadButton(interactive=False), p.anatomy: ""}
        csv_path = datadir.export_folder("speclens-tipping-") / "tipping-curve.csv"
        curves.to_csv(curve, csv_path)
        return {p.status: status_html(_summary(curve), "done", saved),
                p.plot: tipping_figure(curve, axis if axis in ("length", "rate") else "length"),
                p.csv: gr.DownloadButton(value=str(csv_path), interactive=True),
                p.anatomy: anatomy_html(curve)}

    def load(self, axis: str = "length") -> dict:
        choices = curve_choices()
        name = choices[0][1] if choices else None
        return {self.panel.curve: gr.Dropdown(choices=choices, value=name),
                **self.show(name, axis)}

    def measure(self, method, draft, k, pair_id=None, axis="length",
                progress=gr.Progress(),  # noqa: B008 (Gradio injects it)
                request: gr.Request | None = None) -> dict:
        """Measure (or derive) the chosen pair's curve, cache it, draw it; through
        running servers, one sentence saying why not."""
        p = self.panel
        if not self.source.can.forced_acceptance:  # nothing is built
            return {p.status: status_html(self.source.refusal("forced_acceptance"), "info")}
        from space.runs import tipping

        job = job_for(self.publisher, request)
        try:
            spec = inputs.engine_spec(self.base_spec, method, draft, k, pair_id,
                                      offer=self.offer)
            curve, path = tipping.build_curve(spec, pair_id=pair_id or None, source=self.source,
                                              progress=lambda f, m: progress(f, desc=m),
                                              job=job)
        except (ConfigError, ModelError) as exc:
            return failure_shown(p.status, str(exc))
        except Exception as exc:  # anything else: log it, say it briefly, stay up
            log.exception("tipping measurement failed")
            message = f"the measurement failed ({type(exc).__name__}); details are in the server log"
            return {p.status: status_html(message, "error")}
        return {p.curve: gr.Dropdown(choices=curve_choices(), value=path.name),
                **self.show(path.name, axis, saved_html(job.replies.get("history")))}


def _summary(curve: curves.TippingCurve) -> str:
    parts = []
    for c in curve.concurrencies:
        tau, source = curve.break_even_length(c)
        if tau is not None:
            rate = theory.acceptance_rate_from_length(tau, curve.k)
            parts.append(f"concurrency {c}: break-even at {tau:.2f} tokens per step "
                         f"(acceptance rate {rate:.0%}, {source})")
    kind = "measured with forced acceptance" if curve.kind == curves.MEASURED else curve.kind
    return f"{curve.label}, {kind}, {curve.date[:10]}: " + ("; ".join(parts) or "no break-even")


def mini_figure(record: CompareRecord | RunTrace | None):
    """The small curve beside the checklist, with the run's acceptance marked; None
    when this machine has no curve cached for the run's pair."""
    from vis.tipping import tipping_figure

    run = record.speculative if isinstance(record, CompareRecord) else record
    if run is None or run.config.source == SERVER:  # this machine's curve is not the server's
        return None
    curve = machine_inputs.curve_for(run.config)
    if curve is None:
        return None
    return tipping_figure(curve, "rate", workload_acceptance=run.acceptance_rate,
                          workload_concurrency=1, compact=True)
