"""Engine steps from a server's stream (pure).

A streamed completion arrives in chunks; with ``--stream-interval 1`` (vLLM's
default) and a reader that keeps up, one chunk is one engine step: the first
chunk is the prefill's token, a verify step emits ``accepted + 1`` tokens, a
step without drafts emits 1. The server's ``per_step_accepted`` /
``per_step_drafted`` list the verify steps only, in order. A one-token chunk
is then either a step without drafts or a verify step that accepted none, and
counts alone cannot always say which: ``split_steps`` places them where the
counts allow one placement only, replays the ngram proposer where it can, and
otherwise says the split is approximate. It never invents a count the server
did not give.
"""
from __future__ import annotations

from dataclasses import dataclass

from space.records.trace import DECODE, PREFILL, VERIFY, StepKind


@dataclass(frozen=True)
class PlannedStep:
    """One engine step as the stream shows it: chunk ``chunk`` of the response."""

    chunk: int
    kind: StepKind
    num_draft_tokens: int = 0     # the server's per_step_drafted; 0 without drafts
    num_accepted_tokens: int = 0  # the server's per_step_accepted


@dataclass(frozen=True)
class Split:
    steps: list[PlannedStep]
    exact: bool   # False: the chunks allow more than one split, or none
    note: str     # how the steps were placed, in words for the reader


def split_steps(lengths: list[int], accepted: list[int], drafted: list[int],
                replayed: list[list[int]] | None = None,
                replayed_tokens: list[list[int]] | None = None) -> Split:
    """Place the server's verify steps on the stream's chunks.

    ``lengths``: tokens per chunk, the prefill's first. ``accepted``/``drafted``:
    the server's per-step arrays (empty for a baseline). ``replayed``: the drafts
    the ngram proposer makes before each chunk after the first (None: not ngram),
    with ``replayed_tokens`` the chunks' ids to check them against.

    Example: lengths [1, 5, 1, 1, 2], accepted [4, 0, 1], drafted [4, 4, 4]
      -> prefill, verify 4/4, then one of the two one-token chunks verified 4
      drafts and accepted none: two placements, so without a replay the split
      is approximate (placed first).
    """
    if not lengths:
        return Split([], True, "no tokens were streamed")
    rest = lengths[1:]
    prefill = PlannedStep(0, PREFILL)
    if lengths[0] != 1:
        return _as_streamed(lengths, accepted, drafted, "the first chunk held "
                            f"{lengths[0]} tokens: the prefill was merged with later steps")
    if replayed is not None and replayed_tokens is not None:
        plan = _replay_plan(rest, accepted, drafted, replayed, replayed_tokens)
        if plan is not None:
            return Split([prefill, *plan], True, "verify steps placed by replaying the "
                         "ngram proposer over the streamed tokens; it matches the "
                         "server's per-step counts")
    ok = _on_paths(rest, accepted)
    if ok is None:
        return _as_streamed(lengths, accepted, drafted,
                            f"{len(rest)} chunks after the first do not fit the server's "
                            f"{len(accepted)} verify steps (chunks merged: a slow reader "
                            "or --stream-interval above 1)")
    path, unsure = _walk(rest, accepted, ok)
    steps = [prefill, *_planned(path, accepted, drafted)]
    if not unsure:
        return Split(steps, True, "one placement of the server's verify steps fits "
                     "the chunks")
    return Split(steps, False, f"steps {_ranges(unsure)}: which of these one-token "
                 "steps verified drafts (and accepted none) the server does not "
                 "report; they are placed first")


def _fits(length: int, accepted: int, last: bool) -> bool:
    # max_tokens or a stop can cut the last step short of accepted + 1 tokens
    return length == accepted + 1 or (last and 1 <= length <= accepted + 1)


