"""The page: ``build_demo`` composes the panels, registers the runs' observers and
wires the events; ``serve`` launches it, then builds the engines behind it."""
from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from pathlib import Path

import gradio as gr
from starlette.middleware import Middleware

from space.common import defaults
from space.common.ratelimit import LoginLimiter
from space.engine import hardware
from space.engine.hardware import on_gpu
from space.engine.models import ModelError
from space.observe.livestats import Activity, RunLog
from space.observe.prom import Metrics, mount_metrics
from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.records.history import History, HistoryError
from space.runs import offer as offers
from space.runs import runner
from space.runs.events import Publisher
from space.runs.flags import apply_memory_budget, open_history, spec_from_args
from space.runs.recorder import HistoryRecorder
from space.runs.repeats import WARMUP_TOKENS
from space.runs.source import Engines, Source, pick
from space.server.client import ServerError
from space.server.flags import pair_from_args
from space.ui import datadir, inputs, lesson_panel, panels, teaching, tipping_panel, views
from space.ui.auth import LoginTable
from space.ui.handlers import UI, Handlers
from space.ui.history_panel import HistoryHandlers, build_history_panel, wire_history
from space.ui.live_panel import LiveHandlers, build_live_panel, live_source, measuring, wire_live
from space.ui.login_guard import LoginGuard
from space.ui.startup import Startup, build_banner
from space.ui.status import NAMED, QUICK, asset, status_html
from space.ui.sweep_panel import SweepHandlers, build_sweep_panel
from space.ui.traffic_panel import TrafficHandlers, build_traffic_panel

DEFAULT_MAX_UPLOAD_MB = 20  # per uploaded file
# Gradio's sweep of its temporary files (every 10 min, those older than 3 h): the
# uploads of sessions that never ended (an API client without a heartbeat).
CACHE_SWEEP_S = (600, 3 * 3600)
# A long job's click: the page's one engine queue, one job at a time; its progress shown.
ENGINE_QUEUE = dict(concurrency_limit=1, concurrency_id="engine", show_progress="full")

CSS = asset("app.css")  # status boxes, banner
# System fonts: the default theme fetches web fonts, which an offline box waits on.
THEME = gr.themes.Default(font=["ui-sans-serif", "system-ui", "sans-serif"],
                          font_mono=["ui-monospace", "SFMono-Regular", "monospace"])


SERVERS_LINE = ("Runs go to two running vLLM servers that this page's operator named: their "
                "hardware and dtype are theirs, and a server does not report them.")


