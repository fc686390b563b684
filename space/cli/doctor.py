"""``python -m space doctor [--json PATH]``: what works here, and the proof
(docs/doctor.md); exit code 1 when a check failed.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from vis.doctor import doctor_table


def doctor_parser(sub) -> None:
    s = sub.add_parser("doctor", help="check this machine: hooks, trace counts against vLLM's, "
                                      "step anatomy, GPU memory, available methods")
    s.add_argument("--json", metavar="PATH", help="write the report as JSON here")
    s.add_argument("--max-tokens", type=int, default=None,
                   help="tokens of the short compare (default 32)")
    s.add_argument("-v", "--verbose", action="store_true", help="show vLLM's logs")


def doctor(a: argparse.Namespace) -> int:
    from space.common import progress
    from space.runs import doctor as run_doctor

    report = run_doctor.run(max_tokens=a.max_tokens or run_doctor.MAX_TOKENS,
                            progress=progress.to_terminal)
    print(doctor_table(report))
    if a.json:
        Path(a.json).write_text(json.dumps(report.to_dict(), indent=2) + "\n")
        print(f"wrote {a.json}")
    return 1 if report.failed else 0
