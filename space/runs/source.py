"""Where runs run, picked once at start: ``Engines`` (in-process) or ``Servers`` (two
running vLLM servers, sent the local tokenizer's ids). Runs ask a source what it can do
(``Capabilities``), never where it runs. Imports no vLLM."""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from space.common import progress as progress_mod
from space.common.cancel import Cancelled, check
from space.common.progress import Progress
from space.common.versions import warn_if_untested
from space.engine import models, prompts
from space.engine.build import token_texts
from space.judge.measure import Context
from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.records.events import RunFailed, RunFinished, RunStarted
from space.records.trace import CompareRecord, RunTrace, make_compare
from space.runs import machine_inputs, runner
from space.runs.events import Job, published
from space.runs.preflight import check_spec, preflight
from space.runs.repeats import WARMUP_TOKENS, alternate
from space.server.build import Texts
from space.server.compare import (
    Checked,
    LocalTokenizer,
    ServerPair,
    alternate_batches,
    check_servers,
    check_tokenizer,
    max_tokens_for,
    trace_server,
)

if TYPE_CHECKING:
    from space.engine.pool import EnginePool

log = logging.getLogger(__name__)
Capability = Literal["live_steps", "vary_k", "forced_acceptance", "anatomy", "memory",
                     "explain"]
Batch = tuple[list[CompareRecord], list[dict[str, float]]]  # a comparison per request; per repeat


@dataclass(frozen=True)
class Capabilities:
    """What a source can measure (a server streams tokens, not engine steps)."""

    live_steps: bool         # steps shown while a run goes (the page's live view)
    vary_k: bool             # method, draft and k chosen per run (a k sweep, the page's picks)
    forced_acceptance: bool  # a synthetic acceptance rate: the tipping curve
    anatomy: bool            # each verify step split into its parts
    memory: bool             # the engines' memory and the draft's KV tax, on this machine
    explain: bool            # the target's view of each draft, scored after the runs


def batch_figures(side: str, batch: list[RunTrace]) -> dict[str, float]:
    """Wall time from submission to the last finish, tokens, aggregate tokens/s."""
    wall = max(r.finish_s for r in batch) - min(r.arrival_s for r in batch)
    tokens = sum(len(r.output_token_ids) for r in batch)
    return {f"{side}_wall_s": wall, f"{side}_tokens": float(tokens),
            f"{side}_tokens_per_s": tokens / wall if wall > 0 else 0.0}


def judged(bases: list[list[RunTrace]], specs: list[list[RunTrace]], engines: Any,
           context: Context, job: Job) -> Batch:
    """A comparison per request (across the repeats), checked and told to ``job``;
    and per repeat, each side's batch figures."""
    cmps = []
    for j in range(len(bases[0])):
        cmp = make_compare([b[j] for b in bases], [s[j] for s in specs])
        machine_inputs.attach_checklist(cmp, engines, context)
        job.publish(RunFinished(cmp, job.origin))
        cmps.append(cmp)
    runs = [dict(**batch_figures("baseline", b), **batch_figures("speculative", s))
            for b, s in zip(bases, specs, strict=True)]
    return cmps, runs


class Source(Protocol):
    """Where runs go; the order of work is the caller's. ``Engines`` and ``Servers``
    subclass it for its defaults."""

    can: Capabilities
    through: str = ""  # after a run's description: where it runs, when not here

    def refusal(self, capability: Capability) -> str:
        """Why this source cannot do ``capability``: one sentence for the user."""

    def require(self, capability: Capability) -> None:
        if not getattr(self.can, capability):
            raise ConfigError(self.refusal(capability))

    def spec_for(self, spec: EngineSpec) -> EngineSpec:
        """The spec a run asked with ``spec`` measures (``ConfigError`` if it cannot)."""
        return spec

    def start(self, spec: EngineSpec) -> list[str]:
        """Checks before any run (bad ones raise); the lines to print."""

    def encode(self, spec: EngineSpec, req: RequestSpec,
               progress: Progress | None = None) -> list[int]:
        """The prompt's ids; ``ConfigError`` when it cannot run (too long)."""

    def held(self) -> contextlib.AbstractContextManager[Any]:
        """Held over a whole workload (in-process: other visitors' runs wait)."""
        return contextlib.nullcontext()

    def compare(self, spec: EngineSpec, req: RequestSpec, *, repeats: int, **kw: Any
                ) -> CompareRecord:
        """One prompt, baseline against speculation, alternating; with its checklist."""

    def batch(self, spec: EngineSpec, reqs: list[RequestSpec], encoded: list[list[int]], *,
              repeats: int, context: Context, progress: Progress | None = None,
              cancel: threading.Event | None = None, job: Job | None = None) -> Batch:
        """Different prompts submitted together to each side, alternating."""

    def trace(self, spec: EngineSpec, req: RequestSpec, *, explain: bool = False) -> RunTrace:
        """One speculative run (the CLI's ``trace``)."""

    def memory_figures(self, spec: EngineSpec, device: str) -> dict[str, int | None]:
        return machine_inputs.memory_figures(None, device)

    def prepare(self, spec: EngineSpec, req: RequestSpec, progress: Progress) -> None:
        """Whatever must be ready before the first run (the page's start-up)."""
        return None  # servers are ready; a body, so that mypy does not read it as abstract


