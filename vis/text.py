"""Plain-text descriptions of records, for the terminal and the page's status box."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from space.records import hooks
from space.records.doctor import DoctorReport
from space.records.run import SERVER, RunConfig
from space.records.trace import CompareRecord, RunTrace, busy_server_sentence, other_requests
from space.records.verdict import Checklist
from vis.compare import METRICS


def na(value: float | None, spec: str) -> str:
    """``value`` formatted by ``spec``, or "n/a" for None."""
    return "n/a" if value is None else format(value, spec)


def describe_run(r: RunTrace) -> str:
    timing = f"TTFT {r.ttft_s * 1e3:.0f} ms, TPOT {r.tpot_s * 1e3:.1f} ms, {r.tokens_per_s:.1f} tok/s"
    acceptance = (f"acceptance {na(r.acceptance_rate, '.1%')}, "
                  f"mean acceptance length {na(r.mean_acceptance_length, '.2f')}")
    return (f"{r.text}\n---\n{config_words(r)}\n{len(r.output_token_ids)} tokens, {len(r.steps)} steps, "
            f"{timing}, {acceptance}{_notes(r)}")


def _notes(r: RunTrace) -> str:
    """'; explained: 23 verified drafts scored in 0.31 s (after timing)' when explained, then
    a line per tracing hook that did not attach, saying what the run lacks for it."""
    explained = "" if r.explanation is None else (
        f"; explained: {sum(len(s.target_views) for s in r.steps)} verified drafts scored in "
        f"{r.explanation.score_s:.2f} s (after timing)")
    return explained + "".join(f"\nmissing: {line}" for line in hooks.missing_lines(r.config))


def describe_compare(c: CompareRecord) -> str:
    head = config_words(c.speculative)
    rows = [("", "baseline", "speculative")] + [
        (label, format(read(c.baseline), fmt), format(read(c.speculative), fmt))
        for label, read, fmt in METRICS]
    table = "\n".join(f"{a:<15}{b:>12}{d:>14}" for a, b, d in rows)
    same = "identical" if c.outputs_identical else \
        f"differ from output token {c.first_divergence}"
    return (f"{head}\n{table}\nspeedup (TPOT) {c.speedup:.2f}x, end-to-end {c.e2e_speedup:.2f}x; "
            f"outputs {same}; acceptance {na(c.speculative.acceptance_rate, '.1%')}"
            f"{_notes(c.speculative)}")


def describe_checklist(checklist: Checklist) -> str:
    marks = {True: "pass", False: "FAIL", None: "  - "}
    return "\n".join([f"verdict: {checklist.verdict}"]
                     + [f"  [{marks[c.passed]}] {c.name}{' *' if c.decisive else ''}: {c.detail}"
                        for c in checklist.checks])


def describe_workload(r: Any) -> str:
    """A ``space.runs.workloads.WorkloadResult``: per-prompt rows, then the medians."""
    dtype = dtype_words(r.config)
    lines = [f"{r.workload_id}{f', {dtype}' if dtype else ''}",
             f"{'prompt':<24}{'speedup':>8}{'accept':>8}{'base ms':>9}{'spec ms':>9}"
             f"{'tokens':>7}  verdict"]
    for row in r.rows():
        lines.append(f"{row['prompt'][:23]:<24}{row['speedup']:>7.2f}x"
                     f"{na(row['acceptance_rate'], '.0%'):>8}"
                     f"{row['baseline_tpot_ms']:>9.1f}{row['speculative_tpot_ms']:>9.1f}"
                     f"{row['output_tokens']:>7}  {row['verdict']}")
    low_high = (f" (spread {r.speedup_spread[0]:.2f}-{r.speedup_spread[1]:.2f})"
                if r.speedup_spread else "")
    lines.append(f"{r.workload_id}, concurrency {r.concurrency}: median speedup (TPOT) "
                 f"{r.speedup:.2f}x{low_high}; throughput {r.baseline_tokens_per_s:.1f} -> "
                 f"{r.speculative_tokens_per_s:.1f} tok/s ({r.throughput_speedup:.2f}x); "
                 f"acceptance {na(r.acceptance_rate, '.1%')}")
    return "\n".join(lines)


def config_words(run: RunTrace) -> str:
    """'ngram, k=4, on SmolLM2-135M-Instruct (cpu)'."""
    c = run.config
    method = c.method or "baseline"
    draft = f", draft {c.draft_model}" if c.draft_model else ""
    model = Path(c.model_path or c.model or "?").name
    # a server does not report its device (``source`` says where the run went)
    device = f" ({c.device})" if c.device and c.source != SERVER else ""
    dtype = dtype_words(c)
    source = ""
    if c.source == SERVER:  # ', through a vLLM 0.32.0 server (declared method and k; step split exact)'
        split, busy = run.step_split, other_requests(run)
        how = "" if split is None else "; step split exact" if split.exact else \
            f"; step split not exact: {split.note}"
        source = (f", through a vLLM {c.vllm_version or '?'} server (declared method and k{how})"
                  + (f"; {busy_server_sentence(busy)}" if busy else ""))
    return (f"{method}{f', k={c.k}' if c.k else ''}{draft}, on {model}{device}"
            f"{f', {dtype}' if dtype else ''}{source}")


def dtype_words(config: RunConfig) -> str:
    """'float32 (this CPU has no native bf16)': the dtype and, where recorded, why."""
    if not config.dtype:
        return ""
    reason = config.dtype_reason
    return f"{config.dtype} ({reason})" if reason else config.dtype


def summary(record: CompareRecord | RunTrace) -> str:
    run = record.speculative if isinstance(record, CompareRecord) else record
    head = f"{config_words(run)}: {len(run.output_token_ids)} tokens in {run.e2e_s:.2f} s"
    if not isinstance(record, CompareRecord):
        return head + " (a single run, no baseline)"
    baseline = record.baseline
    busy = other_requests(baseline)
    if busy and not other_requests(run):  # the speculative side's words say its own
        head += f"; baseline: {busy_server_sentence(busy)}"
    same = "identical" if record.outputs_identical else "different"
    return (f"{head}; baseline {baseline.e2e_s:.2f} s; TPOT speedup {record.speedup:.2f}x; "
            f"outputs {same}")


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / (1 << 30):.1f} GiB"


def doctor_table(report: DoctorReport) -> str:
    """Machine, vLLM, dtype, then hooks, checks and methods, one row each."""
    marks = {True: "pass", False: "FAIL", None: "skip"}
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
    lines += [f"{c.name:<42}{marks[c.passed]:<8}{c.detail}" for c in report.checks]
    lines += ["", f"{'method':<14}{'available':<11}why"]
    lines += [f"{m.name:<14}{'yes' if m.available else 'no':<11}{m.why}" for m in report.methods]
    verdict = (f"{len(report.failed)} check(s) failed" if report.failed
               else "every check passed (or was skipped with its reason)")
    lines += ["", f"{verdict}; {report.elapsed_s:.0f} s, {report.date}"]
    return "\n".join(lines)
