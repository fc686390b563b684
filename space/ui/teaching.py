"""The page's teaching layer: one step everywhere (timeline, tokens, ``#step=12`` in the
URL) and playback. ``PAGE_JS`` (assets/teaching.js) does it in the browser, driving the
stepper's buttons and a hidden jump box, the one server round trip added."""
from __future__ import annotations

import re

import gradio as gr

from space.ui import views
from space.ui.status import QUICK, asset
from vis.timeline import timeline_figure

EXPLAIN_INFO = ("after the timed runs, score each verified draft with the target (its "
                "probability, top 5, p/q): one extra prefill, never timed")
STEP_JUMP = re.compile(r"^\s*(\d{1,9})(?::\d*)?\s*$")  # "12" or "12:<nonce>" from the page

PLAY_HTML = asset("playback.html")
# Everything hangs off window.speclensTeach, so a second call (a reconnect) binds nothing twice.
PAGE_JS = asset("teaching.js")


def build_playback() -> gr.Textbox:
    """Play / Pause and speed, and the hidden jump box; only PAGE_JS drives the
    buttons, so the jump box is all the server needs."""
    gr.HTML(PLAY_HTML, label="Playback", elem_id="step-playback")
    return gr.Textbox("", visible="hidden", label="Jump to engine step", elem_id="step-jump")


def wire(ui, handlers, jump_box: gr.Textbox) -> None:
    """``handlers``: space.ui.handlers.Handlers, whose ``step`` draws the stepper;
    ``jump_box``: ``build_playback``'s."""
    s = ui.stepper

    def jump(record: views.Record | None, value) -> dict:
        """The step-through at the engine step a click or the URL asked for."""
        m = STEP_JUMP.match(str(value or ""))
        position = views.position_of_step(record, int(m.group(1))) if m else None
        return {} if position is None else handlers.step(record, position + 1)

    def timeline(record: views.Record | None, value, anatomy: bool = False):
        """The timeline with the step-through's step marked (``anatomy``: each step
        split into its timed parts)."""
        if record is None:
            return gr.skip()
        run, baseline = views.runs(record)
        return timeline_figure(run, baseline, views.shown_step(record, value),
                               anatomy=bool(anatomy))

    jump_box.change(jump, [ui.state, jump_box], s.outputs(), **QUICK)
    shown = [ui.state, s.slider, ui.anatomy]
    s.slider.change(timeline, shown, ui.timeline, **QUICK)
    ui.anatomy.change(timeline, shown, ui.timeline, **QUICK)
