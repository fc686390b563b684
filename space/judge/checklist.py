"""The "is speculative decoding worth it?" checklist: measured numbers in, verdict out
(pure). The measured speedup decides (``_verdict`` tells the rule); the other lines
explain it or give context.
"""
from __future__ import annotations

from dataclasses import dataclass

from space.judge import costs, estimate, theory
from space.records.anatomy import KindCosts
from space.records.run import SERVER
from space.records.trace import busy_server_sentence
from space.records.verdict import (
    ACCEPTANCE_LENGTH,
    ACCEPTANCE_RATE,
    ALPHA_VS_COST,
    BORDERLINE,
    CONCURRENCY,
    CONTEXT_LENGTH,
    HARDWARE,
    HEADROOM,
    NOT_WORTH_IT,
    PREDICTED_IDEAL,
    PREDICTED_MEASURED,
    PROMPTS,
    REPETITION,
    SPARE_MEMORY,
    SPEEDUP,
    TASK_TYPE,
    TEMPERATURE,
    UNDECIDED,
    WORTH_IT,
    Check,
    Checklist,
    CheckName,
    DecisionRule,
    Verdict,
)

# A 10 % gain is the smallest that survives run-to-run noise on a shared CPU
# and is worth an extra model in memory; below it the answer is "measure more".
WORTH_IT_SPEEDUP = 1.10
# Below 5 %, the size of run-to-run noise, a gain does not pay for a proposer (and a
# draft model's weights and KV cache): 0.97x or 1.02x is "not worth it", not "maybe".
NO_GAIN_SPEEDUP = 1.05
# The worst repeat (low end of the spread) must not be slower than baseline.
SPREAD_FLOOR = 1.0
# Share of output tokens repeating an earlier 4-gram above which the output "loops":
# prose and edited code stay well below half; a greedy 135M model stuck in a loop goes far above.
LOOP_SHARE_THRESHOLD = 0.5


@dataclass
class ChecklistInputs:
    """Measured numbers for one workload; any may be None when not measured."""

    method: str | None = None             # vLLM method: ngram, suffix, draft_model, eagle3, ...
    k: int | None = None                  # num_speculative_tokens
    speedup_median: float | None = None   # baseline TPOT / speculative TPOT (ratio of totals with a CI)
    speedup_spread: tuple[float, float] | None = None  # (low, high) of the repeats
    speedup_ci: tuple[float, float] | None = None  # when given, it decides (estimate.py)
    speedup_prompts: int | None = None    # prompts the interval is over (1: over repeats)
    speedup_repeats: int | None = None    # repeats, for an interval over one prompt's
    # "TPOT", "end-to-end" (request time per token), or "predicted" (a busy machine:
    # acceptance x step costs, with the measured interval's relative width)
    speedup_basis: str = "TPOT"
    # a traffic group: with no interval it is undecided (a single compare keeps the spread rule)
    needs_interval: bool = False
    acceptance_rate: float | None = None  # vLLM: accepted / drafted
    mean_acceptance_length: float | None = None  # vLLM: 1 + accepted / verify steps
    draft_step_s: float | None = None     # one draft token's forward pass; None for ngram/suffix
    target_decode_step_s: float | None = None  # baseline (no speculation) decode step
    verify_step_s: float | None = None    # median speculative verify step, drafting included
    proposer_share: float | None = None   # ngram/suffix: share of a speculative step proposing
    spare_memory_bytes: int | None = None  # left after target + draft + KV cache; < 0: no fit
    draft_kv_tax_tokens: int | None = None  # KV-cache tokens lost to the draft
    concurrency: int | None = None        # requests decoding together
    context_tokens: int | None = None     # prompt + output tokens per request
    gain_vanishes_at_concurrency: int | None = None  # sweep: first N with speedup <= 1
    gain_vanishes_at_context: int | None = None      # sweep: first length with speedup <= 1
    temperature: float | None = None
    task_type: str | None = None          # workload id, e.g. "code_editing"
    task_note: str | None = None          # the workload's one-line reason, shown as context
    repetition_share: float | None = None  # theory.repetition_share of the speculative output
    prompt_verdicts: dict[str, str] | None = None  # a workload's prompts, each on its own
    # from this machine's cached tipping curve (curves.py): the acceptance rate at speedup 1
    break_even_acceptance_rate: float | None = None
    break_even_concurrency: int | None = None  # the curve's concurrency it was read at
    break_even_source: str | None = None  # "measured curve", "derived curve (...)", ...
    step_costs: KindCosts | None = None   # step anatomy medians (None before trace version 5)
    # Where it was measured (space.engine.hardware), context only: the verify cost it sets
    # is in the measured speedup but does not carry over to other hardware.
    device: str | None = None             # "cpu" | "gpu"
    dtype: str | None = None
    dtype_reason: str | None = None
    cpu_model: str | None = None
    cpu_bf16_flags: tuple[str, ...] | None = None
    # "in-process" | "server" (space.records.run): through a server the draft cost,
    # the hardware and the dtype are not measured here
    source: str | None = None
    # other requests a server served during the runs: > 0 makes every time-derived line undecided
    other_requests: int | None = None


