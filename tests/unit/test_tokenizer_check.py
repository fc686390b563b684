"""The tokenizer check at start, on literal answers (no server): ids decide."""
from __future__ import annotations

import pytest

from space.server import compare
from space.server.client import Chunk, ServerError, Stream
from space.server.compare import Checked, LocalTokenizer, check_tokenizer
from tests.helpers.server_records import INFO, PLAIN_INFO

LOCAL = LocalTokenizer(model="/models/mine", probe="<|im_start|>user hi", probe_ids=[1, 2, 3],
                       decode=lambda ids: "".join(f" w{i}" for i in ids))
PAIR = compare.ServerPair(compare.Server("baseline", "http://b/v1"),
                          compare.Server("speculative", "http://s/v1"),
                          compare.Declared(method="ngram", k=4))


def _servers(monkeypatch, ids=(1, 2, 3), text=lambda ids: "".join(f" w{i}" for i in ids)):
    monkeypatch.setattr(compare, "tokenize", lambda server, model, probe: list(ids))

    def stream(server, body, **_kw):
        chunks = [Chunk([7], text([7]), 0.1), Chunk([8, 9], text([8, 9]), 0.2)]
        return Stream(0.0, chunks, body["prompt"], "length", {"completion_tokens": 3}, {})
    monkeypatch.setattr(compare, "stream_completion", stream)


def test_the_same_ids_pass_whatever_the_folder(monkeypatch):
    _servers(monkeypatch)
    check_tokenizer(PAIR, Checked(PLAIN_INFO, INFO), LOCAL)


def test_other_ids_are_one_line_naming_both_models(monkeypatch):
    _servers(monkeypatch, ids=(1, 5, 3))
    with pytest.raises(ServerError) as exc:
        check_tokenizer(PAIR, Checked(PLAIN_INFO, INFO), LOCAL)
    msg = str(exc.value)
    assert "\n" not in msg and "/models/mine" in msg and "model m" in msg and "/tokenize" in msg


def test_other_text_for_the_same_ids_is_refused(monkeypatch):
    _servers(monkeypatch, text=lambda ids: "".join(f" x{i}" for i in ids))
    with pytest.raises(ServerError, match="its text for the same ids differs"):
        check_tokenizer(PAIR, Checked(PLAIN_INFO, INFO), LOCAL)
