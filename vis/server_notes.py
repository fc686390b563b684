"""What a server run cannot show, and the one sentence a view says instead.

A run measured through a running vLLM server (``config.source == "server"``,
space/server/) holds what the server's API reports: the emitted tokens, each
verify step's drafted and accepted counts, the chunks' arrival times. It does
not hold the ids of rejected drafts (a count only), the target's probabilities
(the explain views: why, top 5, the probability strip) or where a step's time
went (the step anatomy). A view that would draw these empty says why, in these
words, each in its own markup with ``data-why`` set to the key below.

Pure: trace in, text out.
"""
from __future__ import annotations

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


def plot_lines(missing: Missing) -> str:
    """The sentence for a plotly annotation or title, escaped, with a line break after
    its colon (plotly does not wrap text)."""
    return plot_text(SENTENCES[missing]).replace(": ", ":<br>", 1)
