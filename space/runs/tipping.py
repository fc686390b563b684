"""The tipping point: speculative TPOT against the baseline at forced acceptance, measured
(one synthetic-acceptance engine per tau from 1 to k + 1) or, for a lookup pair (ngram,
suffix), derived from a measured curve of the same target. Imports no vLLM."""
from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import statistics
from collections.abc import Sequence
from typing import cast

from space.common import defaults, versions
from space.common.progress import Progress
from space.judge import costs, curves, measure
from space.records.anatomy import kind_costs
from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.records.events import TippingMeasured
from space.records.methods import SYNTHETIC_VLLM_KEYS
from space.records.trace import DECODE, VERIFY, RunTrace
from space.runs import curve_cache
from space.runs.events import Job
from space.runs.preflight import preflight
from space.runs.repeats import WARMUP_TOKENS, alternate
from space.runs.source import Engines, Source

log = logging.getLogger(__name__)

DEFAULT_CONCURRENCIES = (1, 4)
DEFAULT_POINTS = 6
# Any prompt will do: synthetic acceptance ignores what the draft proposes. A
# short one keeps prefill out of the way.
PROMPT = ("Extract the name, age and city from this text as JSON with keys name, age, "
          "city: 'Maria Lopez is 34 years old and lives in Porto.'")


def acceptance_lengths(k: int, n: int = DEFAULT_POINTS) -> list[float]:
    """n mean acceptance lengths evenly spaced from 1 (nothing accepted) to k + 1: for
    k = 4, n = 6 [1.0, 1.8, 2.6, 3.4, 4.2, 5.0]."""
    if n < 2:
        raise ConfigError(f"a curve needs at least 2 points, got {n}")
    return [round(1.0 + k * i / (n - 1), 6) for i in range(n)]


def synthetic_spec(spec: EngineSpec, length: float,
                   profile: Sequence[float] | None = None) -> EngineSpec:
    """``spec`` with vLLM's synthetic rejection sampler at mean acceptance ``length``:
    as a length, or as rates of a per-position ``profile``'s shape."""
    keep = tuple((key, v) for key, v in spec.extra_speculative if key not in SYNTHETIC_VLLM_KEYS)
    forced: tuple[str, object] = (
        ("synthetic_acceptance_length", float(length)) if profile is None
        else ("synthetic_acceptance_rates", tuple(curves.shaped_rates(list(profile), length))))
    return dataclasses.replace(spec, extra_speculative=keep + (
        ("rejection_sample_method", "synthetic"), forced))


def check_profile(profile: Sequence[float] | None, k: int) -> list[float] | None:
    """A per-position profile for k drafts: k rates in [0, 1] (None: none given)."""
    if profile is None:
        return None
    out = [float(p) for p in profile]
    if len(out) != k or not all(0.0 <= p <= 1.0 for p in out):
        raise ConfigError(f"an acceptance profile is {k} rates in [0, 1] (one per draft "
                          f"position, k = {k}), got {out}")
    return out


def profile_of(runs: Sequence[RunTrace]) -> list[float] | None:
    """Per position p, verify steps that accepted p over all verify steps (vLLM's
    unconditional rate), pooled over ``runs``; None when nothing was verified."""
    drafts = sum(r.num_drafts for r in runs)
    if not drafts:
        return None
    k = max(len(r.num_accepted_tokens_per_pos) for r in runs)
    return [round(sum(r.num_accepted_tokens_per_pos[p] for r in runs
                      if p < len(r.num_accepted_tokens_per_pos)) / drafts, 6) for p in range(k)]


def vllm_version() -> str:
    return versions.public_vllm() or "unknown"


def _requests(concurrency: int, max_tokens: int) -> list[RequestSpec]:
    return [RequestSpec(prompt=PROMPT, max_tokens=max_tokens, ignore_eos=True, seed=i)
            for i in range(concurrency)]


def _propose_s(runs: Sequence[RunTrace], kinds: tuple[str, ...] = (VERIFY,)) -> float | None:
    """The median drafting time of the runs' steps of ``kinds``; None without any."""
    xs = [s.propose_s for r in runs for s in r.steps if s.kind in kinds]
    return statistics.median(xs) if xs else None


def _tpot(batch: list[RunTrace]) -> float:
    """Per-request TPOT of a batch: the median over its requests."""
    return statistics.median(r.tpot_s for r in batch)


