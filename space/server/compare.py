"""Runs against a baseline and a speculative server: checks, batches, repeats. A batch's
requests go at once, as in production, one trace each; other traffic seen around a
batch is flagged on the record; a stop closes every open stream (``Cancelled``).
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from space.common.cancel import Cancelled, check
from space.common.progress import Progress
from space.records.config import ConfigError, RequestSpec, at_least_one
from space.records.trace import CompareRecord, RunTrace, make_compare
from space.server.build import Declared, Texts, build_trace
from space.server.client import (
    DETAILED_FLAG,
    Chunk,
    Server,
    ServerError,
    ServerInfo,
    Stream,
    completion_body,
    describe,
    read_metrics,
    requests_running,
    stream_completion,
    tokenize,
)

log = logging.getLogger(__name__)
WARMUP_TOKENS = 4  # a fresh server's first request is slow (1.6 s TTFT against 0.13 s here)
PROGRESS_S = 0.25  # at most one progress line per this many seconds while a batch streams
# tokens streamed so far over a batch's requests, and the most it may stream
OnTokens = Callable[[int, int], None]


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

    def warnings(self) -> list[str]:
        """What makes the servers' runs less comparable with in-process ones, one line each."""
        return [f"the {role} server caches prefixes (vllm:cache_config_info): a prompt "
                "sent twice hits its cache, so repeats are not alike; start it with "
                "--no-enable-prefix-caching for runs comparable with in-process ones"
                for role in ("baseline", "speculative") if getattr(self, role).prefix_caching]


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


TOKENIZER_CHECK_TOKENS = 4  # the first chunks whose text must be the local decoding


@dataclass(frozen=True)
class LocalTokenizer:
    """What the client side encodes and decodes with (``--model``'s tokenizer)."""

    model: str                          # as the operator named it
    probe: str                          # common words and the chat template's markers
    probe_ids: list[int]                # the probe, encoded locally (no special tokens added)
    decode: Callable[[list[int]], str]  # ids -> text, as the server's detokenizer writes it


def check_tokenizer(pair: ServerPair, checked: Checked, local: LocalTokenizer) -> None:
    """Each server tokenizes as ``--model`` does: its /tokenize gives the local ids on
    the probe, and a short completion's text is the local decoding of its ids (ids
    decide, not paths)."""
    for server, info in ((pair.baseline, checked.baseline),
                         (pair.speculative, checked.speculative)):
        refusal = (f"--model {local.model} does not tokenize as the {server.role} server's "
                   f"model {info.model}: {{}}; pass --model with {info.model}'s tokenizer")
        if tokenize(server, info.model, local.probe) != local.probe_ids:
            raise ServerError(refusal.format("its /tokenize gives other ids for the same text"))
        body = completion_body(info.model, local.probe_ids, RequestSpec(prompt="tokenizer check"),
                               TOKENIZER_CHECK_TOKENS)
        stream = stream_completion(server, body)
        ids = [t for c in stream.chunks for t in c.token_ids]
        if "".join(c.text for c in stream.chunks) != local.decode(ids):
            raise ServerError(refusal.format("its text for the same ids differs"))


def max_tokens_for(req: RequestSpec, prompt_ids: list[int], info: ServerInfo) -> int:
    room = (info.max_model_len or 1 << 30) - len(prompt_ids)
    if room < 1:
        raise ConfigError(f"the prompt is {len(prompt_ids)} tokens: no room under the "
                          f"server's max_model_len {info.max_model_len}")
    return min(req.max_tokens, room)


