"""Runs shared by the CLI and the app: preflight, one trace, a comparison.

One process-wide ``EnginePool`` holds the engines; its lock serializes runs.
"""
from __future__ import annotations

import dataclasses
import logging
import weakref
from typing import Literal

from space import measure, models
from space.config import ConfigError, EngineSpec, RequestSpec
from space.engine import EnginePool
from space.engine.core import StepCallback, TracedEngine
from space.memory import EngineMemory
from space.preflight import preflight
from space.trace import CompareRecord, RunTrace, make_compare

log = logging.getLogger(__name__)
POOL = EnginePool()
# A short unmeasured run pays an engine's first-run costs (buffer allocation,
# kernel selection for each new batch shape) so that measured runs don't.
WARMUP_TOKENS = 16
_warmed: weakref.WeakSet[TracedEngine] = weakref.WeakSet()


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
            warmup: bool | Literal["once"] = True,
            context: measure.Context | None = None) -> CompareRecord:
    """Warm-up run of each engine, then ``repeats`` measured runs, alternating.

    The record carries the checklist (``space.measure.attach_checklist``);
    ``context`` names the task and what sweeps found, for its context lines.

    ``warmup``: True runs ``req`` once through each engine first; "once" warms
    only engines never warmed before, with a short run (the app: keeps
    the page fast after the first run); False skips it.
    ``on_step`` streams the last measured speculative run.
    """
    if not spec.is_speculative:
        raise ConfigError("compare needs a speculative method (got none)")
    if repeats < 1:
        raise ConfigError(f"repeats must be at least 1, got {repeats}")
    preflight(spec, [req], progress)
    with pool.lock:
        base = pool.baseline(spec, progress)
        spec_engine = pool.speculative(spec, progress)
        for e in (base, spec_engine):
            if warmup is True:
                e.run(req)
            elif warmup == "once":
                _warm_once(e, req, progress)
        bases: list[RunTrace] = []
        specs: list[RunTrace] = []
        for i in range(repeats):
            if progress:
                progress(i / repeats, f"measured run {i + 1}/{repeats}")
            # Alternate which engine goes first, so slow drift hits both sides alike.
            order = (base, spec_engine) if i % 2 == 0 else (spec_engine, base)
            for e in order:
                out = e.run(req, on_step if e is spec_engine and i == repeats - 1 else None)
                (specs if e is spec_engine else bases).append(out)
        cmp = make_compare(bases, specs)
        measure.attach_checklist(cmp, (base, spec_engine), req, context or measure.Context())
    return cmp


def _warm_once(engine: TracedEngine, req: RequestSpec,
               progress: models.Progress | None = None) -> None:
    if engine in _warmed:
        return
    if progress:
        progress(0.0, f"warming up the {engine.spec.method or 'baseline'} engine")
    engine.run(dataclasses.replace(req, max_tokens=min(req.max_tokens, WARMUP_TOKENS)))
    _warmed.add(engine)


def prepare(spec: EngineSpec, req: RequestSpec, pool: EnginePool = POOL,
            progress: models.Progress | None = None) -> None:
    """Build and warm the baseline and speculative engines for ``spec`` (app start)."""
    preflight(spec, [req], progress)
    with pool.lock:
        for engine in (pool.baseline(spec, progress), pool.speculative(spec, progress)):
            _warm_once(engine, req, progress)


def engine_memory(pool: EnginePool = POOL) -> list[EngineMemory]:
    """What the current baseline and speculative engines hold; builds nothing."""
    with pool.lock:
        return [e.memory() for e in pool.current()]


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
