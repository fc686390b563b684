
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
