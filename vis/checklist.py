"""HTML for the "is it worth it?" checklist: ``data-verdict`` on the root, ``data-check``
and ``data-passed`` on each row; pass and fail shown by symbol and word, not colour alone."""
from __future__ import annotations

from html import escape

from space.common.paths import asset
from space.observe.memory import fmt_bytes
from space.records.verdict import BORDERLINE, NOT_WORTH_IT, UNDECIDED, WORTH_IT, Check, Checklist

_VERDICT_TEXT = {
    WORTH_IT: "speculation is faster on this workload.",
    NOT_WORTH_IT: "speculation does not pay here: no gain beyond noise, or slower.",
    BORDERLINE: "a small or uneven gain, one earned on a loop, or not measured yet.",
    UNDECIDED: "what was measured cannot decide it yet (an interval straddling 1.05x or "
               "1.10x, or a busy server): see the lines that say why.",
}
# (symbol, word = css class, data-passed) per passed value
_MARKS = {True: ("\u2714", "pass", "true"), False: ("\u2718", "fail", "false"),
          None: ("\u2022", "context", "context")}

_UNIT_TEXT = {"bytes": fmt_bytes, "x": lambda v: f"{v:.2f}x", "%": lambda v: f"{v:.1%}"}
_CSS = asset(__file__, "checklist.css")


def format_value(value: float | int | str | None, unit: str = "") -> str:
    """Human text for a check's value or threshold.

    Example:
        >>> format_value(1.523, "x"), format_value(3 * 2**30, "bytes"), format_value(4096, "tokens")
        ('1.52x', '3.00 GiB', '4,096 tokens')
        >>> format_value(0.45, "%"), format_value(0.7051), format_value(2.8, "tokens")
        ('45.0%', '0.705', '2.80 tokens')
        >>> format_value(1, "prompts"), format_value(0, "prompts"), format_value(1, "requests")
        ('1 prompt', '0 prompts', '1 request')
    """
    if value is None:
        return "\u2014"  # em dash: not measured
    if isinstance(value, str):
        return value
    if unit in _UNIT_TEXT:
        return _UNIT_TEXT[unit](value)
    if isinstance(value, int) or float(value).is_integer() and abs(value) >= 10:
        text = f"{int(value):,}"
    elif abs(value) < 1:
        text = f"{value:.3f}"
    else:
        text = f"{value:.2f}"
    if text == "1" and unit.endswith("s"):
        unit = unit[:-1]  # 1 prompt, 1 request, 1 token
    return f"{text} {unit}" if unit else text


def _row(check: Check) -> str:
    symbol, word, passed_attr = _MARKS[check.passed]
    threshold = format_value(check.threshold, check.unit) if check.threshold is not None else ""
    threshold = f"{escape(check.op)} {escape(threshold)}" if threshold and check.op else escape(threshold)
    decisive = ' class="decisive"' if check.decisive else ""
    return (f'<tr data-check="{escape(check.name)}" data-passed="{passed_attr}"{decisive}>'
            f'<td class="{word}"><span aria-hidden="true">{symbol}</span> {word}</td>'
            f"<td>{escape(check.name)}{' (decisive)' if check.decisive else ''}</td>"
            f"<td>{escape(format_value(check.value, check.unit))}</td>"
            f"<td>{threshold}</td><td>{escape(check.detail)}</td></tr>")


def checklist_html(checklist: Checklist) -> str:
    """The checklist as one self-contained HTML fragment (inline CSS, no script)."""
    verdict = checklist.verdict
    rows = "".join(_row(c) for c in checklist.checks)
    return (f'<div class="speclens-checklist" data-verdict="{escape(verdict)}">'
            f"<style>{_CSS}</style>"
            f'<p class="verdict">{escape(verdict)}: {escape(_VERDICT_TEXT.get(verdict, ""))}</p>'
            "<table><thead><tr><th>mark</th><th>check</th><th>value</th><th>threshold</th>"
            f"<th>detail</th></tr></thead><tbody>{rows}</tbody></table></div>")
