"""The page's teaching layer: one step everywhere, playback, and the step in the URL.

The step-through's step is the page's: the timeline marks its bar, the token view
outlines its tokens, a click on either jumps there, and ``#step=12`` (the engine
step) follows it. ``PAGE_JS`` does this in the browser, driving the existing
buttons and a hidden jump box, the one server round trip added.
"""
from __future__ import annotations

import dataclasses
import re

import gradio as gr

from space.ui import views
from vis import timeline_figure

EXPLAIN_INFO = ("after the timed runs, score each verified draft with the target (its "
                "probability, top 5, p/q): one extra prefill, never timed")
STEP_JUMP = re.compile(r"^\s*(\d{1,9})(?::\d*)?\s*$")  # "12" or "12:<nonce>" from the page

PLAY_HTML = """
<div class="speclens-play" id="speclens-play-controls">
<style>
.speclens-play{display:flex;gap:.8em;align-items:center;flex-wrap:wrap}
.speclens-play button{padding:4px 14px;border-radius:6px;border:1px solid #8888;
  background:rgba(0,114,178,.12);cursor:pointer;font-weight:600}
.speclens-play button[aria-pressed=true]{background:rgba(213,94,0,.18)}
.speclens-play select{padding:2px 4px;border-radius:4px}
.speclens-why{margin:.3em 0 .5em}
</style>
<button id="speclens-play" type="button" aria-pressed="false">\u25b6 Play</button>
<label>speed <select id="speclens-speed" aria-label="seconds per step">
<option value="2000">slow (2 s a step)</option>
<option value="1000" selected>1 s a step</option>
<option value="400">fast (0.4 s a step)</option></select></label>
<small>\u2190 \u2192 keys step \u00b7 click a token or a timeline bar to jump there \u00b7
the address bar keeps the step (#step=N)</small>
</div>
"""

# Everything hangs off window.speclensTeach, so a second call (a reconnect) binds nothing twice.
PAGE_JS = r"""
() => {
  const T = window.speclensTeach = window.speclensTeach || {};
  if (T.ready) return;
  T.ready = true;
  const $ = (sel) => document.querySelector(sel);
  const fragmentStep = () => {
    const m = location.hash.match(/step=(\d+)/);
    return m ? parseInt(m[1], 10) : null;
  };
  T.pending = fragmentStep();
  T.title = () => $('#step-title .speclens-step');
  T.shown = () => { const t = T.title(); return t ? parseInt(t.dataset.step, 10) : null; };
  // The step-through's tab may render only once opened: wait for its jump box.
  T.jump = (step, tries = 0) => {
    const box = $('#step-jump textarea, #step-jump input');
    if (!box) {
      if (tries < 50) setTimeout(() => T.jump(step, tries + 1), 100);
      return;
    }
    box.value = step + ':' + Date.now();
    box.dispatchEvent(new Event('input', {bubbles: true}));
  };
  T.openStepper = () => {
    for (const tab of document.querySelectorAll('button[role=tab]')) {
      if (tab.textContent.trim().startsWith('Step through')
          && tab.getAttribute('aria-selected') !== 'true') tab.click();
    }
    const t = $('#step-title');
    if (t) t.scrollIntoView({block: 'nearest', behavior: 'smooth'});
  };
  T.go = (step) => { T.openStepper(); T.jump(step); };
  // one step everywhere: URL fragment, tokens outlined, playback state
  T.onStep = () => {
    // A #step=N link: once a record is shown (a replay or a finished run), go there.
    if (T.pending !== null && $('#status [data-kind=done]') && $('#tokens [data-step]')) {
      const want = T.pending;
      T.pending = null;
      if (want !== T.shown()) { T.go(want); return; }
    }
    const n = T.shown();
    if (n === null || Number.isNaN(n)) return;
    if (T.last !== n) {
      T.last = n;
      history.replaceState(null, '', '#step=' + n);
      T.awaiting = false;
    }
    document.querySelectorAll('#tokens .tok-current').forEach((e) => {
      if (parseInt(e.dataset.step, 10) !== n) e.classList.remove('tok-current');
    });
    document.querySelectorAll('#tokens [data-step="' + n + '"]')
      .forEach((e) => e.classList.add('tok-current'));
  };
  T.bindTimeline = () => {
    const gd = $('#timeline .js-plotly-plot');
    if (!gd || !gd.on || gd.dataset.speclensBound) return;
    gd.dataset.speclensBound = '1';
    gd.on('plotly_click', (ev) => {
      const pt = ev && ev.points && ev.points[0];
      if (pt && pt.y === 'speculative' && pt.customdata) T.go(pt.customdata[0]);
    });
  };
  // playback
  T.atEnd = () => {
    const t = T.title();
    return !t || parseInt(t.dataset.pass, 10) >= parseInt(t.dataset.count, 10);
  };
  T.setPlaying = (on) => {
    const b = $('#speclens-play');
    if (T.timer) { clearInterval(T.timer); T.timer = null; }
    if (b) { b.setAttribute('aria-pressed', on ? 'true' : 'false');
             b.textContent = on ? '\u23f8 Pause' : '\u25b6 Play'; }
    if (!on) return;
    const sel = $('#speclens-speed');
    const ms = Math.max(200, parseInt(sel ? sel.value : '1000', 10) || 1000);
    T.awaiting = false;
    T.timer = setInterval(() => {
      if (T.awaiting) return;              // the last step has not come back yet
      if (T.atEnd()) { T.setPlaying(false); return; }
      const next = $('#step-next');
      if (next) { T.awaiting = true; next.click(); }
    }, ms);
  };
  document.addEventListener('click', (ev) => {
    if (ev.target.closest('#speclens-play')) { T.setPlaying(!T.timer); return; }
    const tok = ev.target.closest('#tokens [data-step]');
    if (tok) T.go(parseInt(tok.dataset.step, 10));
  });
  document.addEventListener('change', (ev) => {
    if (ev.target.id === 'speclens-speed' && T.timer) T.setPlaying(true);
  });
  document.addEventListener('keydown', (ev) => {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    if (ev.target.closest && ev.target.closest('input, textarea, select, [contenteditable]')) return;
    const id = ev.key === 'ArrowRight' ? '#step-next' : ev.key === 'ArrowLeft' ? '#step-prev' : null;
    const b = id && $(id);
    if (!b || !T.title()) return;
    ev.preventDefault();
    b.click();
  });
  window.addEventListener('hashchange', () => {
    const n = fragmentStep();
    if (n !== null && n !== T.shown()) T.go(n);
  });
  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; T.onStep(); T.bindTimeline(); });
  }).observe(document.body, {subtree: true, childList: true, attributes: true,
                             attributeFilter: ['data-step']});
}
"""


