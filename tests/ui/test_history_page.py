"""The History tab and the run links, served in-process with a fake engine:
runs are saved as they finish with the login name, listed newest first, put
side by side, and deleted only by their owner. No engine is built."""
from __future__ import annotations

import dataclasses
import socket

import pytest

from space.observe.prom import Metrics
from space.records.config import EngineSpec
from space.records.events import Origin, SweepFinished
from space.records.history import History
from space.records.run import RequestRecord
from space.records.trace import make_compare
from space.records.verdict import Checklist
from space.runs.events import Job, published
from space.runs.recorder import HistoryRecorder
from space.ui import inputs
from space.ui.links import opened_run
from tests.helpers.traces import ngram_run, short_baseline

AUTH = ("ada", "lovelace")


def fake_compare(spec, req, repeats, on_step, progress, warmup, cancel=None,
                 on_repeat=None, explain=False, job=None):
    """The hand-made comparison, with the prompt, model and a verdict of a real one,
    told to the page's observers as the real runner tells them."""
    req.validate()
    cmp = make_compare([short_baseline()], [ngram_run()])
    cmp.speculative.config = dataclasses.replace(cmp.speculative.config, model=spec.model)
    cmp.speculative.prompt = req.prompt
    cmp.speculative.request = cmp.baseline.request = RequestRecord.of(req)
    cmp.checklist = Checklist("worth-it")
    return published(job or Job(), spec, req, lambda: cmp)


def serve(history: History, auth) -> tuple[object, str]:
    from space.ui import app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo = app.build_demo(EngineSpec(), Metrics(), inputs.sample_prompts(),
                          compare=fake_compare, history=history, logins_on=auth is not None)
    _, url, _ = app.launch(demo, Metrics(), port=port, auth=auth)
    return demo, url


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> History:
    return History(tmp_path_factory.mktemp("data") / "history.sqlite3")


@pytest.fixture(scope="module")
def client(history):
    from gradio_client import Client

    demo, url = serve(history, AUTH)
    yield Client(url, auth=AUTH, verbose=False)
    demo.close()


@pytest.fixture(scope="module")
def anonymous(history):
    """The same history behind a page without logins."""
    from gradio_client import Client

    demo, url = serve(history, None)
    yield Client(url, verbose=False)
    demo.close()


def labels(client, endpoint: str) -> list[str]:
    api = client.view_api(return_format="dict", print_info=False)
    return [r["label"] for r in api["named_endpoints"][endpoint]["returns"]]


def run(client, prompt, temperature=0.0):
    out = client.predict(prompt, "ngram", "", 4, temperature, 1.0, 16, 0, 1, api_name="/run")
    return out[labels(client, "/run").index("Status")]


def test_a_finished_run_is_saved_with_its_owner_and_link(client, history):
    status = run(client, "Write a haiku.", temperature=0.5)
    assert 'data-kind="done"' in status
    (row,), total = history.runs(limit=1)
    assert f'href="?run={row.id}"' in status and f"saved as run #{row.id}" in status
    assert (row.user, row.kind, row.method, row.k, row.temperature) == \
        ("ada", "compare", "ngram", 4, 0.5)
    assert row.verdict and row.title == "Write a haiku."


def test_a_link_opens_the_run_saying_who_and_when(client, history):
    run(client, "Rename x to y.")
    (row,), _ = history.runs(limit=1)
    record, message = opened_run(history, str(row.id))
    assert message.startswith(f"run #{row.id}, run by ada on ")
    assert record.speculative.prompt == "Rename x to y."
    assert opened_run(history, "999999").startswith("there is no run #999999")
    assert "not a run number" in opened_run(history, "1;DROP")


def test_side_by_side_shows_both_runs(client, history):
    run(client, "First prompt.")
    run(client, "Second prompt.")
    rows, _ = history.runs(limit=2)
    b, a = rows
    table, note, page, *_dropdowns, run_a, run_b = client.predict(
        "any", "ngram", "any", 1, None, None, api_name="/history")
    assert (run_a, run_b) == (a.id, b.id)  # the two newest comparisons, older first
    assert table.index(f'data-run="{b.id}"') < table.index(f'data-run="{a.id}"')
    assert page == 1 and note.startswith("page 1 of 1")
    out = client.predict(a.id, b.id, api_name="/side_by_side")
    status, _timeline, table, verdict_a, verdict_b = out
    assert 'data-kind="done"' in status
    assert table["headers"] == ["metric", f"A: run #{a.id}", f"B: run #{b.id}"]
    assert [r[0] for r in table["data"]][:3] == ["method", "k", "speedup (TPOT)"]
    assert "speclens-checklist" in verdict_a and "speclens-checklist" in verdict_b
    out = client.predict(a.id, 999999, api_name="/side_by_side")
    assert 'data-kind="error"' in out[0] and "run B: there is no run #999999" in out[0]


