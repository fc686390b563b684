"""The SpecLens web app (Gradio): one builder per panel, thin handlers."""
import sys

# Gradio imports ``mcp`` when installed (for an MCP server this app never starts):
# about 2 s of the start on 2 cores. Marked missing, Gradio treats it as not installed.
sys.modules.setdefault("mcp", None)  # type: ignore[arg-type]
