"""What the target model thought of each draft it verified (trace version 4).

Scored after the timed runs (``space/engine/score.py``): one prefill of
prompt + output on the baseline engine gives, at every output position, the
target's distribution over the next token. A verified draft position is an
output position whose context is exactly the prompt plus the output before it,
so that prefill sees what the target saw while verifying.

Verified positions of a verify step with ``num_accepted_tokens = n`` are the
first ``n`` drafts (accepted) and, when a draft was rejected (the step ends
in a correction), draft ``n``: the first rejected one (``StepRecord.draft_fates``).
Drafts after it were never compared with the target's choice (they were
conditioned on the rejected token), so they have no view.

Probabilities are the ones vLLM's acceptance rule uses: at temperature 0 the
target's softmax (the rule is "accept iff the draft is the argmax"); above it,
softmax(logits / temperature) after top-p, where a draft is accepted with
probability min(1, p / q). vLLM drafts greedily (``draft_sample_method``
"greedy", its default), so q = 1 for ngram and draft_model alike.

Pure: no vLLM, no torch.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

TOP_N: Final = 5              # alternatives kept per position
GREEDY_EPS: Final = 1e-5      # vLLM's _SAMPLING_EPS: below it a temperature means greedy


@dataclass
class TargetView:
    """The target's distribution at one verified draft position.

    Example: drafts [' rows', ...] at a position where the target preferred
    'rows': draft_prob 0.07, top_token_ids [rows, ' rows', ...],
    top_probs [0.81, 0.07, ...].
    """

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
        """The target's likeliest token here (its greedy choice)."""
        return self.top_token_ids[0] if self.top_token_ids else None


@dataclass
class Explanation:
    """How a run's target views were scored; on ``RunTrace.explanation``."""

    temperature: float             # the run's; > 0 means probabilities are after it and top_p
    top_p: float
    score_s: float                 # wall time of the scoring pass (never inside the timed runs)
    num_scored_tokens: int         # tokens the scoring prefill read (prompt + output)
    engine: str = "baseline"       # the engine that scored

    @property
    def sampled(self) -> bool:
        return self.temperature >= GREEDY_EPS
