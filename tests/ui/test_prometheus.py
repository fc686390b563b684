"""A real Prometheus (Debian's) scraping a fresh app every second: every PromQL
expression of deploy/grafana/speclens-dashboard.json, and the spec-decode
panels of vLLM's own speculative-decoding dashboard, return data after real
runs, and the acceptance figures Prometheus computes equal the runs' traces.

Prometheus watches the app from its start, before its first run: its
counters start at zero with Prometheus watching, which is what rate() and
increase() over the whole test see. The app is the session's own, which this
module gets first (tests/ui/conftest.py runs it first of the tier), or, when
another test ran on it first, one started here. It also shows the link working
at once: the page answers within seconds, and the first run, submitted before
the engines are built, waits with that message. Every query is evaluated at the
end of the two runs, over the window since Prometheus started: the runs of the
tests after this module are not in it.
"""
from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import pytest

from space.engine.hardware import on_gpu
from space.records.trace import CompareRecord
from tests.helpers.page import fetch_record
from tests.ui.servers import PROMETHEUS, start_app, start_prometheus

pytestmark = pytest.mark.engine

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "speclens-dashboard.json"
JOB = "speclens"  # the dashboard's RSS query names this job
PAGE_WITHIN_S = 20  # measured ~7 s on the 2-core CPU box (docs/performance.md); generous for a busy CI
WAITING = "waiting in the queue for the engines"

# The spec-decode panels of vLLM's "vLLM / Speculative Decoding" dashboard
# (examples/observability/dashboards/grafana/vllm_speculative_decoding.json in
# vLLM's repository, newer than the 0.32/0.33 releases), restated here query
# for query with its template variables; docs/metrics.md lists them.
SEL = '{job=~"$job", model_name=~"$model_name", instance=~"$instance", engine=~"$engine"}'
ACCEPTED = f"rate(vllm:spec_decode_num_accepted_tokens_total{SEL}[$__rate_interval])"
DRAFT_TOKENS = f"rate(vllm:spec_decode_num_draft_tokens_total{SEL}[$__rate_interval])"
DRAFTS = f"rate(vllm:spec_decode_num_drafts_total{SEL}[$__rate_interval])"
GENERATED = f"rate(vllm:generation_tokens_total{SEL}[$__rate_interval])"
PER_POS = f"rate(vllm:spec_decode_num_accepted_tokens_per_pos_total{SEL}[$__rate_interval])"
ITL = f"vllm:inter_token_latency_seconds_bucket{SEL}[$__rate_interval]"
VLLM_PANELS = {
    "acceptance rate": f"sum({ACCEPTED}) / (sum({DRAFT_TOKENS}) > 0)",
    "acceptance length": f"1 + sum({ACCEPTED}) / (sum({DRAFTS}) > 0)",
    "accepted tokens/s": f"sum({ACCEPTED})",
    "draft tokens/s": f"sum({DRAFT_TOKENS})",
    "drafts/s": f"sum({DRAFTS})",
    "output from drafts": f"sum({ACCEPTED}) / (sum({GENERATED}) > 0)",
    "acceptance rate (time series)":
        f"sum by (model_name) ({ACCEPTED}) / (sum by (model_name) ({DRAFT_TOKENS}) > 0)",
    "mean acceptance length (time series)":
        f"1 + sum by (model_name) ({ACCEPTED}) / (sum by (model_name) ({DRAFTS}) > 0)",
    "acceptance by position":
        f"sum by (position) ({PER_POS}) / on () group_left () (sum({DRAFTS}) > 0)",
    "acceptance rate by engine": f"sum by (instance, engine) ({ACCEPTED}) / "
                                 f"(sum by (instance, engine) ({DRAFT_TOKENS}) > 0)",
    "rejected tokens/s": f"sum({DRAFT_TOKENS}) - sum({ACCEPTED})",
    "inter-token latency p50": f"histogram_quantile(0.5, sum by (le) (rate({ITL})))",
    "inter-token latency p99": f"histogram_quantile(0.99, sum by (le) (rate({ITL})))",
    "inter-token latency mean":
        f"sum(rate(vllm:inter_token_latency_seconds_sum{SEL}[$__rate_interval])) / "
        f"(sum(rate(vllm:inter_token_latency_seconds_count{SEL}[$__rate_interval])) > 0)",
}