def build_demo(spec: EngineSpec, metrics: Metrics, samples: list[inputs.Sample] | None = None,
               max_tokens: int = defaults.MAX_TOKENS, pair_id: str | None = None,
               workload_id: str | None = None, compare: runner.CompareRunner | None = None,
               startup: Startup | None = None, history: History | None = None,
               logins_on: bool = False, offer: offers.Offer | None = None,
               traffic_file: str | None = None, traffic_private: bool = False,
               source: Source | None = None) -> gr.Blocks:
    """The page. ``source``: where its runs go (default: in-process engines);
    ``compare`` defaults to ``source.compare``. ``startup``: a banner for the
    engines' build, which runs submitted meanwhile wait for. ``history``: runs are
    saved, listed in a History tab and opened by ``?run=<id>``; ``logins_on`` lets
    owners delete theirs. ``traffic_file``: the Traffic tab's file without an
    upload; ``traffic_private``: traffic runs are saved without prompt text."""
    spec = hardware.resolve_spec(spec)  # the dtype the page says it runs in
    samples = samples or inputs.sample_prompts(on_gpu())
    offer = offer or offers.build(spec)
    pairs = inputs.pair_choices(on_gpu(), offer)
    source = source or Engines()
    compare = compare or source.compare
    with gr.Blocks(title="SpecLens") as demo:
        state = gr.State(None)
        gr.Markdown(panels.HEADER)
        # the dtype in use and why: bf16 on a CPU without bf16 units would change the answer
        gr.Markdown(hardware.explain(str(spec.dtype), spec.model).sentence if source.can.memory
                    else SERVERS_LINE, elem_id="dtype-line")
        if startup is not None:
            build_banner(demo, startup)
        with gr.Row():
            with gr.Column(scale=2, min_width=340):
                controls = panels.build_controls(spec, samples, max_tokens, pairs, pair_id,
                                                 offer, source.can.vary_k)
                explain = gr.Checkbox(True, label="Explain each verification",
                                      info=teaching.EXPLAIN_INFO, elem_id="explain")
            with gr.Column(scale=3):
                results = panels.build_results()
        gr.Markdown("### Timeline: one bar per engine step")
        timeline = gr.Plot(label="Timeline", elem_id="timeline", show_label=False)
        anatomy = gr.Checkbox(False, label="Step anatomy: split each step into forward, sampling "
                              "/ rejection, proposer, scheduling and other",
                              elem_id="timeline-anatomy")
        with gr.Tabs() as tabs:
            with gr.Tab("Acceptance"):
                acceptance = panels.build_acceptance()
            with gr.Tab("Step through"):
                jump_box = teaching.build_playback()
                stepper = panels.build_stepper()
                lesson = lesson_panel.build_lesson_panel()
            with gr.Tab("Checklist"):
                checklist = gr.HTML(views.NO_VERDICT, label="Checklist", elem_id="checklist")
                tipping_mini = gr.Plot(label="Tipping point on this machine",
                                       elem_id="tipping-mini")
                gr.Markdown(tipping_panel.MINI_NOTE if source.can.forced_acceptance
                            else tipping_panel.MINI_NOTE_SERVERS)
            with gr.Tab("Memory"):
                memory = panels.build_memory()
            with gr.Tab("Replay & export"):
                files = panels.build_files()
            with gr.Tab("Sweep"):
                sweep = build_sweep_panel(workload_id, source.can.vary_k)
                tipping = tipping_panel.build_tipping_panel(source)
            with gr.Tab("Traffic"):
                traffic = build_traffic_panel(traffic_file)
            if history is not None:
                with gr.Tab("History") as history_tab:
                    history_panel = build_history_panel(logins_on)
            with gr.Tab("Live"):
                live = build_live_panel()
        ui = UI(state, controls, results, timeline, acceptance, stepper, checklist, memory, files,
                tipping_mini, anatomy)
        # The page's publisher, heard by the metrics, the Live tab's log and the history (if any).
        events, runlog = Publisher(), RunLog()
        events.subscribe("metrics", metrics)
        events.subscribe("live", runlog)
        if history is not None:
            events.subscribe("history", HistoryRecorder(history, traffic_private))
        h = Handlers(ui, spec, metrics, samples, compare, offer, events)
        sh = SweepHandlers(sweep, spec, offer, events, source=source)
        th = tipping_panel.TippingHandlers(tipping, spec, offer, events, source=source)
        trh = TrafficHandlers(traffic, spec, offer, traffic_file, show_record=h.show,
                              publisher=events, source=source)
        activity = Activity()
        c = ui.controls
        chosen = [c.method, c.draft, c.k, c.pair]  # the speculative engine picked above

        def engine(button, fn, status, inputs, outputs, api_name, stop=None, shown=()) -> None:
            """A long job on the page's one engine queue: one at a time, since overlapping
            runs would corrupt each other's timings. Stop closes the job's generator, whose
            ``finally`` cancels the run; a closed generator writes nothing more, so the
            Stop click itself says so in ``status``."""
            job = button.click(_engine_job(fn, status, startup, activity), inputs, outputs,
                               api_name=api_name, show_progress_on=[status, *shown],
                               **ENGINE_QUEUE)
            if stop is not None:
                stop.click(lambda: status_html(STOPPED), None, status, cancels=[job], **QUICK)

        engine(c.run, h.run, ui.results.status, c.run_inputs() + [explain], ui.record_outputs(),
               "run", c.stop)
        _wire(demo, ui, h)
        teaching.wire(ui, h, jump_box)
        lesson_panel.wire(ui, lesson)
        engine(sweep.run, sh.sweep, sweep.status, sweep.inputs() + chosen, sweep.outputs(),
               "sweep", sweep.stop, [sweep.plot])
        sweep.variable.change(sh.values_for, sweep.variable, sweep.values, **QUICK)
        demo.load(th.load, tipping.axis, tipping.outputs(), **QUICK)
        for changed in (tipping.curve.input, tipping.axis.input):
            changed(th.show, [tipping.curve, tipping.axis], tipping.outputs()[1:], **QUICK)
        engine(tipping.measure, th.measure, tipping.status, chosen + [tipping.axis],
               tipping.outputs(), "tipping", shown=[tipping.plot])
        for button, fn, job_inputs, api_name in (
                (traffic.run, trh.run, traffic.inputs() + chosen, "traffic"),
                (traffic.more, trh.more, [traffic.last], "traffic_more")):
            engine(button, fn, traffic.status, job_inputs, traffic.outputs() + [traffic.last],
                   api_name, traffic.stop, [traffic.plot])
        # Opening a measured prompt redraws the views from its record; nothing runs.
        traffic.open.click(trh.open_prompt, [traffic.records, traffic.pick],
                           ui.record_outputs() + [traffic.status], **QUICK)
        wire_live(tabs, live, LiveHandlers(live, live_source(runlog, activity)))
        if history is not None:
            wire_history(demo, history_tab, history_panel, HistoryHandlers(history_panel, history),
                         h.show, ui.results.status, ui.record_outputs(), sweep, trh, tipping)
    return demo