class Engines(Source):
    """The in-process engines of ``pool`` (default: the process's, ``runner.POOL``)."""

    can = Capabilities(live_steps=True, vary_k=True, forced_acceptance=True, anatomy=True,
                       memory=True, explain=True)

    def __init__(self, pool: EnginePool | None = None) -> None:
        self.own_pool = pool  # None: the process's (``runner.POOL``)

    @property
    def pool(self) -> EnginePool:
        return self.own_pool or runner.POOL

    def refusal(self, capability: Capability) -> str:
        return f"in-process engines cannot give {capability}"  # never: they can do all

    def start(self, spec: EngineSpec) -> list[str]:
        check_spec(spec, progress_mod.to_terminal)
        warn_if_untested(log)  # the installed vLLM runs the engines
        return []

    def encode(self, spec: EngineSpec, req: RequestSpec,
               progress: Progress | None = None) -> list[int]:
        [ids] = preflight(spec, [req], progress)
        return ids

    def held(self) -> contextlib.AbstractContextManager[Any]:
        return self.pool.lock

    def compare(self, spec: EngineSpec, req: RequestSpec, *, repeats: int, **kw: Any
                ) -> CompareRecord:
        if kw.pop("concurrency", 1) > 1:
            raise ConfigError("in-process, N requests at once are a workload's: add --workload")
        return runner.compare(spec, req, repeats=repeats, pool=self.pool, **kw)

    def batch(self, spec: EngineSpec, reqs: list[RequestSpec], encoded: list[list[int]], *,
              repeats: int, context: Context, progress: Progress | None = None,
              cancel: threading.Event | None = None, job: Job | None = None) -> Batch:
        job = job or Job()
        pool = self.pool
        with pool.lock:  # this batch at least: other visitors' runs go between batches
            check(cancel)
            job.publish(RunStarted(spec, job.origin))
            engines = (pool.baseline(spec, progress), pool.speculative(spec, progress))
            short = [dataclasses.replace(r, max_tokens=min(r.max_tokens, WARMUP_TOKENS))
                     for r in reqs]
            for e in engines:  # a batch has its own shapes: warm them up
                e.run_many(short, cancel=cancel, encoded=encoded)  # max_tokens keeps the ids
            bases, specs = alternate(*engines, repeats, lambda e, _last: e.run_many(
                reqs, cancel=cancel, encoded=encoded), progress, label=f"batch of {len(reqs)}: ")
            return judged(bases, specs, engines, context, job)

    def trace(self, spec: EngineSpec, req: RequestSpec, *, explain: bool = False) -> RunTrace:
        return runner.trace_one(spec, req, pool=self.pool, explain=explain)

    def memory_figures(self, spec: EngineSpec, device: str) -> dict[str, int | None]:
        pool = self.pool
        return machine_inputs.memory_figures((pool.baseline(spec), pool.speculative(spec)),
                                             device)

    def prepare(self, spec: EngineSpec, req: RequestSpec, progress: Progress) -> None:
        runner.prepare(spec, req, self.pool, progress)


# The tokenizer check's probe: words, digits, code (and the chat template's markers)
PROBE_WORDS = ('The quick brown fox jumps over the lazy dog, and "hello world" costs $3.50 '
               "in 2026.\n    def add(a, b):\n        return a + b  # sum")


def encoder(spec: EngineSpec, req: RequestSpec) -> tuple[list[int], Texts]:
    """The prompt's ids and a token-text function, from the tokenizer of ``spec.model``."""
    tokenizer = prompts.load_tokenizer(str(models.resolve_model(spec.model,
                                                                progress_mod.to_terminal)))
    cache: dict[int, str] = {}

    def texts(token_ids: list[int]) -> dict[int, str]:
        return token_texts(tokenizer, token_ids, cache)

    return prompts.encode(tokenizer, req, spec.max_model_len), texts


def local_tokenizer(spec: EngineSpec) -> LocalTokenizer:
    """``--model``'s tokenizer as the tokenizer check takes it."""
    tokenizer = prompts.load_tokenizer(str(models.resolve_model(spec.model,
                                                                progress_mod.to_terminal)))
    probe = PROBE_WORDS
    if getattr(tokenizer, "chat_template", None):
        probe = tokenizer.apply_chat_template([{"role": "user", "content": PROBE_WORDS}],
                                              tokenize=False, add_generation_prompt=True)
    return LocalTokenizer(
        model=spec.model, probe=probe,
        probe_ids=list(tokenizer.encode(probe, add_special_tokens=False)),
        # as vLLM's detokenizer writes a response's text (skip_special_tokens defaults on)
        decode=lambda ids: tokenizer.decode(ids, skip_special_tokens=True))