@dataclass
class _Derived:
    """Numbers every line shares, derived once from the inputs."""

    tau: float | None = None     # mean acceptance length
    rate: float | None = None    # vLLM acceptance rate
    alpha: float | None = None   # per-token acceptance, tau inverted at gamma = k
    c: float | None = None       # draft cost ratio (per token) or proposer share (per step)
    per_step: bool = False       # c is a per-step proposer share (ngram/suffix)
    tau_break_even: float | None = None
    looped: bool = False


def evaluate(inputs: ChecklistInputs) -> Checklist:
    """All checklist lines and the verdict for one set of measured numbers."""
    _validate(inputs)
    d = _derive(inputs)
    checks = [
        _speedup_check(inputs, d),
        _acceptance_rate_check(inputs, d),
        _acceptance_length_check(inputs, d),
        _necessary_check(inputs, d),
        _ideal_prediction_check(inputs, d),
        _measured_prediction_check(inputs, d),
        _memory_check(inputs),
        _load_check(CONCURRENCY, inputs.concurrency, inputs.gain_vanishes_at_concurrency,
                    "once batch x (k+1) verified tokens pass the accelerator's"
                    " ridge point, verification is compute-bound"),
        _load_check(CONTEXT_LENGTH, inputs.context_tokens, inputs.gain_vanishes_at_context,
                    "long contexts make KV-cache reads dominate each step,"
                    " as MagicDec shows"),
        _temperature_check(inputs),
        _task_check(inputs),
        _repetition_check(inputs, d),
        _hardware_check(inputs),
    ]
    if inputs.prompt_verdicts and len(inputs.prompt_verdicts) > 1:
        checks.append(_prompts_check(inputs.prompt_verdicts))
    if inputs.break_even_acceptance_rate is not None:
        checks.append(_headroom_check(inputs, inputs.break_even_acceptance_rate, d))
    busy = inputs.other_requests
    if busy:  # a server busy with other requests: the lines read off the clock decide nothing
        for c in checks:  # (the prompts line: each one's speedup)
            if c.name in (SPEEDUP, PREDICTED_MEASURED, PROMPTS):
                c.passed, c.decisive = None, False
                c.detail = f"Undecided: {busy_server_sentence(busy)}. {c.detail}"
    rule: DecisionRule = ("interval" if busy or inputs.needs_interval or (
        inputs.speedup_ci is not None and inputs.speedup_median is not None) else "spread")
    by_name = {c.name: c for c in checks}
    if d.rate == 0.0:  # nothing accepted: not worth it, busy or not
        by_name[ACCEPTANCE_RATE].decisive = True
        verdict = NOT_WORTH_IT
    else:
        verdict = UNDECIDED if busy else _verdict(inputs, d, by_name, rule == "spread")
    return Checklist(verdict=verdict, checks=checks, rule=rule)


