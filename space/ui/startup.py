"""The page serves first, the engines build behind it, a banner showing the progress; a
job submitted meanwhile waits in its queue slot (``gate``). A failed build leaves the
page up: the banner says why, and the next run builds the engines itself."""
from __future__ import annotations

import functools
import html
import inspect
import logging
import threading
import time
from collections.abc import Callable

import gradio as gr

from space.common.progress import Progress
from space.ui.status import QUICK

log = logging.getLogger(__name__)

POLL_S = 0.5         # how often a waiting run looks at the build again
BANNER_TICK_S = 1.0  # the banner's refresh while the engines build
# The build waits for the first page to load, at most this long: importing vLLM
# holds the GIL and both cores for seconds, and a page loading meanwhile (~1.3 s on
# 2 cores) would answer late. A submitted run (``gate``) starts the build at once.
PAGE_FIRST_S = 5.0


class Startup:
    """The state of the start's engine build; thread-safe to read."""

    def __init__(self, on_ready: Callable[[], None] | None = None) -> None:
        self.started_s = time.monotonic()
        self.fraction = 0.0
        self.message = "starting"
        self.error: str | None = None
        self.ready_after_s: float | None = None
        self._done = threading.Event()
        self._page_seen = threading.Event()
        self._on_ready = on_ready

    @property
    def done(self) -> bool:
        """Built and warm, or failed (``error``)."""
        return self._done.is_set()

    def progress(self, fraction: float, message: str) -> None:
        """A ``Progress``: the banner and the console both show it."""
        self.fraction, self.message = fraction, message
        print(f"  [{fraction:4.0%}] {message}", flush=True)

    def start(self, build: Callable[[Progress], None],
              page_first_s: float = PAGE_FIRST_S) -> threading.Thread:
        """``build(progress)`` on a daemon thread, once the first page has loaded
        or ``page_first_s`` has passed."""
        def build_after_the_page() -> None:
            self._page_seen.wait(page_first_s)
            try:
                build(self.progress)
            except Exception as exc:  # the page stays up and says so
                log.exception("building the engines at start failed")
                self._finish(f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
                             if str(exc).strip() else type(exc).__name__)
                return
            self._finish(None)

        thread = threading.Thread(target=build_after_the_page, daemon=True,
                                  name="speclens-startup")
        thread.start()
        return thread

    def page_loaded(self) -> None:
        """A page loaded, or a run is waiting: the build may start."""
        self._page_seen.set()

    def mark_ready(self) -> None:
        """Nothing to build (tests, or engines built before the page)."""
        self._finish(None)

    def _finish(self, error: str | None) -> None:
        self.error = error
        self.ready_after_s = time.monotonic() - self.started_s
        self._done.set()
        if error is None:
            print(f"SpecLens: engines ready {self.ready_after_s:.1f} s after start", flush=True)
            if self._on_ready:
                self._on_ready()
        else:
            print(f"SpecLens: the engines could not be built at start ({error}); "
                  "the page stays up and the next run tries again", flush=True)

    def banner_html(self) -> str:
        """The page's banner: progress while building, a line on failure, nothing when ready."""
        if self.done and self.error is None:
            return ""
        if self.error is not None:
            return (f'<div class="speclens-startup speclens-startup-error" role="alert" '
                    f'data-kind="error">\u26a0 The engines could not be built at start: '
                    f"{html.escape(self.error)}. The next run tries again.</div>")
        pct = max(0, min(100, round(self.fraction * 100)))
        elapsed = time.monotonic() - self.started_s
        return (f'<div class="speclens-startup" data-kind="working" data-progress="{pct}">'
                f"\u25b8 Building and warming the engines ({pct}%, {elapsed:.0f} s): "
                f"{html.escape(self.message)}. You can write a prompt now; a run submitted "
                f'before they are ready waits for them.<progress max="100" value="{pct}">'
                "</progress></div>")

    def gate(self, fn: Callable, status: gr.components.Component, status_html: Callable):
        """``fn`` (a Gradio handler) held back, with a message in ``status``, until the
        engines are ready; ``functools.wraps`` keeps its signature for Gradio."""
        is_gen = inspect.isgeneratorfunction(fn)

        @functools.wraps(fn)
        def gated(*args, **kwargs):
            self.page_loaded()  # a run is waiting: nothing is gained by holding the build
            while not self.done:
                yield {status: status_html(
                    f"waiting in the queue for the engines to finish building "
                    f"({self.fraction:.0%}: {self.message}); this run starts by itself when "
                    "they are ready", "working")}
                self._done.wait(POLL_S)
            if is_gen:
                yield from fn(*args, **kwargs)
            else:
                yield fn(*args, **kwargs)

        return gated


def build_banner(demo: gr.Blocks, startup: Startup) -> None:
    """The banner, refreshed while the engines build and on every page load."""
    banner = gr.HTML(startup.banner_html(), elem_id="startup")
    timer = gr.Timer(BANNER_TICK_S, active=not startup.done)

    def tick():  # once built, the timer stops: a ready page polls nothing
        return startup.banner_html(), gr.Timer(active=not startup.done)

    def loaded():
        startup.page_loaded()
        return tick()

    timer.tick(tick, None, [banner, timer], **QUICK)
    demo.load(loaded, None, [banner, timer], **QUICK)  # a page opened later: today's state
