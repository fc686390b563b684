"""The size of an exported lesson (vis/lesson.py) for explained runs of several lengths.

Builds synthetic explained comparisons without an engine (tests/helpers/lessons.py:
an ngram run, k=4, random acceptance, every verified draft with the target's
top 5, every step with a timed anatomy, a checklist), round-trips each through
the trace JSON as a saved file would be, and prints the lesson's bytes. Cheap:
well under a second per size.

    python benchmarks/lesson_size.py                    128 and 512 tokens (docs/lesson.md)
    python benchmarks/lesson_size.py --tokens 64,256,1024 --json sizes.json
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from space.engine.hardware import cpu_model  # noqa: E402
from space.records.schema import load  # noqa: E402
from space.records.trace import CompareRecord, dumps  # noqa: E402
from vis.lesson import LessonInfo, lesson_html  # noqa: E402

# The tests' record builders, imported by name: mypy checks space/, vis/ and the
# benchmarks, not the tests' helpers (which this would pull in).
explained_compare = importlib.import_module("tests.helpers.lessons").explained_compare


def measure(n_tokens: int, seed: int = 0) -> dict:
    trace = dumps(explained_compare(n_tokens, seed=seed))
    record = load(trace)
    assert isinstance(record, CompareRecord)
    t0 = time.perf_counter()
    data = lesson_html(record, info=LessonInfo(exported_utc="benchmark")).encode("utf-8")
    run = record.speculative
    return {"output_tokens": n_tokens, "engine_steps": len(run.steps),
            "baseline_steps": len(record.baseline.steps),
            "verified_drafts_explained": sum(len(s.target_views) for s in run.steps),
            "trace_json_bytes": len(trace.encode("utf-8")), "lesson_bytes": len(data),
            "render_s": round(time.perf_counter() - t0, 3)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tokens", default="128,512", help="comma-separated output lengths")
    p.add_argument("--json", metavar="PATH", help="also write the rows as JSON here")
    a = p.parse_args(argv)
    rows = [measure(int(n)) for n in a.tokens.split(",")]
    now = dt.datetime.now(dt.timezone.utc)
    print(f"# {now:%Y-%m-%d %H:%M} UTC, {cpu_model()}, Python {platform.python_version()}")
    print(f"{'tokens':>7}{'steps':>7}{'explained':>10}{'trace JSON':>12}{'lesson':>12}{'render s':>10}")
    for r in rows:
        print(f"{r['output_tokens']:>7}{r['engine_steps']:>7}{r['verified_drafts_explained']:>10}"
              f"{r['trace_json_bytes']:>12,}{r['lesson_bytes']:>12,}{r['render_s']:>10.3f}")
    if a.json:
        Path(a.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
