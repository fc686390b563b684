"""What every panel shares: the status boxes, what one says of a saved run, the
quick events' settings, and the texts under assets/."""
from __future__ import annotations

import html

from space.common import paths
from space.runs.recorder import Saved

# A click that answers at once: no queue slot, no spinner; QUICK kept out of the API
# page, NAMED on it under its api_name.
NAMED = dict(concurrency_limit=None, show_progress="hidden")
QUICK = dict(NAMED, api_visibility="undocumented")


def asset(name: str) -> str:
    """A text (CSS, JavaScript, HTML, Markdown) in space/ui/assets/."""
    return paths.asset(__file__, name)


def status_html(message: str, kind: str = "info", after_html: str = "") -> str:
    """The status box: kind is info | working | done | error (role=alert);
    ``after_html``: escaped markup after the message (``saved_html``)."""
    role = ' role="alert"' if kind == "error" else ""
    mark = {"error": "\u26a0 ", "working": "\u25b8 ", "done": "\u2714 "}.get(kind, "")
    kind = html.escape(kind, quote=True)
    return (f'<div class="speclens-status speclens-status-{kind}" data-kind="{kind}"{role}>'
            f"{mark}{html.escape(message)}{after_html}</div>")


def saved_html(saved: object) -> str:
    """The run's link from the history's answer (``Saved``), or why it was not
    saved; '' without a history."""
    if not isinstance(saved, Saved):
        return ""
    if saved.run_id is None:
        return f" (not saved to the history: {html.escape(saved.reason)})"
    rid = int(saved.run_id)
    return (f' <a class="speclens-run-link" href="?run={rid}" target="_blank" rel="noopener" '
            f'data-run="{rid}">saved as run #{rid}: link</a>')
