"""What was run: the engine configuration and the request, one typed record each. Readers use
the fields; vLLM's own ``speculative_config`` is kept only for export and deploy, never read back.
"""
from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from space.records.dicts import known

Source = Literal["in-process", "server"]
IN_PROCESS: Final = "in-process"  # an engine SpecLens built in its own process
SERVER: Final = "server"          # a running vLLM server, observed through its API


@dataclass(frozen=True)
class RunConfig:
    """The engine a run was made on, and the hardware that explains its numbers."""

    model: str = "default"              # the name asked for: "default", a folder, a hub id
    method: str | None = None           # a space.records.methods.Method; None: baseline
    k: int = 0                          # num_speculative_tokens; 0: no speculation
    draft_model: str | None = None      # the draft asked for (draft_model, eagle*)
    dtype: str | None = None            # resolved: bfloat16 | float16 | float32
    device: str = "cpu"                 # "cpu" | "gpu": where the costs were measured
    source: Source = IN_PROCESS
    synthetic: bool = False             # forced acceptance: timings only (space.runs.tipping)
    vllm_version: str | None = None     # the engine's public version ("0.32.0")
    model_path: str | None = None       # where the weights were loaded from
    draft_path: str | None = None
    max_model_len: int | None = None
    prefix_cache: str | None = None     # "cold" | "warm" (space.records.config.PREFIX_CACHE_MODES)
    dtype_reason: str | None = None     # why this dtype, in words
    cpu_model: str | None = None
    cpu_bf16_flags: tuple[str, ...] | None = None  # the CPU's native bf16 units
    # vLLM's own dict as the engine was given it, for exports and deploy configs.
    speculative_config: dict[str, Any] | None = field(default=None, compare=False)
    tracing_settings: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def speculative(self) -> bool:
        return self.method is not None

    def to_dict(self) -> dict[str, Any]:
        flags = None if self.cpu_bf16_flags is None else list(self.cpu_bf16_flags)
        return dataclasses.asdict(self) | {"cpu_bf16_flags": flags}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RunConfig:
        kw = {k: v for k, v in known(cls, d).items() if v is not None}
        if "cpu_bf16_flags" in kw:
            kw["cpu_bf16_flags"] = tuple(kw["cpu_bf16_flags"])
        return cls(**kw)


@dataclass(frozen=True)
class RequestRecord:
    """How the prompt was sampled. None: not recorded (a trace older than version 6)."""

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    prompt_sha256: str | None = None   # of the prompt text: the same prompt, without the text

    @classmethod
    def of(cls, req: Any) -> RequestRecord:
        """From a ``space.records.config.RequestSpec``."""
        return cls(temperature=req.temperature, top_p=req.top_p, seed=req.seed,
                   max_tokens=req.max_tokens, prompt_sha256=prompt_hash(req.prompt))


def prompt_hash(prompt: str) -> str:
    """Example: prompt_hash("hi")[:12] == '8f434346648f'."""
    return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()


def upgrade_config(d: dict[str, Any]) -> None:
    """A config dict from before version 6 in today's fields (in place): method and
    k from ``speculative_config`` where the top level lacks them (neither: a
    baseline); every older file came from an in-process engine."""
    spec = d["speculative_config"] if isinstance(d.get("speculative_config"), dict) else {}
    if d.get("method") is None and isinstance(spec.get("method"), str):
        d["method"] = spec["method"]
    k = d.get("k")
    if (k is None or k == 0) and d.get("method") is not None:
        k = spec.get("num_speculative_tokens")
    d["k"] = k if isinstance(k, int) and not isinstance(k, bool) and k >= 0 else 0
    d.setdefault("source", IN_PROCESS)
