"""Hand-made traces: one builder, and the runs the tests share.

``build_run`` takes the steps in order and derives everything else the way
the engine layer does, so a test states only what matters to it:

- times: each step starts where the previous one ended (the first at
  ``arrival_s`` plus ``queue_ms``) and lasts its ``ms``;
- ``index`` and ``output_offset`` (output tokens before the step);
- ``num_scheduled_tokens``: 1 + drafts on verify and decode steps; a prefill
  schedules the whole prompt unless ``tokens`` gives its chunk;
- ``target_token_kind``: ``StepRecord.own_token_kind``, as space/engine/build.py
  sets it (a correction when a draft was rejected, a bonus when all were
  accepted, None when max_tokens cut the step before the target's own token);
- the run's output ids, its text from ``token_text``, first-token and finish times.
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from space.records.anatomy import (
    FORWARD,
    PROPOSER,
    RECORDING,
    REJECTION,
    SAMPLING,
    SCHEDULING,
    PartInterval,
    StepAnatomy,
)
from space.records.run import RunConfig, upgrade_config
from space.records.trace import (
    DECODE,
    PREFILL,
    VERIFY,
    CompareRecord,
    RunTrace,
    StepKind,
    StepRecord,
    make_compare,
)


@dataclass(frozen=True)
class Step:
    """One engine step as a test states it."""

    kind: StepKind
    emitted: tuple[int, ...] = ()
    drafts: tuple[int, ...] = ()
    accepted: int = 0
    ms: float = 10.0
    tokens: int | None = None   # a prefill chunk's prompt tokens; None: the whole prompt
    propose_s: float = 0.0


def prefill(*emitted: int, tokens: int | None = None, ms: float = 10.0,
            propose_s: float = 0.0) -> Step:
    return Step(PREFILL, emitted, tokens=tokens, ms=ms, propose_s=propose_s)


def verify(drafts: list[int], accepted: int, emitted: list[int], *, ms: float = 10.0,
           propose_s: float = 0.0) -> Step:
    return Step(VERIFY, tuple(emitted), tuple(drafts), accepted, ms, propose_s=propose_s)


def decode(token: int, *, ms: float = 10.0, propose_s: float = 0.0) -> Step:
    return Step(DECODE, (token,), ms=ms, propose_s=propose_s)


def run_config(d: dict[str, Any]) -> RunConfig:
    """A hand-written config dict, in any version's keys, as the typed record
    (``{"speculative_config": {"method": "ngram", "num_speculative_tokens": 4}}`` is ngram k=4)."""
    d = dict(d)
    upgrade_config(d)
    return RunConfig.from_dict(d)


def build_run(steps: list[Step], *, prompt_ids: list[int], config: dict[str, Any] | None = None,
              arrival_s: float = 0.0, queue_ms: float = 0.0,
              token_text: dict[int, str] | None = None, finish_reason: str = "length") -> RunTrace:
    """The run of ``steps``; see the module docstring for what is derived."""
    text = token_text or {}
    records: list[StepRecord] = []
    t, offset = arrival_s + queue_ms / 1e3, 0
    for i, s in enumerate(steps):
        start, t = t, t + s.ms / 1e3
        scheduled = (s.tokens or len(prompt_ids)) if s.kind == PREFILL else 1 + len(s.drafts)
        record = StepRecord(
            index=i, kind=s.kind, start_s=start, end_s=t, num_scheduled_tokens=scheduled,
            draft_token_ids=list(s.drafts), num_accepted_tokens=s.accepted,
            emitted_token_ids=list(s.emitted), output_offset=offset, propose_s=s.propose_s)
        record.target_token_kind = record.own_token_kind()  # as the engine sets it
        records.append(record)
        offset += len(s.emitted)
    output = [tok for s in steps for tok in s.emitted]
    return RunTrace(
        config=run_config(config or {}), prompt="".join(text.get(i, "") for i in prompt_ids),
        prompt_token_ids=list(prompt_ids), output_token_ids=output,
        text="".join(text.get(i, "") for i in output), arrival_s=arrival_s,
        first_token_s=next(r.end_s for r in records if r.emitted_token_ids),
        finish_s=records[-1].end_s, finish_reason=finish_reason, steps=records,
        token_text=dict(text))


def plain_run(output_ids: list[int], *, decode_ms: float, prefill_ms: float | None = None,
              **run: Any) -> RunTrace:
    """A run without speculation: a prefill that emits the first token, then
    one decode step per further token."""
    first = prefill(output_ids[0], ms=decode_ms if prefill_ms is None else prefill_ms)
    return build_run([first, *(decode(t, ms=decode_ms) for t in output_ids[1:])], **run)


def compare_with_repeats(baseline: RunTrace, speculative: RunTrace, baseline_tpots: list[float],
                         speculative_tpots: list[float]) -> CompareRecord:
    """A comparison of two runs with per-repeat TPOTs of its own (what the
    checklist reads as the spread); the speedup is the runs' TPOT ratio."""
    def repeats(tpots: list[float]) -> list[dict[str, float]]:
        return [{"tpot_s": t, "tokens_per_s": 1 / t, "e2e_s": 8 * t} for t in tpots]

    return CompareRecord(
        baseline=baseline, speculative=speculative, baseline_runs=repeats(baseline_tpots),
        speculative_runs=repeats(speculative_tpots),
        speedup=baseline.tpot_s / speculative.tpot_s,
        e2e_speedup=baseline.e2e_s / speculative.e2e_s, outputs_identical=True)


