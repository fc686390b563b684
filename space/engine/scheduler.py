"""A vLLM scheduler that records, per request per step, what was verified: the one place
that sees each step's real draft ids, the tokens sampled and those kept after stop checks
(non-public vLLM API: the versions tested are pinned in ``space/common/versions.py``)."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from vllm.v1.core.sched.scheduler import Scheduler

from space.engine.anatomy import StepClock
from space.records.anatomy import RECORDING, SCHEDULING
from space.records.trace import DRAFTER_SKIPPED, PADDING

log = logging.getLogger(__name__)


@dataclass
class RawStep:
    """What the scheduler saw for one request in one step."""

    num_scheduled_tokens: int
    num_computed_before: int        # tokens of the request already in the KV cache
    num_prompt_tokens: int
    draft_token_ids: list[int]      # the proposer's drafts verified this step (no placeholders)
    sampled_token_ids: list[int]    # accepted drafts + the target's own token
    kept_token_ids: list[int]       # what the request kept after stop checks
    output_offset: int              # output tokens before this step
    num_placeholder_drafts: int = 0  # slots vLLM filled with placeholder ids, not proposals
    placeholder_cause: str | None = None  # PADDING | DRAFTER_SKIPPED (space.records.trace)


class TracingScheduler(Scheduler):
    """``Scheduler`` plus ``take_step`` (what it saw in the last step); behaviour is unchanged.

    Draft slots no proposer filled are counted apart from the drafts, with their cause
    (docs/vllm-hooks.md, "Placeholder drafts"): -1 padding, or zeros the model runner returns
    when it skipped the drafter (``proposer_ran``, set by the engine, tells those apart).
    With a ``clock``, vLLM's scheduling and our recording are timed apart. Fails soft: if
    reading vLLM's objects raises, ``failure`` says why and recording stops; vLLM goes on."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._new_in_step: list[tuple[str, RawStep]] = []
        self.failure: str | None = None  # why recording stopped (None: it records)
        self.vocab_size = 0
        self._guard(self._read_vocab)
        self.proposer_ran: Callable[[], bool] | None = None  # in the current engine step
        self._zero_filled: set[str] = set()  # requests whose pending drafts are zeros
        self.clock: StepClock | None = None  # set by the engine when it times step parts

    @property
    def recording(self) -> bool:
        return self.failure is None

    def take_step(self) -> list[tuple[str, RawStep]]:
        """The requests' ``RawStep``s recorded since the last call; drained by the step loop."""
        out, self._new_in_step = self._new_in_step, []
        return out

    def _guard(self, fn: Callable, *args):
        """``fn(*args)``, or None after recording why it raised (and stopping)."""
        if self.failure is not None:
            return None
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - fail soft: vLLM's step must go on
            self.failure = f"{getattr(fn, '__name__', 'recording')}: {type(exc).__name__}: {exc}"
            log.warning("tracing scheduler stopped recording (%s); runs take their counts "
                        "from vLLM's per-request metrics", self.failure)
            self._new_in_step.clear()
            return None

    def _read_vocab(self) -> None:
        self.vocab_size = self.vllm_config.model_config.get_vocab_size()

    def update_draft_token_ids(self, draft_token_ids) -> None:
        # At the end of an engine step, after the model runner proposed (or not).
        self._guard(self._note_zero_filled, draft_token_ids)
        super().update_draft_token_ids(draft_token_ids)

    def _note_zero_filled(self, draft_token_ids) -> None:
        skipped = self.proposer_ran is not None and not self.proposer_ran()
        self._zero_filled = set(draft_token_ids.req_ids) if skipped else set()

    def update_from_output(self, scheduler_output, model_runner_output):
        t0 = time.perf_counter()
        before = self._guard(self._read_before, scheduler_output, model_runner_output)
        t1 = time.perf_counter()
        result = super().update_from_output(scheduler_output, model_runner_output)
        t2 = time.perf_counter()
        if before is not None:
            self._guard(self._record, scheduler_output, before)
        if self.clock is not None:
            self.clock.add(RECORDING, t0, t1)
            self.clock.add(SCHEDULING, t1, t2)
            self.clock.add(RECORDING, t2, time.perf_counter())
        return result

    def _read_before(self, scheduler_output, model_runner_output) -> dict:
        """What the requests held before vLLM updates them (docs/vllm-hooks.md, D1)."""
        sampled = model_runner_output.sampled_token_ids
        index = model_runner_output.req_id_to_index
        before = {}
        for req_id, n_sched in scheduler_output.num_scheduled_tokens.items():
            req = self.requests.get(req_id)
            if req is not None:
                i = index.get(req_id)
                # Copy now: vLLM trims this very list in place at a stop.
                got = list(sampled[i]) if (sampled and i is not None) else []
                # num_computed_tokens already counts this step's scheduled tokens.
                before[req_id] = (req, len(req.output_token_ids),
                                  req.num_computed_tokens - n_sched, got)
        return before

    def _record(self, scheduler_output, before: dict) -> None:
        """One ``RawStep`` per request of the step, after vLLM's update."""
        for req_id, (req, n_out, computed, got) in before.items():
            drafts = scheduler_output.scheduled_spec_decode_tokens.get(req_id) or ()
            # the proposer's drafts among ``drafts``, and why any others are there
            skipped = bool(drafts) and req_id in self._zero_filled
            proposed = [] if skipped else [t for t in drafts if 0 <= t < self.vocab_size]
            cause = DRAFTER_SKIPPED if skipped else PADDING if len(proposed) < len(drafts) else None
            raw = RawStep(
                num_scheduled_tokens=scheduler_output.num_scheduled_tokens[req_id],
                num_computed_before=computed, num_prompt_tokens=req.num_prompt_tokens,
                draft_token_ids=proposed, sampled_token_ids=got,
                kept_token_ids=list(req.output_token_ids[n_out:]), output_offset=n_out,
                num_placeholder_drafts=len(drafts) - len(proposed), placeholder_cause=cause)
            self._new_in_step.append((req_id, raw))