def _validate(i: ChecklistInputs) -> None:
    """Inputs that would make the maths meaningless are caller bugs: fail loudly."""
    if i.k is not None and i.k < 1:
        raise ValueError(f"k must be >= 1, got {i.k}")
    if i.proposer_share is not None and not 0.0 <= i.proposer_share < 1.0:
        raise ValueError(f"proposer_share must be in [0, 1), got {i.proposer_share}")
    for name, pair in (("speedup_spread", i.speedup_spread), ("speedup_ci", i.speedup_ci)):
        if pair is not None and pair[0] > pair[1]:
            raise ValueError(f"{name} must be (low, high), got {pair}")


def _derive(i: ChecklistInputs) -> _Derived:
    d = _Derived()
    d.looped = i.repetition_share is not None and i.repetition_share > LOOP_SHARE_THRESHOLD
    k = i.k
    d.tau = i.mean_acceptance_length
    if d.tau is None and i.acceptance_rate is not None and k:
        d.tau = 1.0 + i.acceptance_rate * k
    d.rate = i.acceptance_rate
    if d.rate is None and d.tau is not None and k:
        d.rate = theory.acceptance_rate_from_length(d.tau, k)
    if d.tau is not None and k:
        d.alpha = theory.alpha_from_acceptance_length(d.tau, k)
    if i.draft_step_s is not None and i.target_decode_step_s:
        d.c = i.draft_step_s / i.target_decode_step_s
    elif i.proposer_share is not None:
        d.c, d.per_step = i.proposer_share, True
    if d.c is not None and k:
        # per token: tau_be = k c + 1; per step: a step costs 1 / (1 - share) target steps
        d.tau_break_even = (1.0 / (1.0 - d.c) if d.per_step
                            else theory.break_even_acceptance_length(k, d.c))
    return d


def _unless_looped(name: CheckName, value: float | None, threshold: float | None,
                   passed: bool, detail: str, d: _Derived) -> Check:
    """A line whose pass is no reason to enable speculation when a loop inflated it."""
    looped = d.looped and passed
    return Check(name, value, threshold, None if looped else passed, detail + (
        " Not counted: the output loops, and the loop inflates acceptance." if looped else ""))


def _spread_decision(i: ChecklistInputs) -> str:
    """The spread rule (``_verdict`` tells it) on the speedup alone."""
    s, spread = i.speedup_median, i.speedup_spread
    if s is not None and s >= WORTH_IT_SPEEDUP and (spread is None or spread[0] >= SPREAD_FLOOR):
        return WORTH_IT
    return NOT_WORTH_IT if s is not None and s < NO_GAIN_SPEEDUP else BORDERLINE


def _speedup_check(i: ChecklistInputs, d: _Derived) -> Check:
    """The speedup line; with no draft accepted the acceptance line decides, not the clock."""
    s = i.speedup_median
    if s is None:
        return Check(SPEEDUP, None, WORTH_IT_SPEEDUP, None,
                     "Not measured: run baseline and speculative.")
    passed, detail = _speedup_words(i, s)
    none_accepted = d.rate == 0.0
    if none_accepted and passed:
        passed, detail = None, detail + " Not counted: no draft was accepted, so the gain is noise."
    return Check(SPEEDUP, s, WORTH_IT_SPEEDUP, passed, detail, decisive=not none_accepted)


def _speedup_words(i: ChecklistInputs, s: float) -> tuple[bool | None, str]:
    """(passed, detail) of the speedup line, by the interval rule when there is one:
    '2.27x (90 % CI 1.52-2.90, 3 prompts)', else by the spread rule."""
    if i.speedup_ci is not None:
        return _interval_words(i, s, i.speedup_ci)
    if i.needs_interval:
        return None, (f"{s:.2f}x from one run: no interval, so undecided; a "
                      "second prompt (or repeat) gives one.")
    spread = i.speedup_spread
    spread_txt = f" (spread {spread[0]:.2f}-{spread[1]:.2f})" if spread else " (no spread: one run)"
    decision = _spread_decision(i)
    if decision == WORTH_IT:
        return True, f"Baseline TPOT / speculative TPOT = {s:.2f}x{spread_txt}: faster."
    if decision == NOT_WORTH_IT:
        how = "slower than baseline" if s < 1.0 else "no gain beyond noise"
        return False, f"{s:.2f}x{spread_txt}: {how} (under {NO_GAIN_SPEEDUP:.2f}x)."
    return False, (f"{s:.2f}x{spread_txt}: a gain, but not a clear one; worth-it needs >= "
                   f"{WORTH_IT_SPEEDUP:.2f}x with every repeat >= {SPREAD_FLOOR:.2f}x.")


