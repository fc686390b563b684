"""The lesson's style and step-through script, written inline by vis/lesson.py; the
file's Content-Security-Policy allows this script by its hash only (``script_hash``).

One step is current everywhere at once: its section, its tokens and its timeline bar
carry ``aria-current="step"``; later tokens are dimmed. Without JavaScript every
step's section is listed in order."""
from __future__ import annotations

import base64
import hashlib

LESSON_CSS = """
:root{color-scheme:light dark}
body{font:15px/1.5 ui-sans-serif,system-ui,sans-serif;max-width:1200px;margin:0 auto;
  padding:12px 20px 60px}
h1{font-size:1.4em;margin:.3em 0}h2{font-size:1.15em;margin:1.4em 0 .4em;
  border-bottom:1px solid #8884}
h3{font-size:1em;margin:.2em 0}
table{border-collapse:collapse}th,td{padding:2px 8px;text-align:left;vertical-align:top;
  border-bottom:1px solid #8883}
.lesson-meta{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));
  gap:0 24px;margin:0;font-size:14px}
.lesson-meta div{display:grid;grid-template-columns:9.5em 1fr;border-bottom:1px solid #8883}
.lesson-meta dt{font-weight:600}.lesson-meta dd{margin:0}
.lesson-prompt{white-space:pre-wrap;overflow-wrap:anywhere;font-family:ui-monospace,Menlo,
  Consolas,monospace;font-size:13px;opacity:.75;max-height:12em;overflow:auto;
  border-left:3px solid #E69F00;padding-left:8px}
.lesson-pair{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:20px}
.lesson-scroll{max-height:62vh;overflow:auto}
.lesson-right .lesson-step{margin-top:0}
@media (max-width:800px){.lesson-pair{grid-template-columns:1fr}}
.lesson-baseline .base-text{white-space:pre-wrap;overflow-wrap:anywhere;
  font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}
.lesson-baseline mark{background:rgba(213,94,0,.18);color:inherit}
#lesson-controls{position:sticky;top:0;z-index:2;display:flex;gap:.6em;align-items:center;
  flex-wrap:wrap;padding:6px 0;margin-top:8px;background:Canvas;border-bottom:1px solid #8884}
#lesson-controls[hidden]{display:none}
#lesson-controls button{padding:4px 14px;border-radius:6px;border:1px solid #8888;
  background:rgba(0,114,178,.12);color:inherit;cursor:pointer;font-weight:600}
#lesson-controls button[aria-pressed=true]{background:rgba(213,94,0,.18)}
.lesson-step{border:1px solid #8884;border-radius:8px;padding:8px 12px;margin:10px 0}
.lesson-step[aria-current=step]{border:2px solid #0072B2}
.js .lesson-step:not([aria-current=step]){display:none}
.js .nojs{display:none}
.lesson-note{border-left:4px solid #CC79A7;background:rgba(204,121,167,.12);
  padding:4px 10px;margin:6px 0;white-space:pre-wrap}
.lesson-drafts{padding-left:1.6em;font-size:14px}
.lesson-draft{margin:.2em 0 .6em}
.lesson-drafts .speclens-tokens{font-size:13px}
.lesson-drafts .fate-accepted{color:#009E73}
.lesson-drafts .fate-rejected{color:#D55E00}
.lesson-drafts .fate-unused{opacity:.7}
.top5{margin:.2em 0 0;padding:0;list-style:none;font-size:12px}
.top5 li{display:grid;grid-template-columns:9em 5em 3.5em auto;gap:.4em;align-items:center}
.top5 code{white-space:pre;overflow:hidden;text-overflow:ellipsis}
.top5 meter{width:5em;height:.8em}
.top5 [data-role~=chosen] code{text-decoration:underline #0072B2 3px}
.top5 [data-role~=drafted-dropped] code{text-decoration:line-through #D55E00 2px}
.top5 [data-role~=drafted-kept] code{background:rgba(0,158,115,.30)}
.speclens-tokens .tok[aria-current=step]{outline:2px solid #0072B2;outline-offset:1px}
.js #lesson-tokens .tok-future{opacity:.25}
.lesson-tl svg{width:100%;height:auto}
.lesson-tl figcaption{font-size:12px}.tl-legend{margin:.2em 0}
.tl-legend .sw{margin-right:1em;white-space:nowrap}
.lesson-parts{font-size:13px;opacity:.85}
footer{margin-top:2em;font-size:12px;opacity:.7}
"""

