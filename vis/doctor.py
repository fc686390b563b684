"""The doctor's report as a terminal table (pure: record in, text out)."""
from __future__ import annotations

from space.records.doctor import DoctorReport

MARKS = {True: "pass", False: "FAIL", None: "skip"}


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / (1 << 30):.1f} GiB"


def doctor_table(report: DoctorReport) -> str:
    """Machine, vLLM, dtype, then hooks, checks and methods, one row each."""
    v, gpu, cpu = report.vllm, report.machine.get("gpu"), report.machine.get("cpu") or {}
    units = ", ".join(cpu.get("bf16_units") or []) or "none"
    machine = (f"GPU {gpu.get('name')} (compute capability {gpu.get('compute_capability')}, "
               f"{_gib(gpu.get('memory_bytes'))}, driver {gpu.get('driver')}, CUDA {gpu.get('cuda')})"
               if gpu else f"CPU {cpu.get('model')} ({cpu.get('cores')} cores; native bf16 units: {units})")
    pins = ", ".join(f"{k} {x}" for k, x in (v.get("tested") or {}).items())
    tested = "tested" if v.get("is_tested") else f"NOT tested (pins: {pins})"
    lines = [f"machine  {machine}",
             f"vLLM     {v.get('distribution')} {v.get('version')} ({tested})",
             f"dtype    {report.dtype['value']} ({report.dtype['reason']})", "",
             f"{'hook':<28}{'state':<10}why"]
    lines += [f"{h.name:<28}{h.state:<10}{h.why}" for h in report.hooks]
    lines += ["", f"{'check':<42}{'result':<8}detail"]
    lines += [f"{c.name:<42}{MARKS[c.passed]:<8}{c.detail}" for c in report.checks]
    lines += ["", f"{'method':<14}{'available':<11}why"]
    lines += [f"{m.name:<14}{'yes' if m.available else 'no':<11}{m.why}" for m in report.methods]
    verdict = (f"{len(report.failed)} check(s) failed" if report.failed
               else "every check passed (or was skipped with its reason)")
    lines += ["", f"{verdict}; {report.elapsed_s:.0f} s, {report.date}"]
    return "\n".join(lines)
