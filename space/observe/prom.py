"""Prometheus metrics for both engines on a registry per ``Metrics`` (docs/metrics.md):
``speclens_*`` series with an ``engine`` label, and vLLM's names and labels (``model_name``,
``engine``, ``VllmSeries``) so that dashboards written for ``vllm serve`` work, both from
one table of the counters every finished run adds to (``RUN_COUNTERS``), so that the two
namings cannot drift apart; counts are vLLM's, from the verify steps. Labelled series start
at zero so that rate() sees the first run. vLLM's request gauges stay at 0, only so that
vLLM's dashboards list the engines.
"""
from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)

from space.common.ratelimit import retry_after_header, too_many_message
from space.observe.memory import EngineMemory, GpuMemory
from space.records.events import JOB_KINDS, Event, RunFailed, RunFinished, RunStarted, job_kind
from space.records.trace import RunTrace

CONTENT_TYPE = CONTENT_TYPE_LATEST
ENGINES = ("baseline", "speculative")
STATUSES = ("ok", "error")

# Seconds. TTFT spans a GPU prefill (ms) to a long CPU prompt (tens of s).
TTFT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                10.0, 30.0, 60.0)
# TPOT spans a small model on an H200 (~2 ms) to a CPU decode step (~1 s).
TPOT_BUCKETS = (0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1,
                0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 2.5, 5.0)

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


@dataclass(frozen=True)
class RunCounter:
    """One count per finished run. A name of None: not exported under that naming."""

    speclens: str | None   # without the ``_total`` that prometheus_client adds
    speclens_doc: str
    vllm: str | None
    vllm_doc: str
    count: Callable[[RunTrace], int]


RUN_COUNTERS: tuple[RunCounter, ...] = (
    RunCounter("speclens_spec_decode_num_drafts", "Verify steps (draft proposals checked).",
               "vllm:spec_decode_num_drafts", "Number of spec decoding drafts.",
               lambda r: r.num_drafts),
    RunCounter("speclens_spec_decode_num_draft_tokens", "Draft tokens proposed and verified.",
               "vllm:spec_decode_num_draft_tokens", "Number of draft tokens.",
               lambda r: r.num_draft_tokens),
    RunCounter("speclens_spec_decode_num_accepted_tokens", "Draft tokens the target accepted.",
               "vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens.",
               lambda r: r.num_accepted_tokens),
    RunCounter(None, "", "vllm:generation_tokens", "Number of generation tokens processed.",
               lambda r: len(r.output_token_ids)),
    RunCounter(None, "", "vllm:prompt_tokens", "Number of prefill tokens processed.",
               lambda r: len(r.prompt_token_ids)),
)
# naming -> (name, doc) of the verify steps that accepted each draft position
PER_POSITION = {
    "speclens": ("speclens_spec_decode_num_accepted_tokens_per_pos",
                 "Verify steps that accepted the draft at this position."),
    "vllm": ("vllm:spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position."),
}


class RunCounters:
    """The table's counters under one naming ("speclens" or "vllm") on ``registry``."""

    def __init__(self, naming: str, labels: list[str], registry: CollectorRegistry) -> None:
        self.counters = [(Counter(getattr(c, naming), getattr(c, f"{naming}_doc"), labels,
                                  registry=registry), c.count)
                         for c in RUN_COUNTERS if getattr(c, naming) is not None]
        self.per_pos = Counter(*PER_POSITION[naming], [*labels, "position"], registry=registry)

    def register(self, k: int, **labels: str) -> None:
        """Create the series of ``labels`` at zero, positions 0..k-1 included."""
        for c, _count in self.counters:
            c.labels(**labels)
        for p in range(k):
            self.per_pos.labels(**labels, position=str(p))

    def observe(self, run: RunTrace, **labels: str) -> None:
        for c, count in self.counters:
            c.labels(**labels).inc(count(run))
        for p, n in enumerate(run.num_accepted_tokens_per_pos):
            self.per_pos.labels(**labels, position=str(p)).inc(n)


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
        for series in (self.ttft, self.itl, self.tpot, self.e2e, self.kv_usage, self.running,
                       self.waiting):
            series.labels(**lb)

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