# --- the views' run: every case a view must handle, one step each -------------
#
#   step 0  prefill chunk 1 (8 prompt tokens), emits nothing
#   step 1  prefill chunk 2 (4 prompt tokens), emits 'He'                -> prefill
#   step 2  verify k=4: drafts ' is',' 2',' years',' old', 1 accepted   -> ' is' + correction ','
#   step 3  verify k=3: drafts '<b>',' &','\n', all accepted            -> + bonus ' ok'
#   step 4  verify k=1: draft 'x' rejected                              -> correction '"y'
#   step 5  decode: nothing proposed                                    -> ' fine'
#   step 6  verify k=3, 3 accepted but cut by max_tokens after 2        -> '.', ' end'

TOKEN_TEXT = {
    1: "Q", 2: ":", 3: " How", 4: " old", 5: " is", 6: " <b>", 7: "Bob", 8: "</b>",
    9: "?", 40: "\n", 41: "A", 42: ":",
    10: "He", 11: " is", 12: " 2", 13: " years", 14: " old", 20: ",",
    21: "<b>", 22: " &", 23: "\n", 24: " ok", 30: "x", 31: '"y', 26: " fine",
    27: ".", 28: " end", 29: "!", 99: " a",
}
VIEWS_PROMPT_IDS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 40, 41, 42]
VIEWS_OUTPUT_IDS = [10, 11, 20, 21, 22, 23, 24, 31, 26, 27, 28]
VIEWS_ARRIVAL_S = 100.0


def views_run() -> RunTrace:
    """The speculative run in the table above: 10 ms steps (12 ms and 8 ms where
    marked), after 2 ms in the queue."""
    return build_run([
        prefill(tokens=8),
        prefill(10, tokens=4),
        verify([11, 12, 13, 14], 1, [11, 20]),
        verify([21, 22, 23], 3, [21, 22, 23, 24], ms=12.0),
        verify([30], 0, [31]),
        decode(26, ms=8.0),
        verify([27, 28, 29], 3, [27, 28]),
    ], prompt_ids=VIEWS_PROMPT_IDS, arrival_s=VIEWS_ARRIVAL_S, queue_ms=2.0,
        config={"speculative_config": {"method": "ngram", "num_speculative_tokens": 4}},
        token_text=TOKEN_TEXT)


