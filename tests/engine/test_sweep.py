"""Sweeps and workload runs on the real engine: short outputs, two points each.

Timings on a shared 2-core machine are noise at this size; these tests check
what a user sees of the machinery (rows, progress, batches, CSV, the CLI),
not the speedups (benchmarks/bench_verdicts.py measures those).
"""
from __future__ import annotations

import json

import pandas as pd
import pytest

from space.runs import presets
from space.runs.source import Engines
from space.runs.sweep import COLUMNS, run_sweep
from space.runs.workloads import run_workload
from tests.helpers.cli import ENGINE_FLAGS, cli_in_process

pytestmark = pytest.mark.engine

TOKENS = 24


@pytest.fixture(scope="module")
def spec(ngram_engine):
    return ngram_engine.spec


def test_k_sweep_table_progress_and_csv(pool, spec, tmp_path):
    seen = []
    w = presets.get_workload("code_editing")
    res = run_sweep(spec, w, "k", [2, 4], repeats=1, source=Engines(pool), max_tokens=TOKENS,
                    prompt_ids=["rename_variable"], progress=lambda f, m: seen.append((f, m)))
    t = res.table
    assert list(t.columns) == COLUMNS and list(t["value"]) == [2, 4]
    assert [r.config.k for r in res.results] == [2, 4]
    assert (t["speedup"] > 0).all() and t["acceptance_rate"].between(0, 1).all()
    assert (t["output_tokens"] == TOKENS).all()
    fracs = [f for f, _ in seen]
    assert fracs == sorted(fracs) and fracs[-1] == 1.0 and len(seen) >= 4
    assert any("point 2/2 (k=4)" in m for _, m in seen)
    path = tmp_path / "k.csv"
    res.to_csv(path)
    back = pd.read_csv(path)
    assert list(back["value"]) == [2, 4] and list(back.columns) == COLUMNS


def test_concurrency_runs_requests_together(pool, spec):
    w = presets.get_workload("concurrency")
    r = run_workload(spec, w, repeats=1, source=Engines(pool), max_tokens=TOKENS, concurrency=3)
    assert r.concurrency == 3 and len(r.items) == 3
    assert [it.prompt_id for it in r.items] == [f"{p.id}#{i + 1}"
                                                 for i, p in enumerate(w.prompts[:3])]
    first, second = r.items[0].compare.baseline, r.items[1].compare.baseline
    # submitted together: the requests share their arrival and their first step
    assert first.arrival_s == second.arrival_s
    assert first.steps[0].start_s == second.steps[0].start_s
    run = r.batch_runs[0]
    assert run["baseline_tokens"] == sum(len(it.compare.baseline.output_token_ids)
                                         for it in r.items)
    assert r.baseline_tokens_per_s == pytest.approx(run["baseline_tokens_per_s"])
    assert r.throughput_speedup == pytest.approx(
        run["speculative_tokens_per_s"] / run["baseline_tokens_per_s"])
    assert r.checklist.verdict and all(it.compare.checklist for it in r.items)
    assert r.checklist.check("concurrency").value == 3


def test_input_length_and_temperature_sweeps(pool, spec):
    w = presets.get_workload("structured_output")
    pick = ["product_listing"]
    res = run_sweep(spec, w, "input_length", [64, 700], repeats=1, source=Engines(pool),
                    max_tokens=TOKENS, prompt_ids=pick)
    short, long_ = res.results
    # 64 is shorter than the prompt itself: sent as written; 700 is padded to about 700
    assert short.prompt_tokens < 300
    assert abs(long_.prompt_tokens - 700) <= 10
    assert "Background document" in long_.items[0].compare.speculative.prompt
    res = run_sweep(spec, w, "temperature", [0.0, 1.0], repeats=1, source=Engines(pool),
                    max_tokens=TOKENS, prompt_ids=pick)
    assert [r.temperature for r in res.results] == [0.0, 1.0]
    assert res.results[1].checklist.check("temperature").value == 1.0


def test_cli_sweep_writes_csv_json_and_plot(tmp_path):
    csv, js, html = tmp_path / "s.csv", tmp_path / "s.json", tmp_path / "s.html"
    r = cli_in_process("sweep", "--workload", "code_editing", "--variable", "k", "--values",
                       "4", "--prompt-id", "rename_variable", "--max-tokens", "16",
                       "--repeats", "1", *ENGINE_FLAGS,
                       "--csv", str(csv), "--json", str(js), "--plot", str(html))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "[100%] sweep done" in r.stdout and "crossover (speedup = 1)" in r.stdout
    assert list(pd.read_csv(csv)["value"]) == [4]
    assert '"variable": "k"' in js.read_text()
    assert "plotly" in html.read_text()[:5000].lower()


def test_cli_compare_prints_and_saves_the_checklist(tmp_path):
    js = tmp_path / "c.json"
    r = cli_in_process("compare", "--workload", "code_editing", "--prompt-id",
                       "rename_variable", "--max-tokens", "16", "--repeats", "1",
                       *ENGINE_FLAGS, "--json", str(js))
    assert r.returncode == 0, r.stderr[-2000:]
    d = json.loads(js.read_text())
    verdict = d["checklist"]["verdict"]
    assert f"verdict: {verdict}" in r.stdout
    assert {c["name"] for c in d["checklist"]["checks"]} >= {"measured speedup", "repetition"}
    assert d["items"][0]["compare"]["checklist"]["verdict"]
