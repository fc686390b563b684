"""Visitor text (a replayed file, a prompt, a model's output) made safe for plotly.

Plotly draws titles, names, annotations and hover labels from a subset of HTML, so
visitor text there could add links or restyle a chart. It decodes ``&lt;``, ``&gt;``,
``&amp;`` and numeric entities but not ``&quot;``, hence ``quote=False``.
"""
from __future__ import annotations

import html


def plot_text(value: object) -> str:
    """A value shown as written inside a plotly title, name, annotation or hover.

        >>> plot_text('<a href="https://x">go</a> & more')
        '&lt;a href="https://x"&gt;go&lt;/a&gt; &amp; more'
    """
    return html.escape(str(value), quote=False)
