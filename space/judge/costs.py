"""The step anatomy's medians (a ``KindCosts``) as figures and words (pure): one home
for the Checklist tab, the tipping page, the deploy output and the terminal.
"""
from __future__ import annotations

from collections.abc import Sequence

from space.records.anatomy import FORWARD, PROPOSER, KindCosts

REST = "rest"
PART_NAMES = {FORWARD: "the target's forward pass", PROPOSER: "the proposer",
              REST: "the rejection sampler and the rest of the step"}
NOT_TIMED = "no step anatomy in these runs (recorded before it, or not timed)"
# The medians as table columns (the deploy output: one row per k and concurrency).
COLUMNS = ("decode forward", "verify forward", "tokens", "rejection", "proposer",
           "verify / decode forward", "draft cost c")


def _ms(v: float | None) -> str:
    return "\u2014" if v is None else f"{v * 1e3:.2f} ms"


def _x(v: float | None, digits: int = 2, suffix: str = "") -> str:
    return "\u2014" if v is None else f"{v:.{digits}f}{suffix}"


def timed(c: KindCosts | None) -> bool:
    """Whether both kinds of step were timed (a decode forward and a verify forward)."""
    return c is not None and c.decode_forward_s is not None and c.verify_forward_s is not None


def cost_rows(c: KindCosts) -> list[tuple[str, str]]:
    """(label, value) per median, in the order every view shows them."""
    tokens = f" ({c.verify_tokens} tokens)" if c.verify_tokens else ""
    rows = [
        ("decode step (baseline): target forward", _ms(c.decode_forward_s)),
        ("decode step (baseline): whole step", _ms(c.decode_step_s)),
        (f"verify step: target forward{tokens}", _ms(c.verify_forward_s)),
        ("verify step: rejection sampler", _ms(c.rejection_s)),
        ("verify step: proposer", _ms(c.proposer_s)),
        ("verify step: everything else", _ms(c.overhead_s)),
        ("verify step: whole step", _ms(c.verify_step_s)),
        ("verify forward / decode forward", _x(c.forward_ratio, suffix="x")),
        ("draft cost ratio c (proposer / decode step)", _x(c.draft_cost_ratio, 3)),
    ]
    if c.num_drafter_forwards:
        rows.insert(5, ("verify step: drafter forward passes", str(int(c.num_drafter_forwards))))
    if c.num_decode_steps or c.num_verify_steps:
        rows.append(("timed steps (decode / verify)",
                     f"{c.num_decode_steps} / {c.num_verify_steps}"))
    return rows


def cost_columns(c: KindCosts) -> list[str]:
    """The values under ``COLUMNS``."""
    return [_ms(c.decode_forward_s), _ms(c.verify_forward_s), str(c.verify_tokens or "\u2014"),
            _ms(c.rejection_s), _ms(c.proposer_s), _x(c.forward_ratio, suffix="x"),
            _x(c.draft_cost_ratio, 3)]


def cost_lines(c: KindCosts, indent: str = "  ") -> str:
    """The medians for a terminal, one per line."""
    return "\n".join(f"{indent}{label}: {value}" for label, value in cost_rows(c))


def gap_part(c: KindCosts, k: int | None, method: str | None, device: str | None) -> str:
    """The part of a verify step that costs most beyond a decode step, in words.

    Example:
        >>> c = KindCosts(decode_step_s=0.0457, decode_forward_s=0.040, verify_step_s=0.124,
        ...               verify_forward_s=0.108, verify_tokens=5, rejection_s=0.002,
        ...               proposer_s=0.001, overhead_s=0.013)
        >>> gap_part(c, 4, "ngram", "cpu")  # doctest: +NORMALIZE_WHITESPACE
        'verifying 5 tokens costs 2.7x a decode step on this CPU (compute-bound); on a GPU
         at small batch, theory puts it near 1x (memory-bound); measure it there'
    """
    excess = c.excess_over_decode_s()
    part = max(excess, key=lambda p: excess[p])
    decode = c.decode_step_s or 1.0
    if part == "forward":
        tokens = c.verify_tokens or (k + 1 if k else None)
        ratio = (c.verify_forward_s or 0.0) / (c.decode_forward_s or 1.0)
        what = f"verifying {tokens} tokens" if tokens else "the verify forward pass"
        if device == "gpu":
            bound = "compute-bound" if ratio >= 1.5 else "memory-bound"
            return f"{what} costs {ratio:.1f}x a decode step on this GPU ({bound})"
        bound = " (compute-bound)" if ratio >= 1.5 else ""
        return (f"{what} costs {ratio:.1f}x a decode step on this CPU{bound}; on a GPU at "
                "small batch, theory puts it near 1x (memory-bound); measure it there")
    if part == "proposer":
        n = c.num_drafter_forwards
        who = (f"the drafter's {n} forward passes" if n else
               "the n-gram lookup" if method == "ngram" else "the proposer")
        return f"{who} cost {(c.proposer_s or 0.0) / decode:.0%} of a target decode step"
    return (f"the rejection sampler and the rest of the step (scheduling, output processing) "
            f"cost {excess['rest'] * 1e3:.1f} ms more than in a decode step")


