"""The History tab: saved runs newest first, with filters and paging; two
comparisons side by side; with logins on, deleting one's own runs; and
``?run=<id>``, which opens a saved run on page load."""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass

import gradio as gr

from space.records.config import GRID
from space.records.history import Filters, History, HistoryError
from space.records.schema import TraceFormatError, load
from space.records.trace import CompareRecord
from space.ui.status import NAMED, QUICK, asset, status_html
from space.ui.sweep_panel import SweepPanel, display_table
from space.ui.tipping_panel import TippingPanel
from space.ui.traffic_panel import TrafficHandlers
from vis.checklist import checklist_html
from vis.history import history_table_html, side_by_side_table, side_by_side_timeline

PAGE_SIZE = 20
ANY = "any"
INTRO = asset("history_intro.md")


@dataclass
class HistoryPanel:
    model: gr.Dropdown
    method: gr.Dropdown
    verdict: gr.Dropdown
    refresh: gr.Button
    prev: gr.Button
    next: gr.Button
    page: gr.Number
    table: gr.HTML
    page_note: gr.Markdown
    run_a: gr.Number
    run_b: gr.Number
    side: gr.Button
    side_status: gr.HTML
    side_timeline: gr.Plot
    side_table: gr.Dataframe
    side_a: gr.HTML
    side_b: gr.HTML
    delete_id: gr.Number
    delete: gr.Button
    delete_status: gr.HTML

    def filters(self) -> list:
        """In the order of ``HistoryHandlers.list``'s parameters (and of the API)."""
        return [self.model, self.method, self.verdict, self.page, self.run_a, self.run_b]

    def list_outputs(self) -> list:
        return [self.table, self.page_note, self.page, self.model, self.method, self.verdict,
                self.run_a, self.run_b]


def build_history_panel(logins_on: bool) -> HistoryPanel:
    gr.Markdown(INTRO)
    with gr.Row():
        # Choices come from the stored runs; any value is safe (it matches nothing).
        free = dict(value=ANY, allow_custom_value=True)
        model, method, verdict = (gr.Dropdown([ANY], label=name, elem_id=f"history-{name.lower()}",
                                              **free) for name in ("Model", "Method", "Verdict"))
        refresh = gr.Button("Refresh", elem_id="history-refresh")
    table = gr.HTML(history_table_html([]), elem_id="history-table")
    with gr.Row():
        prev = gr.Button("Newer", size="sm", elem_id="history-prev")
        page_note = gr.Markdown("", elem_id="history-page-note")
        nxt = gr.Button("Older", size="sm", elem_id="history-next")
        page = gr.Number(1, precision=0, minimum=1, label="Page", elem_id="history-page")
    gr.Markdown("### Side by side")
    with gr.Row():
        run_a = gr.Number(None, precision=0, label="Run A (#)", elem_id="side-a-id")
        run_b = gr.Number(None, precision=0, label="Run B (#)", elem_id="side-b-id")
        side = gr.Button("Show side by side", elem_id="side-run")
    side_status = gr.HTML("", elem_id="side-status")
    side_timeline = gr.Plot(label="Both runs on one time axis", elem_id="side-timeline")
    side_table = gr.Dataframe(headers=["metric", "A", "B"], label="Run A and run B",
                              interactive=False, elem_id="side-table")
    with gr.Row():
        side_a = gr.HTML("", label="Verdict of run A", elem_id="side-a")
        side_b = gr.HTML("", label="Verdict of run B", elem_id="side-b")
    # Only an owner may delete, and only a login names an owner: no logins, no button.
    with gr.Row(visible=logins_on):
        delete_id = gr.Number(None, precision=0, label="Delete my run (#)",
                              elem_id="history-delete-id")
        delete = gr.Button("Delete", variant="stop", elem_id="history-delete")
    delete_status = gr.HTML("", elem_id="history-delete-status")
    return HistoryPanel(model, method, verdict, refresh, prev, nxt, page, table, page_note,
                        run_a, run_b, side, side_status, side_timeline, side_table, side_a,
                        side_b, delete_id, delete, delete_status)