def test_only_the_owner_deletes_and_nobody_without_logins(client, anonymous, history):
    from space.records.history import NewRun

    run(client, "Mine to delete.")
    (mine,), _ = history.runs(limit=1)
    bobs = history.save(NewRun("compare", "m", "ngram", 4, 0.0, None, 1.0, "b", "{}", "bob"))
    refused = client.predict(bobs, api_name="/delete_run")
    assert "is not one of ada&#x27;s runs" in refused and history.get(bobs) is not None
    refused = anonymous.predict(mine.id, api_name="/delete_run")
    assert "only with logins on" in refused and history.get(mine.id) is not None
    done = client.predict(mine.id, api_name="/delete_run")
    assert f"run #{mine.id} deleted" in done and history.get(mine.id) is None


def test_a_run_without_logins_has_no_owner(anonymous, history):
    run(anonymous, "Anonymous prompt.")
    (row,), _ = history.runs(limit=1)
    assert row.user is None and row.title == "Anonymous prompt."


def test_a_finished_sweep_is_saved(history):
    from space.runs import sweep
    from space.runs.workloads import PromptResult, WorkloadResult, summarize
    from space.ui.status import saved_html
    from tests.helpers.traces import timed_baseline, timed_run

    cmp = make_compare([timed_baseline()], [timed_run()])
    point = summarize(WorkloadResult("code_editing", cmp.speculative.config, 0.0, 32, 1, 1,
                                     [PromptResult("p", cmp)]))
    result = sweep.make_table("k", [2], [point])
    spec = EngineSpec(model="smol", method="ngram", k=4)
    recorder = HistoryRecorder(history)
    # the sweep's own runs are saved with it, not alone
    assert recorder(SweepFinished(result, "k", spec, Origin(part_of="sweep"))) is None
    saved = recorder(SweepFinished(result, "k", spec))
    (row,), _ = history.runs(limit=1)
    assert saved.run_id == row.id and f"saved as run #{row.id}" in saved_html(saved)
    assert row.kind == "sweep" and row.k is None and row.title.startswith("sweep over k (2)")
    record, message = opened_run(history, str(row.id))
    assert isinstance(record, str) and "run by a visitor (no logins)" in message


def test_closing_a_page_job_closes_the_run():
    """Stop (or a client that leaves) closes what Gradio calls (the handler held back
    until the engines are built, counted as measured); the run's own ``finally``,
    which stops the engines, must run too."""
    from space.observe.livestats import Activity
    from space.ui.app import _engine_job
    from space.ui.startup import Startup

    closed = []

    def run(prompt):
        try:
            yield {"status": "working"}
            yield {"status": "still working"}
        finally:
            closed.append(prompt)

    startup, activity = Startup(), Activity()
    startup.mark_ready()
    events = _engine_job(run, "status", startup, activity)("p")
    assert next(events) == {"status": "working"} and activity()
    events.close()
    assert closed == ["p"] and not activity()


def test_a_k_by_concurrency_grid_is_saved_and_opens_as_its_table(history):
    from space.ui.history_panel import sweep_views

    class Grid:
        def to_dict(self):
            return {"workload_id": "code_editing",
                    "table": [{"k": 2, "concurrency": 1, "speedup": 1.3}], "sweeps": []}

    saved = HistoryRecorder(history)(SweepFinished(Grid(), "k_x_concurrency",
                                                   EngineSpec(method="ngram", k=4),
                                                   Origin("ada")))
    (row,), _ = history.runs(limit=1)
    assert saved.run_id == row.id and row.user == "ada"
    assert row.title == "sweep over k x concurrency of code_editing" and row.k is None
    figure, table = sweep_views(history.get(row.id)[1])
    assert figure is None and list(table.columns) == ["k", "concurrency", "speedup"]
