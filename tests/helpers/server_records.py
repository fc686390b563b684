"""Server-like records, hand-written: a stream as a vLLM server sends it, built into a
``RunTrace`` by the real server path (``space.server.build.build_trace``; pure, no
server), so a test sees exactly what a server run gives the views.

The speculative run (ngram, k=4; the per-step counts allow one placement only, so
the step split is exact):

    chunk             server's counts   step
    [1]                                 prefill
    [2, 3, 4, 5, 6]   4 of 4 accepted   verify, bonus 6
    [7, 8]            1 of 4            verify: draft 7 accepted, 3 rejected (no ids), correction 8
    [9]               0 of 4            verify: 4 rejected (no ids), correction 9
    [10, 11]          4 of 4            verify, cut by max_tokens after 10, 11 (2 drafts unused)
"""
from __future__ import annotations

from typing import Any

from space.records.config import RequestSpec
from space.records.trace import CompareRecord, RunTrace, make_compare
from space.server.build import Declared, build_trace
from space.server.client import Chunk, ServerInfo, Stream

INFO = ServerInfo(model="m", max_model_len=64, vllm_version="0.32.0", num_draft_positions=4)
PLAIN_INFO = ServerInfo(model="m", max_model_len=64, vllm_version="0.32.0",
                        num_draft_positions=0)
NGRAM = Declared(method="ngram", k=4)
REQ = RequestSpec(prompt="p")
PROMPT_IDS = [90, 91, 92]

SPEC_CHUNKS = [[1], [2, 3, 4, 5, 6], [7, 8], [9], [10, 11]]
SPEC_ACCEPTED, SPEC_DRAFTED = [4, 1, 0, 4], [4, 4, 4, 4]
CORRECTION_STEP = 2   # the step index of the first correction (3 drafts unreported)
NO_DRAFT_IDS_STEP = 3  # a verify step whose every draft was rejected: no draft id at all


def texts(ids: list[int]) -> dict[int, str]:
    """Each id's text, as the page's tokenizer would give it: ' w<id>'."""
    return {i: f" w{i}" for i in ids}


def stream(chunks: list[list[int]], sd: dict[str, Any] | None, step_s: float = 0.1) -> Stream:
    """The chunks arriving ``step_s`` apart; ``sd``: the final chunk's
    ``metrics.speculative_decoding`` (None: a plain server's)."""
    metrics: dict[str, Any] = {"time_to_first_token_ms": 10.0}
    if sd is not None:
        metrics["speculative_decoding"] = sd
    return Stream(sent_s=0.0,
                  chunks=[Chunk(c, "", step_s * (i + 1)) for i, c in enumerate(chunks)],
                  prompt_token_ids=list(PROMPT_IDS), finish_reason="length",
                  usage={"completion_tokens": sum(map(len, chunks))}, metrics=metrics)


def spec_decode(accepted: list[int], drafted: list[int]) -> dict[str, Any]:
    """``metrics.speculative_decoding`` at ``--per-request-spec-decode-metrics detailed``."""
    return {"num_spec_steps": len(accepted), "num_draft_tokens": sum(drafted),
            "num_spec_tokens": 4, "acceptance_histogram": [0] * 5,
            "per_step_accepted": accepted, "per_step_drafted": drafted}


def server_run() -> RunTrace:
    """The speculative run in the table above."""
    return build_trace(stream(SPEC_CHUNKS, spec_decode(SPEC_ACCEPTED, SPEC_DRAFTED)), INFO,
                       NGRAM, REQ, texts)


def server_baseline() -> RunTrace:
    """The plain server's run of the same 11 tokens, one a chunk, 0.15 s apart."""
    return build_trace(stream([[t] for t in range(1, 12)], None, step_s=0.15), PLAIN_INFO,
                       Declared(), REQ, texts)


def server_compare() -> CompareRecord:
    return make_compare([server_baseline()], [server_run()])