@dataclasses.dataclass
class Playback:
    controls: gr.HTML
    jump: gr.Textbox


def build_playback() -> Playback:
    """Play / Pause and speed (driven by PAGE_JS), and the hidden jump box."""
    controls = gr.HTML(PLAY_HTML, label="Playback", elem_id="step-playback")
    jump = gr.Textbox("", visible="hidden", label="Jump to engine step", elem_id="step-jump")
    return Playback(controls, jump)


def build_explain_toggle() -> gr.Checkbox:
    return gr.Checkbox(True, label="Explain each verification", info=EXPLAIN_INFO,
                       elem_id="explain")


def parse_jump(value) -> int | None:
    """The engine step the page asked for: '12' or '12:<nonce>'; None for anything else."""
    m = STEP_JUMP.match(str(value or ""))
    return int(m.group(1)) if m else None


class TeachingHandlers:
    def __init__(self, handlers) -> None:
        self.handlers = handlers  # space.ui.handlers.Handlers: its ``step`` draws the stepper

    def jump(self, record: views.Record | None, value) -> dict:
        """The step-through at the engine step a click or the URL asked for."""
        step = parse_jump(value)
        position = views.position_of_step(record, step) if step is not None else None
        if position is None:
            return {}
        return self.handlers.step(record, position + 1)

    @staticmethod
    def timeline(record: views.Record | None, value, anatomy: bool = False):
        """The timeline with the step-through's step marked (``anatomy``: each step
        split into its timed parts)."""
        if record is None:
            return gr.skip()
        run, baseline = views.runs(record)
        return timeline_figure(run, baseline, views.shown_step(record, value),
                               anatomy=bool(anatomy))


def wire(ui, handlers, playback: Playback) -> None:
    t, s = TeachingHandlers(handlers), ui.stepper
    quick = dict(concurrency_limit=None, show_progress="hidden", api_visibility="undocumented")
    playback.jump.change(t.jump, [ui.state, playback.jump], s.outputs(), **quick)
    shown = [ui.state, s.slider, ui.anatomy]
    s.slider.change(t.timeline, shown, ui.timeline, **quick)
    ui.anatomy.change(t.timeline, shown, ui.timeline, **quick)