def interval_decision(i: ChecklistInputs) -> str | None:
    """The interval's verdict (estimate.decide against this module's bars), or None."""
    return None if i.speedup_ci is None else estimate.decide(i.speedup_ci, NO_GAIN_SPEEDUP,
                                                             WORTH_IT_SPEEDUP)


def more_prompts(i: ChecklistInputs) -> int | None:
    """Prompts in all that would likely decide an undecided interval (1/sqrt(n) width)."""
    if i.speedup_ci is None or i.speedup_median is None:
        return None
    return estimate.prompts_to_decide(i.speedup_median, i.speedup_ci, i.speedup_prompts or 1,
                                      NO_GAIN_SPEEDUP, WORTH_IT_SPEEDUP)


def _interval_words(i: ChecklistInputs, s: float, ci: tuple[float, float]) -> tuple[bool | None, str]:
    what = {"end-to-end": "request time per token",
            "predicted": "Predicted from acceptance x step costs (this machine was busy: the "
                         "measured interval, moved to the predicted figure)"}.get(
        i.speedup_basis, "Baseline TPOT / speculative TPOT")
    figure = estimate.describe(s, ci, i.speedup_prompts, repeats=i.speedup_repeats)
    head = f"{what}, ratio of totals: {figure}"
    decision = interval_decision(i)
    if decision == WORTH_IT:
        return True, f"{head}: faster; the interval clears {WORTH_IT_SPEEDUP:.2f}x."
    if decision == NOT_WORTH_IT:
        return False, f"{head}: the interval lies under {NO_GAIN_SPEEDUP:.2f}x."
    if decision == BORDERLINE:
        return False, (f"{head}: a real but small gain, the whole interval within "
                       f"{NO_GAIN_SPEEDUP:.2f}-{WORTH_IT_SPEEDUP:.2f}x.")
    need = more_prompts(i)
    more = ("no number of prompts would decide it: the estimate sits on the bar"
            if need is None else
            f"about {need} prompts in all would decide it (the interval narrows as "
            f"1/sqrt(n))" if need <= estimate.MAX_MORE_PROMPTS else
            f"more than {estimate.MAX_MORE_PROMPTS} prompts would be needed")
    return None, (f"{head}: undecided, the interval straddles "
                  f"{NO_GAIN_SPEEDUP:.2f}x or {WORTH_IT_SPEEDUP:.2f}x; {more}.")


def _no_break_even(name: CheckName, value: float | None) -> Check:
    return Check(name, value, None, None, "No drafts were verified." if value is None
                 else "Draft cost not measured: no break-even.")


def _acceptance_rate_check(i: ChecklistInputs, d: _Derived) -> Check:
    be_rate = (None if d.tau_break_even is None or i.k is None  # a break-even needs k
               else theory.acceptance_rate_from_length(d.tau_break_even, i.k))
    if d.rate == 0.0:
        return Check(ACCEPTANCE_RATE, 0.0, be_rate, False, "No draft token was accepted: every "
                     "step emitted one token, as a plain decode step does, and paid for the "
                     "drafts too. A measured gain is noise.")
    if d.rate is None or be_rate is None:
        return _no_break_even(ACCEPTANCE_RATE, d.rate)
    detail = (f"vLLM acceptance rate (accepted / drafted) {d.rate:.1%} against {be_rate:.1%}"
              f" at break-even for the measured draft cost.")
    return _unless_looped(ACCEPTANCE_RATE, d.rate, be_rate, d.rate > be_rate, detail, d)


