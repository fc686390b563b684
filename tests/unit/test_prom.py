"""space/observe/prom.py: the scrape's counts equal the hand-made trace's."""
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route

from space.observe.prom import CONTENT_TYPE, Metrics, mount_metrics
from tests.helpers.memory import engines, h200
from tests.helpers.traces import NGRAM_RUN_COUNTS, ngram_run, short_baseline


def samples(metrics: Metrics) -> dict[tuple, float]:
    """{(sample name, sorted labels): value} from the rendered scrape."""
    text = metrics.render().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def value(metrics, name, **labels) -> float:
    return samples(metrics)[(name, tuple(sorted(labels.items())))]


def test_accepted_per_position_is_the_prefix_count():
    run = ngram_run()
    assert run.num_accepted_tokens_per_pos == NGRAM_RUN_COUNTS["per_pos"]
    assert run.per_position_acceptance == [n / run.num_drafts for n in NGRAM_RUN_COUNTS["per_pos"]]
    assert short_baseline().num_accepted_tokens_per_pos == []


def test_counters_equal_the_trace():
    m = Metrics()
    m.observe_run("speculative", ngram_run())
    e = {"engine": "speculative"}
    assert value(m, "speclens_spec_decode_num_drafts_total", **e) == NGRAM_RUN_COUNTS["drafts"]
    assert value(m, "speclens_spec_decode_num_draft_tokens_total", **e) == NGRAM_RUN_COUNTS["draft_tokens"]
    assert value(m, "speclens_spec_decode_num_accepted_tokens_total", **e) == NGRAM_RUN_COUNTS["accepted"]
    per_pos = [value(m, "speclens_spec_decode_num_accepted_tokens_per_pos_total",
                     position=str(p), **e) for p in range(4)]
    assert per_pos == NGRAM_RUN_COUNTS["per_pos"]
    assert value(m, "speclens_requests_total", status="ok", **e) == 1
    assert value(m, "speclens_requests_total", status="error", **e) == 0


def test_histograms_hold_the_run_latencies():
    m = Metrics()
    run = ngram_run()
    m.observe_run("speculative", run)
    e = {"engine": "speculative"}
    assert value(m, "speclens_ttft_seconds_count", **e) == 1
    assert value(m, "speclens_ttft_seconds_sum", **e) == pytest.approx(0.10)
    assert value(m, "speclens_tpot_seconds_sum", **e) == pytest.approx(run.tpot_s)
    assert run.tpot_s == pytest.approx(0.2 / 9)
    # 22 ms falls in the (20 ms, 30 ms] bucket
    assert value(m, "speclens_tpot_seconds_bucket", le="0.02", **e) == 0
    assert value(m, "speclens_tpot_seconds_bucket", le="0.03", **e) == 1


def test_baseline_series_exist_at_zero_and_runs_accumulate():
    m = Metrics()
    for _ in range(2):
        m.observe_run("baseline", short_baseline())
        m.observe_run("speculative", ngram_run())
    assert value(m, "speclens_spec_decode_num_drafts_total", engine="baseline") == 0
    assert value(m, "speclens_spec_decode_num_drafts_total", engine="speculative") == 6
    assert value(m, "speclens_tpot_seconds_count", engine="baseline") == 2
    assert value(m, "speclens_requests_total", engine="baseline", status="ok") == 2
    per_pos = [labels for name, labels in samples(m)
               if name == "speclens_spec_decode_num_accepted_tokens_per_pos_total"]
    assert per_pos and all(("engine", "speculative") in labels for labels in per_pos)


def test_one_token_run_has_no_tpot():
    run = short_baseline()
    run.output_token_ids = [10]
    run.recompute()
    m = Metrics()
    m.observe_run("baseline", run)
    assert value(m, "speclens_ttft_seconds_count", engine="baseline") == 1
    assert value(m, "speclens_tpot_seconds_count", engine="baseline") == 0


def test_errors_and_memory_gauges():
    m = Metrics()
    m.observe_error("speculative")
    m.observe_memory(engines(), h200())
    assert value(m, "speclens_requests_total", engine="speculative", status="error") == 1
    assert value(m, "speclens_kv_cache_usage_ratio", engine="baseline") == 0.25
    assert value(m, "speclens_kv_cache_used_bytes", engine="baseline") == 2 ** 28
    assert value(m, "speclens_gpu_memory_used_bytes", gpu="0") == 60 * 2 ** 30
    assert value(m, "speclens_gpu_memory_free_bytes", gpu="0") == 80 * 2 ** 30
    assert value(m, "speclens_gpu_memory_total_bytes", gpu="0") == 140 * 2 ** 30
    m.observe_memory([], None)  # a CPU host: nothing to set, nothing raised