def _choice(value) -> str | None:
    return None if value in (None, "", ANY) else str(value)


class HistoryHandlers:
    def __init__(self, panel: HistoryPanel, history: History) -> None:
        self.panel, self.history = panel, history

    def list(self, model, method, verdict, page, run_a=None, run_b=None, delta: int = 0) -> dict:
        """One page of runs; the filters' choices from what is stored; empty side-by-side
        fields get the page's two newest comparisons."""
        p = self.panel
        filters = Filters(_choice(model), _choice(method), _choice(verdict))
        try:
            total = self.history.runs(filters, limit=0)[1]
            pages = max(1, -(-total // PAGE_SIZE))
            number = min(max(1, int(page or 1) + delta), pages)
            rows, total = self.history.runs(filters, (number - 1) * PAGE_SIZE, PAGE_SIZE)
            choices = self.history.choices()
        except HistoryError as exc:
            return {p.table: status_html(f"the history cannot be read: {exc}", "error")}
        dropdowns = {comp: gr.Dropdown([ANY] + choices[name], value=_choice(value) or ANY,
                                       allow_custom_value=True)
                     for comp, name, value in ((p.model, "model", model),
                                               (p.method, "method", method),
                                               (p.verdict, "verdict", verdict))}
        newest = [r.id for r in rows if r.kind == "compare"][:2]
        side = {}
        if not run_a and not run_b and newest:  # an empty Number field reads 0 or None
            side = {p.run_a: newest[-1], p.run_b: newest[0]}  # older as A, newer as B
        return {p.table: history_table_html(rows), p.page: number,
                p.page_note: f"page {number} of {pages} ({total} runs)", **dropdowns, **side}

    def side_by_side(self, run_a, run_b) -> dict:
        p = self.panel
        records = []
        for label, value in (("A", run_a), ("B", run_b)):
            record = self._compare(value)
            if isinstance(record, str):
                return {p.side_status: status_html(f"run {label}: {record}", "error")}
            records.append(record)
        a, b = records
        la, lb = f"run #{int(run_a)}", f"run #{int(run_b)}"
        return {p.side_status: status_html(f"{la} (A) beside {lb} (B)", "done"),
                p.side_timeline: side_by_side_timeline(a, b, la, lb),
                p.side_table: side_by_side_table(a, b, f"A: {la}", f"B: {lb}"),
                p.side_a: checklist_html(a.checklist) if a.checklist else "no checklist",
                p.side_b: checklist_html(b.checklist) if b.checklist else "no checklist"}

    def _compare(self, value) -> CompareRecord | str:
        if value is None:
            return "enter a run number"
        try:
            found = self.history.get(int(value))
        except (HistoryError, ValueError, OverflowError) as exc:
            return str(exc)
        if found is None:
            return f"there is no run #{int(value)}"
        row, record_json = found
        if row.kind != "compare":
            return f"run #{row.id} is a {row.kind}; side by side shows comparisons"
        try:
            record = load(record_json)
        except TraceFormatError as exc:
            return str(exc)
        return record if isinstance(record, CompareRecord) else "not a comparison"

    def delete(self, run_id, request: gr.Request) -> dict:
        """Delete one of the signed-in user's runs; nobody else's, and nothing without logins."""
        def said(message: str, kind: str = "error") -> dict:
            return {self.panel.delete_status: status_html(message, kind)}

        user = getattr(request, "username", None)
        if not user:
            return said("runs can be deleted only with logins on, by the login that ran them")
        if run_id is None:
            return said("enter a run number")
        try:
            deleted = self.history.delete(int(run_id), user)
        except (HistoryError, ValueError, OverflowError) as exc:
            return said(str(exc))
        if not deleted:
            return said(f"run #{int(run_id)} is not one of {user}'s runs: not deleted")
        return said(f"run #{int(run_id)} deleted", "done")


def sweep_views(record_json: str) -> tuple:
    """(figure, table) of a saved sweep; ValueError when it cannot be drawn."""
    import pandas as pd

    from space.runs.sweep import VARIABLES, SweepResult
    from vis.sweep import sweep_figure

    d = json.loads(record_json)
    if isinstance(d, dict) and d.get("variable") == GRID:
        return None, pd.DataFrame(d.get("table") or [])  # the grid's table, as the tab shows it
    if not isinstance(d, dict) or d.get("variable") not in VARIABLES:
        raise ValueError("not a saved sweep")
    table = pd.DataFrame(d.get("table") or []).astype({"value": float, "speedup": float})
    result = SweepResult(workload_id=str(d.get("workload_id", "")), variable=d["variable"],
                         table=table, crossover=d.get("crossover"),
                         gain_vanishes_at=d.get("gain_vanishes_at"),
                         throughput_crossover=d.get("throughput_crossover"))
    title = f"{result.workload_id}: sweep over {result.variable}"
    return sweep_figure(result, title=title), display_table(result.table)


def wire_history(demo: gr.Blocks, tab: gr.Tab, p: HistoryPanel, h: HistoryHandlers,
                 show, status: gr.HTML, record_outputs: list, sweep: SweepPanel,
                 traffic: TrafficHandlers, tipping: TippingPanel) -> None:
    """The tab's events, and ``?run=<id>`` on every page load: ``show(record, message)``
    draws a comparison in every view (``record_outputs``, with the status line
    ``status``); a saved sweep or tipping curve is drawn in the Sweep tab, a traffic run
    in the Traffic tab."""
    p.refresh.click(h.list, p.filters(), p.list_outputs(), api_name="history", **NAMED)
    for event, listing in ((tab.select, h.list), (p.model.input, h.list), (p.method.input, h.list),
                           (p.verdict.input, h.list),
                           (p.prev.click, functools.partial(h.list, delta=-1)),
                           (p.next.click, functools.partial(h.list, delta=1)),
                           (p.page.submit, h.list)):
        event(listing, p.filters(), p.list_outputs(), **QUICK)
    p.side.click(h.side_by_side, [p.run_a, p.run_b],
                 [p.side_status, p.side_timeline, p.side_table, p.side_a, p.side_b],
                 api_name="side_by_side", **NAMED)
    p.delete.click(h.delete, [p.delete_id], [p.delete_status], api_name="delete_run", **NAMED) \
        .then(h.list, p.filters(), p.list_outputs(), **QUICK)

    def open_link(request: gr.Request) -> dict:
        from space.ui.links import opened_run

        run_id = (request.query_params.get("run") if request else None) or ""
        if not run_id:  # nothing to open: one no-op update (Gradio refuses an empty dict)
            return {status: gr.skip()}
        opened = opened_run(h.history, run_id.strip())
        if isinstance(opened, str):
            return {status: status_html(opened, "error")}
        record, message = opened
        if not isinstance(record, str):
            return show(record, message)
        try:
            saved = json.loads(record)
        except ValueError:
            saved = None
        keys = set(saved) if isinstance(saved, dict) else set()
        if {"prompts", "groups"} <= keys:
            said = f"{message}: a traffic run, shown in the Traffic tab"
            return {**traffic.show_summary(saved, said), status: status_html(said, "done")}
        try:  # a tipping curve, or a sweep: drawn in the Sweep tab
            if {"points", "step_costs"} <= keys:
                from space.judge.curves import TippingCurve
                from vis.tipping import tipping_figure

                what, tab_status = "a tipping curve", tipping.status
                curve = TippingCurve.from_dict(saved)
                drawn = {tipping.plot: tipping_figure(curve, "length")}
            else:
                figure, table = sweep_views(record)
                what, tab_status = "a sweep", sweep.status
                drawn = {sweep.plot: figure, sweep.table: table}
        except (ValueError, KeyError, TypeError) as exc:
            return {status: status_html(f"{message}: cannot be drawn ({exc})", "error")}
        said = f"{message}: {what}, shown in the Sweep tab"
        return {status: status_html(said, "done"), tab_status: status_html(said, "done"), **drawn}

    demo.load(open_link, None, [*record_outputs, sweep.status, sweep.plot, sweep.table,
                                *traffic.panel.outputs(), tipping.status, tipping.plot], **QUICK)