def _acceptance_length_check(i: ChecklistInputs, d: _Derived) -> Check:
    if d.tau is None or d.tau_break_even is None:
        return _no_break_even(ACCEPTANCE_LENGTH, d.tau)
    detail = f"Tokens per verify step {d.tau:.2f} against {d.tau_break_even:.2f} at break-even"
    detail += " (1 / (1 - proposer share))." if d.per_step else f" (k c + 1, k={i.k}, c={d.c:.3f})."
    if i.verify_step_s and i.target_decode_step_s and i.k:
        be = theory.measured_break_even_acceptance_length(i.target_decode_step_s, i.verify_step_s)
        detail += f" With measured step times the break-even is {be:.2f}."
    return _unless_looped(ACCEPTANCE_LENGTH, d.tau, d.tau_break_even, d.tau > d.tau_break_even,
                          detail, d)


def _necessary_check(i: ChecklistInputs, d: _Derived) -> Check:
    if d.alpha is not None and d.c is None and i.source == SERVER:
        return Check(ALPHA_VS_COST, d.alpha, None, None, "Draft cost not measured through a server "
                     "(it reports no proposer time): this line decides nothing.")
    if d.alpha is None or d.c is None:
        missing = "acceptance" if d.alpha is None else "draft cost"
        return Check(ALPHA_VS_COST, d.alpha, d.c, None, f"Not measured ({missing}).")
    cost = "proposer share of step time" if d.per_step else "draft step / target step"
    passed = d.alpha > d.c
    detail = (f"alpha = {d.alpha:.3f} (tau inverted at k={i.k}) against c = {d.c:.3f} ({cost}):"
              f" some k gives a speedup only if alpha > c.")
    if not passed:
        detail += " Fails: no number of drafts can pay for this draft."
    return _unless_looped(ALPHA_VS_COST, d.alpha, d.c, passed, detail, d)


def _ideal_prediction_check(i: ChecklistInputs, d: _Derived) -> Check:
    if d.alpha is None or d.c is None or i.k is None:  # alpha is only derived with a k
        return Check(PREDICTED_IDEAL, None, 1.0, None, "Needs acceptance and draft cost.")
    if d.per_step:
        s = theory.proposer_share_speedup(d.alpha, i.k, d.c)
        detail = (f"tau (1 - share) at k={i.k}. With a per-step proposer cost more drafts always"
                  " help in theory; verification cost sets the real limit.")
    else:
        s = theory.ideal_speedup(d.alpha, i.k, d.c)
        best_k, best_s = theory.best_gamma(d.alpha, d.c)
        detail = f"Leviathan S at k={i.k}; best k={best_k} would give {best_s:.2f}x."
    detail += " Assumes verifying k+1 tokens costs one decode step (memory-bound decode)."
    return _unless_looped(PREDICTED_IDEAL, s, 1.0, s > 1, detail, d)


def _measured_prediction_check(i: ChecklistInputs, d: _Derived) -> Check:
    """tau x decode step / speculative step; with the step anatomy's medians, the
    verify step in parts, and below tau the part that took the difference."""
    c, tau = i.step_costs, d.tau
    if tau is None or not (i.verify_step_s and i.target_decode_step_s and i.k):
        return Check(PREDICTED_MEASURED, None, 1.0, None, "Needs acceptance and step times.")
    if c is None or None in (c.decode_step_s, c.decode_forward_s, c.verify_forward_s,
                             c.rejection_s, c.proposer_s, c.overhead_s):
        s = theory.measured_cost_speedup(tau, i.target_decode_step_s, i.verify_step_s)
        detail = (f"tau x decode step / speculative step = {tau:.2f} x "
                  f"{i.target_decode_step_s * 1e3:.1f} ms / {i.verify_step_s * 1e3:.1f} ms.")
        if i.speedup_median is not None:
            detail += (f" Measured: {i.speedup_median:.2f}x"
                       " (the gap: prefill, steps without drafts, noise).")
        return _unless_looped(PREDICTED_MEASURED, s, 1.0, s > 1, detail, d)
    parts = [x or 0.0 for x in (c.verify_forward_s, c.proposer_s, c.rejection_s, c.overhead_s)]
    decode = c.decode_step_s or 0.0
    s = tau * decode / sum(parts) if sum(parts) > 0 else 0.0
    detail = (f"tau x decode step / (verify forward + proposer + rejection + overhead) = "
              f"{tau:.2f} x {decode * 1e3:.1f} ms / "
              f"({' + '.join(f'{p * 1e3:.1f}' for p in parts)} ms).")
    if i.speedup_median is not None:
        detail += f" Measured: {i.speedup_median:.2f}x."
        if i.speedup_median < tau:
            detail += f" Below tau = {tau:.2f}x (a verify step at a decode step's cost): " \
                      + costs.gap_part(c, i.k, i.method, i.device) + "."
    return _unless_looped(PREDICTED_MEASURED, s, 1.0, s > 1, detail, d)


