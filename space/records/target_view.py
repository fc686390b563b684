"""What the target thought of each draft it verified (the accepted ones and the first rejected
one), scored after the timed runs by one prefill on the baseline engine (space/engine/score.py; pure).
Probabilities are vLLM's acceptance rule's: the softmax at temperature 0, else after temperature and
top-p; a draft is accepted with probability min(1, p / q) (q = 1: vLLM drafts greedily).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

TOP_N: Final = 5              # alternatives kept per position
GREEDY_EPS: Final = 1e-5      # vLLM's _SAMPLING_EPS: below it a temperature means greedy


@dataclass
class TargetView:
    """The target's distribution at one verified draft position."""

    draft_pos: int                 # 0-based position among the step's drafts
    draft_token_id: int
    draft_prob: float              # the target's probability of the drafted token
    top_token_ids: list[int] = field(default_factory=list)  # the target's top TOP_N, likeliest first
    top_probs: list[float] = field(default_factory=list)
    draft_q: float | None = 1.0    # the draft's probability of its token: 1 = greedy (one-hot)

    def acceptance_prob(self) -> float | None:
        """min(1, p / q): the chance a sampled run accepts this draft (None: q unknown)."""
        if self.draft_q is None or self.draft_q <= 0:
            return None
        return min(1.0, self.draft_prob / self.draft_q)

    @property
    def chosen_token_id(self) -> int | None:
        return self.top_token_ids[0] if self.top_token_ids else None


@dataclass
class Explanation:
    """How a run's target views were scored."""

    temperature: float             # the run's; > 0 means probabilities are after it and top_p
    top_p: float
    score_s: float                 # wall time of the scoring pass (never inside the timed runs)
    num_scored_tokens: int         # tokens the scoring prefill read (prompt + output)
    engine: str = "baseline"       # the engine that scored

    @property
    def sampled(self) -> bool:
        return self.temperature >= GREEDY_EPS
