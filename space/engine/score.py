"""Score a finished run with the target: one prefill of prompt + output on the baseline gives
its distribution at every output position. vLLM's ``prompt_logprobs`` has only the top 5, no
temperature or top-p, so ``Sampler.gather_logprobs`` is wrapped to reduce the full rows we
need; the public top-1 is checked against them, so moved internals fail loudly."""
from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field

import torch
from vllm import SamplingParams
from vllm.inputs import TokensPrompt
from vllm.sampling_params import RequestOutputKind
from vllm.v1.sample.ops.topk_topp_sampler import apply_top_k_top_p_pytorch

from space.records import hooks
from space.records.target_view import GREEDY_EPS, TOP_N, Explanation, TargetView
from space.records.trace import ACCEPTED, REJECTED, VERIFY, RunTrace

_ids = itertools.count()
ALIGN_TOL = 1e-3  # captured vs returned log probability of the same row and token


class ScoringError(RuntimeError):
    """The scoring pass did not line up with vLLM's own answer."""


@dataclass
class _Capture:
    """The scoring prefill's rows we need, reduced as vLLM computes them."""

    rows: dict[int, int]                  # prefill row -> drafted token id
    temperature: float
    top_p: float
    next_row: int = 0                     # rows seen so far (chunked prefill: in order)
    got: dict[int, tuple] = field(default_factory=dict)  # row -> (tops, probs, p, raw top-1)

    def __call__(self, scores: torch.Tensor, token_ids: torch.Tensor) -> None:
        first, self.next_row = self.next_row, self.next_row + scores.shape[0]
        wanted = [r for r in range(first, self.next_row) if r in self.rows]
        if not wanted:
            return
        index = torch.tensor([r - first for r in wanted], device=scores.device)
        drafts = torch.tensor([self.rows[r] for r in wanted], device=scores.device)
        self.got.update(zip(wanted, self.reduce(scores.index_select(0, index), drafts),
                            strict=True))

    def reduce(self, scores: torch.Tensor, drafts: torch.Tensor) -> list[tuple]:
        """Per row: top-N ids and probabilities, p(draft), and the raw top-1 (id, logprob)."""
        logprobs = scores.float().log_softmax(dim=-1)  # idempotent on vLLM's raw logprobs
        raw_top = logprobs.max(dim=-1)
        if self.temperature >= GREEDY_EPS:  # as vLLM's rejection sampler: / T, then top-p, softmax
            logits = logprobs / self.temperature
            if self.top_p < 1.0:
                p = torch.full((logits.shape[0],), self.top_p, device=logits.device)
                logits = apply_top_k_top_p_pytorch(logits, None, p, allow_cpu_sync=True)
            probs = logits.softmax(dim=-1)
        else:  # greedy: the rule is the argmax; the softmax shows how sure the target was
            probs = logprobs.exp()
        top = probs.topk(TOP_N, dim=-1)
        p_draft = probs.gather(1, drafts.unsqueeze(1)).squeeze(1)
        out = []
        for i in range(scores.shape[0]):
            # top-p can leave fewer than TOP_N tokens: the rest have probability 0, no rank
            pairs = [(t, p) for t, p in zip(top.indices[i].tolist(), top.values[i].tolist(),
                                            strict=True) if p > 0]
            out.append(([t for t, _ in pairs], [p for _, p in pairs], float(p_draft[i]),
                        (int(raw_top.indices[i]), float(raw_top.values[i]))))
        return out


def why_rejected_state(runner) -> hooks.HookState:
    """Whether ``explain`` can hook this engine: its runner's sampler has ``gather_logprobs``."""
    sampler = getattr(runner, "sampler", None)
    if sampler is None:
        return hooks.missing(hooks.WHY_REJECTED, f"{type(runner).__name__} has no sampler")
    if not callable(getattr(sampler, "gather_logprobs", None)):
        return hooks.missing(hooks.WHY_REJECTED,
                             f"{type(sampler).__name__} has no gather_logprobs")
    return hooks.attached(hooks.WHY_REJECTED)