def _on_paths(rest: list[int], accepted: list[int]) -> list[set[int]] | None:
    """For each chunk, the array positions j from which some placement of the
    server's verify steps fits every chunk; None when none fits.

    Forward: positions reachable before each chunk; backward: those from which
    the rest still fits.
    """
    n, m = len(rest), len(accepted)
    reach: list[set[int]] = [{0}]
    for i in range(n):
        reach.append({j2 for j in reach[-1] for j2, _ in _moves(rest, accepted, i, j)})
    ok: list[set[int]] = [set() for _ in range(n)] + [{m} & reach[n]]
    for i in range(n - 1, -1, -1):
        ok[i] = {j for j in reach[i] if any(j2 in ok[i + 1] for j2, _ in
                                             _moves(rest, accepted, i, j))}
    return ok if 0 in ok[0] else None


def _moves(rest, accepted, i, j) -> list[tuple[int, bool]]:
    """(next position, verify?) for chunk i at array position j."""
    out = [(j, False)] if rest[i] == 1 else []
    if j < len(accepted) and _fits(rest[i], accepted[j], i == len(rest) - 1):
        out.append((j + 1, True))
    return out


def _walk(rest, accepted, ok) -> tuple[list[bool], list[int]]:
    """The placement with verify steps as early as possible, and the chunks
    (1-based, the prefill being 0) that another placement would make differently."""
    path, unsure, j = [], [], 0
    for i in range(len(rest)):
        moves = [(j2, v) for j2, v in _moves(rest, accepted, i, j) if j2 in ok[i + 1]]
        kinds = {v for jj in ok[i] for j2, v in _moves(rest, accepted, i, jj) if j2 in ok[i + 1]}
        if len(kinds) > 1:
            unsure.append(i + 1)
        verify = any(v for _, v in moves)
        path.append(verify)
        j += verify
    return path, unsure


def _planned(path: list[bool], accepted: list[int], drafted: list[int]) -> list[PlannedStep]:
    steps, j = [], 0
    for i, verify in enumerate(path):
        if verify:
            steps.append(PlannedStep(i + 1, VERIFY, drafted[j], accepted[j]))
            j += 1
        else:
            steps.append(PlannedStep(i + 1, DECODE))
    return steps


def _replay_plan(rest, accepted, drafted, replayed, tokens) -> list[PlannedStep] | None:
    """The replayed proposer's steps, if they match the server's arrays exactly."""
    path = [bool(d) for d in replayed]
    if sum(path) != len(accepted) or len(path) != len(rest):
        return None
    j = 0
    for i, verify in enumerate(path):
        last = i == len(rest) - 1
        if not verify:
            if rest[i] != 1:
                return None
            continue
        drafts, got = replayed[i], tokens[i]
        agree = next((p for p, (d, t) in enumerate(zip(drafts, got, strict=False)) if d != t),
                     min(len(drafts), len(got)))
        if (len(drafts) != drafted[j] or not _fits(rest[i], accepted[j], last)
                or (not last and agree != accepted[j])):
            return None
        j += 1
    return _planned(path, accepted, drafted)


def _as_streamed(lengths, accepted, drafted, why: str) -> Split:
    """No placement fits: one step per chunk as streamed, and say so."""
    steps = [PlannedStep(0, PREFILL)]
    k = max(drafted, default=0)
    for i, length in enumerate(lengths[1:], start=1):
        if length > 1 and accepted:  # what the boundary suggests: accepted + 1 tokens
            steps.append(PlannedStep(i, VERIFY, max(k, length - 1), length - 1))
        else:
            steps.append(PlannedStep(i, DECODE))
    return Split(steps, False, f"the step split is approximate: {why}; steps follow the "
                 "chunks, the run's totals are the server's own")


def _ranges(idx: list[int]) -> str:
    """[4, 5, 6, 9] -> '4-6, 9'."""
    out, start = [], 0
    for i, a in enumerate(idx):
        if i + 1 == len(idx) or idx[i + 1] != a + 1:
            out.append(str(idx[start]) if idx[start] == a else f"{idx[start]}-{a}")
            start = i + 1
    return ", ".join(out)