def run_prompts(server: Server, info: ServerInfo, declared: Declared,
                reqs: Sequence[RequestSpec], prompts: Sequence[list[int]],
                texts: Texts | None = None, *, cancel: threading.Event | None = None,
                on_tokens: OnTokens | None = None) -> list[RunTrace]:
    """Different prompts at once, request i with ``prompts[i]``; one trace each, in order.
    A k other than the declared one is refused; ``on_tokens(streamed, most)`` hears each
    chunk, one call at a time."""
    if not prompts or len(reqs) != len(prompts):
        raise ConfigError(f"{len(reqs)} requests for {len(prompts)} prompts")
    most = [max_tokens_for(r, ids, info) for r, ids in zip(reqs, prompts, strict=True)]
    bodies = [completion_body(info.model, ids, r, m)
              for r, ids, m in zip(reqs, prompts, most, strict=True)]
    total, streamed, lock = sum(most), [0], threading.Lock()

    def counted(chunk: Chunk) -> None:  # from N threads
        if on_tokens is not None:
            with lock:
                streamed[0] += len(chunk.token_ids)
                on_tokens(streamed[0], total)

    before = requests_running(read_metrics(server))
    if on_tokens is not None:
        on_tokens(0, total)
    sampler = _Sampler(server, len(bodies))
    with sampler:
        streams = _streams(server, bodies, cancel, counted, sampler)
    after = requests_running(read_metrics(server))
    others = int(max([before, after, *sampler.others]))
    extra = {"concurrency": len(bodies), "requests_running_before": before,
             "requests_running_after": after, "other_requests": others,
             "requests_running_samples": len(sampler.others), "other_traffic": others > 0}
    if others:
        log.warning("the %s server ran %d other requests around this run", server.role, others)
    traces = [build_trace(s, info, declared, req, texts, extra)
              for s, req in zip(streams, reqs, strict=True)]
    for t in traces:
        k = (t.vllm_spec_metrics or {}).get("num_spec_tokens")
        if k is not None and k != declared.k:
            raise ServerError(f"k is declared as {declared.k} but the speculative server "
                              f"drafts {k}: pass --k {k}")
    return traces


SAMPLE_S = 0.5  # how often /metrics is read while a batch streams (each read costs the server)


class _Sampler:
    """Reads ``vllm:num_requests_running`` while a batch streams: while every request has
    had its first chunk and none has finished, the gauge less the batch is other traffic
    (which before/after readings miss when it starts and ends inside the run)."""

    def __init__(self, server: Server, n: int) -> None:
        self.server, self.n = server, n
        self.others: list[float] = []
        # the streams' threads add to ``started`` and set ``finished``: set.add and a flag
        # are atomic; both only grow
        self.started: set[int] = set()
        self.finished = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="speclens-sampler")

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()

    def _all_running(self) -> bool:
        return len(self.started) == self.n and not self.finished

    def _run(self) -> None:
        while not self._done.wait(SAMPLE_S):
            if not self._all_running():
                continue
            try:
                running = requests_running(read_metrics(self.server))
            except ServerError:
                continue  # the stream's own read reports a server that went away
            if self._all_running():  # still: the reading is of this window
                self.others.append(max(0.0, running - self.n))


def _streams(server: Server, bodies: list[dict], cancel: threading.Event | None,
             on_chunk: Callable[[Chunk], None],
             sampler: _Sampler | None = None) -> list[Stream]:
    """The bodies' streams, read at once. One that fails closes the others (the batch
    is void) and the first real failure is raised, not the others' closing."""
    abort = threading.Event()

    def one(i: int, body: dict) -> Stream:
        def heard(chunk: Chunk) -> None:
            if sampler is not None:
                sampler.started.add(i)
            on_chunk(chunk)
        try:
            return stream_completion(server, body, cancel=cancel, on_chunk=heard, abort=abort)
        except BaseException:
            abort.set()
            raise
        finally:
            if sampler is not None:
                sampler.finished = True

    with ThreadPoolExecutor(len(bodies)) as pool:
        futures = [pool.submit(one, i, b) for i, b in enumerate(bodies)]
    failed = [e for f in futures if (e := f.exception()) is not None]
    if failed:
        raise next((e for e in failed if not isinstance(e, Cancelled)), failed[0])
    return [f.result() for f in futures]


def warm_up(server: Server, info: ServerInfo, prompt_ids: list[int], *,
            cancel: threading.Event | None = None) -> None:
    body = completion_body(info.model, prompt_ids, RequestSpec(prompt="warm-up"),
                           WARMUP_TOKENS)
    stream_completion(server, body, cancel=cancel)


SETTLE_S = 5.0  # the longest a run waits for busy servers before it starts anyway
SETTLE_POLL_S = 0.1


