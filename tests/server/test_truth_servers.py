"""Server runs that never invent a number (issue 29), against the real test servers:
a merged stream's counts are the server's own, and the tokenizer check refuses a
--model that tokenizes otherwise and accepts another folder with the same one."""
from __future__ import annotations

import json
import shutil

import pytest

from space.records.config import EngineSpec
from space.records.counts import SpecCounts
from space.runs.source import Servers, encoder
from space.server.build import build_trace
from space.server.client import ServerError, completion_body, describe, stream_completion
from tests.helpers.engine import CODE_PROMPT, req

pytestmark = pytest.mark.engine
SPEC = EngineSpec(method="ngram", k=4, max_model_len=2048)


def test_a_merged_stream_takes_the_servers_counts(pair):
    """``stream_interval: 4`` in the request (vLLM 0.32 takes it per request): the
    output collector merges steps into chunks of 4 tokens or more."""
    r = req(CODE_PROMPT, max_tokens=96)
    ids, texts = encoder(SPEC, r)
    info = describe(pair.speculative)
    body = completion_body(info.model, ids, r, 96) | {"stream_interval": 4}
    s = stream_completion(pair.speculative, body)
    assert max(len(c.token_ids) for c in s.chunks[1:]) > 1  # merged for real
    run = build_trace(s, info, pair.declared, r, texts)
    sd = s.metrics["speculative_decoding"]
    assert (run.num_drafts, run.num_draft_tokens, run.num_accepted_tokens) == (
        sd["num_spec_steps"], sd["num_draft_tokens"], sd["num_accepted_draft_tokens"])
    assert run.acceptance_rate == pytest.approx(sd["draft_acceptance_rate"])
    assert run.mean_acceptance_length == pytest.approx(sd["mean_acceptance_length"])
    assert run.counts == SpecCounts.from_per_step(sd["per_step_accepted"],
                                                  sd["per_step_drafted"])
    assert "merged" in {st.placement for st in run.steps}
    assert run.step_split is not None and not run.step_split.exact
    assert sum(st.kind == "verify" for st in run.steps) == sd["num_spec_steps"]  # none made up
    assert run.output_token_ids == [t for c in s.chunks for t in c.token_ids]


def _swapped_copy(src, dest):
    """The default model's files with four common tokens' ids swapped in pairs."""
    for f in src.iterdir():
        if f.suffix != ".safetensors":
            shutil.copy2(f, dest)
    tok = json.loads((dest / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    for a, b in (("\u0120the", "\u0120dog"), ("\u0120quick", "\u0120world")):
        vocab[a], vocab[b] = vocab[b], vocab[a]
    (dest / "tokenizer.json").write_text(json.dumps(tok))
    return dest


def test_the_tokenizer_check(pair, tmp_path):
    from space.engine import models

    wrong = _swapped_copy(models.resolve_model("default"), tmp_path)
    with pytest.raises(ServerError) as exc:
        Servers(pair).start(EngineSpec(method="ngram", k=4, model=str(wrong)))
    msg = str(exc.value)
    assert "\n" not in msg and str(wrong) in msg and "SmolLM2-135M-Instruct" in msg
    # the bad draft is another folder with the same tokenizer: accepted
    Servers(pair).start(EngineSpec(method="ngram", k=4, model="default-truncated"))