def point_from_runs(concurrency: int, asked: float, bases: list[list[RunTrace]],
                    specs: list[list[RunTrace]]) -> curves.CurvePoint:
    """One curve point from alternating batches (one list of traces per repeat)."""
    ratios = [_tpot(b) / _tpot(s) for b, s in zip(bases, specs, strict=True) if _tpot(s) > 0]
    flat = [r for batch in specs for r in batch]
    spread = measure.spread(ratios)
    return curves.CurvePoint(
        concurrency=concurrency, asked_acceptance_length=asked,
        **{n: sum(getattr(r, n) for r in flat)
           for n in ("num_drafts", "num_draft_tokens", "num_accepted_tokens")},
        baseline_tpot_s=statistics.median(map(_tpot, bases)),
        speculative_tpot_s=statistics.median(map(_tpot, specs)),
        # paired ratios, not a ratio of medians: a burst of load on this shared
        # machine slows both runs of a pair and cancels out of their ratio
        speedup=statistics.median(ratios) if ratios else 0.0,
        speedup_low=spread[0] if spread else None, speedup_high=spread[1] if spread else None,
        verify_step_s=measure.step_median(flat, VERIFY),
        propose_step_s=_propose_s(flat))


def step_costs(concurrency: int, bases: list[RunTrace], specs: list[RunTrace]) -> curves.StepCosts:
    """The model curve's inputs at one concurrency, pooled over every point."""
    decode = measure.step_median(bases, DECODE)
    verify = measure.step_median(specs, VERIFY)
    if decode is None or verify is None:
        raise RuntimeError("no decode or verify steps were measured")
    propose = _propose_s(specs)
    return curves.StepCosts(concurrency, decode, verify, propose or 0.0, kind_costs(bases, specs))


def measure_curve(spec: EngineSpec, *, concurrencies: Sequence[int] = DEFAULT_CONCURRENCIES,
                  n_points: int = DEFAULT_POINTS, max_tokens: int = defaults.MAX_TOKENS,
                  repeats: int = defaults.REPEATS, engines: Engines, pair_id: str | None = None,
                  progress: Progress | None = None,
                  profile: Sequence[float] | None = None) -> curves.TippingCurve:
    """Speedup at ``n_points`` forced acceptance lengths, at each concurrency, on a
    model-based pair (``build_curve`` derives a lookup pair's); with a per-position
    ``profile``, each length is forced as rates of its shape."""
    if not spec.is_speculative:
        raise ConfigError("a tipping curve needs a speculative method")
    if not concurrencies or any(int(c) < 1 for c in concurrencies):
        raise ConfigError("concurrencies must be whole numbers >= 1")
    if repeats < 1 or max_tokens < 8:
        raise ConfigError("a curve needs repeats >= 1 and max_tokens >= 8")
    profile = check_profile(profile, spec.k)
    lengths = acceptance_lengths(spec.k, n_points)
    from space.engine.core import TracedEngine

    pool = engines.pool
    progress = progress or (lambda f, m: log.info(m))
    preflight(spec, _requests(max(concurrencies), max_tokens), progress)
    points: list[curves.CurvePoint] = []
    all_bases: dict[int, list[RunTrace]] = {c: [] for c in concurrencies}
    all_specs: dict[int, list[RunTrace]] = {c: [] for c in concurrencies}
    with pool.lock:
        base = pool.baseline(spec, progress)
        for c in concurrencies:  # a batch has its own shapes: warm each one up
            base.run_many(_requests(c, WARMUP_TOKENS))
        for i, length in enumerate(lengths):
            progress(i / len(lengths), f"point {i + 1}/{len(lengths)}: building an engine "
                                       f"that accepts {length:.2f} tokens per step")
            engine = TracedEngine(synthetic_spec(spec, length, profile))
            try:
                for c in concurrencies:
                    progress((i + 0.5) / len(lengths),
                             f"point {i + 1}/{len(lengths)}: tau {length:.2f}, concurrency {c}")
                    bases, specs = _alternate(base, engine, c, max_tokens, repeats)
                    points.append(point_from_runs(c, length, bases, specs))
                    all_bases[c] += [r for b in bases for r in b]
                    all_specs[c] += [r for s in specs for r in s]
            finally:
                engine.close()
    progress(1.0, "curve measured")
    return curves.TippingCurve(
        kind=curves.MEASURED, model=spec.model, method=str(spec.method), draft_model=spec.draft_model,
        k=spec.k, device=base.config.device, dtype=str(base.config.dtype),
        vllm_version=vllm_version(),
        date=dt.datetime.now().isoformat(timespec="seconds"), max_tokens=max_tokens,
        repeats=repeats, pair_id=pair_id, points=points,
        step_costs=[step_costs(c, all_bases[c], all_specs[c]) for c in concurrencies],
        acceptance_form=curves.LENGTH_FORM if profile is None else curves.SHAPED_FORM,
        acceptance_profile=profile)


def _alternate(base, engine, concurrency: int, max_tokens: int, repeats: int):
    """A warm-up batch, then ``repeats`` batches on each engine, alternating which goes first."""
    reqs = _requests(concurrency, max_tokens)
    engine.run_many(_requests(concurrency, WARMUP_TOKENS))
    return alternate(base, engine, repeats, lambda e, _last: e.run_many(reqs))


