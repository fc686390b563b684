
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
