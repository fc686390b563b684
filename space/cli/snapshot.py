"""Save a plotly figure as a self-contained HTML page or a PNG, offline.

PNG: plotly's own static export needs kaleido, which is not a dependency;
instead the figure's HTML (plotly.js embedded, no network) is screenshotted
by headless Chromium, which the browser tests already use.
"""
from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
RENDER_WAIT_MS = 3000  # virtual time for plotly.js to draw before the screenshot


def find_chromium() -> str | None:
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def save_figure(fig, path: str | Path, width: int = 1000, height: int | None = None) -> Path:
    """Write ``fig`` to ``path``: ``.html`` (plotly.js inlined) or ``.png`` (Chromium)."""
    path = Path(path)
    if path.suffix.lower() != ".png":
        fig.write_html(path, include_plotlyjs=True, full_html=True)
        return path
    chromium = find_chromium()
    if chromium is None:
        raise RuntimeError("a .png needs headless Chromium (apt-get install chromium); "
                           "write .html instead")
    height = height or int(fig.layout.height or 600)
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
             f"--screenshot={path.resolve()}", page.as_uri()],
            check=True, capture_output=True, timeout=120)
    return path
