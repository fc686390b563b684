"""Runs through two running vLLM servers (space/server/) with the local tokenizer:
the prompt as token ids (no chat template can drift) and each token's text; a
traffic run's prompts through them (``ServerSource``)."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from space.common import progress as progress_mod
from space.common.cancel import Cancelled, check
from space.common.progress import Progress
from space.engine import models, prompts
from space.engine.build import token_texts
from space.judge.measure import Context
from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.records.events import RunFailed, RunFinished, RunStarted
from space.records.trace import CompareRecord, RunTrace, make_compare
from space.runs import machine_inputs
from space.runs.events import Job, job_or_default, published
from space.runs.repeats import alternate
from space.server.build import Declared, Texts
from space.server.client import Server, ServerError, ServerInfo
from space.server.compare import (
    ServerPair,
    check_servers,
    compare_servers,
    max_tokens_for,
    run_prompts,
    warm_up,
)

if TYPE_CHECKING:  # space.runs.runner imports the engines
    from space.runs.runner import CompareRunner


def encoder(spec: EngineSpec, req: RequestSpec) -> tuple[list[int], Texts]:
    """The prompt's ids and a token-text function, from the tokenizer of ``spec.model``."""
    path = models.resolve_model(spec.model, progress_mod.to_terminal)
    tokenizer = prompts.load_tokenizer(str(path))
    cache: dict[int, str] = {}

    def texts(token_ids: list[int]) -> dict[int, str]:
        return token_texts(tokenizer, token_ids, cache)

    return prompts.encode(tokenizer, req, spec.max_model_len), texts


def page_compare(pair: ServerPair, start_spec: EngineSpec) -> CompareRunner:
    """A ``runner.compare`` for the page that measures the servers instead.

    The servers' method and k are the operator's: a visitor who picks others
    gets one line. A server fault becomes a ``ConfigError`` (one line on the page).
    """
    def compare(spec: EngineSpec, req: RequestSpec, *, repeats: int = 1,
                on_step: Any = None, progress: Any = None, warmup: Any = None,
                cancel: Any = None, on_repeat: Any = None,
                explain: bool = False, job: Job | None = None) -> CompareRecord:
        declared = pair.declared
        if (spec.method, spec.k) != (declared.method, declared.k):
            raise ConfigError(f"this page measures running servers: the speculative one runs "
                              f"{declared.method} with k={declared.k}")
        if progress is not None:
            progress(0.1, "sending the prompt to the two servers")
        ids, texts = encoder(start_spec, req)

        def run() -> CompareRecord:
            try:
                return judged_compare(pair, req, ids, texts, repeats=repeats)
            except ServerError as exc:
                raise ConfigError(str(exc)) from None
        # the page's observers (metrics, Live, history) hear a server run as any other
        return published(job_or_default(job), spec, req, run)
    return compare


def judged_compare(pair: ServerPair, req: RequestSpec, prompt_ids: list[int], texts: Texts, *,
                   repeats: int, concurrency: int = 1) -> CompareRecord:
    """``compare_servers`` with its checklist, as an in-process compare has one. The
    memory lines stay unmeasured: the servers' devices are not this machine."""
    record = compare_servers(pair, req, prompt_ids, repeats=repeats, concurrency=concurrency,
                             texts=texts)
    machine_inputs.attach_checklist(record, None, Context(concurrency=concurrency))
    return record


def check_declared(pair: ServerPair, spec: EngineSpec) -> None:
    """The servers run what they were declared to run: another method or k is one line."""
    declared = pair.declared
    if (spec.method, spec.k) != (declared.method, declared.k):
        raise ConfigError(f"this page measures running servers: the speculative one runs "
                          f"{declared.method} with k={declared.k}")


class ServerSource:
    """A traffic run's prompts through two running servers (``space.runs.traffic.Source``).

    The prompts go as token ids of the local tokenizer of ``spec.model``; a batch
    is its different prompts sent together (``run_prompts``), the baseline and the
    speculative server alternating as in-process engines do (``repeats.alternate``),
    after one short warm-up of each server. The checklists leave the memory lines
    and the tipping curve's break-even unmeasured: the servers are not this machine.
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
        p, info = self.pair, self.info
        just = [r for _, r in reqs]
        if not self.warm:  # a fresh server's first request is slow
            warm_up(p.baseline, info.baseline, encoded[0])
            warm_up(p.speculative, info.speculative, encoded[0])
            self.warm = True
        base = (p.baseline, info.baseline, Declared())
        speculative = (p.speculative, info.speculative, p.declared)

        def run(side: tuple[Server, ServerInfo, Declared], _last: bool) -> list[RunTrace]:
            check(cancel, "the traffic run")
            return run_prompts(*side, just, encoded, self.texts)

        job.publish(RunStarted(self.spec, job.origin))
        try:
            bases, specs = alternate(base, speculative, self.repeats, run, progress,
                                     label=f"batch of {len(reqs)}: ")
        except (ConfigError, Cancelled):  # the visitor's doing, not the run's
            raise
        except Exception as exc:  # a server fault (ServerError) or a bug
            job.publish(RunFailed(self.spec, type(exc).__name__, job.origin))
            raise
        out = []
        for j in range(len(reqs)):
            cmp = make_compare([b[j] for b in bases], [s[j] for s in specs])
            machine_inputs.attach_checklist(cmp, None, context)
            job.publish(RunFinished(cmp, job.origin))
            out.append(cmp)
        return out
