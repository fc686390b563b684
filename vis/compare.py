"""Baseline vs speculative: the numbers side by side, whether outputs match, and the
per-step table of a trace (the CSV export)."""
from __future__ import annotations

import html
import json
import math
from collections.abc import Callable

import pandas as pd

from space.records.anatomy import SHOWN_PARTS, breakdown
from space.records.trace import CompareRecord, RunTrace, StepRecord
from vis.explain import sampled, token_repr
from vis.tokens import token_view_html

METRICS: list[tuple[str, Callable[[RunTrace], float], str]] = [
    ("TTFT ms", lambda r: r.ttft_s * 1e3, ".1f"),
    ("TPOT ms", lambda r: r.tpot_s * 1e3, ".2f"),
    ("tokens/s", lambda r: r.tokens_per_s, ".1f"),
    ("end-to-end ms", lambda r: r.e2e_s * 1e3, ".0f"),
    ("output tokens", lambda r: float(len(r.output_token_ids)), ".0f"),
]

ANATOMY_COLUMNS = [f"{p}_ms" for p in SHOWN_PARTS]
STEP_COLUMNS = ["index", "kind", "start_ms", "duration_ms", "num_scheduled_tokens", "drafts",
                "num_draft_tokens", "num_accepted_tokens", "num_placeholder_draft_tokens",
                "placeholder_cause", "emitted", "target_token_kind",
                "draft_probs", "target_top5", "acceptance_probs", *ANATOMY_COLUMNS,
                "num_drafter_forwards"]

DIVERGENCE_NOTE = (
    "Speculative decoding keeps the target's output distribution, so with greedy "
    "sampling the outputs usually match. A difference typically comes from "
    "floating-point differences between batch shapes (a near-tie between two "
    "tokens flips), or from sampling with temperature > 0."
)


def compare_table(cmp: CompareRecord) -> pd.DataFrame:
    """One row per METRICS, indexed by "metric"; ratio = speculative / baseline (NaN
    where the baseline is 0)."""
    pairs = [(name, read(cmp.baseline), read(cmp.speculative)) for name, read, _ in METRICS]
    return pd.DataFrame([{"metric": name, "baseline": b, "speculative": s, "ratio": s / b if b else math.nan}
                         for name, b, s in pairs]).set_index("metric")


def _speed_words(speedup: float, what: str) -> str:
    if speedup <= 0:
        return f"{what}: n/a"
    verdict = "faster" if speedup > 1 else ("slower" if speedup < 1 else "the same")
    return f"<b>{speedup:.2f}x</b> {what} ({verdict})"


def _token_at(run: RunTrace, i: int) -> str:
    ids = run.output_token_ids
    return html.escape(token_repr(run, ids[i])) if i < len(ids) else "(output ended)"


def _divergence_html(cmp: CompareRecord) -> str:
    i = cmp.first_divergence
    if i is None:
        head = "<p>Outputs <b>differ</b>.</p>"
    else:
        head = (f"<p>Outputs <b>differ</b> from output token {int(i)}: baseline "
                f"{_token_at(cmp.baseline, i)}, speculative {_token_at(cmp.speculative, i)}.</p>")
    lanes = "".join(
        f'<div class="cmp-lane" data-lane="{name}"><p><b>{name}</b></p>'
        f"{token_view_html(run, highlight_index=i, show_legend=False)}</div>"
        for name, run in (("baseline", cmp.baseline), ("speculative", cmp.speculative))
    )
    return f"{head}<p><small>{html.escape(DIVERGENCE_NOTE)}</small></p>{lanes}"


def compare_html(cmp: CompareRecord) -> str:
    """The speedups, and whether the outputs match; if not, both as tokens, the first
    difference outlined."""
    b, s = cmp.baseline, cmp.speculative
    tpot = (f"{_speed_words(cmp.speedup, 'TPOT speedup')}: TPOT "
            f"{b.tpot_s * 1e3:.2f} &rarr; {s.tpot_s * 1e3:.2f} ms")
    e2e = (f"{_speed_words(cmp.e2e_speedup, 'end-to-end speedup')}: "
           f"{b.e2e_s * 1e3:,.0f} &rarr; {s.e2e_s * 1e3:,.0f} ms")
    outputs = (f"<p>Outputs <b>identical</b> ({len(s.output_token_ids)} tokens).</p>"
               if cmp.outputs_identical else _divergence_html(cmp))
    return f'<div class="speclens-compare"><p>{tpot}; {e2e}.</p>{outputs}</div>'


def _texts(run: RunTrace, ids: list[int]) -> str:
    """Token texts as a JSON list: keeps token boundaries and whitespace in a CSV cell."""
    return json.dumps([run.token_str(t) for t in ids], ensure_ascii=False)


def _view_columns(run: RunTrace, s: StepRecord) -> dict[str, str]:
    """Per verified draft (JSON lists, in draft order): the target's probability of it,
    its top 5 as [text, probability], and on sampled runs min(1, p/q)."""
    views = sorted(s.target_views, key=lambda v: v.draft_pos)
    if not views:
        return {"draft_probs": "", "target_top5": "", "acceptance_probs": ""}
    return {
        "draft_probs": json.dumps([round(v.draft_prob, 4) for v in views]),
        "target_top5": json.dumps([[[run.token_str(t), round(p, 4)]
                                    for t, p in zip(v.top_token_ids, v.top_probs, strict=False)]
                                   for v in views], ensure_ascii=False),
        "acceptance_probs": json.dumps([None if (a := v.acceptance_prob()) is None else round(a, 4)
                                        for v in views]) if sampled(run) else "",
    }


def _anatomy_columns(s: StepRecord) -> dict[str, float | int | None]:
    """ms per part, "other" the remainder; empty for steps without an anatomy."""
    if s.anatomy is None:
        return dict.fromkeys((*ANATOMY_COLUMNS, "num_drafter_forwards"))
    parts = breakdown(s.anatomy, s.duration_s)
    return {**{f"{p}_ms": parts[p] * 1e3 for p in SHOWN_PARTS},
            "num_drafter_forwards": s.anatomy.num_drafter_forwards}


def steps_dataframe(run: RunTrace) -> pd.DataFrame:
    """One row per engine step; times in ms since the run's arrival."""
    rows = [{
        "index": s.index, "kind": s.kind, "start_ms": (s.start_s - run.arrival_s) * 1e3,
        "duration_ms": s.duration_s * 1e3, "num_scheduled_tokens": s.num_scheduled_tokens,
        "drafts": _texts(run, s.draft_token_ids), "num_draft_tokens": s.num_draft_tokens,
        "num_accepted_tokens": s.num_accepted_tokens,
        # draft slots vLLM verified but no proposer filled (they are not in "drafts")
        "num_placeholder_draft_tokens": s.num_placeholder_draft_tokens,
        "placeholder_cause": s.placeholder_cause, "emitted": _texts(run, s.emitted_token_ids),
        "target_token_kind": s.target_token_kind, **_view_columns(run, s), **_anatomy_columns(s),
    } for s in run.steps]
    return pd.DataFrame(rows, columns=STEP_COLUMNS)