def _engine_job(fn: Callable, status: gr.HTML, startup: Startup | None,
                activity: Activity) -> Callable:
    """``fn`` held back until the start's engines are built, and counted as a
    measured run while it goes (the Live tab holds back)."""
    if startup is not None:
        fn = startup.gate(fn, status, status_html)
    return measuring(fn, activity)


STOPPED = ("stopped: the run ends before its next engine step (or server chunk) and "
           "the engines are free for the next run")


def _wire(demo: gr.Blocks, ui: UI, h: Handlers) -> None:
    """The events of the run's panels that never wait for the engines."""
    c, s, m = ui.controls, ui.stepper, ui.memory
    # Replays never wait for the engines; bounded and one at a time, they take at
    # most one core's share from a measured run.
    ui.files.upload.upload(h.replay, ui.files.upload, ui.record_outputs(),
                           api_name="replay", concurrency_limit=1, concurrency_id="replay")
    c.sample.change(h.sample, c.sample, [c.prompt, c.temperature], **QUICK)
    c.pair.input(h.pair, c.pair, [c.method, c.draft, c.k, c.pair_note], api_name="pair", **NAMED)
    s.prev.click(functools.partial(h.step, delta=-1), [ui.state, s.slider], s.outputs(), **QUICK)
    s.next.click(functools.partial(h.step, delta=1), [ui.state, s.slider], s.outputs(), **QUICK)
    s.slider.release(h.step, [ui.state, s.slider], s.outputs(), **QUICK)
    # Memory never waits for a run (the last reading, with its age), so page loads don't.
    m.refresh.click(h.memory, None, [m.figure, m.summary], api_name="memory", **NAMED)
    demo.load(h.memory, None, [m.figure, m.summary], **QUICK)


def launch(demo: gr.Blocks, metrics: Metrics, host: str = "127.0.0.1", port: int = 7860,
           share: bool = False, auth: LoginTable | tuple[str, str] | None = None, *,
           limiter: LoginLimiter | None = None, max_upload_mb: int = DEFAULT_MAX_UPLOAD_MB):
    """Serve without blocking (demo.launch keeps --share working), add /metrics;
    returns (app, local_url, share_url). With logins, the page and /metrics ask for
    one, and wrong passwords are rate-limited by ``limiter``."""
    logins = LoginTable([auth]) if isinstance(auth, tuple) else auth
    guarded: dict = {}
    if logins is not None and len(logins):
        limiter = limiter or LoginLimiter()
        b = limiter.user  # Gradio's login page says nothing on a 429, so the page says it up front.
        message = (f"Wrong passwords are rate-limited: after {b.free_failures} for one name, logins "
                   f"for it pause for {b.base_lockout_s:g} s, doubling with each further try up to "
                   f"{b.max_lockout_s / 60:g} min. If the button does nothing, wait and try again.")
        # Through the app's constructor: a middleware added after the start is refused.
        guarded = dict(auth=logins.check, auth_message=message,
                       app_kwargs={"middleware": [Middleware(LoginGuard, limiter=limiter)]})
    else:
        logins = limiter = None
    demo.unload(_end_session)
    demo.delete_cache = CACHE_SWEEP_S
    demo.queue(default_concurrency_limit=1)
    app, local_url, share_url = demo.launch(
        server_name=host, server_port=port, share=share, max_file_size=max_upload_mb << 20,
        prevent_thread_lock=True, theme=THEME, css=CSS, js=teaching.PAGE_JS, **guarded)
    mount_metrics(app, metrics, logins=logins, limiter=limiter)  # in front of Gradio's "/" mount
    return app, local_url, share_url