def _prefill(engine, ids: list[int], capture: _Capture) -> None:
    """One request: read ``ids``, emit one token, with the sampler's ``gather_logprobs``
    (a staticmethod) wrapped on this instance only; ``ScoringError`` unless ``capture`` holds
    the rows vLLM answered for."""
    eng, sampler = engine.engine, engine.runner.sampler
    if eng.has_unfinished_requests():
        raise RuntimeError("engine busy: scoring must run between runs")
    params = SamplingParams(max_tokens=1, temperature=0.0, prompt_logprobs=TOP_N,
                            detokenize=False, output_kind=RequestOutputKind.FINAL_ONLY)
    rid = f"sl-score-{next(_ids)}"
    final = None
    original = sampler.gather_logprobs

    def gather(logprobs, num_logprobs, token_ids):
        capture(logprobs, token_ids)
        return original(logprobs, num_logprobs, token_ids)

    sampler.gather_logprobs = gather
    try:
        eng.add_request(rid, TokensPrompt(prompt_token_ids=ids), params)
        while eng.has_unfinished_requests():
            final = next((o for o in eng.step() if o.request_id == rid), final)
    except BaseException:
        eng.abort_request([rid])
        raise
    finally:
        del sampler.gather_logprobs  # the class's staticmethod shows through again
    take_step = getattr(engine.scheduler, "take_step", None)
    if take_step is not None:
        take_step()  # the tracing scheduler saw this request too: not a run
    # The captured rows must be the ones vLLM answered for: same top-1 log probability.
    returned = final.prompt_logprobs if final is not None else None
    if not returned or len(capture.got) != len(capture.rows):
        raise ScoringError(f"scoring saw {len(capture.got)} of {len(capture.rows)} positions")
    for row, (*_, (top_id, top_lp)) in capture.got.items():
        entry = returned[row + 1] or {}  # entry i scores prompt token i, from row i - 1
        best = next((lp for lp in entry.values() if lp.rank == 1), None)
        if best is None or abs(best.logprob - top_lp) > ALIGN_TOL:
            raise ScoringError(f"row {row}: captured top-1 {top_id} ({top_lp:.4f}) is not "
                               f"vLLM's ({None if best is None else round(best.logprob, 4)})")


def explain(engine, run: RunTrace, temperature: float, top_p: float) -> Explanation:
    """Score ``run`` on the baseline ``engine``: set ``run.explanation`` (returned) and
    each verify step's ``target_views``. Call it after the timed runs."""
    t0 = time.perf_counter()
    # the scoring request emits one token
    ids = (run.prompt_token_ids + run.output_token_ids)[:engine.spec.max_model_len - 1]
    n_prompt = len(run.prompt_token_ids)
    # The target judged the accepted drafts and the first rejected one (the drafts after
    # it were discarded with it, unjudged). Output position p is predicted by prefill row
    # n_prompt - 1 + p; the last row predicts nothing. (step index, draft index, row, draft)
    wants = [(i, j, n_prompt - 1 + s.output_offset + j, s.draft_token_ids[j])
             for i, s in enumerate(run.steps) if s.kind == VERIFY
             for j, fate in enumerate(s.draft_fates())
             if (fate == ACCEPTED or (fate == REJECTED and j == s.num_accepted_tokens))
             and n_prompt + s.output_offset + j < len(ids)]
    capture = _Capture({row: draft for _, _, row, draft in wants}, temperature, top_p)
    if wants:
        _prefill(engine, ids, capture)
    # vLLM drafts greedily (q = 1) unless ``draft_sample_method`` says otherwise
    greedy = (run.config.speculative_config or {}).get("draft_sample_method", "greedy")
    q = 1.0 if greedy == "greedy" else None
    for step in run.steps:
        step.target_views = []
    shown = []
    for i, j, row, draft in wants:
        tops, probs, p_draft, _ = capture.got[row]
        shown += tops
        run.steps[i].target_views.append(TargetView(
            draft_pos=j, draft_token_id=draft, draft_prob=_clip(p_draft),
            top_token_ids=tops, top_probs=[_clip(p) for p in probs], draft_q=q))
    run.token_text.update(engine.texts(shown))
    run.explanation = Explanation(temperature=temperature, top_p=top_p,
                                  score_s=time.perf_counter() - t0,
                                  num_scored_tokens=len(ids) if wants else 0)
    return run.explanation


def _clip(p: float) -> float:
    """float32 softmax can land a hair above 1; the schema wants 0..1."""
    return min(max(p, 0.0), 1.0)