def wait_idle(pair: ServerPair, cancel: threading.Event | None = None,
              progress: Progress | None = None) -> None:
    """Until both servers run no request, for at most ``SETTLE_S``. A run that starts
    right after a Stop would otherwise share its first batch with the stopped
    requests, which vLLM aborts only once it sees their connections close. Traffic
    that outlasts the wait is measured and flagged on the record, as any other."""
    deadline = time.monotonic() + SETTLE_S
    for server in (pair.baseline, pair.speculative):
        told = False
        while requests_running(read_metrics(server)) and time.monotonic() < deadline:
            if progress is not None and not told:
                progress(0.0, f"waiting up to {SETTLE_S:.0f} s for the {server.role} "
                              "server's running requests to end")
                told = True
            check(cancel)
            time.sleep(SETTLE_POLL_S)


def alternate_batches(pair: ServerPair, reqs: Sequence[RequestSpec],
                      prompts: Sequence[list[int]], *, repeats: int = 3,
                      texts: Texts | None = None, cancel: threading.Event | None = None,
                      progress: Progress | None = None, checked: Checked | None = None,
                      warm: bool = True) -> tuple[list[list[RunTrace]], list[list[RunTrace]]]:
    """``repeats`` batches per server: (baseline batches, speculative batches), a list of
    traces per repeat, request i with ``prompts[i]``; the first server alternates so that
    drift hits both alike. Checked unless ``checked``; starts once the servers are idle
    (``wait_idle``); one short request each if ``warm``."""
    at_least_one(repeats=repeats)
    info = checked or check_servers(pair)
    wait_idle(pair, cancel, progress)
    sides = ((pair.baseline, info.baseline, Declared()),
             (pair.speculative, info.speculative, pair.declared))
    if warm:
        for server, server_info, _ in sides:
            check(cancel)
            warm_up(server, server_info, prompts[0], cancel=cancel)
    runs: dict[str, list[list[RunTrace]]] = {"baseline": [], "speculative": []}
    for i in range(repeats):
        for j, (server, server_info, declared) in enumerate(sides if i % 2 == 0
                                                            else sides[::-1]):
            check(cancel)
            told = _progress_line(progress, server.role, 2 * i + j, 2 * repeats,
                                  f"repeat {i + 1}/{repeats}", len(reqs))
            runs[server.role].append(run_prompts(server, server_info, declared, reqs, prompts,
                                                 texts, cancel=cancel, on_tokens=told))
    return runs["baseline"], runs["speculative"]


def _progress_line(progress: Progress | None, role: str, batch: int, batches: int,
                   which: str, concurrency: int) -> OnTokens | None:
    """A batch's ``on_tokens`` as progress lines, at most one per ``PROGRESS_S``."""
    if progress is None:
        return None
    last = [-PROGRESS_S]
    each = "" if concurrency == 1 else f" over {concurrency} requests"

    def told(tokens: int, most: int) -> None:
        now = time.perf_counter()
        if now - last[0] < PROGRESS_S:
            return
        last[0] = now
        progress((batch + min(tokens / most, 1.0)) / batches,
                 f"{role} server: {tokens}/{most} tokens{each}, {which}")
    return told


def compare_servers(pair: ServerPair, req: RequestSpec, prompt_ids: list[int],
                    repeats: int = 3, concurrency: int = 1,
                    texts: Texts | None = None, *, cancel: threading.Event | None = None,
                    progress: Progress | None = None) -> CompareRecord:
    """Alternating baseline and speculative batches; the medians as in-process."""
    at_least_one(concurrency=concurrency)
    baselines, speculatives = alternate_batches(pair, [req] * concurrency,
                                                [prompt_ids] * concurrency, repeats=repeats,
                                                texts=texts, cancel=cancel, progress=progress)
    return make_compare([t for b in baselines for t in b], [t for s in speculatives for t in s])


def trace_server(pair: ServerPair, req: RequestSpec, prompt_ids: list[int],
                 texts: Texts | None = None) -> RunTrace:
    """One request through the speculative server."""
    info = check_servers(pair)
    warm_up(pair.speculative, info.speculative, prompt_ids)
    return run_prompts(pair.speculative, info.speculative, pair.declared, [req], [prompt_ids],
                       texts)[0]
