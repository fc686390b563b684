"""One builder per panel. Each lays out its components and returns them;
``space.ui.app.build_demo`` composes the builders and wires the events."""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from space.records.config import K_RANGE, EngineSpec
from space.records.methods import METHODS, names
from space.runs.offer import Offer
from space.ui.inputs import PairChoice, Sample
from space.ui.status import asset
from space.ui.views import NO_RECORD

HEADER = asset("header.md")

METHOD_INFO = ("ngram and draft_model run anywhere; suffix needs arctic-inference; "
               f"{', '.join(names(needs_gpu=True))} need trained heads and a GPU")
READY = ('<div class="speclens-status" data-kind="ready">Ready: pick a sample prompt or '
         "write your own, then press Run.</div>")
PAIR_INFO = ("the presets for this app's model whose draft this server offers; fills method, "
             "draft and k (and the pair's other vLLM keys, while its method stays); pairs "
             "marked GPU only or needs ... cannot run on this machine")
ENGINE_NOTE = ("Changing method, draft or k builds a new speculative engine on the next run "
               "(progress shows above); the most recently used ones are kept.")
SERVERS_NOTE = ("The servers run the method, draft and k their operator started them with: "
                "another choice here gets one line, not a new engine.")


@dataclass
class Controls:
    prompt: gr.Textbox
    sample: gr.Dropdown
    method: gr.Dropdown
    draft: gr.Dropdown
    k: gr.Slider
    temperature: gr.Slider
    top_p: gr.Slider
    max_tokens: gr.Slider
    seed: gr.Number
    repeats: gr.Slider
    run: gr.Button
    stop: gr.Button
    pair: gr.Dropdown
    pair_note: gr.HTML

    def run_inputs(self) -> list:
        """In the order of ``Handlers.run``'s parameters (and of the API)."""
        return [self.prompt, self.method, self.draft, self.k, self.temperature, self.top_p,
                self.max_tokens, self.seed, self.repeats, self.pair]


def build_controls(spec: EngineSpec, samples: list[Sample], max_tokens: int,
                   pairs: list[PairChoice], pair_id: str | None, offer: Offer,
                   vary_k: bool) -> Controls:
    """``vary_k``: the source runs the method, draft and k picked here (not servers')."""
    sample = gr.Dropdown([(s.label, i) for i, s in enumerate(samples)], value=0,
                         label="Sample prompts", info="from the workload presets")
    prompt = gr.Textbox(samples[0].text, lines=8, max_lines=20, label="Prompt",
                        elem_id="prompt")
    with gr.Row():
        run = gr.Button("Run: baseline vs speculative", variant="primary", elem_id="run")
        stop = gr.Button("Stop", variant="stop", elem_id="stop", scale=0)
    pair = gr.Dropdown([(p.label, p.id) for p in pairs], value=pair_id,
                       label="Model pair (presets)", info=PAIR_INFO, elem_id="pair")
    pair_note = gr.HTML("", label="Model pair note", elem_id="pair-note")
    with gr.Row():
        method = gr.Dropdown(list(METHODS), value=spec.method, label="Method",
                             info=METHOD_INFO, elem_id="method")
        k = gr.Slider(K_RANGE[0], K_RANGE[1], value=spec.k, step=1,
                      label="k (draft tokens per step)", elem_id="k")
    # The drafts the operator offers; typing another name only with --allow-any-model.
    draft = gr.Dropdown([("none", "")] + [(d, d) for d in offer.drafts],
                        value=spec.draft_model or "", label="Draft model",
                        info="for draft_model / eagle; the drafts this server offers"
                        + ("; or type a folder or owner/name" if offer.allow_any_model else ""),
                        allow_custom_value=offer.allow_any_model, elem_id="draft")
    gr.Markdown(f"<small>{ENGINE_NOTE if vary_k else SERVERS_NOTE}</small>")
    with gr.Row():
        temperature = gr.Slider(0.0, 2.0, value=samples[0].temperature, step=0.05,
                                label="Temperature")
        top_p = gr.Slider(0.05, 1.0, value=1.0, step=0.05, label="top_p")
    with gr.Row():
        max_tokens = gr.Slider(1, 1024, value=max_tokens, step=1, label="Max tokens")
        seed = gr.Number(0, precision=0, label="Seed")
    with gr.Accordion("Advanced", open=False):
        repeats = gr.Slider(1, 10, value=1, step=1, label="Measured runs per engine",
                            info="medians over repeats; more is steadier but slower")
    for number in (k, temperature, top_p, max_tokens, seed, repeats):
        refuse_wrong_types(number)
    return Controls(prompt, sample, method, draft, k, temperature, top_p, max_tokens, seed,
                    repeats, run, stop, pair, pair_note)