def build_curve(spec: EngineSpec, *, pair_id: str | None = None,
                concurrencies: Sequence[int] = DEFAULT_CONCURRENCIES,
                n_points: int = DEFAULT_POINTS, max_tokens: int = defaults.MAX_TOKENS,
                repeats: int = defaults.REPEATS, progress: Progress | None = None,
                folder=None, source: Source | None = None, job: Job | None = None,
                profile: Sequence[float] | None = None):
    """Measure (model-based pair) or derive (lookup pair) a curve and cache it; ``job``
    hears ``TippingMeasured``. Returns (curve, cached file). Servers are refused."""
    source = source or Engines()
    source.require("forced_acceptance")
    engines = cast(Engines, source)  # only engines built here force acceptance
    if spec.method in curves.LOOKUP_METHODS:
        from space.engine.hardware import on_gpu, resolve_spec

        # the newest measured curve of this target, device, dtype and vLLM (a bf16 curve's
        # verify costs say nothing of a float32 run's)
        key = (spec.model, "gpu" if on_gpu() else "cpu", str(resolve_spec(spec).dtype),
               vllm_version())
        measured = next((c for c in curve_cache.all_curves(folder) if c.kind == curves.MEASURED
                         and (c.model, c.device, c.dtype, c.vllm_version) == key), None)
        if measured is None:
            raise ConfigError(
                f"{spec.method}'s curve is derived from the step costs of a measured "
                "model-based pair of the same target: measure one first (on CPU: "
                "python -m space tipping --pair cpu-bad-draft)")
        if progress:
            progress(0.2, f"timing the {spec.method} lookup with one short run")
        pool = engines.pool
        with pool.lock:  # the lookup's median time per step, from one short real run
            run = pool.speculative(spec).run(RequestSpec(prompt=PROMPT, max_tokens=32))
        curve = curves.derive_lookup_curve(
            measured, str(spec.method), spec.k, _propose_s([run], (VERIFY, DECODE)) or 0.0,
            date=dt.datetime.now().isoformat(timespec="seconds"))
        curve.pair_id = pair_id
    else:
        curve = measure_curve(spec, concurrencies=concurrencies, n_points=n_points,
                              max_tokens=max_tokens, repeats=repeats, engines=engines,
                              pair_id=pair_id, progress=progress, profile=profile)
    path = curve_cache.save(curve, folder)
    job = job or Job()
    job.publish(TippingMeasured(curve, curve.label, spec, job.origin))
    return curve, path


def describe(curve: curves.TippingCurve) -> str:
    """The curve's points and break-evens, for the terminal."""
    lines = [f"{curve.label} ({curve.kind}, {curve.date})"]
    if curve.kind == curves.MEASURED:
        form = curves.FORM_WORDS.get(curve.acceptance_form, curve.acceptance_form)
        shape = f" {curve.acceptance_profile}" if curve.acceptance_profile else ""
        lines.append(f"acceptance forced as {form}{shape}")
    if curve.points:
        lines.append(f"{'conc':>5}{'asked':>7}{'tau':>7}{'rate':>7}{'speedup':>9}"
                     f"{'spread':>13}{'base ms':>9}{'spec ms':>9}")
    for p in sorted(curve.points, key=lambda p: (p.concurrency, p.asked_acceptance_length)):
        spread = (f"{p.speedup_low:.2f}-{p.speedup_high:.2f}" if p.speedup_low is not None
                  else "-")
        lines.append(f"{p.concurrency:>5}{p.asked_acceptance_length:>7.2f}"
                     f"{p.mean_acceptance_length:>7.2f}{p.acceptance_rate:>7.0%}"
                     f"{p.speedup:>8.2f}x{spread:>13}{p.baseline_tpot_s * 1e3:>9.1f}"
                     f"{p.speculative_tpot_s * 1e3:>9.1f}")
    for c in curve.step_costs:
        tau, source = curve.break_even_length(c.concurrency)
        rate, _ = curve.break_even_rate(c.concurrency)
        be = "none" if tau is None else f"tau {tau:.2f} (rate {rate:.0%}, {source})"
        lines.append(f"concurrency {c.concurrency}: decode step {c.decode_step_s * 1e3:.1f} ms, "
                     f"verify step {c.verify_step_s * 1e3:.1f} ms (drafting "
                     f"{c.propose_step_s * 1e3:.1f} ms); break-even {be}; model break-even "
                     f"tau {c.break_even_length:.2f}")
        if c.anatomy is None or not costs.timed(c.anatomy):
            why = (f"derived from {curve.source}: open that curve for the anatomy"
                   if curve.kind == curves.DERIVED else costs.NOT_TIMED)
            lines.append(f"  step anatomy: {why}")
        else:  # the step anatomy's medians, and in words which part grows with k
            lines += [f"  step anatomy, medians at concurrency {c.concurrency}:",
                      costs.cost_lines(c.anatomy, "    "),
                      "  " + costs.grows_with_k(c.anatomy, curve.k, curve.method, curve.device)]
    return "\n".join(lines)
