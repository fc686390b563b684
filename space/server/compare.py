"""Runs against a baseline and a speculative server: checks, batches, repeats.

A run at concurrency N sends N copies of the prompt at once, so that the
server batches them as it would in production; each copy gets its own trace.
``run_prompts`` sends N different prompts at once (a traffic file's batch).
``vllm:num_requests_running`` is read before and after: a server that carries
other traffic is flagged on the record, never silently measured.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from space.records.config import ConfigError, RequestSpec
from space.records.trace import CompareRecord, RunTrace, make_compare
from space.server.build import Declared, Texts, build_trace
from space.server.client import (
    DETAILED_FLAG,
    Server,
    ServerError,
    ServerInfo,
    completion_body,
    describe,
    read_metrics,
    requests_running,
    stream_completion,
)

log = logging.getLogger(__name__)
WARMUP_TOKENS = 4  # a fresh server's first request is slow (1.6 s TTFT against 0.13 s here)


@dataclass(frozen=True)
class ServerPair:
    baseline: Server
    speculative: Server
    declared: Declared  # what the speculative server runs, as the operator says

    @property
    def hosts(self) -> str:
        return f"baseline {self.baseline.host}, speculative {self.speculative.host}"


@dataclass(frozen=True)
class Checked:
    baseline: ServerInfo
    speculative: ServerInfo


def check_servers(pair: ServerPair) -> Checked:
    """Both servers answer, serve one model, and speculate as declared."""
    b, s = describe(pair.baseline), describe(pair.speculative)
    if b.num_draft_positions:
        raise ServerError("the baseline server speculates (vllm:spec_decode_* series in its "
                          "/metrics): start it without --speculative-config")
    if not s.num_draft_positions:
        raise ServerError("the speculative server does not speculate (no vllm:spec_decode_* "
                          "series in its /metrics): start it with --speculative-config and "
                          f"{DETAILED_FLAG}")
    if s.num_draft_positions != pair.declared.k:
        raise ServerError(f"k is declared as {pair.declared.k} but the speculative server's "
                          f"/metrics has {s.num_draft_positions} draft positions: pass "
                          f"--k {s.num_draft_positions}")
    if b.model != s.model:
        raise ServerError(f"the servers serve different models ({b.model!r} and {s.model!r})")
    return Checked(b, s)


def max_tokens_for(req: RequestSpec, prompt_ids: list[int], info: ServerInfo) -> int:
    room = (info.max_model_len or 1 << 30) - len(prompt_ids)
    if room < 1:
        raise ConfigError(f"the prompt is {len(prompt_ids)} tokens: no room under the "
                          f"server's max_model_len {info.max_model_len}")
    return min(req.max_tokens, room)


def run_batch(server: Server, info: ServerInfo, declared: Declared, req: RequestSpec,
              prompt_ids: list[int], concurrency: int = 1,
              texts: Texts | None = None) -> list[RunTrace]:
    """``concurrency`` copies of one request at once; one trace each."""
    if concurrency < 1:
        raise ConfigError("--concurrency must be at least 1")
    body = completion_body(info.model, prompt_ids, req, max_tokens_for(req, prompt_ids, info))
    return _together(server, info, declared, [(req, body)] * concurrency, texts)


def run_prompts(server: Server, info: ServerInfo, declared: Declared,
                reqs: Sequence[RequestSpec], prompts: Sequence[list[int]],
                texts: Texts | None = None) -> list[RunTrace]:
    """Different prompts at once, request i with ``prompts[i]``; one trace each, in order.

    Example: reqs [a, b], prompts [[1, 2], [3]] -> two requests in flight together,
    [trace of a on [1, 2], trace of b on [3]].
    """
    if not prompts or len(reqs) != len(prompts):
        raise ConfigError(f"{len(reqs)} requests for {len(prompts)} prompts")
    return _together(server, info, declared,
                     [(r, completion_body(info.model, ids, r, max_tokens_for(r, ids, info)))
                      for r, ids in zip(reqs, prompts, strict=True)], texts)


def _together(server: Server, info: ServerInfo, declared: Declared,
              requests: list[tuple[RequestSpec, dict]], texts: Texts | None) -> list[RunTrace]:
    """(request, body) pairs sent at once, one stream each; ``num_requests_running``
    read around them flags other traffic; a k other than the declared one refused."""
    before = requests_running(read_metrics(server))
    with ThreadPoolExecutor(len(requests)) as pool:
        streams = list(pool.map(lambda rb: stream_completion(server, rb[1]), requests))
    after = requests_running(read_metrics(server))
    extra = {"concurrency": len(requests), "requests_running_before": before,
             "requests_running_after": after, "other_traffic": bool(before or after)}
    if extra["other_traffic"]:
        log.warning("the %s server ran other requests around this run (%g before, %g after)",
                    server.role, before, after)
    traces = [build_trace(s, info, declared, req, texts, extra)
              for s, (req, _) in zip(streams, requests, strict=True)]
    for t in traces:
        k = (t.vllm_spec_metrics or {}).get("num_spec_tokens")
        if k is not None and k != declared.k:
            raise ServerError(f"k is declared as {declared.k} but the speculative server "
                              f"drafts {k}: pass --k {k}")
    return traces


def warm_up(server: Server, info: ServerInfo, prompt_ids: list[int]) -> None:
    body = completion_body(info.model, prompt_ids, RequestSpec(prompt="warm-up"),
                           WARMUP_TOKENS)
    stream_completion(server, body)


def compare_servers(pair: ServerPair, req: RequestSpec, prompt_ids: list[int],
                    repeats: int = 3, concurrency: int = 1,
                    texts: Texts | None = None) -> CompareRecord:
    """Alternating baseline and speculative batches; the medians as in-process."""
    if repeats < 1:
        raise ConfigError("--repeats must be at least 1")
    info = check_servers(pair)
    warm_up(pair.baseline, info.baseline, prompt_ids)
    warm_up(pair.speculative, info.speculative, prompt_ids)
    baselines: list[RunTrace] = []
    speculatives: list[RunTrace] = []
    for _ in range(repeats):
        baselines += run_batch(pair.baseline, info.baseline, Declared(), req, prompt_ids,
                               concurrency, texts)
        speculatives += run_batch(pair.speculative, info.speculative, pair.declared, req,
                                  prompt_ids, concurrency, texts)
    return make_compare(baselines, speculatives)


def trace_server(pair: ServerPair, req: RequestSpec, prompt_ids: list[int],
                 texts: Texts | None = None) -> RunTrace:
    """One request through the speculative server."""
    info = check_servers(pair)
    warm_up(pair.speculative, info.speculative, prompt_ids)
    return run_batch(pair.speculative, info.speculative, pair.declared, req, prompt_ids,
                     1, texts)[0]
