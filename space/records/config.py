"""Engine and request settings, validated before any engine is built (pure)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from space.records.methods import METHODS, info, names

K_RANGE = (1, 16)
# The sweep "variable" of a k x concurrency sweep (one concurrency sweep per k).
GRID = "k_x_concurrency"
# "cold": every run starts with an empty prefix cache, so repeats measure a new
# prompt's cost; "warm": runs reuse earlier runs' KV blocks (vLLM's default).
PREFIX_CACHE_MODES = ("cold", "warm")
MiB = 1 << 20


class ConfigError(ValueError):
    """Bad user input; the message is one line, for the user."""


def at_least_one(**values: int) -> None:
    """``ConfigError`` naming, as its flag, the first count below 1.

    Example:
        >>> at_least_one(repeats=2, per_group=0)
        Traceback (most recent call last):
        ...
        space.records.config.ConfigError: --per-group must be at least 1, got 0
    """
    for name, value in values.items():
        if value < 1:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, got {value}")


@dataclass(frozen=True)
class EngineSpec:
    """What an engine is built with. Method, draft and k are fixed at build time."""

    model: str = "default"                 # "default", a local folder or a hub id
    method: str | None = "ngram"           # None: baseline, no speculation
    draft_model: str | None = None         # draft_model / eagle heads
    k: int = 4                             # num_speculative_tokens
    max_model_len: int = 4096              # prompt + output tokens
    dtype: str | None = None               # None: space.engine.hardware.resolve_spec picks
    # CPU: explicit, so two engines fit one process; at 2 bytes per value (float32 gets
    # twice the bytes, the same tokens: space.engine.hardware.kv_cache_bytes).
    kv_cache_bytes: int = 512 * MiB
    gpu_memory_utilization: float = 0.40   # GPU: fraction per engine (two engines share)
    prompt_lookup_min: int = 2             # ngram: shortest suffix to match
    prompt_lookup_max: int = 5             # ngram: longest suffix to match
    max_num_batched_tokens: int | None = None  # prefill chunk size; None: vLLM's default
    extra_speculative: tuple[tuple[str, Any], ...] = ()  # more vLLM keys, passed as is
    prefix_cache: str = "cold"             # one of PREFIX_CACHE_MODES

    def baseline(self) -> EngineSpec:
        """The same target without speculation, speculative settings at their defaults
        (so that changing k or the method keeps one baseline engine)."""
        plain = EngineSpec()
        return dataclasses.replace(self, method=None, draft_model=None, k=plain.k,
                                   extra_speculative=(), **plain.vllm_key_fields())

    @property
    def is_speculative(self) -> bool:
        return self.method is not None

    @property
    def synthetic(self) -> bool:
        """Acceptance forced by vLLM's synthetic rejection sampler (timings only)."""
        return dict(self.extra_speculative).get("rejection_sample_method") == "synthetic"

    def vllm_key_fields(self, method: str | None = None) -> dict[str, Any]:
        """This spec's ``FIELD_VLLM_KEYS``, or only those ``method`` reads."""
        row = info(method) if method else None
        return {key: getattr(self, key) for key in FIELD_VLLM_KEYS
                if method is None or (row is not None and key in row.vllm_keys)}

    def speculative_config(self, draft_path: str | None = None) -> dict[str, Any] | None:
        """vLLM's ``speculative_config`` dict, or None for the baseline."""
        if self.method is None:
            return None
        cfg: dict[str, Any] = {"method": self.method, "num_speculative_tokens": self.k}
        row = info(self.method)
        cfg.update(self.vllm_key_fields(self.method))
        if row and row.takes_draft and (row.needs_draft or self.draft_model):
            cfg["model"] = draft_path or self.draft_model
        cfg.update(dict(self.extra_speculative))
        return cfg

    def validate(self, on_gpu: bool) -> None:
        row = info(self.method) if self.method is not None else None
        if self.method is not None and row is None:
            raise ConfigError(f"unknown method {self.method!r}: choose one of "
                              f"{', '.join(METHODS)}, or none for the baseline")
        if self.method and not (K_RANGE[0] <= self.k <= K_RANGE[1]):
            raise ConfigError(f"k (num_speculative_tokens) must be in "
                              f"{K_RANGE[0]}..{K_RANGE[1]}, got {self.k}")
        if row and row.needs_draft and not self.draft_model:
            raise ConfigError(f"method {self.method} needs --draft-model")
        if row and row.needs_gpu and not on_gpu:
            raise ConfigError(f"method {self.method} needs trained heads and a GPU box; "
                              f"on CPU use {' or '.join(names(needs_gpu=False, requires=()))}")
        if self.prefix_cache not in PREFIX_CACHE_MODES:
            raise ConfigError(f"prefix cache must be one of {', '.join(PREFIX_CACHE_MODES)}, "
                              f"got {self.prefix_cache!r}")
        if self.max_model_len < 16:
            raise ConfigError("max_model_len must be at least 16")
        if not (0.05 <= self.gpu_memory_utilization <= 0.95):
            raise ConfigError("gpu_memory_utilization must be in 0.05..0.95")


# The methods' vLLM keys EngineSpec holds as fields; others travel in ``extra_speculative``.
FIELD_VLLM_KEYS: tuple[str, ...] = tuple(
    key for key in dict.fromkeys(k for row in METHODS.values() for k in row.vllm_keys)
    if key in {f.name for f in dataclasses.fields(EngineSpec)})

MAX_SEED = 2**63 - 1
CHAT_ROLES = ("system", "user", "assistant")  # the OpenAI chat roles a template takes


@dataclass(frozen=True)
class RequestSpec:
    """One prompt and how to sample it."""

    prompt: str
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 128
    seed: int | None = 0
    raw: bool = False           # True: send the prompt as is, no chat template
    system: str | None = None   # optional system message for the chat template
    ignore_eos: bool = False    # True: always max_tokens tokens (timing runs of fixed length)
    # Earlier turns of a conversation, (role, content), before ``prompt`` (the last user turn).
    messages: tuple[tuple[str, str], ...] = ()

    def validate(self) -> None:
        if not self.prompt or not self.prompt.strip():
            raise ConfigError("the prompt is empty")
        for role, _content in self.messages:
            if role not in CHAT_ROLES:
                raise ConfigError(f"a message's role must be one of {', '.join(CHAT_ROLES)}, "
                                  f"got {role!r}")
        if not (0.0 <= self.temperature <= 2.0):
            raise ConfigError(f"temperature must be in 0..2, got {self.temperature}")
        if not (0.0 < self.top_p <= 1.0):
            raise ConfigError(f"top_p must be in (0, 1], got {self.top_p}")
        if not (1 <= self.max_tokens <= 8192):
            raise ConfigError(f"max_tokens must be in 1..8192, got {self.max_tokens}")
        # torch seeds a generator from a 64-bit integer: beyond it the run fails mid-way
        if self.seed is not None and not (0 <= self.seed <= MAX_SEED):
            raise ConfigError(f"seed must be in 0..{MAX_SEED}, got {self.seed}")


@dataclass
class TracingSettings:
    """Settings that tracing needs and vLLM's defaults don't have; named in every trace."""

    async_scheduling: bool = False  # async scheduling replaces draft ids with -1 placeholders
    enforce_eager: bool = True      # CPU only: compilation takes ~150 s per engine start
    per_request_spec_decode_metrics: str = "detailed"  # vLLM's own counts, for cross-checks
    extra: dict[str, Any] = field(default_factory=dict)
