"""Every finished compare, sweep and traffic run goes into the history, and
``?run=<id>`` opens a saved one.

``recording_run`` and ``recording_sweep`` wrap the page's run and sweep
handlers: they pass every update through, and when a run ends they save it
(``space.records.history``) with the login name of the request (Gradio's
``request.username``; None without logins) and add the run's link to its
status line. The wrappers keep the handlers' signatures for Gradio and add a
``request`` parameter, which Gradio fills in.

``open_link`` serves the page's load event: with ``?run=<id>`` it shows that
run in every view, as a replay does (records go through ``space.records.schema.load``,
which validates them), and the status line says who ran it and when.
"""
from __future__ import annotations

import functools
import html
import inspect
import logging
from collections.abc import Callable
from typing import Any

import gradio as gr

from space.records.history import History, HistoryError, compare_run, sweep_run, traffic_run
from space.records.schema import TraceFormatError, load
from space.records.trace import CompareRecord
from vis import text
from vis.history import when, who

log = logging.getLogger(__name__)


def _with_request(fn: Callable, wrapper: Callable) -> Callable:
    """``wrapper`` with ``fn``'s parameters plus ``request: gr.Request`` for Gradio,
    which passes the request positionally, after the inputs."""
    functools.update_wrapper(wrapper, fn)
    params = list(inspect.signature(fn).parameters.values())
    params.append(inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                    default=None, annotation=gr.Request))
    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    # Only the request's hint: Gradio evaluates these, and fn's may be strings.
    wrapper.__annotations__ = {"request": gr.Request}
    return wrapper


def _split(wrapper: Callable, args: tuple, kwargs: dict) -> tuple[dict[str, Any], Any]:
    """(``fn``'s arguments by name, the request) from a call of ``wrapper``."""
    arguments = dict(inspect.signature(wrapper).bind(*args, **kwargs).arguments)
    return arguments, arguments.pop("request", None)


def username(request: gr.Request | None) -> str | None:
    return getattr(request, "username", None) or None


def link_html(run_id: int) -> str:
    rid = int(run_id)
    return (f' <a class="speclens-run-link" href="?run={rid}" target="_blank" rel="noopener" '
            f'data-run="{rid}">saved as run #{rid}: link</a>')


def _add_link(status: Any, addition: str) -> Any:
    """The status box's HTML with ``addition`` inside its box (it ends with </div>)."""
    if isinstance(status, str) and status.endswith("</div>"):
        return status[:-len("</div>")] + addition + "</div>"
    return status


def _save(history: History, make: Callable[[], Any]) -> str:
    """The link to the saved run, or why it was not saved: a history that cannot
    take it never costs the visitor the result on the page."""
    try:
        return link_html(history.save(make()))
    except Exception as exc:
        log.exception("saving the run to the history failed")
        if isinstance(exc, HistoryError):
            return f" (not saved to the history: {html.escape(str(exc))})"
        return f" (not saved to the history: {type(exc).__name__})"


def _compare_run(record: CompareRecord, arguments: dict[str, Any], user: str | None):
    t = arguments.get("temperature")
    return compare_run(record, float(t) if t is not None else None, user)


def _sweep_run(result: Any, arguments: dict[str, Any], model: str, user: str | None):
    """A sweep's history row from its result and the handler's arguments."""
    d = result.to_dict()
    d.setdefault("variable", str(arguments.get("variable")))  # a k x concurrency grid
    k = arguments.get("k")
    return sweep_run(d, model, arguments.get("method") or None,
                     int(k) if k is not None else None, user)


def recording_run(fn: Callable, history: History, state: Any, status: Any) -> Callable:
    """The run handler (a generator of update dicts), saving the comparison it ends with."""
    def run(*args, **kwargs):
        arguments, request = _split(run, args, kwargs)
        updates = fn(**arguments)
        try:
            for update in updates:
                record = update.get(state) if isinstance(update, dict) else None
                if isinstance(record, CompareRecord):
                    added = _save(history, functools.partial(
                        _compare_run, record, arguments, username(request)))
                    update = {**update, status: _add_link(update.get(status), added)}
                yield update
        finally:  # Stop or a client that left closes this generator: close the run's too
            updates.close()

    return _with_request(fn, run)


def recording_sweep(fn: Callable, history: History, handlers: Any, status: Any,
                    model: str) -> Callable:
    """The sweep handler (via the start gate: a generator), saving the sweep it ends
    with; ``handlers.last_result`` holds it (sweeps run one at a time)."""
    return _recording_last_result(fn, history, handlers, status, lambda result, arguments, user:
                                  _sweep_run(result, arguments, model, user))


def recording_traffic(fn: Callable, history: History, handlers: Any, status: Any,
                      model: str, private: bool = False) -> Callable:
    """The Traffic tab's handler, saving the run it ends with under the visitor's
    login (``handlers.last_result``; one at a time). ``private`` (the operator's
    ``--traffic-private``): the figures only, no prompt or output text."""
    return _recording_last_result(fn, history, handlers, status, lambda result, _arguments, user:
                                  _traffic_run(result, model, user, private))


def _recording_last_result(fn: Callable, history: History, handlers: Any, status: Any,
                           history_row: Callable[[Any, dict[str, Any], str | None], Any]
                           ) -> Callable:
    """A handler whose result lands in ``handlers.last_result`` (sweeps and traffic
    runs: one at a time), saved as ``history_row(result, arguments, user)`` when it
    appears, with a link added to the status of the update that shows it."""
    def record(*args, **kwargs):
        arguments, request = _split(record, args, kwargs)
        handlers.last_result = None
        out = fn(**arguments)
        updates = out if inspect.isgenerator(out) else iter([out])
        try:
            for update in updates:
                result, handlers.last_result = handlers.last_result, None
                if result is not None and isinstance(update, dict):
                    added = _save(history, functools.partial(
                        history_row, result, arguments, username(request)))
                    update = {**update, status: _add_link(update.get(status), added)}
                yield update
        finally:
            if inspect.isgenerator(updates):
                updates.close()

    return _with_request(fn, record)


def _traffic_run(result: Any, model: str, user: str | None, private: bool):
    return traffic_run(result.to_dict(keep_prompts=not private), model, user)


def opened_run(history: History, run_id_text: str) -> tuple[Any, str] | str:
    """(record, status message) for ``?run=<id>``, or a one-line reason."""
    try:
        run_id = int(run_id_text)
    except ValueError:
        return f"?run={run_id_text[:20]!r} is not a run number"
    try:
        found = history.get(run_id)
    except HistoryError as exc:
        return f"the history cannot be read: {exc}"
    if found is None:
        return f"there is no run #{run_id} in the history (deleted, or past the retention cap)"
    row, record_json = found
    said = f"run #{row.id}, run by {who(row.user)} on {when(row.created_s)}"
    if row.kind in ("sweep", "traffic"):
        return record_json, said
    try:
        record = load(record_json)
    except TraceFormatError as exc:
        return f"run #{row.id} cannot be shown: {exc}"
    return record, f"{said}: {text.summary(record)}"