def _check_engine(label: str) -> str:
    """``label``, one of the fixed ``ENGINES`` (a bounded series count)."""
    if label not in ENGINES:
        raise ValueError(f"engine label must be one of {ENGINES}, got {label!r}")
    return label


class Metrics:
    """The app's metrics. ``observe_*`` feed them; ``render()`` is the scrape."""

    def __init__(self, registry: CollectorRegistry | None = None,
                 model_name: str = "default") -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.run_counters = RunCounters("speclens", ["engine"], r)
        self.ttft = Histogram("speclens_ttft_seconds", "Time to first token.", ["engine"],
                              buckets=TTFT_BUCKETS, registry=r)
        self.tpot = Histogram("speclens_tpot_seconds", "Time per output token after the first.",
                              ["engine"], buckets=TPOT_BUCKETS, registry=r)
        self.requests = Counter("speclens_requests", "Requests by outcome.",
                                ["engine", "status"], registry=r)
        self.jobs = Counter("speclens_jobs", "Jobs that ended, by kind (a sweep counts once).",
                            ["kind"], registry=r)
        self.kv_usage = Gauge("speclens_kv_cache_usage_ratio",
                              "Fraction of the KV-cache pool in use (0..1).", ["engine"], registry=r)
        self.kv_used = Gauge("speclens_kv_cache_used_bytes", "KV-cache bytes in use.",
                             ["engine"], registry=r)
        # The GPU is shared by both engines: labelled by device, not engine.
        self.gpu = {part: Gauge(f"speclens_gpu_memory_{part}_bytes", doc, ["gpu"], registry=r)
                    for part, doc in (("used", "GPU memory used by all processes (NVML)."),
                                      ("free", "GPU memory free (NVML)."),
                                      ("total", "GPU memory total (NVML)."))}
        self.engines_ready = Gauge("speclens_engines_ready",
                                   "1 once the engines of the start are built and warm.",
                                   registry=r)
        # process_resident_memory_bytes etc.: the memory figure on CPU deployments.
        ProcessCollector(registry=r)
        self.vllm = VllmSeries(r, model_name)
        # Every engine's series at 0: rate() gets a start, the baseline's drafts show 0.
        for kind in JOB_KINDS:
            self.jobs.labels(kind=kind)
        for e in ENGINES:
            self.register_engine(e, 0)
            for series in (self.ttft, self.tpot, self.kv_usage, self.kv_used):
                series.labels(engine=e)
            for status in STATUSES:
                self.requests.labels(engine=e, status=status)

    def __call__(self, event: Event) -> None:
        """The observer: a run that starts registers its engine, one that ends counts
        (a failure as a speculative error), a job that ends counts under its kind."""
        if isinstance(event, RunStarted) and event.spec.is_speculative:
            self.register_engine("speculative", event.spec.k)
        elif isinstance(event, RunFinished):
            for label, run in event.runs():
                self.observe_run(label, run)
        elif isinstance(event, RunFailed):
            self.observe_error("speculative")
        kind = job_kind(event)
        if kind is not None:
            self.jobs.labels(kind=kind).inc()

    def set_engines_ready(self) -> None:
        self.engines_ready.set(1)

    def register_engine(self, engine_label: str, k: int) -> None:
        """Create ``engine_label``'s per-position series 0..k-1 at zero, before its first run."""
        e = _check_engine(engine_label)
        self.run_counters.register(k, engine=e)
        self.vllm.register(e, k)

    def observe_run(self, engine_label: str, run: RunTrace) -> None:
        """Count one finished request from its trace (verify steps only)."""
        if run.config.synthetic:  # forced acceptance: not what the engine serves
            return
        e = _check_engine(engine_label)
        self.run_counters.observe(run, engine=e)
        if run.output_token_ids:
            self.ttft.labels(engine=e).observe(run.ttft_s)
        if len(run.output_token_ids) > 1:  # TPOT is undefined for one token
            self.tpot.labels(engine=e).observe(run.tpot_s)
        self.requests.labels(engine=e, status="ok").inc()
        self.vllm.observe_run(e, run)

    def observe_error(self, engine_label: str) -> None:
        self.requests.labels(engine=_check_engine(engine_label), status="error").inc()

    def observe_memory(self, engines: Iterable[EngineMemory] = (),
                       gpu: GpuMemory | None = None) -> None:
        """Set the KV gauges per engine and the GPU gauges from one NVML reading."""
        for em in engines:
            e = _check_engine(em.label)
            self.kv_usage.labels(engine=e).set(em.kv_cache_usage_ratio)
            self.kv_used.labels(engine=e).set(em.kv_cache_used_bytes)
            self.vllm.set_kv_usage(e, em.kv_cache_usage_ratio)
        if gpu is not None:
            for part, gauge in self.gpu.items():
                gauge.labels(gpu=str(gpu.index)).set(getattr(gpu, f"{part}_bytes"))

    def render(self) -> bytes:
        """The scrape body, Prometheus text format (``CONTENT_TYPE``)."""
        return generate_latest(self.registry)


