"""The SpecLens web app (Gradio): one builder per panel, thin handlers.

``space.ui.app.build_demo`` composes the panels of ``space.ui.panels``;
``space.ui.handlers`` calls the engine layer (``space.runs.runner``) and ``vis/``
and nothing else; ``space.ui.views`` turns a record into what each panel shows.
"""
import sys

# Gradio imports the ``mcp`` package when it is installed (for an MCP server this
# app never starts): about 2 s of the page's start on 2 cores. Marked missing
# before Gradio's first import, Gradio treats it as not installed, as it does
# without the ``gradio[mcp]`` extra. (benchmarks/startup.py measures the start.)
sys.modules.setdefault("mcp", None)  # type: ignore[arg-type]
