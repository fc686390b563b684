"""From a k x concurrency sweep to a config you can deploy (pure derivation): vLLM's
``num_speculative_tokens_per_batch_size`` (validated with vLLM's own reader in
``space/engine/dynamic.py``) and the ``vllm serve`` command.
"""
from __future__ import annotations

import json
import math
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from space.judge.checklist import NO_GAIN_SPEEDUP
from space.records.run import RunConfig

DEFAULT_MAX_BATCH = 256  # vLLM's default max_num_seqs for `vllm serve`
GRID_COLUMNS = ["k", "concurrency", "speedup", "speedup_low", "speedup_high",
                "throughput_speedup", "acceptance_rate", "mean_acceptance_length",
                "baseline_tpot_ms", "speculative_tpot_ms", "verdict"]


@dataclass(frozen=True)
class Choice:
    """The best k at one measured concurrency (0: speculation loses there)."""

    concurrency: int
    k: int
    speedup: float  # the chosen k's speedup, or the best one's when k = 0


def best_k(rows: Iterable[Mapping[str, Any]]) -> list[Choice]:
    """The best k per concurrency of a k x concurrency table.

    Example:
        >>> rows = [{"k": 2, "concurrency": 1, "speedup": 1.4}, {"k": 4, "concurrency": 1, "speedup": 1.6},
        ...         {"k": 2, "concurrency": 4, "speedup": 1.2}, {"k": 4, "concurrency": 4, "speedup": 1.1},
        ...         {"k": 2, "concurrency": 8, "speedup": 0.9}, {"k": 4, "concurrency": 8, "speedup": 0.7}]
        >>> [(c.concurrency, c.k) for c in best_k(rows)]
        [(1, 4), (4, 2), (8, 0)]
    """
    by_c: dict[int, list[tuple[float, int]]] = {}
    for r in rows:
        s = r.get("speedup")
        if s is None or (isinstance(s, float) and math.isnan(s)):
            continue
        by_c.setdefault(int(r["concurrency"]), []).append((float(s), int(r["k"])))
    out = []
    for c in sorted(by_c):
        # ties: the smaller k (less drafting for the same gain)
        s, k = max(by_c[c], key=lambda sk: (sk[0], -sk[1]))
        out.append(Choice(c, k if s >= NO_GAIN_SPEEDUP else 0, s))
    return out


def schedule(choices: list[Choice], max_batch: int = DEFAULT_MAX_BATCH) -> list[list[int]]:
    """vLLM's ``num_speculative_tokens_per_batch_size`` for the choices: inclusive
    ``[min_batch, max_batch, k]`` entries (k = 0: no speculation), each measured
    concurrency's k holding up to the next one, as vLLM carries a k across a gap.

    Example:
        >>> schedule([Choice(1, 4, 1.6), Choice(2, 4, 1.5), Choice(4, 2, 1.2), Choice(8, 0, 0.9)],
        ...          max_batch=64)
        [[1, 3, 4], [4, 7, 2], [8, 64, 0]]
    """
    if not choices:
        raise ValueError("no measured concurrency to build a schedule from")
    cs = [c.concurrency for c in choices]
    if max_batch < cs[-1]:
        raise ValueError(f"max_batch {max_batch} is below the largest measured concurrency {cs[-1]}")
    starts = [1] + cs[1:]
    ends = [c - 1 for c in cs[1:]] + [max_batch]
    merged: list[list[int]] = []
    for start, end, choice in zip(starts, ends, choices, strict=True):
        if merged and merged[-1][2] == choice.k:
            merged[-1][1] = end
        else:
            merged.append([start, end, choice.k])
    return merged


def serve_command(model: str, spec_config: dict[str, Any] | None,
                  max_batch: int = DEFAULT_MAX_BATCH) -> str:
    """The full ``vllm serve`` command line (shell-quoted)."""
    parts = ["vllm", "serve", shlex.quote(model), "--max-num-seqs", str(max_batch)]
    if spec_config is not None:
        parts += ["--speculative-config", shlex.quote(json.dumps(spec_config))]
    return " ".join(parts)


@dataclass
class DeployConfig:
    """The derivation's result, everything the page and the CLI show."""

    choices: list[Choice]
    schedule: list[list[int]]
    speculative_config: dict[str, Any] | None
    command: str
    max_batch: int

    def describe(self) -> str:
        lines = ["best k per concurrency (0: speculation loses):"]
        lines += [f"  concurrency {c.concurrency:>3}: k = {c.k} ({c.speedup:.2f}x)"
                  for c in self.choices]
        lines.append("speculation loses at every measured concurrency: serve without "
                     "--speculative-config" if self.speculative_config is None else
                     f"--speculative-config '{json.dumps(self.speculative_config)}'")
        return "\n".join([*lines, self.command])


def derive(rows: Iterable[Mapping[str, Any]], *, model: str, method: str,
           draft: str | None = None, extra: Mapping[str, Any] | None = None,
           max_batch: int = DEFAULT_MAX_BATCH) -> DeployConfig:
    """Best k per concurrency, the schedule, the ``--speculative-config`` dict (None when
    speculation loses everywhere) and the command. ``num_speculative_tokens`` is the
    largest k, since vLLM caps every entry at it (test_dynamic_k shows one)."""
    choices = best_k(rows)
    k_schedule = schedule(choices, max_batch)
    largest = max(k for _, _, k in k_schedule)
    cfg = None if largest == 0 else {
        "method": method, **({"model": draft} if draft else {}), "num_speculative_tokens": largest,
        "num_speculative_tokens_per_batch_size": k_schedule, **(extra or {})}
    return DeployConfig(choices, k_schedule, cfg, serve_command(model, cfg, max_batch), max_batch)


def derive_for_run(rows: Iterable[Mapping[str, Any]], config: RunConfig,
                   max_batch: int = DEFAULT_MAX_BATCH) -> DeployConfig:
    """``derive`` for the pair a run was made with: its resolved model and draft paths,
    and its other vLLM speculative keys."""
    extra = {k: v for k, v in (config.speculative_config or {}).items()
             if k not in ("method", "model", "num_speculative_tokens")}
    return derive(rows, model=config.model_path or config.model, method=str(config.method),
                  draft=config.draft_path or config.draft_model, extra=extra,
                  max_batch=max_batch)
