"""Text from a visitor (a replayed file, a prompt, a model's output) made safe
for the two kinds of markup the views write. Pure.

HTML: ``html.escape`` where the value is written (``quote=True`` inside
attributes), numbers formatted with ``int()`` / ``float()``; see vis/tokens.py.

Plotly: titles, legend names, annotations, axis labels and hover labels are
drawn from a subset of HTML (``<b>``, ``<br>``, ``<a href>``, ``<span
style>``...), so a visitor's text there could add links or restyle the chart.
Plotly decodes ``&lt;``, ``&gt;``, ``&amp;`` and numeric entities but not
``&quot;``, hence ``quote=False``.
"""
from __future__ import annotations

import html


def plot_text(value: object) -> str:
    """A value shown as written inside a plotly title, name, annotation or hover.

    Example:
        >>> plot_text('<a href="https://x">go</a> & more')
        '&lt;a href="https://x"&gt;go&lt;/a&gt; &amp; more'
    """
    return html.escape(str(value), quote=False)