def refuse_wrong_types(component: gr.Slider | gr.Number) -> None:
    """One line for a value of the wrong type from an API client, where Gradio's own
    preprocess fails with an unnamed TypeError. Its range errors pass through."""
    original = component.preprocess
    label = component.label or "a number"

    def preprocess(payload):
        try:
            return original(payload)
        except gr.Error:
            raise  # Gradio's range check: already one line
        except (TypeError, ValueError, OverflowError):
            shown = repr(payload)
            shown = shown if len(shown) <= 40 else shown[:40] + "\u2026"
            raise gr.Error(f"{label} must be a number, got {shown}",
                           print_exception=False) from None

    component.preprocess = preprocess


@dataclass
class Results:
    status: gr.HTML
    tokens: gr.HTML
    compare: gr.HTML
    table: gr.Dataframe


def build_results() -> Results:
    # Never empty: Gradio draws the queue position and run timer inside it.
    status = gr.HTML(READY, label="Status", elem_id="status")
    gr.Markdown("### Tokens of the speculative run")
    tokens = gr.HTML(NO_RECORD, label="Tokens", elem_id="tokens")
    gr.Markdown("### Baseline vs speculative")
    compare = gr.HTML(NO_RECORD, label="Comparison", elem_id="compare")
    table = gr.Dataframe(headers=["metric", "baseline", "speculative", "ratio"],
                         label="Medians over the measured runs (ratio = speculative / "
                         "baseline)", interactive=False, elem_id="compare-table")
    return Results(status, tokens, compare, table)


@dataclass
class Acceptance:
    summary: gr.HTML
    per_position: gr.Plot
    histogram: gr.Plot
    draft_probs: gr.Plot  # the target's p of each verified draft (explained runs)


def build_acceptance() -> Acceptance:
    summary = gr.HTML(NO_RECORD, label="Acceptance", elem_id="acceptance")
    with gr.Row():
        per_position = gr.Plot(label="Acceptance by draft position", elem_id="per-position")
        histogram = gr.Plot(label="Accepted drafts per step", elem_id="histogram")
    draft_probs = gr.Plot(label="The target's probability of each verified draft",
                          elem_id="draft-probs")
    return Acceptance(summary, per_position, histogram, draft_probs)


@dataclass
class Stepper:
    title: gr.HTML
    slider: gr.Slider
    prev: gr.Button
    next: gr.Button
    context: gr.HTML
    drafts: gr.HTML
    emitted: gr.HTML

    def outputs(self) -> list:
        return [self.slider, self.title, self.context, self.drafts, self.emitted]


def build_stepper() -> Stepper:
    gr.Markdown("Walk through the run one engine step at a time: what the model had "
                "written so far, what the proposer drafted, what the target kept.")
    with gr.Row():
        prev = gr.Button("\u25c0 Previous", elem_id="step-prev", scale=0)
        slider = gr.Slider(1, 2, value=1, step=1, label="Steps that emit tokens",
                           elem_id="step-slider")
        next_ = gr.Button("Next \u25b6", elem_id="step-next", scale=0)
    title = gr.HTML(NO_RECORD, label="Step", elem_id="step-title")
    gr.Markdown("**Context so far** (end of the prompt dimmed, then the output)")
    context = gr.HTML("", label="Context so far", elem_id="step-context")
    gr.Markdown("**Drafts proposed** (accepted shaded, rejected struck through)")
    drafts = gr.HTML("", label="Drafts proposed", elem_id="step-drafts")
    gr.Markdown("**Emitted by this step**")
    emitted = gr.HTML("", label="Emitted", elem_id="step-emitted")
    return Stepper(title, slider, prev, next_, context, drafts, emitted)


@dataclass
class Memory:
    figure: gr.Plot
    summary: gr.HTML
    refresh: gr.Button


def build_memory() -> Memory:
    return Memory(refresh=gr.Button("Refresh", elem_id="memory-refresh", scale=0),
                  summary=gr.HTML("", label="Memory summary", elem_id="memory"),
                  figure=gr.Plot(label="Memory", elem_id="memory-figure"))


@dataclass
class Files:
    upload: gr.File
    trace_json: gr.DownloadButton
    steps_csv: gr.DownloadButton


def download_row(*buttons: tuple[str, str]) -> list[gr.DownloadButton]:
    """(label, elem_id) each: download buttons in a row, off until there is a file."""
    with gr.Row():
        return [gr.DownloadButton(label, interactive=False, elem_id=elem_id)
                for label, elem_id in buttons]


def build_files() -> Files:
    gr.Markdown("Open a trace saved from this page, or written by `python -m space trace "
                "--json` or `python -m space compare --json`: every view shows it, "
                "nothing runs.")
    upload = gr.File(label="Open a saved trace (JSON)", file_types=[".json"],
                     elem_id="replay-file")
    trace_json, steps_csv = download_row(("Download trace (JSON)", "download-json"),
                                         ("Download steps (CSV)", "download-csv"))
    gr.Markdown("<small>Each chart has a PNG download in its toolbar (camera icon).</small>")
    return Files(upload, trace_json, steps_csv)
