"""What a server run cannot show (rejected drafts' ids, the target's probabilities, the
step anatomy), and the sentence a view says instead, marked ``data-why="<key>"``."""
from __future__ import annotations

import html
from typing import Final, Literal

from space.records.run import SERVER
from space.records.trace import RunTrace
from vis.safe import plot_text

Missing = Literal["rejected-ids", "target-view", "step-anatomy"]
REJECTED_IDS: Final = "rejected-ids"
TARGET_VIEW: Final = "target-view"
STEP_ANATOMY: Final = "step-anatomy"

SENTENCES: Final[dict[Missing, str]] = {
    REJECTED_IDS: "The server reports how many drafts were rejected, not their ids.",
    TARGET_VIEW: ("The server does not report the target's probabilities: its top 5 for a "
                  "draft needs an in-process run."),
    STEP_ANATOMY: ("The server does not report where a step's time went: the step anatomy "
                   "needs an in-process run."),
}


def from_server(run: RunTrace) -> bool:
    return run.config.source == SERVER


def why_html(missing: Missing, css: str, tag: str = "p") -> str:
    """The sentence in italics, in a ``tag`` of class ``css`` marked ``data-why``."""
    return f'<{tag} class="{css}" data-why="{missing}"><em>{html.escape(SENTENCES[missing])}</em></{tag}>'


def plot_lines(missing: Missing) -> str:
    """The sentence for plotly, escaped, broken after its colon (plotly does not wrap)."""
    return plot_text(SENTENCES[missing]).replace(": ", ":<br>", 1)
