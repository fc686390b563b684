"""Chunks that hold several engine steps (a busy server, a stream interval above 1):
literal cases, then streams merged as vLLM merges them. The run's counts are the
server's own in every case; no step is made up."""
from __future__ import annotations

import random

import pytest

from space.records.counts import SpecCounts
from space.records.trace import BONUS, CORRECTION, DECODE, PREFILL, VERIFY, chunk_groups
from space.server.build import build_trace
from space.server.split import split_steps
from tests.helpers.server_records import INFO, NGRAM, REQ, spec_decode, stream


def _plan(split):
    return [(p.kind, p.num_accepted_tokens, p.num_tokens, p.placement) for p in split.steps]


def _counts_equal_metrics(chunks, accepted, drafted):
    run = build_trace(stream(chunks, spec_decode(accepted, drafted)), INFO, NGRAM, REQ)
    assert run.counts_from == "vllm_metrics"
    assert run.counts == SpecCounts.from_per_step(accepted, drafted)
    assert (run.num_drafts, run.num_draft_tokens, run.num_accepted_tokens) == (
        len(accepted), sum(drafted), sum(accepted))
    assert sum(len(s.emitted_token_ids) for s in run.steps) == sum(map(len, chunks))
    return run


def test_two_verify_steps_in_one_chunk_are_placed_and_marked_merged():
    s = split_steps([1, 9, 1], [4, 3], [4, 4])
    assert not s.exact and "steps 1-2 arrived merged" in s.note
    assert _plan(s) == [(PREFILL, 0, 1, "exact"), (VERIFY, 4, 5, "merged"),
                        (VERIFY, 3, 4, "merged"), (DECODE, 0, 1, "exact")]
    run = _counts_equal_metrics([[1], list(range(2, 11)), [11]], [4, 3], [4, 4])
    # two verify steps in order: each owns its tokens, so their drafts and kinds are known
    assert [st.draft_token_ids for st in run.steps[1:3]] == [[2, 3, 4, 5], [7, 8, 9]]
    assert [st.target_token_kind for st in run.steps[1:3]] == [BONUS, CORRECTION]
    assert run.steps[1].end_s == run.steps[2].end_s  # one chunk, one window
    assert [len(g) for g in chunk_groups(run.steps)] == [1, 2, 1]


def test_zero_accept_verify_folded_into_its_neighbour():
    # chunk 2 = verify 0/4 (one token) + verify 1/4 (two tokens)
    s = split_steps([1, 5, 3], [4, 0, 1], [4, 4, 4])
    assert _plan(s)[2:] == [(VERIFY, 0, 1, "merged"), (VERIFY, 1, 2, "merged")]
    run = _counts_equal_metrics([[1], [2, 3, 4, 5, 6], [7, 8, 9]], [4, 0, 1], [4, 4, 4])
    assert run.acceptance_rate == pytest.approx(5 / 12)  # not 6/9: a 3-token chunk is not 2/2


def test_decode_and_verify_in_one_chunk_name_no_draft():
    """The server does not say how they interleave: the steps are there, with the
    server's counts, but no token is said to be a draft or a correction."""
    chunks = [[1], [2, 3, 4, 5, 6], [7], [8, 9, 10, 11]]   # chunks 2-3: merged, order unknown
    s = split_steps([1, 5, 1, 4], [4, 0, 2], [4, 4, 4])
    assert {p.placement for p in s.steps[2:]} == {"merged"}
    run = _counts_equal_metrics(chunks, [4, 0, 2], [4, 4, 4])
    merged = [st for st in run.steps if st.placement == "merged"]
    assert sorted(st.kind for st in merged) == [DECODE, VERIFY, VERIFY]
    assert all(st.draft_token_ids == [] and st.target_token_kind is None for st in merged)
    assert sum(st.num_unreported_draft_tokens for st in merged) == 8


def test_merged_prefill():
    s = split_steps([6, 1], [4], [4])          # prefill + verify 4/4 in the first chunk
    assert _plan(s) == [(PREFILL, 0, 1, "merged"), (VERIFY, 4, 5, "merged"),
                        (DECODE, 0, 1, "exact")]
    run = _counts_equal_metrics([[1, 2, 3, 4, 5, 6], [7]], [4], [4])
    assert run.steps[1].draft_token_ids == [2, 3, 4, 5]  # prefill then verify: order known


