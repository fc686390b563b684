"""Engine steps from a server's stream (pure; placements explained in docs/server-truth.md).
``split_steps`` places the server's per-step verify counts on the chunks (one chunk per
step on an idle server with ``--stream-interval 1``, merged otherwise); it makes no count.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import groupby

from space.records.trace import (
    DECODE,
    EXACT,
    MERGED,
    PREFILL,
    UNCERTAIN,
    VERIFY,
    StepKind,
    StepPlacement,
)


@dataclass(frozen=True)
class PlannedStep:
    """One engine step as the stream shows it: it arrived with chunk ``chunk``;
    a merged step's window starts where chunk ``first_chunk`` did."""

    chunk: int
    kind: StepKind
    num_draft_tokens: int = 0     # the server's per_step_drafted; 0 without drafts
    num_accepted_tokens: int = 0  # the server's per_step_accepted
    num_tokens: int = 1           # output tokens the step emitted (as placed)
    placement: StepPlacement = EXACT
    first_chunk: int = -1         # -1: ``chunk`` (the step is alone in its chunk)


@dataclass(frozen=True)
class Split:
    steps: list[PlannedStep]
    exact: bool   # False: some steps are merged or uncertain (the note says which)
    note: str     # how the steps were placed, in words for the reader


# A chunk's content in one fit: (verify index before, verify index after, decode steps,
# tokens of the last verify step). Example: (2, 4, 1, 3) holds verify steps 2 and 3 and
# one decode step; verify step 3 emitted 3 tokens.
Move = tuple[int, int, int, int]


def split_steps(lengths: list[int], accepted: list[int], drafted: list[int],
                replayed: list[list[int]] | None = None,
                replayed_tokens: list[list[int]] | None = None) -> Split:
    """Place the server's verify steps on the stream's chunks.

    ``lengths``: tokens per chunk, the prefill's first. ``accepted``/``drafted``:
    the server's per-step arrays (empty for a baseline). ``replayed``: the drafts
    the ngram proposer makes before each chunk after the first (None: not ngram),
    with ``replayed_tokens`` the chunks' ids to check them against.

    Example: lengths [1, 5, 1, 1, 2], accepted [4, 0, 1], drafted [4, 4, 4]
      -> prefill, verify 4/4, then either one-token chunk verified 4 drafts and
      accepted none: without a replay both are uncertain (the verify placed first).
    """
    if not lengths:
        return Split([], True, "no tokens were streamed")
    if replayed is not None and replayed_tokens is not None and lengths[0] == 1:
        plan = _replay_plan(lengths[1:], accepted, drafted, replayed, replayed_tokens)
        if plan is not None:
            return Split([PlannedStep(0, PREFILL), *plan], True, "verify steps placed by "
                         "replaying the ngram proposer over the streamed tokens; it matches "
                         "the server's per-step counts")
    moves = _fitting_moves(lengths, accepted, cut=False) or _fitting_moves(lengths, accepted,
                                                                            cut=True)
    if moves is None:
        decodes = max(0, sum(lengths) - 1 - sum(a + 1 for a in accepted))
        steps = _unit(0, len(lengths) - 1, (0, len(accepted), decodes, 0), accepted, drafted)
        return Split(steps, False, f"the {len(lengths)} chunks fit no placement of the "
                     f"server's {len(accepted)} verify steps: every step is merged")
    steps = _place(moves, accepted, drafted)
    return Split(steps, all(p.placement == EXACT for p in steps), _note(steps))


def _moves(length: int, j: int, accepted: list[int], first: bool, cut: bool) -> list[Move]:
    """Every content of a chunk of ``length`` tokens starting at verify index j.

    With ``cut`` the chunk may end in a verify step that max_tokens or a stop cut
    short of ``accepted + 1`` tokens; it fills the rest of its chunk.
    """
    room = length - 1 if first else length
    out: list[Move] = []
    used, m = 0, 0
    while True:
        if room - used >= 0 and (room > 0 or first):
            out.append((j, j + m, room - used, accepted[j + m - 1] + 1 if m else 0))
        if cut and j + m < len(accepted) and 1 <= room - used < accepted[j + m] + 1:
            out.append((j, j + m + 1, 0, room - used))  # the last step, cut short
        if j + m >= len(accepted) or used + accepted[j + m] + 1 > room:
            return out
        used += accepted[j + m] + 1
        m += 1


def _fitting_moves(lengths: list[int], accepted: list[int], cut: bool) -> list[list[Move]] | None:
    """For each chunk, its contents that some fit of the whole stream uses; None
    when nothing fits. Forward: verify indices reachable before each chunk;
    backward: those from which the rest still fits.

    ``cut``: the last step may be cut short; then the last chunk holds as few steps
    as a fit allows (on an unmerged stream a step cut short is alone in its chunk).
    """
    n = len(lengths)

    def moves(i: int, j: int) -> list[Move]:
        return _moves(lengths[i], j, accepted, i == 0, cut and i == n - 1)

    reach: list[set[int]] = [{0}]
    for i in range(n):
        reach.append({mv[1] for j in reach[-1] for mv in moves(i, j)})
    out: list[list[Move]] = [[] for _ in range(n)]
    last = [mv for j in sorted(reach[n - 1]) for mv in moves(n - 1, j)
            if mv[1] == len(accepted)]
    fewest = min((_num_steps(mv, n == 1) for mv in last), default=0)
    out[n - 1] = [mv for mv in last if not cut or _num_steps(mv, n == 1) == fewest]
    ok = {mv[0] for mv in out[n - 1]}
    for i in range(n - 2, -1, -1):
        out[i] = [mv for j in sorted(reach[i]) for mv in moves(i, j) if mv[1] in ok]
        ok = {mv[0] for mv in out[i]}
    return out if 0 in ok else None