class Servers(Source):
    """Two running vLLM servers (``pair``), checked once and warmed once. Their method,
    k and settings are their operator's (``pair.declared``); the checklists leave
    memory and break-even unmeasured, the servers not being this machine.
    """

    can = Capabilities(live_steps=False, vary_k=False, forced_acceptance=False,
                       anatomy=False, memory=False, explain=False)
    through = "; through the running vLLM servers"

    def __init__(self, pair: ServerPair) -> None:
        self.pair = pair
        self.texts: Texts | None = None
        self.warm = False

    def refusal(self, capability: Capability) -> str:
        d = self.pair.declared
        return {
            "vary_k": (f"through running servers only concurrency is swept: the speculative "
                       f"server's k is fixed by its --speculative-config ({d.method}, "
                       f"k={d.k}), and the method and engine settings are the servers' own"),
            "forced_acceptance": (
                "this page measures running servers, and a tipping curve needs in-process "
                "engines with a forced (synthetic) acceptance rate, which a server cannot "
                "give: measure it on the servers' box with `python -m space tipping` (the "
                "curve is cached there and read by its runs)"),
            "explain": "--explain scores drafts with an in-process target: not with servers",
        }.get(capability, f"a running server does not report {capability.replace('_', ' ')}")

    def spec_for(self, spec: EngineSpec) -> EngineSpec:
        d = self.pair.declared
        if (spec.method, spec.k) != (d.method, d.k):
            raise ConfigError(f"this page measures running servers: the speculative one runs "
                              f"{d.method} with k={d.k}")
        return spec

    @functools.cached_property
    def checked(self) -> Checked:
        """The servers' answers, read once (``start`` reads them again)."""
        return check_servers(self.pair)

    def start(self, spec: EngineSpec) -> list[str]:
        """The servers answer and speculate as declared, and tokenize as ``--model``."""
        self.checked = check_servers(self.pair)
        check_tokenizer(self.pair, self.checked, local_tokenizer(spec))
        return [f"servers: {self.pair.hosts}"] + [f"warning: {w}" for w in
                                                   self.checked.warnings()]

    def encode(self, spec: EngineSpec, req: RequestSpec,
               progress: Progress | None = None) -> list[int]:
        ids, self.texts = encoder(spec, req)
        for server in (self.checked.baseline, self.checked.speculative):
            max_tokens_for(req, ids, server)  # no room under the server's max_model_len
        return ids

    def _runs(self, spec: EngineSpec, reqs: list[RequestSpec], encoded: list[list[int]],
              repeats: int, progress: Progress | None, cancel: threading.Event | None,
              job: Job) -> tuple[list[list[RunTrace]], list[list[RunTrace]]]:
        job.publish(RunStarted(spec, job.origin))
        try:
            runs = alternate_batches(self.pair, reqs, encoded, repeats=repeats,
                                     texts=self.texts, cancel=cancel, progress=progress,
                                     checked=self.checked, warm=not self.warm)
        except (ConfigError, Cancelled):  # the visitor's doing or a Stop, not a fault: the
            raise  # next run waits for the servers to abort what was stopped (wait_idle)
        except Exception as exc:  # a server fault (ServerError) or a bug
            job.publish(RunFailed(spec, type(exc).__name__, job.origin))
            raise
        self.warm = True
        return runs

    def compare(self, spec: EngineSpec, req: RequestSpec, *, repeats: int,
                context: Context | None = None, progress: Progress | None = None,
                cancel: threading.Event | None = None, job: Job | None = None,
                prompt_ids: list[int] | None = None, concurrency: int = 1,
                explain: bool = False, **_unstreamed: Any) -> CompareRecord:
        """``concurrency`` copies of ``req`` at once, one comparison over all. ``cancel``
        closes the open streams; ``explain`` is not scored (no in-process target)."""
        self.spec_for(spec)
        job = job or Job()
        if progress is not None:
            progress(0.0, "sending the prompt to the two servers")
        ids = prompt_ids if prompt_ids is not None else self.encode(spec, req)
        bases, specs = self._runs(spec, [req] * concurrency, [ids] * concurrency, repeats,
                                  progress, cancel, job)
        cmp = make_compare([t for b in bases for t in b], [t for s in specs for t in s])
        machine_inputs.attach_checklist(cmp, None, context or Context(concurrency=concurrency))
        job.publish(RunFinished(cmp, job.origin))
        return cmp

    def batch(self, spec: EngineSpec, reqs: list[RequestSpec], encoded: list[list[int]], *,
              repeats: int, context: Context, progress: Progress | None = None,
              cancel: threading.Event | None = None, job: Job | None = None) -> Batch:
        job = job or Job()
        bases, specs = self._runs(spec, reqs, encoded, repeats, progress, cancel, job)
        return judged(bases, specs, None, context, job)

    def trace(self, spec: EngineSpec, req: RequestSpec, *, explain: bool = False) -> RunTrace:
        if explain:
            self.require("explain")
        ids = self.encode(spec, req)
        return published(Job(), spec, req, lambda: trace_server(self.pair, req, ids, self.texts))


def pick(pair: ServerPair | None) -> Source:
    """The source of a page or a CLI run: the servers of ``pair``, else in-process."""
    return Engines() if pair is None else Servers(pair)