def grafana(expr: str, window_s: int, variables: dict[str, str]) -> str:
    """``expr`` as Grafana sends it: its interval and template variables substituted."""
    for name in ("$__rate_interval", "$__range", "$__interval"):
        expr = expr.replace(name, f"{window_s}s")
    for name, value in variables.items():
        expr = expr.replace(f"${{{name}}}", value).replace(f"${name}", value)
    assert "$" not in expr, expr
    return expr


def dashboard_targets() -> list[tuple[str, str]]:
    dash = json.loads(DASHBOARD.read_text())
    panels = [q for p in dash["panels"] for q in [p, *p.get("panels", [])]]
    return [(f'{p["title"]}: {t.get("legendFormat", "")}', t["expr"])
            for p in panels for t in p.get("targets", []) if "expr" in t]


def gpu_only(expr: str) -> bool:
    return "speclens_gpu_memory_" in expr


def finite(result: list[dict]) -> list[float]:
    return [float(s["value"][1]) for s in result if math.isfinite(float(s["value"][1]))]


@pytest.fixture(scope="module")
def watched(session_app, tmp_path_factory):
    """(app, folder): the session's app while nothing has run on it and its engines
    build (this module runs first of the tier: tests/ui/conftest.py), else, when
    another test got to it first, an app of this module's own, stopped after it."""
    if not Path(PROMETHEUS).exists():
        pytest.skip(f"Debian's prometheus is not installed at {PROMETHEUS} "
                    "(bash scripts/setup.sh --test installs it)")
    app = session_app.fresh()
    if app is not None:
        yield app, session_app.folder
        return
    folder = tmp_path_factory.mktemp("prometheus")
    app = start_app(folder)
    try:
        yield app, folder
    finally:
        app.stop()


@pytest.fixture(scope="module")
def stack(watched):
    """The app and Prometheus after two known runs; their records."""
    from gradio_client import Client

    from space.runs.presets import get_workload

    app, folder = watched
    prom = None
    try:
        app.wait("page", timeout_s=120)
        page_s = time.monotonic() - app.started_s
        client = Client(app.url, verbose=False)
        labels = [r["label"] for r in client.view_api(return_format="dict", print_info=False)
                  ["named_endpoints"]["/run"]["returns"]]
        prompts = [get_workload("code_editing").prompt("add_rounding").text,
                   get_workload("structured_output").prompts[0].text]
        # Submitted as soon as the page answers: the engines are still building.
        first = client.submit(prompts[0], "ngram", "", 4, 0.0, 1.0, 32, 0, 1, api_name="/run")
        prom = start_prometheus(folder, app.url, JOB)
        t_start = time.time()
        prom.wait_scrapes(JOB, 2)
        first.result()
        statuses = [out[labels.index("Status")] for out in first.outputs()]
        second = client.predict(prompts[1], "ngram", "", 4, 0.0, 1.0, 32, 0, 1, api_name="/run")
        prom.wait_scrapes(JOB, 3)  # the last run's counts are in Prometheus
        # Every query is evaluated at this moment, over the window since Prometheus
        # started: it sees these two runs only, whatever runs on the app after them.
        t_end = time.time()
        records = [record(app.url, out[labels.index("Download trace (JSON)")])
                   for out in (first.outputs()[-1], second)]
        yield dict(app=app, prom=prom, page_s=page_s, statuses=statuses, records=records,
                   at=t_end, window_s=int(t_end - t_start) + 10)
    finally:
        if prom is not None:
            prom.stop()


def record(app_url: str, update: dict) -> CompareRecord:
    rec = fetch_record(app_url, update)  # the app's file lives under its own data folder
    assert isinstance(rec, CompareRecord)
    return rec


def expected(records: list[CompareRecord]) -> dict:
    """Acceptance over the speculative runs the page measured, from their traces."""
    runs = [r.speculative for r in records]
    drafts = sum(r.num_drafts for r in runs)
    accepted = sum(r.num_accepted_tokens for r in runs)
    k = max(len(r.num_accepted_tokens_per_pos) for r in runs)
    per_pos = [sum(r.num_accepted_tokens_per_pos[p] for r in runs
                   if p < len(r.num_accepted_tokens_per_pos)) / drafts for p in range(k)]
    return {"rate": accepted / sum(r.num_draft_tokens for r in runs),
            "length": 1 + accepted / drafts, "per_pos": per_pos,
            "from_drafts": accepted / sum(len(r.output_token_ids) for r in runs)}