def _memory_check(i: ChecklistInputs) -> Check:
    if i.spare_memory_bytes is None:
        return Check(SPARE_MEMORY, None, 0, None, "Not measured.")
    passed = i.spare_memory_bytes > 0
    detail = "Memory is left after target, draft and KV cache." if passed else \
        "Target + draft + KV cache do not fit: the draft must go, or KV cache shrinks."
    if i.draft_kv_tax_tokens is not None:
        detail += f" The draft costs {i.draft_kv_tax_tokens:,} tokens of KV cache"
        if i.context_tokens and i.draft_kv_tax_tokens > 0:
            detail += f" ({i.draft_kv_tax_tokens / i.context_tokens:.1f} requests of this length)"
        detail += "."
    return Check(SPARE_MEMORY, i.spare_memory_bytes, 0, passed, detail)


def _load_check(name: CheckName, value: int | None, vanishes_at: int | None, why: str) -> Check:
    if value is None:
        return Check(name, None, vanishes_at, None, "Not measured.")
    if vanishes_at is None:
        return Check(name, value, None, None, f"No sweep: gains shrink as this grows ({why}).")
    passed = value < vanishes_at
    detail = (f"{value:,} is {'below' if passed else 'at or past'} {vanishes_at:,}, where the "
              "sweep shows the gain vanishing.")
    return Check(name, value, vanishes_at, passed, detail)


def _temperature_check(i: ChecklistInputs) -> Check:
    t = i.temperature
    return Check(TEMPERATURE, t, None, None, (
        "Not given." if t is None else
        "Greedy: a draft is accepted iff it equals the target's argmax. Small models"
        " loop under greedy decoding, and loops inflate ngram acceptance." if t == 0 else
        "Sampling: a draft x is accepted with probability min(1, p(x)/q(x)); flatter"
        " distributions accept less, and ngram drafts are point guesses."))


def _task_check(i: ChecklistInputs) -> Check:
    return Check(TASK_TYPE, i.task_type, None, None, i.task_note or (
        "Copy-heavy tasks (summarization, RAG, code edits) suit ngram;"
        " translation and open-ended writing give it little to copy."))


def _hardware_check(i: ChecklistInputs) -> Check:
    """Where the numbers were measured: they hold for this dtype on this hardware."""
    if i.source == SERVER:
        return Check(HARDWARE, None, None, None, "Measured through vLLM servers: their "
                     "hardware and dtype are theirs, and a server does not report them.")
    if i.dtype is None:
        return Check(HARDWARE, None, None, None, "Not recorded (a trace from before the "
                     "dtype was recorded).")
    if i.device == "gpu":
        detail = f"Measured in {i.dtype} on a GPU ({i.dtype_reason or 'as run'})."
        return Check(HARDWARE, i.dtype, None, None, detail)
    flags = i.cpu_bf16_flags
    units = (f"a CPU with bf16 units ({', '.join(flags)})" if flags else
             "a CPU" if flags is None else "a CPU without bf16 units")
    cpu = f" ({i.cpu_model})" if i.cpu_model else ""
    detail = f"Measured in {i.dtype} on {units}{cpu}; a GPU in bf16/FP8 has another verify cost."
    if i.dtype == "bfloat16" and flags == ():
        detail += (" bf16 is emulated on this CPU: prefill and the (1 + k)-token verify pass"
                   " run several times slower than in float32, so this verdict describes"
                   " the emulation; leave --dtype out to measure in float32.")
    return Check(HARDWARE, i.dtype, None, None, detail)


