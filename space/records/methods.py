"""Speculative methods: the one table of what each vLLM method needs (pure)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

Method = Literal["ngram", "draft_model", "suffix", "eagle", "eagle3", "mtp"]


@dataclass(frozen=True)
class MethodInfo:
    takes_draft: bool           # speculative_config["model"]: a draft folder, hub id or head
    needs_draft: bool           # ... and it must be given (mtp can use the target's own layers)
    needs_gpu: bool             # trained heads from the hub and a CUDA device
    lookup: bool                # proposes by matching the context, no model: its cost is a
    #                             share of the step, not a forward pass per draft token
    requires: tuple[str, ...]   # PyPI packages beyond vLLM
    vllm_keys: tuple[str, ...]  # SpeculativeConfig keys it reads beyond method, k and model


METHODS: dict[Method, MethodInfo] = {
    "ngram": MethodInfo(False, False, False, True, (),
                        ("prompt_lookup_min", "prompt_lookup_max")),
    "suffix": MethodInfo(False, False, False, True, ("arctic-inference",),
                         ("suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
                          "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob")),
    "draft_model": MethodInfo(True, True, False, False, (), ("draft_tensor_parallel_size",)),
    "eagle": MethodInfo(True, True, True, False, (), ()),
    "eagle3": MethodInfo(True, True, True, False, (), ()),
    "mtp": MethodInfo(True, False, True, False, (), ()),
}
assert set(METHODS) == set(get_args(Method))

# Keys any method may carry: the synthetic rejection sampler forces an acceptance
# rate whatever the proposer (space/runs/tipping.py sets them).
SYNTHETIC_VLLM_KEYS = ("rejection_sample_method", "synthetic_acceptance_length",
                       "synthetic_acceptance_rates")


def info(method: str) -> MethodInfo | None:
    """The method's row; None for an unknown name or the baseline."""
    return METHODS.get(method) if method else None  # type: ignore[call-overload]


def names(**where: object) -> tuple[Method, ...]:
    """Methods whose properties match, in table order. Example:
        >>> names(lookup=True)
        ('ngram', 'suffix')
        >>> names(needs_gpu=True)
        ('eagle', 'eagle3', 'mtp')
    """
    return tuple(m for m, i in METHODS.items()
                 if all(getattr(i, key) == want for key, want in where.items()))