def views_baseline(output_ids: list[int] | None = None, step_ms: float = 9.0) -> RunTrace:
    """The views' plain run: the same output (or ``output_ids``), 9 ms a step."""
    return plain_run(VIEWS_OUTPUT_IDS if output_ids is None else output_ids, decode_ms=step_ms,
                     prompt_ids=VIEWS_PROMPT_IDS, arrival_s=VIEWS_ARRIVAL_S, queue_ms=1.0,
                     token_text=TOKEN_TEXT)


# --- an ngram run whose counts the metrics tests check --------------------------
#
# ngram, k=4; 10 tokens in 0.3 s (a 100 ms prefill, then 50 ms steps):
#   prefill -> [10]
#   verify drafts [11,12,13,14], 1 accepted  -> [11, 20]            (correction)
#   verify drafts [21,22,23,24], 4 accepted  -> [21,22,23,24,25]    (bonus)
#   verify drafts [26,27,28,29], 0 accepted  -> [30]                (correction)
#   decode (no proposal)                     -> [31]

NGRAM_RUN_COUNTS = {"drafts": 3, "draft_tokens": 12, "accepted": 5, "per_pos": [2, 1, 1, 1]}
NGRAM = {"speculative_config": {"method": "ngram", "num_speculative_tokens": 4}}


def ngram_run() -> RunTrace:
    """The run above; its counts are NGRAM_RUN_COUNTS."""
    return build_run([
        prefill(10, ms=100.0),
        verify([11, 12, 13, 14], 1, [11, 20], ms=50.0),
        verify([21, 22, 23, 24], 4, [21, 22, 23, 24, 25], ms=50.0),
        verify([26, 27, 28, 29], 0, [30], ms=50.0),
        decode(31, ms=50.0),
    ], prompt_ids=[1, 2, 3, 4, 5], config=NGRAM)


def short_baseline() -> RunTrace:
    """Four tokens, 100 ms a step (the baseline beside ngram_run)."""
    return plain_run([10, 11, 12, 13], decode_ms=100.0, prompt_ids=[1, 2, 3, 4, 5])


# --- runs with proposer time, for the measured checklist inputs -------------------

def timed_run(method: str = "ngram", propose_s: float = 0.001, loop: bool = False) -> RunTrace:
    """k=4: a 20 ms prefill, 2 verify steps of 12 ms (4 then 2 of 4 accepted),
    a 10 ms decode step; 10 tokens in 54 ms. ``propose_s`` is spent in every
    step; ``loop`` makes the output repeat itself."""
    out = [100 + i for i in range(10)] if not loop else [7, 8, 9, 10] * 2 + [7, 8]
    return build_run([
        prefill(out[0], ms=20.0, propose_s=propose_s),
        verify(out[1:5], 4, out[1:6], ms=12.0, propose_s=propose_s),
        verify(out[6:8] + [1, 2], 2, out[6:9], ms=12.0, propose_s=propose_s),
        decode(out[9], ms=10.0, propose_s=propose_s),
    ], prompt_ids=list(range(6)), config={
        "method": method, "k": 4, "device": "cpu",
        "speculative_config": {"method": method, "num_speculative_tokens": 4}})


def timed_baseline(n_tokens: int = 9, step_s: float = 0.010) -> RunTrace:
    """A 20 ms prefill, then one ``step_s`` decode step per further token."""
    return plain_run([100 + i for i in range(n_tokens)], decode_ms=step_s * 1e3,
                     prefill_ms=20.0, prompt_ids=list(range(6)),
                     config={"method": None, "k": 0})


# --- runs with a step anatomy (trace version 5) ---------------------------------
#
# Every step: scheduling 0.2 ms, the forward, sampling (rejection on verify
# steps) 1 ms, the proposer, scheduling 0.1 ms, recording 0.05 ms; the rest of
# the step is "other". Forward: 15 ms on a prefill, 9 ms on a verify step
# (5 tokens), 6 ms on a decode step; proposer 0.5 ms on speculative steps.
FORWARD_MS = {PREFILL: 15.0, VERIFY: 9.0, DECODE: 6.0}


