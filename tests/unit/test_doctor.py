"""The doctor's records, table and CLI on literal reports (no engine), and the
hook states' words (issue 30)."""
from __future__ import annotations

import json

import pytest

from space.cli import main as cli
from space.records import doctor as rec
from space.records import hooks
from space.records.counts import SpecCounts
from space.records.doctor import Check, DoctorReport, MethodState
from space.records.run import RunConfig
from vis.text import doctor_table


def report(passed: bool | None = True) -> DoctorReport:
    return DoctorReport(
        machine={"device": "gpu", "gpu": {"name": "NVIDIA RTX PRO 6000 Blackwell", "compute_capability":
                 "12.0", "memory_bytes": 96 << 30, "driver": "580.65", "cuda": "12.9"},
                 "cpu": {"model": "x", "bf16_units": [], "cores": 32}},
        vllm={"distribution": "vllm", "version": "0.33.0", "tested": {"vllm": "0.33.0"},
              "is_tested": True, "warning": None},
        dtype={"value": "bfloat16", "reason": "the model's own dtype"},
        hooks=[hooks.attached(hooks.TRACING_SCHEDULER),
               hooks.missing(hooks.CLOCK_SAMPLING, "GPUModelRunner has no sampler")],
        checks=[Check(rec.COUNTS_EQUAL, passed, "8 verify steps"),
                Check(rec.NVML_MEMORY, None, "skipped: no GPU")],
        methods=[MethodState("eagle3", False, "head x: offline")], date="2026-12-04")


def test_report_json_validates_and_bad_ones_are_named():
    d = json.loads(json.dumps(report().to_dict()))
    assert rec.problems(d) == []
    d["checks"][0]["name"] = "counts"
    d["hooks"][0]["state"] = "half"
    del d["dtype"]["reason"]
    found = rec.problems(d)
    assert any("no \"counts equal" in p or "no 'counts equal" in p for p in found)
    assert any("half" in p for p in found) and any("dtype.reason" in p for p in found)
    assert rec.problems([]) == ["not a JSON object"]


def test_table_names_the_gpu_hooks_checks_and_methods():
    table = doctor_table(report(False))
    assert "RTX PRO 6000" in table and "compute capability 12.0" in table
    assert "GPUModelRunner has no sampler" in table and "FAIL" in table and "skip" in table
    assert "1 check(s) failed" in table


@pytest.mark.parametrize("passed, code", [(True, 0), (None, 0), (False, 1)])
def test_cli_exit_code_and_json(passed, code, tmp_path, monkeypatch, capsys):
    from space.runs import doctor

    monkeypatch.setattr(doctor, "run", lambda **kw: report(passed))
    path = tmp_path / "d.json"
    assert cli.main(["doctor", "--json", str(path)]) == code
    assert rec.problems(json.loads(path.read_text())) == []
    assert "counts equal vLLM's per-request metrics" in capsys.readouterr().out


def test_a_missing_hook_says_what_the_run_lacks():
    config = RunConfig(vllm_version="0.34.0", tracing_settings={"hooks": hooks.to_json([
        hooks.attached(hooks.TRACING_SCHEDULER),
        hooks.missing(hooks.CLOCK_SAMPLING, "the V2 runner's sampler\nhook did not attach")])})
    [line] = hooks.missing_lines(config)
    assert line.startswith("step clock: sampling: did not attach on vLLM 0.34.0 (the V2 "
                           "runner's sampler hook did not attach)")
    assert "'other'" in line
    assert hooks.is_missing(config, hooks.CLOCK_SAMPLING)
    assert not hooks.is_missing(config, hooks.TRACING_SCHEDULER)
    assert hooks.missing_lines(RunConfig()) == []


def test_vllm_counts_from_the_histogram():
    c = SpecCounts.from_vllm_metrics({"histogram": [2, 1, 0, 1], "num_spec_steps": 4,
                                      "num_draft_tokens": 12})
    assert c is not None
    assert (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens,
            c.num_accepted_tokens_per_pos) == (4, 12, 4, (2, 1, 1))
    assert SpecCounts.from_vllm_metrics(None) is None
    assert SpecCounts.from_vllm_metrics({"num_draft_tokens": 3}) is None


def test_the_memory_check_allows_10_percent_below_and_10_percent_plus_2_gib_above():
    assert rec.memory_check(20 << 30, 19 << 30, None).passed is True
    assert rec.memory_check(10 << 30, 19 << 30, None).passed is False
    assert rec.memory_check(None, 19 << 30, "no GPU").passed is None