def _end_session(request: gr.Request) -> None:
    """Gradio's unload (the page's heartbeat closed): the session's files go."""
    datadir.end_session(request.session_hash)


def serve(a: argparse.Namespace) -> int:
    """Check the flags, serve the page, then build and warm the engines behind it."""
    try:
        spec = spec_from_args(a)
        apply_memory_budget(a)
        if not spec.is_speculative:
            raise ConfigError("the app compares a speculative engine with the baseline: "
                              "choose a --method")
        samples = inputs.sample_prompts(on_gpu())
        workload_id = getattr(a, "workload", None)
        if workload_id:  # its first prompt first: the initial prompt of the page
            first = inputs.workload_sample(workload_id)
            samples = [first] + [s for s in samples if s.label != first.label]
        warmup = RequestSpec(samples[0].text, max_tokens=WARMUP_TOKENS)
        # Bad flags, a missing model, a server down: one line and exit 2, before the page.
        source = pick(pair_from_args(a, spec))
        for line in source.start(spec):  # the prompt is tokenized later, with the engines
            print(line, flush=True)
        offer = offers.build(spec, offers.split_names(getattr(a, "drafts", None)),
                             getattr(a, "allow_any_model", False),
                             getattr(a, "max_prompt_chars", offers.MAX_PROMPT_CHARS))
        history = open_history(a)
        traffic_file = _traffic_file(getattr(a, "traffic", None))
    except (ConfigError, ModelError, HistoryError, ServerError) as exc:
        print(f"error: {exc}", flush=True)
        return 2
    metrics = Metrics(model_name=spec.model)
    metrics.register_engine("speculative", spec.k)
    # engines built behind the served page; a source with nothing to build has no banner
    startup = Startup(on_ready=metrics.set_engines_ready) if source.can.memory else None
    logins = getattr(a, "logins", None)
    # Only with logins (``a.logins``, or --auth) has a run an owner.
    logins_on = bool(len(logins) if logins is not None else getattr(a, "auth", None))
    demo = build_demo(spec, metrics, samples, pair_id=getattr(a, "pair", None),
                      workload_id=workload_id, startup=startup, history=history,
                      logins_on=logins_on, offer=offer, traffic_file=traffic_file,
                      traffic_private=getattr(a, "traffic_private", False), source=source)
    _, local_url, share_url = launch(demo, metrics, a.host, a.port, a.share, logins,
                                     max_upload_mb=getattr(a, "max_upload_mb", DEFAULT_MAX_UPLOAD_MB))
    who = f"{len(logins)} login(s)" if logins else "no login"
    print(f"SpecLens is serving at {local_url} (Prometheus metrics at {local_url}metrics; {who})"
          + (f"; shared at {share_url}" if share_url else ""), flush=True)
    print(f"SpecLens: visitors may pick the drafts {', '.join(offer.drafts) or '(none)'}"
          + (" or type any folder or hub id (--allow-any-model)" if offer.allow_any_model
             else ""), flush=True)
    if startup is None:  # the servers' lines were printed by source.start
        print("SpecLens: runs go to the running vLLM servers above", flush=True)
    else:
        print(f"SpecLens: building the baseline and {spec.method} engines in the background; "
              f"{hardware.explain(str(spec.dtype), spec.model).sentence}", flush=True)
        startup.start(lambda progress: source.prepare(spec, warmup, progress))
    if a.share and not share_url:
        print("no share link could be created (see Gradio's message above); "
              "serving locally only", flush=True)
    try:
        demo.block_thread()
    finally:
        runner.POOL.close_all()
    return 0


def _traffic_file(path: str | None) -> str | None:
    """``--traffic FILE``, read at start: a bad file is exit 2, not a visitor's failure."""
    if not path:
        return None
    from space.runs.traffic_file import parse

    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read --traffic: {exc.strerror}: {path}") from None
    if not parse(data, Path(path).name).requests:
        raise ConfigError(f"--traffic {path}: no request could be read")
    return str(Path(path).resolve())