def _place(moves: list[list[Move]], accepted: list[int], drafted: list[int]) -> list[PlannedStep]:
    """Cut the chunks where the verify index is certain (one in every fit); a unit
    between two such cuts that is one chunk with one content is placed as it is;
    one whose chunks hold one step each in every fit is uncertain; any other
    is merged into one window."""
    n = len(moves)
    certain = [c for c in range(1, n) if len({mv[0] for mv in moves[c]}) == 1] + [n]
    steps: list[PlannedStep] = []
    start, j = 0, 0
    for end in certain:
        path = _earliest_verify_path(moves, start, end - 1, j)
        if end - start == 1 and len(moves[start]) == 1:
            steps += _unit(start, start, path[0], accepted, drafted)
        elif all(_num_steps(mv, c == 0) == 1 for c in range(start, end) for mv in moves[c]):
            for c, mv in zip(range(start, end), path, strict=True):
                steps += [replace(p, placement=UNCERTAIN)
                          for p in _unit(c, c, mv, accepted, drafted)]
        else:
            window = (j, path[-1][1], sum(mv[2] for mv in path), path[-1][3])
            steps += _unit(start, end - 1, window, accepted, drafted)
        start, j = end, path[-1][1]
    return steps


def _num_steps(mv: Move, first: bool) -> int:
    return (mv[1] - mv[0]) + mv[2] + first


def _earliest_verify_path(moves: list[list[Move]], start: int, end: int, j: int) -> list[Move]:
    """One fit through chunks start..end from verify index j, verify steps as
    early as they can be (every kept move leads on to a fit)."""
    path = []
    for c in range(start, end + 1):
        mv = max((mv for mv in moves[c] if mv[0] == j), key=lambda m: (m[1], -m[2]))
        path.append(mv)
        j = mv[1]
    return path


def _unit(first: int, last: int, mv: Move, accepted: list[int],
          drafted: list[int]) -> list[PlannedStep]:
    """The steps that chunks first..last held, ``mv`` = (b, e, decodes, tail): the prefill
    if first is 0, then ``decodes`` decode steps, then verify steps b..e-1 (the last
    emitting ``tail`` tokens; 0: all its own). Alone in one chunk: exact; else merged,
    in this order (the server does not say how they interleave)."""
    b, e, decodes, tail = mv
    plan: list[tuple[StepKind, int, int, int]] = [(PREFILL, 0, 0, 1)] if first == 0 else []
    plan += [(DECODE, 0, 0, 1)] * decodes
    for v in range(b, e):
        n = tail if v == e - 1 and tail else accepted[v] + 1
        plan.append((VERIFY, drafted[v], accepted[v], n))
    alone = len(plan) == 1 and first == last
    return [PlannedStep(last, kind, nd, na, n, EXACT if alone else MERGED,
                        -1 if alone else first)
            for kind, nd, na, n in plan]


def _replay_plan(rest, accepted, drafted, replayed, tokens) -> list[PlannedStep] | None:
    """The replayed proposer's steps (one per chunk), if they match the server's
    arrays exactly."""
    path = [bool(d) for d in replayed]
    if sum(path) != len(accepted) or len(path) != len(rest):
        return None
    j, steps = 0, []
    for i, verify in enumerate(path):
        last = i == len(rest) - 1
        if not verify:
            if rest[i] != 1:
                return None
            steps.append(PlannedStep(i + 1, DECODE))
            continue
        drafts, got = replayed[i], tokens[i]
        agree = next((p for p, (d, t) in enumerate(zip(drafts, got, strict=False)) if d != t),
                     min(len(drafts), len(got)))
        fits = rest[i] == accepted[j] + 1 or (last and 1 <= rest[i] <= accepted[j])
        if len(drafts) != drafted[j] or not fits or (not last and agree != accepted[j]):
            return None
        steps.append(PlannedStep(i + 1, VERIFY, drafted[j], accepted[j], rest[i]))
        j += 1
    return steps


def _note(steps: list[PlannedStep]) -> str:
    parts = []
    for placement, why in (
            (MERGED, " arrived merged in fewer chunks (a busy server or a stream interval "
                     "above 1): their times are their chunks', their order within a chunk "
                     "is known only where they are one kind"),
            (UNCERTAIN, ": which of these one-token steps verified drafts (and accepted "
                        "none) the server does not report; they are placed first")):
        idx = [i for i, p in enumerate(steps) if p.placement == placement]
        if idx:
            parts.append(f"steps {_ranges(idx)}{why}")
    if not parts:
        return "one placement of the server's verify steps fits the chunks"
    return "; ".join(parts) + "; the run's counts are the server's own"


def _ranges(idx: list[int]) -> str:
    """[4, 5, 6, 9] -> '4-6, 9'."""
    runs = [[i for _, i in run] for _, run in groupby(enumerate(idx), lambda p: p[1] - p[0])]
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
