"""Opening a saved trace or comparison for a replay (pure), within bounds: a replay shares the
machine with measured runs, so a file is refused over ``MAX_TRACE_BYTES`` before it is read, over
``MAX_TRACE_STEPS`` engine steps (all its runs) after it is parsed."""
from __future__ import annotations

from pathlib import Path

from space.records.schema import TraceFormatError, load
from space.records.trace import CompareRecord, RunTrace

# Both hold every trace the app and the CLI write: the CLI's largest compare, 8,192 tokens per
# engine, is about 16,400 steps and 14 MB (tests/unit/test_replay.py builds it); the largest
# allowed replayed in 1.8-4.2 s of CPU time (2026-11-30).
MiB = 1 << 20
MAX_TRACE_BYTES = 16 * MiB
MAX_TRACE_STEPS = 20_000


def read_record(path: str | Path) -> RunTrace | CompareRecord:
    """The record in ``path``, or ``TraceFormatError``."""
    size = Path(path).stat().st_size
    if size > MAX_TRACE_BYTES:
        raise TraceFormatError(f"too large to replay: {size / MiB:.1f} MB, more than the "
                               f"{MAX_TRACE_BYTES // MiB} MB a replay reads")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TraceFormatError("not a SpecLens trace: not UTF-8 text") from None
    record = load(text)
    runs = [record.baseline, record.speculative] if isinstance(record, CompareRecord) else [record]
    steps = sum(len(run.steps) for run in runs)
    if steps > MAX_TRACE_STEPS:
        raise TraceFormatError(f"too large to replay: {steps:,} engine steps, more than the "
                               f"{MAX_TRACE_STEPS:,} a replay draws")
    return record
