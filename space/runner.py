"""Runs shared by the CLI and the app: preflight, one trace, a comparison.

One process-wide ``EnginePool`` holds the engines; its lock serializes runs.
"""
from __future__ import annotations

import importlib.util
import logging

from space import models, prompts
from space.config import ConfigError, EngineSpec, RequestSpec
from space.engine import EnginePool, on_gpu
from space.engine.core import StepCallback
from space.trace import CompareRecord, RunTrace, make_compare

log = logging.getLogger(__name__)
POOL = EnginePool()


def preflight(spec: EngineSpec, reqs: list[RequestSpec],
              progress: models.Progress | None = None) -> list[list[int]]:
    """Every check that needs no engine: settings, models, draft vocabulary, prompt length."""
    spec.validate(on_gpu())
    if spec.method == "suffix" and importlib.util.find_spec("arctic_inference") is None:
        raise ConfigError("suffix decoding needs the arctic-inference package, which is not "
                          "installed here (GPU boxes only; see README)")
    for r in reqs:
        r.validate()
    path = models.resolve_model(spec.model, progress)
    models.resolve_draft(spec.method, spec.draft_model, path, progress)
    return [prompts.encode_for(path, r, spec.max_model_len) for r in reqs]


def trace_one(spec: EngineSpec, req: RequestSpec, pool: EnginePool = POOL,
              on_step: StepCallback | None = None,
              progress: models.Progress | None = None) -> RunTrace:
    preflight(spec, [req], progress)
    with pool.lock:
        engine = pool.speculative(spec, progress) if spec.is_speculative \
            else pool.baseline(spec, progress)
        return engine.run(req, on_step)


def compare(spec: EngineSpec, req: RequestSpec, repeats: int = 3, pool: EnginePool = POOL,
            on_step: StepCallback | None = None, progress: models.Progress | None = None,
            warmup: bool = True) -> CompareRecord:
    """Warm-up run of each engine, then ``repeats`` measured runs, alternating."""
    if not spec.is_speculative:
        raise ConfigError("compare needs a speculative method (got none)")
    preflight(spec, [req], progress)
    with pool.lock:
        base = pool.baseline(spec, progress)
        spec_engine = pool.speculative(spec, progress)
        if warmup:
            base.run(req)
            spec_engine.run(req)
        bases, specs = [], []
        for i in range(repeats):
            if progress:
                progress(i / repeats, f"measured run {i + 1}/{repeats}")
            # Alternate which engine goes first, so slow drift hits both sides alike.
            order = (base, spec_engine) if i % 2 == 0 else (spec_engine, base)
            for e in order:
                out = e.run(req, on_step if e is spec_engine and i == repeats - 1 else None)
                (specs if e is spec_engine else bases).append(out)
    return make_compare(bases, specs)


def describe_run(r: RunTrace) -> str:
    rate = "n/a" if r.acceptance_rate is None else f"{r.acceptance_rate:.1%}"
    mal = "n/a" if r.mean_acceptance_length is None else f"{r.mean_acceptance_length:.2f}"
    return (f"{r.text}\n---\n{len(r.output_token_ids)} tokens, {len(r.steps)} steps, "
            f"TTFT {r.ttft_s * 1e3:.0f} ms, TPOT {r.tpot_s * 1e3:.1f} ms, "
            f"{r.tokens_per_s:.1f} tok/s, acceptance {rate}, mean acceptance length {mal}")


def describe_compare(c: CompareRecord) -> str:
    rows = [("", "baseline", "speculative")]
    for label, key, scale, fmt in (("TTFT ms", "ttft_s", 1e3, "{:.1f}"),
                                   ("TPOT ms", "tpot_s", 1e3, "{:.2f}"),
                                   ("tokens/s", "tokens_per_s", 1, "{:.1f}"),
                                   ("end-to-end ms", "e2e_s", 1e3, "{:.0f}")):
        b, s = getattr(c.baseline, key) * scale, getattr(c.speculative, key) * scale
        rows.append((label, fmt.format(b), fmt.format(s)))
    rows.append(("output tokens", str(len(c.baseline.output_token_ids)),
                 str(len(c.speculative.output_token_ids))))
    table = "\n".join(f"{a:<15}{b:>12}{d:>14}" for a, b, d in rows)
    same = "identical" if c.outputs_identical else \
        f"differ from output token {c.first_divergence}"
    rate = c.speculative.acceptance_rate
    return (f"{table}\nspeedup (TPOT) {c.speedup:.2f}x, end-to-end {c.e2e_speedup:.2f}x; "
            f"outputs {same}; acceptance "
            f"{'n/a' if rate is None else f'{rate:.1%}'}")