def test_engine_label_is_checked():
    m = Metrics()
    with pytest.raises(ValueError, match="engine label"):
        m.observe_run("draft", ngram_run())
    with pytest.raises(ValueError):
        m.observe_error("")


def test_registries_are_private():
    a, b = Metrics(), Metrics()  # a second instance must not clash on names
    a.observe_run("speculative", ngram_run())
    assert value(b, "speclens_spec_decode_num_drafts_total", engine="speculative") == 0
    assert REGISTRY.get_sample_value("speclens_requests_total",
                                     {"engine": "speculative", "status": "ok"}) is None


def test_mount_metrics_serves_the_scrape_before_a_root_mount():
    # Gradio mounts itself at "/"; /metrics must still reach the metrics route.
    app = FastAPI()
    app.router.routes.append(Mount("/", routes=[Route("/{p:path}", lambda r: PlainTextResponse("ui"))]))
    m = Metrics()
    m.observe_run("speculative", ngram_run())
    mount_metrics(app, m)
    client = TestClient(app)
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["content-type"] == CONTENT_TYPE
    assert 'speclens_spec_decode_num_accepted_tokens_total{engine="speculative"} 5.0' in r.text
    assert client.get("/other").text == "ui"


def test_vllm_names_carry_the_same_counts():
    m = Metrics(model_name="smol")
    m.observe_run("speculative", ngram_run())
    lb = {"engine": "speculative", "model_name": "smol"}
    assert value(m, "vllm:spec_decode_num_drafts_total", **lb) == NGRAM_RUN_COUNTS["drafts"]
    assert value(m, "vllm:spec_decode_num_draft_tokens_total", **lb) == NGRAM_RUN_COUNTS["draft_tokens"]
    assert value(m, "vllm:spec_decode_num_accepted_tokens_total", **lb) == NGRAM_RUN_COUNTS["accepted"]
    assert [value(m, "vllm:spec_decode_num_accepted_tokens_per_pos_total", position=str(p), **lb)
            for p in range(4)] == NGRAM_RUN_COUNTS["per_pos"]
    assert value(m, "vllm:generation_tokens_total", **lb) == 10
    assert value(m, "vllm:prompt_tokens_total", **lb) == 5
    assert value(m, "vllm:request_success_total", finished_reason="length", **lb) == 1
    # Four outputs after the first (verify, verify, verify, decode), 50 ms apart.
    assert value(m, "vllm:inter_token_latency_seconds_count", **lb) == 4
    assert value(m, "vllm:inter_token_latency_seconds_sum", **lb) == pytest.approx(0.2)
    assert value(m, "vllm:time_to_first_token_seconds_sum", **lb) == pytest.approx(0.1)
    assert value(m, "vllm:request_time_per_output_token_seconds_count", **lb) == 1
    assert value(m, "vllm:e2e_request_latency_seconds_sum", **lb) == pytest.approx(0.3)


def test_every_series_exists_at_zero_before_the_first_run():
    m = Metrics(model_name="smol")
    m.register_engine("speculative", 3)
    s = samples(m)
    for e in ("baseline", "speculative"):
        lb = {"engine": e, "model_name": "smol"}
        for name in ("vllm:spec_decode_num_drafts_total", "vllm:generation_tokens_total",
                     "vllm:inter_token_latency_seconds_count", "vllm:kv_cache_usage_perc",
                     "vllm:num_requests_running"):
            assert s[(name, tuple(sorted(lb.items())))] == 0, (name, e)
        assert value(m, "speclens_kv_cache_usage_ratio", engine=e) == 0
    positions = sorted(dict(labels)["position"] for name, labels in s
                       if name == "speclens_spec_decode_num_accepted_tokens_per_pos_total")
    assert positions == ["0", "1", "2"]
    vllm_positions = [dict(labels) for name, labels in s
                      if name == "vllm:spec_decode_num_accepted_tokens_per_pos_total"]
    assert sorted(p["position"] for p in vllm_positions) == ["0", "1", "2"]
    assert all(p["engine"] == "speculative" and v == 0 for p, v in
               ((dict(lbl), s[(n, lbl)]) for n, lbl in s
                if n == "vllm:spec_decode_num_accepted_tokens_per_pos_total"))


def test_memory_sets_vllms_kv_gauge():
    m = Metrics(model_name="smol")
    m.observe_memory(engines(), None)
    assert value(m, "vllm:kv_cache_usage_perc", engine="baseline", model_name="smol") == 0.25
