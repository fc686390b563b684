"""Opening a saved trace or comparison for a replay, within bounds (pure).

A replay shares the machine with measured runs and never waits for them, so
it must stay cheap: a file over ``MAX_TRACE_BYTES`` is refused before it is
read, and one over ``MAX_TRACE_STEPS`` engine steps (all runs in the file
together) after it is parsed. The largest file allowed replayed in 1.8-4.2 s
of CPU time, page and all (measured in the test process on 2026-11-30; it took
~9 s before the limits); tests/ui/test_page.py checks that it opens, not how
fast, since CPU time differs from machine to machine. Links to saved runs open
the same way, so the bound holds for them too.

The step bound holds every trace the app and the CLI write: a page run has
at most 1,024 output tokens per engine (about 2,050 steps for the pair), and
the CLI's largest, 8,192 tokens per engine, about 16,400. So does the byte
bound, since the step anatomy is written compactly (parts, and offsets from the
step's start in whole microseconds: ``space.records.anatomy.to_json``) and
lists of plain values on one line (``space.records.trace.dumps``): the CLI's
largest compare, one token per step and nine timed parts in every step, is
about 14 MB (27 MB with the anatomy's intervals as version 5 wrote them);
tests/unit/test_replay.py builds it and opens it.
"""
from __future__ import annotations

from pathlib import Path

from space.records.schema import TraceFormatError, load
from space.records.trace import CompareRecord, RunTrace

MiB = 1 << 20
MAX_TRACE_BYTES = 16 * MiB
MAX_TRACE_STEPS = 20_000


def step_count(record: RunTrace | CompareRecord) -> int:
    """Engine steps of every run in the record."""
    if isinstance(record, CompareRecord):
        return len(record.baseline.steps) + len(record.speculative.steps)
    return len(record.steps)


def read_record(path: str | Path) -> RunTrace | CompareRecord:
    """The record in ``path``; ``TraceFormatError`` (one line) when it is too large,
    not UTF-8 text, or not a SpecLens trace."""
    size = Path(path).stat().st_size
    if size > MAX_TRACE_BYTES:
        raise TraceFormatError(f"too large to replay: {size / MiB:.1f} MB, more than the "
                               f"{MAX_TRACE_BYTES // MiB} MB a replay reads")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TraceFormatError("not a SpecLens trace: not UTF-8 text") from None
    record = load(text)
    steps = step_count(record)
    if steps > MAX_TRACE_STEPS:
        raise TraceFormatError(f"too large to replay: {steps:,} engine steps, more than the "
                               f"{MAX_TRACE_STEPS:,} a replay draws")
    return record
