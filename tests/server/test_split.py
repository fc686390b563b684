"""Steps from chunk sizes and the server's per-step arrays: literal cases."""
from __future__ import annotations

from space.server.ngram import ngram_drafts
from space.server.split import split_steps


def _kinds(split):
    return [(p.kind, p.num_accepted_tokens) for p in split.steps]


def test_one_placement_is_exact():
    s = split_steps([1, 5, 1, 2], [4, 1], [4, 4])
    assert s.exact
    assert _kinds(s) == [("prefill", 0), ("verify", 4), ("decode", 0), ("verify", 1)]


def test_zero_accept_among_one_token_chunks_is_uncertain():
    """One of two one-token chunks verified 4 drafts and accepted none: counts
    cannot say which; the split says so and names the steps."""
    s = split_steps([1, 5, 1, 1, 2], [4, 0, 1], [4, 4, 4])
    assert not s.exact and "steps 2-3" in s.note
    assert sum(p.kind == "verify" for p in s.steps) == 3
    assert [p.placement for p in s.steps] == ["exact", "exact", "uncertain", "uncertain",
                                              "exact"]


def test_ngram_replay_places_the_zero_accept_step():
    prompt = [7, 8, 9, 7, 8, 5, 6]
    chunks = [[1], [2]]                       # after the prefill token 1: one more
    context = prompt + chunks[0]
    replayed = [ngram_drafts(context, 2, 5, 4, 100)]
    assert replayed == [[]]                   # [8, 1] never occurred: no drafts
    s = split_steps([1, 1], [], [], replayed, chunks[1:])
    assert s.exact and _kinds(s) == [("prefill", 0), ("decode", 0)]


def test_ngram_drafts_follow_vllms_rule():
    # longest suffix first ([7, 8] beats [8]); the earliest occurrence; k tokens after it
    assert ngram_drafts([7, 8, 1, 2, 7, 8, 3, 7, 8], 1, 5, 2, 100) == [1, 2]
    assert ngram_drafts([1, 2, 3], 2, 5, 4, 100) == []
    assert ngram_drafts([5, 6, 7, 8, 5, 6], 2, 5, 4, 7) == [7]  # one token of room left


def test_last_step_cut_by_max_tokens():
    s = split_steps([1, 5, 3], [4, 4], [4, 4])   # the last verify step kept 3 of 5
    assert s.exact and _kinds(s)[-1] == ("verify", 4)


def test_baseline_is_all_decode():
    s = split_steps([1, 1, 1], [], [])
    assert s.exact and [p.kind for p in s.steps] == ["prefill", "decode", "decode"]
