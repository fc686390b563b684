"""A command's --csv and --plot: a plotly figure as a self-contained HTML page or a PNG,
offline (a PNG is the HTML screenshotted by headless Chromium: plotly's own export needs kaleido)."""
from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
RENDER_WAIT_MS = 3000  # virtual time for plotly.js to draw before the screenshot
PNG_WIDTH = 1000


def save_outputs(a: argparse.Namespace, to_csv: Callable[[str], object] | None,
                 figure: Callable[[], object]) -> None:
    """A command's --csv (when ``to_csv`` writes one) and --plot (``figure()``), each said."""
    if to_csv and a.csv:
        to_csv(a.csv)
        print(f"wrote {a.csv}")
    if a.plot:
        save_figure(figure(), a.plot)


def save_figure(fig, path: str) -> None:
    """Write ``fig`` to ``path`` (.html with plotly.js inlined, or .png) and say so."""
    if Path(path).suffix.lower() != ".png":
        fig.write_html(path, include_plotlyjs=True, full_html=True)
        print(f"wrote {path}")
        return
    chromium = next((p for name in CHROMIUM_NAMES if (p := shutil.which(name))), None)
    if chromium is None:
        raise RuntimeError("a .png needs headless Chromium (apt-get install chromium); "
                           "write .html instead")
    width, height = PNG_WIDTH, int(fig.layout.height or 600)
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "figure.html"
        fig.update_layout(width=width, height=height)
        # no margin around the plot, so the screenshot is the figure only
        fig.write_html(page, include_plotlyjs=True, full_html=True,
                       config={"displayModeBar": False, "staticPlot": True})
        page.write_text(page.read_text(encoding="utf-8").replace(
            "<head>", "<head><style>body{margin:0}</style>", 1), encoding="utf-8")
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             f"--virtual-time-budget={RENDER_WAIT_MS}", f"--window-size={width},{height}",
             f"--screenshot={Path(path).resolve()}", page.as_uri()],
            check=True, capture_output=True, timeout=120)
    print(f"wrote {path}")
