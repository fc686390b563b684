"""The maths of speculative decoding (Leviathan et al. 2023; Chen et al. 2023); pure.
alpha: per-token acceptance (NOT vLLM's acceptance rate (tau - 1) / gamma, which never
checks drafts after the first rejection); gamma: drafts per verify step (vLLM's k); tau:
tokens per verify step (vLLM's mean acceptance length); c: draft token / decode step cost.
"""
from __future__ import annotations

from collections.abc import Sequence

_BISECT_ITERS = 60  # 2^-60 of [0, 1]: far below float noise in tau


def expected_tokens_per_step(alpha: float, gamma: int) -> float:
    """tau = 1 + alpha + ... + alpha^gamma: draft i is kept only if drafts 1..i all were."""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    _check_gamma(gamma)
    if alpha >= 1.0:
        return float(gamma + 1)
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def alpha_from_acceptance_length(tau: float, gamma: int) -> float:
    """The alpha whose tau is ``tau`` (bisection: tau rises with alpha); clamped to [0, 1].

    Example:
        >>> round(alpha_from_acceptance_length(3.3616, 4), 6)
        0.8
        >>> round(alpha_from_acceptance_length(1.5, 1), 6)   # gamma=1: tau = 1 + alpha
        0.5
    """
    _check_gamma(gamma)
    if tau <= 1.0:
        return 0.0
    if tau >= gamma + 1:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(_BISECT_ITERS):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected_tokens_per_step(mid, gamma) < tau else (lo, mid)
    return (lo + hi) / 2


def acceptance_rate_from_length(tau: float, gamma: int) -> float:
    """vLLM's acceptance rate (tau - 1) / gamma (exact when every step drafted gamma)."""
    _check_gamma(gamma)
    return (tau - 1.0) / gamma


def ideal_speedup(alpha: float, gamma: int, c: float) -> float:
    """S = tau / (gamma c + 1), verifying gamma + 1 tokens at one decode step's cost
    (memory-bound decode). Some gamma gives S > 1 iff alpha > c."""
    if c < 0:
        raise ValueError(f"cost ratio c must be >= 0, got {c}")
    return expected_tokens_per_step(alpha, gamma) / (gamma * c + 1.0)


def best_gamma(alpha: float, c: float) -> tuple[int, float]:
    """The integer gamma in [1, 16] with the largest ideal speedup, and that S (no
    closed form); S < 1: no gamma helps."""
    best = max(range(1, 17), key=lambda g: ideal_speedup(alpha, g, c))
    return best, ideal_speedup(alpha, best, c)


def proposer_share_speedup(alpha: float, gamma: int, share: float) -> float:
    """Ideal S = tau (1 - share) for a lookup proposer (ngram, suffix), whose cost is a
    fixed share of each step whatever gamma; ``share`` plays the role of c (in [0, 1):
    the checklist, its one caller, refuses any other)."""
    return expected_tokens_per_step(alpha, gamma) * (1.0 - share)


def measured_cost_speedup(tokens_per_verify_step: float, baseline_decode_step_s: float,
                          verify_step_s: float) -> float:
    """tau * t_decode / t_verify, the verify step with its drafting inside (vLLM v1
    proposes inside the engine step)."""
    if baseline_decode_step_s <= 0 or verify_step_s <= 0:
        raise ValueError("step times must be positive")
    return tokens_per_verify_step * baseline_decode_step_s / verify_step_s


def break_even_acceptance_length(gamma: int, c: float) -> float:
    """tau where the ideal speedup is 1: gamma c + 1."""
    return gamma * c + 1.0


def measured_break_even_acceptance_length(baseline_decode_step_s: float,
                                          verify_step_s: float) -> float:
    """tau where ``measured_cost_speedup`` is 1: t_verify / t_decode."""
    if baseline_decode_step_s <= 0:
        raise ValueError("baseline decode step time must be positive")
    return verify_step_s / baseline_decode_step_s


def repetition_share(token_ids: Sequence[int], n: int = 4) -> float:
    """Share of tokens covered by an n-gram that occurred earlier: the first pass
    through a loop is not covered, every repeat is (loops inflate ngram acceptance)."""
    tokens = list(token_ids)
    if not tokens:
        return 0.0
    seen: set[tuple[int, ...]] = set()
    covered = [False] * len(tokens)
    for start in range(len(tokens) - n + 1):
        gram = tuple(tokens[start:start + n])
        if gram in seen:
            covered[start:start + n] = [True] * n
        seen.add(gram)
    return sum(covered) / len(tokens)


def _check_gamma(gamma: int) -> None:
    if gamma < 1:
        raise ValueError(f"gamma must be >= 1, got {gamma}")