LESSON_JS = r"""
(() => {
  'use strict';
  const doc = document;
  doc.documentElement.classList.add('js');
  const sections = Array.from(doc.querySelectorAll('section.lesson-step'));
  const controls = doc.getElementById('lesson-controls');
  if (!sections.length || !controls) return;
  controls.hidden = false;
  const numbers = sections.map((s) => parseInt(s.dataset.step, 10));
  const label = doc.getElementById('lesson-pos');
  const play = doc.getElementById('lesson-play');
  const band = doc.getElementById('tl-band');
  const tokens = Array.from(doc.querySelectorAll('#lesson-tokens [data-step]'));
  const bars = Array.from(doc.querySelectorAll('#lesson-timeline [data-step]'));
  let pos = -1, timer = null;
  // The pass showing engine step n: that step, or the next one that emits tokens.
  const passOf = (n) => {
    const i = numbers.findIndex((m) => m >= n);
    return i < 0 ? numbers.length - 1 : i;
  };
  const show = (p) => {
    p = Math.max(0, Math.min(sections.length - 1, p));
    if (p === pos) return;
    pos = p;
    const n = numbers[p];
    doc.querySelectorAll('[aria-current="step"]').forEach((e) => e.removeAttribute('aria-current'));
    sections[p].setAttribute('aria-current', 'step');
    for (const t of tokens) {
      const m = parseInt(t.dataset.step, 10);
      if (m === n) t.setAttribute('aria-current', 'step');
      t.classList.toggle('tok-future', m > n);
    }
    for (const b of bars) {
      if (parseInt(b.dataset.step, 10) !== n) continue;
      b.setAttribute('aria-current', 'step');
      if (band) {
        const x = parseFloat(b.getAttribute('x')), w = parseFloat(b.getAttribute('width'));
        band.setAttribute('x', (x - 1).toFixed(2));
        band.setAttribute('width', (Math.max(w, 1) + 2).toFixed(2));
      }
    }
    const first = tokens.find((t) => t.getAttribute('aria-current') === 'step');
    const box = doc.getElementById('lesson-tokens');
    if (first && box) {  // keep the step's tokens in sight, scrolling the box only
      const r = first.getBoundingClientRect(), b = box.getBoundingClientRect();
      if (r.top < b.top || r.bottom > b.bottom) box.scrollTop += r.top - b.top - b.height / 3;
    }
    if (label) label.textContent = 'Pass ' + (p + 1) + ' of ' + sections.length
      + ' \u00b7 engine step ' + n;
    try { history.replaceState(null, '', '#step=' + n); } catch (e) { /* file:// in some browsers */ }
  };
  const setPlaying = (on) => {
    if (timer) { clearInterval(timer); timer = null; }
    play.setAttribute('aria-pressed', on ? 'true' : 'false');
    play.textContent = on ? '\u23f8 Pause' : '\u25b6 Play';
    if (!on) return;
    if (pos >= sections.length - 1) show(0);
    timer = setInterval(() => {
      if (pos >= sections.length - 1) { setPlaying(false); return; }
      show(pos + 1);
    }, 1200);
  };
  doc.getElementById('lesson-prev').addEventListener('click', () => show(pos - 1));
  doc.getElementById('lesson-next').addEventListener('click', () => show(pos + 1));
  play.addEventListener('click', () => setPlaying(!timer));
  doc.addEventListener('click', (ev) => {
    const el = ev.target.closest
      && ev.target.closest('#lesson-tokens [data-step], #lesson-timeline [data-step]');
    if (el) show(passOf(parseInt(el.dataset.step, 10)));
  });
  doc.addEventListener('keydown', (ev) => {
    if (ev.altKey || ev.ctrlKey || ev.metaKey) return;
    if (ev.target.closest && ev.target.closest('input, textarea, select, [contenteditable]')) return;
    const to = {ArrowRight: pos + 1, ArrowLeft: pos - 1, Home: 0, End: sections.length - 1}[ev.key];
    if (to === undefined) return;
    ev.preventDefault();
    show(to);
  });
  const m = location.hash.match(/step=(\d+)/);  // a link to a step opens there
  show(m ? passOf(parseInt(m[1], 10)) : 0);
})();
"""


def script_hash(script: str) -> str:
    """The CSP source that allows exactly this inline script: 'sha256-<base64>'.

        >>> script_hash("")
        "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
    """
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"
