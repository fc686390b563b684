"""vLLM's ngram proposer, replayed over streamed token ids (pure): it is deterministic,
so the replay tells which one-token chunks were verify steps that accepted none.
``space.server.split`` uses it only where it agrees with the server's per-step arrays.
"""
from __future__ import annotations


def ngram_drafts(context: list[int], min_n: int, max_n: int, k: int,
                 max_model_len: int) -> list[int]:
    """The tokens vLLM's ngram proposer drafts after ``context``
    (vllm/v1/spec_decode/ngram_proposer.py): the longest suffix of n in
    [min_n, max_n] tokens that occurred earlier, the earliest such match; the
    drafts are the (at most k) tokens after it.

    Example: context [5, 6, 7, 8, 5, 6], min_n=2, max_n=5, k=4
      -> the suffix [5, 6] occurred at 0; the drafts are what followed: [7, 8, 5, 6].
    """
    total = len(context)
    k = min(k, max_model_len - total)
    if total < min_n or k <= 0:
        return []
    for n in range(min(max_n, total - 1), min_n - 1, -1):
        suffix = context[total - n:]
        # An earlier occurrence, overlapping allowed, that ends before the last token.
        for start in range(0, total - n):
            if context[start:start + n] == suffix:
                return context[start + n:start + n + k]
    return []