def grows_with_k(c: KindCosts, k: int | None, method: str | None, device: str | None) -> str:
    """At one k: what a verify step adds to a decode step, part by part, and which
    part grows with k (test_costs shows the sentences)."""
    if not timed(c):
        return NOT_TIMED
    excess = c.excess_over_decode_s()
    part = max(excess, key=lambda p: excess[p])
    tokens = c.verify_tokens or (k + 1 if k else None)
    size = f" ({tokens} tokens)" if tokens else ""
    adds = ", ".join(f"{PART_NAMES[p]} {'adds ' if n == 0 else ''}{excess[p] * 1e3:.2f} ms"
                     for n, p in enumerate(excess))
    return (f"A verify step{size} costs {_ms(c.verify_step_s)} against a decode step's "
            f"{_ms(c.decode_step_s)}: {adds}. The part that grows with k is "
            f"{PART_NAMES[part]}: {gap_part(c, k, method, device)}.")


GridCosts = Sequence[tuple[int, int, KindCosts]]  # (k, concurrency, medians) per sweep point


def grid_words(grid: GridCosts) -> list[str]:
    """At each concurrency of a k x concurrency sweep timed at two k or more: how each
    part of the verify step changed from the smallest k to the largest, and which grew most."""
    by_c: dict[int, list[tuple[int, KindCosts]]] = {}
    for k, c, kc in grid:
        by_c.setdefault(c, []).append((k, kc))

    def rest(c: KindCosts) -> float:
        return (c.rejection_s or 0.0) + (c.overhead_s or 0.0)

    words = []
    for conc in sorted(by_c):
        known = sorted((k, c) for k, c in by_c[conc] if timed(c))
        if len(known) < 2 or known[0][0] == known[-1][0]:
            continue
        (k0, a), (k1, b) = known[0], known[-1]
        grew = {FORWARD: (b.verify_forward_s or 0.0) - (a.verify_forward_s or 0.0),
                PROPOSER: (b.proposer_s or 0.0) - (a.proposer_s or 0.0), REST: rest(b) - rest(a)}
        ratios = f" ({_x(a.forward_ratio)}x to {_x(b.forward_ratio)}x a decode forward)" \
            if a.forward_ratio is not None and b.forward_ratio is not None else ""
        parts = ", ".join(f"{PART_NAMES[p]} {grew[p] * 1e3:+.2f} ms{ratios if p == FORWARD else ''}"
                          for p in grew)
        part = max(grew, key=lambda p: grew[p])
        verdict = ("No part grew with k here." if grew[part] <= 0 else
                   f"The part that grows with k is {PART_NAMES[part]}, about "
                   f"{grew[part] / (k1 - k0) * 1e3:.2f} ms per extra draft token.")
        words.append(f"Concurrency {conc}: From k={k0} to k={k1} the verify step's parts grew: "
                     f"{parts}. {verdict}")
    return words


def grid_text(grid: GridCosts) -> str:
    """The sweep's anatomy for a terminal: one row per (k, concurrency), then the words."""
    if not any(timed(kc) for _, _, kc in grid):
        return f"step anatomy: {NOT_TIMED}"
    head = ["k", "conc", *COLUMNS]
    rows = [[str(k), str(c), *cost_columns(kc)] for k, c, kc in sorted(grid)]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    lines = ["step anatomy, medians per step:"]
    lines += ["  " + "  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True))
              for r in [head, *rows]]
    return "\n".join(lines + grid_words(grid))