def test_the_issues_inflated_case_takes_the_servers_counts():
    """Before: a chunk of L tokens became a verify step of L - 1 accepted and
    one-token chunks decode steps, so verify steps that accepted nothing vanished."""
    accepted, drafted = [3, 0, 0, 3, 1, 0], [4] * 6
    chunks = [[1], [2, 3, 4, 5, 6], [7, 8, 9, 10, 11], [12, 13, 14]]  # interval 4, merged
    run = _counts_equal_metrics(chunks, accepted, drafted)
    assert run.acceptance_rate == pytest.approx(7 / 24)
    assert run.num_accepted_tokens_per_pos == [3, 2, 2, 0]


def test_chunks_that_fit_nothing_merge_every_step_and_keep_the_counts():
    s = split_steps([1, 2, 3], [4, 4], [4, 4])  # 5 tokens for two steps of 5
    assert not s.exact and "fit no placement" in s.note
    assert {p.placement for p in s.steps} == {"merged"}
    _counts_equal_metrics([[1], [2, 3], [4, 5, 6]], [4, 4], [4, 4])


def _engine_steps(rng: random.Random, k: int, n: int) -> list[tuple[str, int]]:
    """A made-up request: (kind, accepted) per step after the prefill."""
    return [("verify", rng.choice([0, 0, 1, 2, k])) if rng.random() < 0.7 else ("decode", 0)
            for _ in range(n)]


def _merge(sizes: list[int], interval: int) -> list[list[int]]:
    """Step sizes into chunks as vLLM's stream interval does: a chunk is sent once it
    holds ``interval`` tokens (the first token at once, the rest at the end)."""
    chunks, cur = [[0]], []
    for size in sizes:
        cur.append(size)
        if sum(cur) >= interval:
            chunks.append(cur)
            cur = []
    if cur:
        chunks.append(cur)
    return chunks


@pytest.mark.parametrize("interval", [1, 2, 4, 8])
def test_merged_streams_keep_counts_and_place_exact_steps_truly(interval):
    rng = random.Random(interval)
    for _ in range(40):
        steps = _engine_steps(rng, 4, rng.randint(1, 30))
        sizes = [a + 1 if kind == "verify" else 1 for kind, a in steps]
        accepted = [a for kind, a in steps if kind == "verify"]
        drafted = [4] * len(accepted)
        grouped = _merge(sizes, interval)
        lengths = [1] + [sum(g) for g in grouped[1:]]
        split = split_steps(lengths, accepted, drafted)
        assert "fit no placement" not in split.note
        assert len(split.steps) == 1 + len(steps)  # no step made up, none lost
        for p in split.steps:
            if p.placement == "exact" and p.kind != PREFILL:  # alone in its chunk: the truth
                (kind, a), = [steps[sum(len(g) for g in grouped[1:p.chunk])]]
                assert (p.kind, p.num_accepted_tokens) == (kind, a) and len(grouped[p.chunk]) == 1
        if interval == 1:
            assert all(p.placement != "merged" for p in split.steps)
        ids = iter(range(1, 10_000))
        chunks = [[next(ids) for _ in range(n)] for n in lengths]
        _counts_equal_metrics(chunks, accepted, drafted)


def test_views_show_merged_chunks_without_making_up_kinds():
    """Token view: a chunk of a decode and a verify step, order unknown, is shown as
    merged tokens (no draft, correction or bonus); a chunk of two verify steps keeps
    its kinds. Timeline: one bar per merged chunk. Stepper: says so in words."""
    from vis.stepper import describe_step
    from vis.timeline import MERGED_NAME, timeline_figure
    from vis.tokens import token_entries, token_view_html

    chunks = [[1], [2, 3, 4, 5, 6], [7], [8, 9, 10, 11]]
    run = _counts_equal_metrics(chunks, [4, 0, 2], [4, 4, 4])
    statuses = [e.status for e in token_entries(run)]
    assert statuses[:6] == [PREFILL, "accepted", "accepted", "accepted", "accepted", BONUS]
    assert statuses[6:] == ["merged"] * 5
    html = token_view_html(run)
    assert html.count('data-status="merged"') == 5 and 'data-legend="merged"' in html
    assert "tok-unreported" not in html  # no made-up rejected marks in the merged chunk
    fig = timeline_figure(run)
    merged = [b for b in fig.data if b.name == MERGED_NAME]
    assert len(merged) == 1 and len(merged[0].x) == 1
    assert "2 verify, 1 decode" in str(merged[0].customdata[0][1])
    steps = sum(len(b.x) for b in fig.data if b.name in (PREFILL, VERIFY, DECODE))
    assert steps == 2  # the prefill and the exact verify step
    d = describe_step(run, 3)
    assert "does not say which" in d["sentence"] and 'data-status="merged"' in d["emitted_html"]

    two = _counts_equal_metrics([[1], list(range(2, 11)), [11]], [4, 3], [4, 4])
    assert "merged" not in [e.status for e in token_entries(two)]
