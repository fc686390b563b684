"""Runs through two running vLLM servers (space/server/) with the local tokenizer:
the prompt as token ids (no chat template can drift) and each token's text.

A comparison for the page (``page_compare``) and the CLI (``judged_compare``), a
sweep over concurrency (``sweep_concurrency``), the one variable a client can
vary (k, the method and the engine settings are the servers' own), and a
traffic run's prompts (``ServerSource``).
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from space.common import progress as progress_mod
from space.common.cancel import Cancelled, check
from space.common.progress import Progress
from space.engine import models, prompts
from space.engine.build import token_texts
from space.judge.measure import Context
from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.records.events import RunFailed, RunFinished, RunStarted, SweepFinished
from space.records.trace import CompareRecord, RunTrace, make_compare
from space.runs import machine_inputs
from space.runs.events import Job, job_or_default, published
from space.runs.presets import Workload
from space.runs.workloads import (
    PromptResult,
    WorkloadResult,
    batch_figures,
    requests_for,
    summarize,
    workload_checklist,
)
from space.server.build import Texts
from space.server.client import ServerError
from space.server.compare import (
    Checked,
    LocalTokenizer,
    ServerPair,
    alternate_batches,
    check_servers,
    check_tokenizer,
    compare_servers,
    max_tokens_for,
)

if TYPE_CHECKING:  # space.runs.runner imports the engines; space.runs.sweep pandas
    from space.runs.runner import CompareRunner
    from space.runs.sweep import SweepResult


def encoder(spec: EngineSpec, req: RequestSpec) -> tuple[list[int], Texts]:
    """The prompt's ids and a token-text function, from the tokenizer of ``spec.model``."""
    path = models.resolve_model(spec.model, progress_mod.to_terminal)
    tokenizer = prompts.load_tokenizer(str(path))
    cache: dict[int, str] = {}

    def texts(token_ids: list[int]) -> dict[int, str]:
        return token_texts(tokenizer, token_ids, cache)

    return prompts.encode(tokenizer, req, spec.max_model_len), texts


# The tokenizer check's probe: common words, digits, code and, wrapped in the chat
# template where the tokenizer has one, its markers (space.server.compare.check_tokenizer).
PROBE_WORDS = ('The quick brown fox jumps over the lazy dog, and "hello world" costs $3.50 '
               "in 2026.\n    def add(a, b):\n        return a + b  # sum")


def local_tokenizer(spec: EngineSpec) -> LocalTokenizer:
    """``--model``'s tokenizer as the tokenizer check takes it."""
    path = models.resolve_model(spec.model, progress_mod.to_terminal)
    tokenizer = prompts.load_tokenizer(str(path))
    probe = PROBE_WORDS
    if getattr(tokenizer, "chat_template", None):
        probe = tokenizer.apply_chat_template([{"role": "user", "content": PROBE_WORDS}],
                                              tokenize=False, add_generation_prompt=True)
    return LocalTokenizer(
        model=spec.model, probe=probe,
        probe_ids=list(tokenizer.encode(probe, add_special_tokens=False)),
        # as vLLM's detokenizer writes a response's text (skip_special_tokens defaults on)
        decode=lambda ids: tokenizer.decode(ids, skip_special_tokens=True))


def check_pair(pair: ServerPair, spec: EngineSpec) -> Checked:
    """At start, before any run: the servers answer and speculate as declared
    (``check_servers``), and tokenize as ``--model`` does (``check_tokenizer``)."""
    checked = check_servers(pair)
    check_tokenizer(pair, checked, local_tokenizer(spec))
    return checked


