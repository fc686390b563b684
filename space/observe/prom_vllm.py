"""vLLM's own metric names and labels (``model_name``, ``engine``), so that dashboards
written for ``vllm serve`` work on SpecLens's ``/metrics`` (docs/metrics.md); the request
gauges stay at 0, only so that vLLM's dashboards list the engines.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from space.observe.counters import RunCounters
from space.records.trace import RunTrace

# vLLM's FinishReason values (vllm/v1/engine/__init__.py), as its label shows them.
FINISHED_REASONS = ("stop", "length", "abort")
# Seconds, ~1 ms to a slow CPU step (vLLM's inter-token buckets start at 10 ms).
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1,
                   0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
LABELS = ["model_name", "engine"]


def inter_token_latencies_s(run: RunTrace) -> list[float]:
    """Seconds between consecutive outputs (vLLM's inter-token latency): between steps
    that emitted tokens, one speculative step's output carrying several."""
    ends = [s.end_s for s in run.steps if s.emitted_token_ids]
    return [b - a for a, b in zip(ends, ends[1:], strict=False)]


class VllmSeries:
    """vLLM-named series on ``registry``; one model name per app."""

    def __init__(self, registry: CollectorRegistry, model_name: str) -> None:
        self.model_name = model_name
        r = registry
        self.run_counters = RunCounters("vllm", LABELS, r)
        self.request_success = Counter("vllm:request_success",
                                       "Count of successfully processed requests.",
                                       LABELS + ["finished_reason"], registry=r)

        def histogram(name: str, doc: str) -> Histogram:
            return Histogram(name, doc, LABELS, buckets=LATENCY_BUCKETS, registry=r)

        self.ttft = histogram("vllm:time_to_first_token_seconds",
                              "Histogram of time to first token in seconds.")
        self.itl = histogram("vllm:inter_token_latency_seconds",
                             "Histogram of inter-token latency in seconds.")
        self.tpot = histogram("vllm:request_time_per_output_token_seconds",
                              "Histogram of time_per_output_token_seconds per request.")
        self.e2e = histogram("vllm:e2e_request_latency_seconds",
                             "Histogram of e2e request latency in seconds.")
        self.kv_usage = Gauge("vllm:kv_cache_usage_perc",
                              "KV-cache usage. 1 means 100 percent usage.", LABELS, registry=r)
        self.running = Gauge("vllm:num_requests_running",
                             "Number of requests in model execution batches.", LABELS, registry=r)
        self.waiting = Gauge("vllm:num_requests_waiting", "Number of requests waiting.",
                             LABELS, registry=r)

    def _labels(self, engine: str) -> dict[str, str]:
        return {"model_name": self.model_name, "engine": engine}

    def register(self, engine: str, k: int) -> None:
        """Create every series of ``engine`` at zero, positions 0..k-1 included."""
        lb = self._labels(engine)
        self.run_counters.register(k, **lb)
        for reason in FINISHED_REASONS:
            self.request_success.labels(**lb, finished_reason=reason)
        for h in (self.ttft, self.itl, self.tpot, self.e2e):
            h.labels(**lb)
        for g in (self.kv_usage, self.running, self.waiting):
            g.labels(**lb)

    def observe_run(self, engine: str, run: RunTrace) -> None:
        lb = self._labels(engine)
        self.run_counters.observe(run, **lb)
        if run.finish_reason in FINISHED_REASONS:
            self.request_success.labels(**lb, finished_reason=run.finish_reason).inc()
        if run.output_token_ids:
            self.ttft.labels(**lb).observe(run.ttft_s)
            self.e2e.labels(**lb).observe(run.e2e_s)
        if len(run.output_token_ids) > 1:
            self.tpot.labels(**lb).observe(run.tpot_s)
        for gap in inter_token_latencies_s(run):
            self.itl.labels(**lb).observe(gap)

    def set_kv_usage(self, engine: str, ratio: float) -> None:
        self.kv_usage.labels(**self._labels(engine)).set(ratio)