def _repetition_check(i: ChecklistInputs, d: _Derived) -> Check:
    share = i.repetition_share
    if share is None:
        return Check(REPETITION, None, LOOP_SHARE_THRESHOLD, None, "Not measured.")
    detail = (f"The output loops: {share:.0%} of its tokens repeat an earlier 4-gram."
              " High ngram acceptance comes from the loop, not the task; acceptance is"
              " not counted as a reason to enable speculation." if d.looped else
              f"{share:.0%} of output tokens repeat an earlier 4-gram: no loop.")
    return Check(REPETITION, share, LOOP_SHARE_THRESHOLD, not d.looped, detail)


def _headroom_check(i: ChecklistInputs, be: float, d: _Derived) -> Check:
    """The workload's acceptance against the break-even of this machine's curve."""
    where = f" at concurrency {i.break_even_concurrency}" if i.break_even_concurrency else ""
    source = f" ({i.break_even_source})" if i.break_even_source else ""
    if d.rate is None:
        return Check(HEADROOM, None, be, None, f"No drafts were verified; break-even {be:.2f}"
                     f"{where}{source}.")
    passed = d.rate > be
    detail = (f"acceptance headroom on this machine: {d.rate:.2f} measured vs {be:.2f} "
              f"break-even{where}{source}: "
              + (f"{d.rate - be:+.2f} above it." if passed else f"{d.rate - be:+.2f}, below it."))
    return _unless_looped(HEADROOM, d.rate, be, passed, detail, d)


def _prompts_check(verdicts: dict[str, str]) -> Check:
    """A workload's prompts, each judged on its own: how many are not worth it."""
    losing = [p for p, v in verdicts.items() if v == NOT_WORTH_IT]
    counts = ", ".join(f"{sum(v == w for v in verdicts.values())} {w}"
                       for w in (WORTH_IT, BORDERLINE, NOT_WORTH_IT))
    detail = f"Each prompt on its own: {counts}."
    if losing:
        detail += f" Not worth it on {', '.join(losing)}: the gain depends on the input."
    return Check(PROMPTS, len(losing), 0, not losing, detail)


def _verdict(i: ChecklistInputs, d: _Derived, checks: dict[CheckName, Check],
             spread_rule: bool) -> Verdict:
    """The verdict, marking the lines that decided it: the speedup's interval against
    the bars (estimate.decide), else the spread rule (speedup >= WORTH_IT_SPEEDUP with
    every repeat >= SPREAD_FLOOR; a prompt on its own not worth it demotes worth-it).
    Whatever the interval (none accepted is not-worth-it before it: ``evaluate``), a
    looping output demotes worth-it to borderline, and alpha <= c turns borderline or
    undecided into not-worth-it."""
    if spread_rule:
        decision = _spread_decision(i)
    else:  # the interval's verdict; one run has no interval to decide on: undecided
        decision = (interval_decision(i) if i.speedup_median is not None else None) or UNDECIDED
    if decision == WORTH_IT:
        if d.looped:
            checks[REPETITION].decisive = True
            return BORDERLINE
        if spread_rule and PROMPTS in checks and checks[PROMPTS].passed is False:
            checks[PROMPTS].decisive = True
            return BORDERLINE
        return WORTH_IT
    if decision == NOT_WORTH_IT:
        return NOT_WORTH_IT
    if checks[ALPHA_VS_COST].passed is False:  # a small or unsettled gain that no k can pay for
        checks[ALPHA_VS_COST].decisive = True
        return NOT_WORTH_IT
    return BORDERLINE if decision == BORDERLINE else UNDECIDED