def page_compare(pair: ServerPair, start_spec: EngineSpec) -> CompareRunner:
    """A ``runner.compare`` for the page that measures the servers instead.

    The servers' method and k are the operator's: a visitor who picks others
    gets one line. A server fault becomes a ``ConfigError`` (one line on the page).
    ``progress`` hears how far each server has streamed; ``cancel`` (the page's
    Stop) closes the open streams, and the run ends in ``Cancelled`` as an
    in-process one does: nothing is published as finished. The steps are not
    streamed: a server's steps are known only from its last chunk.
    """
    def compare(spec: EngineSpec, req: RequestSpec, *, repeats: int = 1,
                on_step: Any = None, progress: Progress | None = None, warmup: Any = None,
                cancel: threading.Event | None = None, on_repeat: Any = None,
                explain: bool = False, job: Job | None = None) -> CompareRecord:
        check_declared(pair, spec)
        if progress is not None:
            progress(0.0, "sending the prompt to the two servers")
        ids, texts = encoder(start_spec, req)

        def run() -> CompareRecord:
            try:
                return judged_compare(pair, req, ids, texts, repeats=repeats, cancel=cancel,
                                      progress=progress)
            except ServerError as exc:
                raise ConfigError(str(exc)) from None
        # the page's observers (metrics, Live, history) hear a server run as any other
        return published(job_or_default(job), spec, req, run)
    return compare


def judged_compare(pair: ServerPair, req: RequestSpec, prompt_ids: list[int], texts: Texts, *,
                   repeats: int, concurrency: int = 1, cancel: threading.Event | None = None,
                   progress: Progress | None = None) -> CompareRecord:
    """``compare_servers`` with its checklist, as an in-process compare has one. The
    memory lines stay unmeasured: the servers' devices are not this machine."""
    record = compare_servers(pair, req, prompt_ids, repeats=repeats, concurrency=concurrency,
                             texts=texts, cancel=cancel, progress=progress)
    machine_inputs.attach_checklist(record, None, Context(concurrency=concurrency))
    return record


def sweep_concurrency(pair: ServerPair, spec: EngineSpec, workload: Workload,
                      values: Sequence[float], *, repeats: int, max_tokens: int | None = None,
                      prompt_ids: list[str] | None = None, progress: Progress | None = None,
                      cancel: threading.Event | None = None,
                      job: Job | None = None) -> SweepResult:
    """One point per concurrency N, made as an in-process concurrency sweep makes it
    (``space.runs.workloads.run_workload``): at N = 1 each prompt of ``workload`` (or
    of ``prompt_ids``) on its own, above it N requests cycling those prompts (distinct
    seeds, ``requests_for``) sent at once to each server; ``repeats`` times,
    alternating. The table and crossover of an in-process sweep, told to ``job`` as
    ``SweepFinished``. ``cancel`` set: ``Cancelled``, the open streams closed."""
    from space.runs.sweep import check_plan, make_table  # pandas, with the first sweep

    check_plan(workload, "concurrency", values, repeats, max_tokens, prompt_ids)
    report = progress or progress_mod.to_log
    job = job_or_default(job)
    source = ServerSource(pair, spec, repeats)
    results = []
    for i, n in enumerate(int(v) for v in values):
        def inner(f: float, msg: str, i=i, n=n) -> None:
            report((i + min(max(f, 0.0), 1.0)) / len(values),
                   f"point {i + 1}/{len(values)} (concurrency={n}): {msg}")

        check(cancel, "the sweep")
        reqs = requests_for(workload, max_tokens=max_tokens, concurrency=n,
                            prompt_ids=prompt_ids)
        results.append(_point(source, workload, reqs, n, inner, cancel, job.inside("sweep")))
    report(1.0, "sweep done")
    result = make_table("concurrency", [int(v) for v in values], results)
    job.publish(SweepFinished(result, "concurrency", spec, job.origin))
    return result


def _point(source: ServerSource, workload: Workload, reqs: list[tuple[str, RequestSpec]],
           n: int, progress: Progress, cancel: threading.Event | None,
           job: Job) -> WorkloadResult:
    """One concurrency: a comparison per request, as ``space.runs.workloads`` makes
    them in-process: one batch of N, or each prompt alone at N = 1."""
    ctx = Context(task_type=workload.id, task_note=workload.reason, concurrency=n)
    encoded = [source.encode(req) for _, req in reqs]
    groups = [[j] for j in range(len(reqs))] if n == 1 else [list(range(len(reqs)))]
    items, batch_runs = [], []
    for g, members in enumerate(groups):
        def part(f: float, msg: str, g=g) -> None:
            progress((g + f) / len(groups), msg if len(groups) == 1
                     else f"prompt {g + 1}/{len(groups)}: {msg}")

        bases, specs = source.measure([reqs[j] for j in members],
                                      [encoded[j] for j in members], part, cancel, job)
        cmps = source.judged(bases, specs, ctx, job)
        items += [PromptResult(reqs[j][0], cmp) for j, cmp in zip(members, cmps, strict=True)]
        if n > 1:
            batch_runs += [dict(**batch_figures("baseline", b), **batch_figures("speculative", s))
                           for b, s in zip(bases, specs, strict=True)]
    first = reqs[0][1]
    r = WorkloadResult(workload_id=workload.id, config=items[0].compare.speculative.config,
                       temperature=first.temperature, max_tokens=first.max_tokens, concurrency=n,
                       repeats=source.repeats, items=items, batch_runs=batch_runs)
    summarize(r)
    r.checklist = workload_checklist(r, ctx, machine_inputs.memory_figures(None, r.config.device))
    return r