def step_anatomy(step: StepRecord, proposer_ms: float = 0.0,
                 forward_ms: float | None = None, drafter_forwards: int = 0) -> StepAnatomy:
    """The anatomy above for ``step``, laid out from its start."""
    t, parts = step.start_s, []
    sample = REJECTION if step.kind == VERIFY else SAMPLING
    fwd = FORWARD_MS[step.kind] if forward_ms is None else forward_ms
    for part, ms in ((SCHEDULING, 0.2), (FORWARD, fwd), (sample, 1.0), (PROPOSER, proposer_ms),
                     (SCHEDULING, 0.1), (RECORDING, 0.05)):
        if ms:
            parts.append(PartInterval(part, t, t + ms / 1e3))
            t += ms / 1e3
    return StepAnatomy(parts, drafter_forwards if proposer_ms else 0)


def with_anatomy(baseline: bool = False) -> RunTrace:
    """``timed_run`` (ngram, k=4, 0.5 ms proposer) or ``timed_baseline``, every
    step with the anatomy above."""
    run = timed_baseline() if baseline else timed_run(propose_s=0.0005)
    for s in run.steps:
        s.anatomy = step_anatomy(s, proposer_ms=0.0 if baseline else 0.5)
    return run


# --- a long comparison: the largest a replay accepts (space/records/replay.py) ------------

# What the engine records in one step, in order (space/engine/anatomy.py): ms each.
ENGINE_PARTS = ((SCHEDULING, 0.1), (FORWARD, 8.0), (FORWARD, 1.3), (SAMPLING, 0.7),
                (PROPOSER, 0.2), (RECORDING, 0.006), (SCHEDULING, 0.09), (RECORDING, 0.01),
                (SCHEDULING, 0.015))


def engine_like_anatomy(step: StepRecord, rnd: random.Random) -> StepAnatomy:
    """Nine timed calls, as a real step has them, with gaps of a few microseconds
    between them and perf_counter's full precision; the step's last 0.2 ms untimed."""
    scale = (step.duration_s - 0.0002) / (sum(ms for _, ms in ENGINE_PARTS) / 1e3 + 9 * 20e-6)
    t, parts = step.start_s, []
    for part, ms in ENGINE_PARTS:
        t += rnd.uniform(0, 20e-6) * scale
        end = t + ms / 1e3 * scale
        parts.append(PartInterval(REJECTION if part == SAMPLING and step.kind == VERIFY
                                  else part, t, end))
        t = end
    return StepAnatomy(parts)


def long_compare(steps_per_run: int, seed: int = 0, anatomy: bool = False) -> CompareRecord:
    """A baseline of ``steps_per_run`` one-token steps beside an ngram run (k=4)
    of as many verify steps, random ids and acceptances, every id with a text;
    ``anatomy``: every step with ``engine_like_anatomy``, at perf_counter-like times."""
    rnd = random.Random(seed)

    def tok() -> int:
        return rnd.randrange(1000, 40000)

    spec = [prefill(tok())]
    for _ in range(steps_per_run - 1):
        drafts, accepted = [tok() for _ in range(4)], rnd.randrange(5)
        spec.append(verify(drafts, accepted, drafts[:accepted] + [tok()]))
    base = [prefill(tok())] + [decode(tok()) for _ in range(steps_per_run - 1)]
    text = {t: f" w{t}" for s in spec + base for t in s.emitted + s.drafts}
    prompt = list(range(1, 51))
    text.update({t: f" p{t}" for t in prompt})
    arrival_s = 4321.123456789 if anatomy else 0.0
    runs = [build_run(base, prompt_ids=prompt, token_text=text, arrival_s=arrival_s),
            build_run(spec, prompt_ids=prompt, config=NGRAM, token_text=text,
                      arrival_s=arrival_s)]
    for s in (s for run in runs if anatomy for s in run.steps):
        s.anatomy = engine_like_anatomy(s, rnd)
    return make_compare([runs[0]], [runs[1]])
