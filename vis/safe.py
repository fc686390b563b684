"""Visitor text made safe for plotly, which draws titles, names, annotations and hovers
from a subset of HTML (links, styles): it decodes ``&lt;``, ``&gt;``, ``&amp;`` and
numeric entities but not ``&quot;``, hence ``quote=False``."""
from __future__ import annotations

import html


def plot_text(value: object) -> str:
    """A value shown as written inside a plotly title, name, annotation or hover.

        >>> plot_text('<a href="https://x">go</a> & more')
        '&lt;a href="https://x"&gt;go&lt;/a&gt; &amp; more'
    """
    return html.escape(str(value), quote=False)
