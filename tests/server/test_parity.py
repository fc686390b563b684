"""The key test: at temperature 0, a trace built from the servers' streams equals
the in-process trace of the same prompt and settings, step by step."""
from __future__ import annotations

import pytest

from space.records import schema
from space.records.run import IN_PROCESS, SERVER
from space.records.trace import UNREPORTED_DRAFTS, VERIFY, dumps
from space.server.compare import compare_servers, trace_server
from tests.helpers.engine import CODE_PROMPT, JSON_PROMPT, check_against_vllm, req

pytestmark = pytest.mark.engine


def _steps(run):
    return [(s.kind, s.num_draft_tokens, s.num_accepted_tokens, s.emitted_token_ids,
             s.target_token_kind) for s in run.steps]


@pytest.mark.parametrize("prompt", [CODE_PROMPT, JSON_PROMPT])
def test_server_trace_equals_in_process(pair, engines, prompt):
    _, ngram = engines
    r = req(prompt, max_tokens=48)
    ids = ngram.encode(r)
    local = ngram.run(r, prompt_ids=ids)
    remote = trace_server(pair, r, ids, ngram.texts)
    assert (local.config.source, remote.config.source) == (IN_PROCESS, SERVER)
    assert remote.output_token_ids == local.output_token_ids
    assert remote.step_split is not None and remote.step_split.exact, remote.step_split
    assert _steps(remote) == _steps(local)
    # the server's own per-step arrays agree with the split, as in-process ones do
    check_against_vllm(remote)
    verify = [s for s in remote.steps if s.kind == VERIFY]
    assert verify and all(s.draft_token_ids == s.emitted_token_ids[:s.num_accepted_tokens]
                          for s in verify)
    # the drafts the server counted without ids: the rejected ones (and accepted
    # ones a max_tokens cut kept from the output)
    unreported = sum(s.num_unreported_draft_tokens for s in remote.steps)
    assert unreported == remote.num_draft_tokens - sum(len(s.draft_token_ids) for s in verify)
    assert unreported >= remote.num_draft_tokens - remote.num_accepted_tokens > 0
    assert remote.text == local.text
    assert UNREPORTED_DRAFTS  # the words the page and exports use for those drafts


def test_compare_record_round_trips(pair, engines):
    """compare through the servers: the same record type, saved and loaded back."""
    _, ngram = engines
    r = req(CODE_PROMPT, max_tokens=32)
    record = compare_servers(pair, r, ngram.encode(r), repeats=1, concurrency=2,
                             texts=ngram.texts)
    assert len(record.baseline_runs) == len(record.speculative_runs) == 2
    back = schema.load(dumps(record))
    assert back.speculative.config.source == SERVER
    assert back.speculative.steps == record.speculative.steps
    server = record.speculative.server
    assert record.speculative.config.vllm_version and server and server["concurrency"] == 2
    assert server["other_traffic"] is False
    assert server["prefix_caching"] is False  # read from the server's own /metrics
    assert "127.0.0.1" not in dumps(record)  # the host is the operator's, not the record's
