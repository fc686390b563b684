"""Hand-written traces and memory records shared by the memory/metrics tests.

The speculative run (ngram, k=4), outputs 10 tokens in 0.3 s:
  prefill -> [10]
  verify drafts [11,12,13,14], 1 accepted  -> [11, 20]            (correction)
  verify drafts [21,22,23,24], 4 accepted  -> [21,22,23,24,25]    (bonus)
  verify drafts [26,27,28,29], 0 accepted  -> [30]                (correction)
  decode (no proposal)                     -> [31]
so drafts=3, draft tokens=12, accepted=5, accepted per position [2, 1, 1, 1].
"""
from space.memory import EngineMemory, GiB, GpuMemory
from space.trace import BONUS, CORRECTION, DECODE, PREFILL, VERIFY, RunTrace, StepRecord

SPEC_COUNTS = {"drafts": 3, "draft_tokens": 12, "accepted": 5, "per_pos": [2, 1, 1, 1]}


def spec_run() -> RunTrace:
    steps = [
        StepRecord(0, PREFILL, 0.00, 0.10, 5, emitted_token_ids=[10]),
        StepRecord(1, VERIFY, 0.10, 0.15, 5, [11, 12, 13, 14], 1, [11, 20], CORRECTION, 1),
        StepRecord(2, VERIFY, 0.15, 0.20, 5, [21, 22, 23, 24], 4, [21, 22, 23, 24, 25], BONUS, 3),
        StepRecord(3, VERIFY, 0.20, 0.25, 5, [26, 27, 28, 29], 0, [30], CORRECTION, 8),
        StepRecord(4, DECODE, 0.25, 0.30, 1, emitted_token_ids=[31], output_offset=9),
    ]
    out = [10, 11, 20, 21, 22, 23, 24, 25, 30, 31]
    return RunTrace(config={"speculative_config": {"method": "ngram", "num_speculative_tokens": 4}},
                    prompt="p", prompt_token_ids=[1, 2, 3, 4, 5], output_token_ids=out, text="",
                    arrival_s=0.0, first_token_s=0.10, finish_s=0.30, finish_reason="length",
                    steps=steps)


def baseline_run() -> RunTrace:
    steps = [StepRecord(0, PREFILL, 0.0, 0.1, 5, emitted_token_ids=[10])]
    steps += [StepRecord(i, DECODE, 0.1 * i, 0.1 * (i + 1), 1, emitted_token_ids=[10 + i],
                         output_offset=i) for i in range(1, 4)]
    return RunTrace(config={}, prompt="p", prompt_token_ids=[1, 2, 3, 4, 5],
                    output_token_ids=[10, 11, 12, 13], text="", arrival_s=0.0,
                    first_token_s=0.1, finish_s=0.4, finish_reason="length", steps=steps)


def engines() -> list[EngineMemory]:
    """The worked example of space.memory.kv_tax_tokens: the tax is 16384 tokens."""
    base = EngineMemory("baseline", {"target": 2 * GiB}, GiB, GiB // 4, 32768, 16)
    spec = EngineMemory("speculative", {"target": 2 * GiB, "draft": GiB // 4}, 3 * GiB // 4, 0,
                        16384, 16)
    return [base, spec]


def h200() -> GpuMemory:
    return GpuMemory(0, "NVIDIA H200", 140 * GiB, 60 * GiB, 80 * GiB, 37.0)