def check_declared(pair: ServerPair, spec: EngineSpec) -> None:
    """The servers run what they were declared to run: another method or k is one line."""
    declared = pair.declared
    if (spec.method, spec.k) != (declared.method, declared.k):
        raise ConfigError(f"this page measures running servers: the speculative one runs "
                          f"{declared.method} with k={declared.k}")


class ServerSource:
    """Batches of prompts through two running servers, judged and published: a
    traffic run's (``space.runs.traffic.Source``) and a concurrency sweep's points.

    The servers are checked once and warmed once; the prompts go as token ids of
    the local tokenizer of ``spec.model``; a batch is its different prompts sent
    together, the baseline and the speculative server alternating
    (``alternate_batches``). The checklists leave the memory lines and the tipping
    curve's break-even unmeasured: the servers are not this machine.
    """

    def __init__(self, pair: ServerPair, spec: EngineSpec, repeats: int) -> None:
        check_declared(pair, spec)
        self.pair, self.spec, self.repeats = pair, spec, repeats
        self.info = check_servers(pair)
        self.texts: Texts | None = None
        self.warm = False

    def encode(self, req: RequestSpec, report: Any = None) -> list[int]:
        ids, self.texts = encoder(self.spec, req)
        for info in (self.info.baseline, self.info.speculative):
            max_tokens_for(req, ids, info)  # no room under the server's max_model_len: skipped
        return ids

    def one(self, req: RequestSpec, ids: list[int], context: Context,
            cancel: threading.Event | None, job: Job) -> CompareRecord:
        return self.batch([("", req)], [ids], context, None, cancel, job)[0]

    def batch(self, reqs: list[tuple[str, RequestSpec]], encoded: list[list[int]],
              context: Context, progress: Progress | None, cancel: threading.Event | None,
              job: Job) -> list[CompareRecord]:
        return self.judged(*self.measure(reqs, encoded, progress, cancel, job), context, job)

    def measure(self, reqs: list[tuple[str, RequestSpec]], encoded: list[list[int]],
                progress: Progress | None, cancel: threading.Event | None, job: Job,
                ) -> tuple[list[list[RunTrace]], list[list[RunTrace]]]:
        """The batch's runs, per repeat: (baseline batches, speculative batches)."""
        job.publish(RunStarted(self.spec, job.origin))
        try:
            runs = alternate_batches(self.pair, [r for _, r in reqs], encoded,
                                     repeats=self.repeats, texts=self.texts, cancel=cancel,
                                     progress=progress, checked=self.info, warm=not self.warm)
        except (ConfigError, Cancelled):  # the visitor's doing, not the run's
            raise
        except Exception as exc:  # a server fault (ServerError) or a bug
            job.publish(RunFailed(self.spec, type(exc).__name__, job.origin))
            raise
        self.warm = True
        return runs

    def judged(self, bases: list[list[RunTrace]], specs: list[list[RunTrace]],
               context: Context, job: Job) -> list[CompareRecord]:
        """A comparison per request (request j across the repeats), with its checklist."""
        out = []
        for j in range(len(bases[0])):
            cmp = make_compare([b[j] for b in bases], [s[j] for s in specs])
            machine_inputs.attach_checklist(cmp, None, context)
            job.publish(RunFinished(cmp, job.origin))
            out.append(cmp)
        return out
