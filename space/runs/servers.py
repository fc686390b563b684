"""Runs through two running vLLM servers (space/server/) with the local tokenizer:
the prompt as token ids (no chat template can drift) and each token's text."""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from space.common import progress as progress_mod
from space.common.progress import Progress
from space.engine import models, prompts
from space.engine.build import token_texts
from space.judge.measure import Context
from space.records.config import ConfigError, EngineSpec, RequestSpec
from space.records.trace import CompareRecord
from space.runs import machine_inputs
from space.runs.events import Job, job_or_default, published
from space.server.build import Texts
from space.server.client import ServerError
from space.server.compare import ServerPair, compare_servers

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
    ``progress`` hears how far each server has streamed; ``cancel`` (the page's
    Stop) closes the open streams, and the run ends in ``Cancelled`` as an
    in-process one does: nothing is published as finished. The steps are not
    streamed: a server's steps are known only from its last chunk.
    """
    def compare(spec: EngineSpec, req: RequestSpec, *, repeats: int = 1,
                on_step: Any = None, progress: Progress | None = None, warmup: Any = None,
                cancel: threading.Event | None = None, on_repeat: Any = None,
                explain: bool = False, job: Job | None = None) -> CompareRecord:
        declared = pair.declared
        if (spec.method, spec.k) != (declared.method, declared.k):
            raise ConfigError(f"this page measures running servers: the speculative one runs "
                              f"{declared.method} with k={declared.k}")
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