_CHALLENGE = {"WWW-Authenticate": 'Basic realm="speclens metrics"'}


def mount_metrics(app, metrics: Metrics, path: str = "/metrics", logins=None,
                  limiter=None) -> None:
    """Serve ``metrics.render()`` at GET ``path`` on a FastAPI/Starlette app, first
    (Gradio's mount at "/" would swallow /metrics). With ``logins`` (``check(user,
    password) -> bool``) one of the page's logins is asked as HTTP basic auth; with
    ``limiter`` (``LoginLimiter``) a locked client gets 429 before its password is checked.
    """
    from starlette.responses import Response
    from starlette.routing import Route

    def refuse(status: int, body: str, headers: dict = _CHALLENGE) -> Response:
        return Response(body, status_code=status, media_type="text/plain", headers=headers)

    def endpoint(request) -> Response:  # sync: Starlette runs it in its thread pool
        if logins is None:
            return Response(metrics.render(), media_type=CONTENT_TYPE)
        address = request.client.host if request.client else "unknown"
        given = basic_auth_credentials(request.headers.get("authorization"))
        user = given[0] if given else None
        wait_s = limiter.retry_after_s(address, user) if limiter else 0.0
        if wait_s > 0:
            return refuse(429, too_many_message(wait_s) + "\n",
                          {"Retry-After": retry_after_header(wait_s)})
        if given is None and "authorization" not in request.headers:
            # the challenge, not a failure (browsers ask first)
            return refuse(401, "login required: use one of the app's logins\n")
        if given is not None and logins.check(*given):
            if limiter:
                limiter.succeeded(address, user)
            return Response(metrics.render(), media_type=CONTENT_TYPE)
        if limiter:
            limiter.failed(address, user)
        return refuse(401, "wrong user or password\n")

    app.router.routes.insert(0, Route(path, endpoint, methods=["GET"], name="metrics"))


def basic_auth_credentials(header: str | None) -> tuple[str, str] | None:
    """(user, password) from an ``Authorization: Basic`` header; None if absent or malformed.

    Example:
        >>> basic_auth_credentials("Basic " + base64.b64encode(b"ann:p:w").decode())
        ('ann', 'p:w')
        >>> basic_auth_credentials("Basic !!!"), basic_auth_credentials(None)
        (None, None)
    """
    if not header or header[:6].lower() != "basic ":
        return None
    try:
        given = base64.b64decode(header[6:].strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = given.partition(":")
    return (user, password) if sep else None
