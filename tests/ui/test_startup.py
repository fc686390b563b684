"""space/ui/startup.py: the page serves first; runs wait for the engines' build."""
from __future__ import annotations

import threading

from space.ui.startup import Startup


def status_html(message: str, kind: str = "info") -> str:
    return f"{kind}:{message}"


def test_a_run_waits_with_the_message_then_runs():
    release, building = threading.Event(), threading.Event()

    def build(progress):
        progress(0.4, "building the ngram engine")
        building.set()
        release.wait(5)

    startup = Startup()
    startup.start(build, page_first_s=60)  # no page loads: the submitted run starts it
    calls = []

    def run(prompt):
        calls.append(prompt)
        yield {"status": "running"}
        yield {"status": "done"}

    gated = startup.gate(run, "status", status_html)
    events = gated("hi")
    first = next(events)
    assert first["status"].startswith("working:waiting in the queue for the engines")
    assert building.wait(5)  # started by the waiting run, not after the 60 s
    assert "40%: building the ngram engine" in next(events)["status"]
    assert calls == []  # nothing runs before the engines are ready
    release.set()
    rest = list(events)
    assert calls == ["hi"] and rest[-2:] == [{"status": "running"}, {"status": "done"}]
    assert startup.done and startup.error is None and startup.banner_html() == ""


def test_a_plain_handler_is_gated_too_and_keeps_its_signature():
    import inspect

    startup = Startup()
    startup.mark_ready()

    def sweep(workload, variable, progress=None):
        return {"status": f"swept {workload} over {variable}"}

    gated = startup.gate(sweep, "status", status_html)
    assert list(inspect.signature(gated).parameters) == ["workload", "variable", "progress"]
    assert list(gated("code", "k")) == [{"status": "swept code over k"}]


def test_a_failed_build_leaves_the_page_up_and_says_why():
    ready = []
    startup = Startup(on_ready=lambda: ready.append(True))

    def build(progress):
        raise RuntimeError("no memory for the KV cache\nsecond line")

    startup.start(build, page_first_s=0).join(60)  # no page to wait for here
    assert startup.done and ready == []
    assert startup.error == "RuntimeError: no memory for the KV cache"
    banner = startup.banner_html()
    assert 'role="alert"' in banner and "no memory for the KV cache" in banner
    # A run is no longer held back: it builds the engines itself and shows its own error.
    assert list(startup.gate(lambda: {"status": "ran"}, "status", status_html)()) == \
        [{"status": "ran"}]


def test_banner_shows_progress_escaped():
    startup = Startup()
    startup.progress(0.25, "loading <model>")
    banner = startup.banner_html()
    assert 'data-progress="25"' in banner and "loading &lt;model&gt;" in banner
    assert "<model>" not in banner


def test_the_build_waits_for_the_first_page_then_starts():
    """The page first: the build (vLLM's import holds the GIL and the cores for
    seconds) starts when a page has loaded, or after the grace with no visitor."""
    started = threading.Event()
    startup = Startup()
    thread = startup.start(lambda progress: started.set(), page_first_s=60)
    assert not started.wait(0.3)  # no page yet
    startup.page_loaded()
    assert started.wait(5)
    thread.join(5)
    alone = threading.Event()
    Startup().start(lambda progress: alone.set(), page_first_s=0.1)
    assert alone.wait(5)  # nobody came: it built anyway