def test_page_serves_at_once_and_the_first_run_waits_for_the_engines(stack):
    assert stack["page_s"] < PAGE_WITHIN_S
    assert any(WAITING in s for s in stack["statuses"][:3]), stack["statuses"][:3]
    assert 'data-kind="done"' in stack["statuses"][-1]
    assert not any('data-kind="error"' in s for s in stack["statuses"])


def test_series_start_at_zero_before_the_runs(stack):
    # The premise of increase(): Prometheus saw every counter at 0 first.
    prom = stack["prom"]
    for name in ("speclens_spec_decode_num_accepted_tokens_per_pos_total",
                 "vllm:spec_decode_num_accepted_tokens_per_pos_total"):
        firsts = prom.query(f'min_over_time({name}{{engine="speculative"}}[1h])', stack["at"])
        assert sorted(s["metric"]["position"] for s in firsts) == ["0", "1", "2", "3"]
        assert all(float(s["value"][1]) == 0 for s in firsts)


def test_every_dashboard_query_returns_data(stack):
    targets = dashboard_targets()
    assert len(targets) >= 14
    empty = []
    for title, expr in targets:
        if gpu_only(expr) and not on_gpu():
            continue  # NVML readings: a GPU box only
        if not finite(stack["prom"].query(grafana(expr, stack["window_s"], {}), stack["at"])):
            empty.append(title)
    assert empty == []


def test_dashboard_acceptance_equals_the_traces(stack):
    want = expected(stack["records"])
    by_title = dict(dashboard_targets())
    q = lambda title: stack["prom"].query(  # noqa: E731
        grafana(by_title[title], stack["window_s"], {}), stack["at"])
    (rate,) = finite(q("Draft acceptance over time: acceptance rate"))
    (length,) = finite(q("Draft acceptance over time: mean accepted length (tokens per step)"))
    per_pos = {int(s["metric"]["position"]): float(s["value"][1])
               for s in q("Acceptance by draft position: position {{position}}")}
    assert rate == pytest.approx(want["rate"], abs=1e-6)
    assert length == pytest.approx(want["length"], abs=1e-6)
    assert [per_pos[p] for p in sorted(per_pos)] == pytest.approx(want["per_pos"], abs=1e-6)


def test_vllm_dashboard_spec_decode_panels(stack):
    want = expected(stack["records"])
    variables = {"job": JOB, "model_name": ".*", "instance": ".*", "engine": "speculative"}
    values = {}
    for title, expr in VLLM_PANELS.items():
        result = stack["prom"].query(grafana(expr, stack["window_s"], variables), stack["at"])
        assert finite(result), title
        values[title] = result
    one = lambda title: finite(values[title])[0]  # noqa: E731
    assert one("acceptance rate") == pytest.approx(want["rate"], abs=1e-6)
    assert one("acceptance length") == pytest.approx(want["length"], abs=1e-6)
    assert one("output from drafts") == pytest.approx(want["from_drafts"], abs=1e-6)
    per_pos = {int(s["metric"]["position"]): float(s["value"][1])
               for s in values["acceptance by position"]}
    assert [per_pos[p] for p in sorted(per_pos)] == pytest.approx(want["per_pos"], abs=1e-6)
    # Its template variables: label_values(vllm:num_requests_running, engine) etc.
    series = stack["prom"].series("vllm:num_requests_running")
    assert {s["engine"] for s in series} == {"baseline", "speculative"}
    assert {s["job"] for s in series} == {JOB} and all(s["model_name"] for s in series)


def test_substitution_leaves_no_variable():
    assert grafana('rate(x{a=~"$engine"}[$__rate_interval])', 60, {"engine": "e"}) == \
        'rate(x{a=~"e"}[60s])'
    with pytest.raises(AssertionError):
        grafana("rate(x[$__unknown])", 60, {})
    assert re.search(r"\$", grafana("${job}", 1, {"job": "j"})) is None
