"""Reading traffic files (space/runs/traffic_file.py): each format, malformed lines, the bounds;
and the multi-turn request through the chat template (space/engine/prompts.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from space.engine.prompts import encode
from space.records.config import ConfigError, RequestSpec
from space.runs.traffic_file import Bounds, TrafficFormatError, detect, parse

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "traffic"


def read(name: str, **kw):
    return parse((FIXTURES / name).read_bytes(), name, **kw)


def test_jsonl_prompts_with_labels_settings_responses_and_bad_lines():
    t = read("prompts.jsonl")
    assert t.format == "jsonl" and t.label_field == "category"
    assert [(r.line, r.label) for r in t.requests] == [
        (1, "code"), (2, "creative"), (8, "translation")]
    code, creative, translation = t.requests
    assert code.max_tokens == 24 and code.temperature is None
    assert code.response is not None and code.response.startswith("def add")
    assert creative.temperature == 0.7 and translation.temperature == 0.2
    assert [(s.line, s.reason.split(" (")[0]) for s in t.skipped] == [
        (3, "not valid JSON"), (4, "prompt must be text, got a number"),
        (5, "the prompt is empty"), (6, "max_tokens must be a number in 1..8192, got '0'"),
        (9, "a request must be a JSON object, got a list")]
    assert "skipped 5: line 3: not valid JSON" in t.describe()


def test_openai_messages_last_user_turn_is_the_prompt_earlier_turns_its_context():
    t = read("chat.jsonl")
    assert t.label_field == "task"
    copy, math, hello = t.requests
    assert copy.prompt == "Repeat the list in reverse order."
    assert copy.system == "You are terse."
    assert copy.context == (("user", "Here is a list: apples, pears, plums."),
                            ("assistant", "Noted."))
    assert copy.response == "plums, pears, apples"  # the answer after the last user turn
    assert math.prompt == "What is 2 + 2?"  # content parts joined
    assert hello.prompt == "Hello" and hello.response == "Hi"
    assert [str(s) for s in t.skipped] == ["line 3: unknown role 'wizard'",
                                           "line 5: messages must be a non-empty list"]


def test_spec_bench_questions_take_the_first_turn():
    t = read("question.jsonl")
    assert [r.label for r in t.requests] == ["writing", "reasoning"]
    assert t.requests[0].prompt.startswith("Compose an engaging travel blog post")
    assert t.requests[0].context == ()
    assert [s.line for s in t.skipped] == [3, 4]


def test_sharegpt_array_items_are_numbered():
    t = read("sharegpt.json")
    assert t.format == "json" and t.label_field is None
    colours, planet = t.requests
    assert colours.prompt == "Now list them in a JSON array."
    assert colours.context == (("user", "Give me three colours."),
                               ("assistant", "Red, green and blue."))
    assert json.loads(colours.response or "") == ["red", "green", "blue"]
    assert planet.system == "Be brief."
    assert [str(s) for s in t.skipped] == ["item 3: conversations must be a non-empty list",
                                           "item 4: no user turn to use as the prompt"]


def test_csv_rows_and_plain_text_lines():
    t = read("prompts.csv")
    assert t.format == "csv" and t.label_field == "label"
    assert [(r.line, r.prompt, r.label, r.max_tokens, r.temperature) for r in t.requests] == [
        (2, "Fix the typo: teh cat", "edit", 16, None), (3, "Write a limerick", "creative",
                                                         None, 0.8)]
    assert [(s.line, s.reason) for s in t.skipped] == [
        (4, "the prompt is empty"), (5, "max_tokens must be a number in 1..8192, got 'lots'")]
    text = read("prompts.txt")
    assert text.format == "text" and text.skipped == []
    assert [(r.line, r.prompt) for r in text.requests] == [
        (1, "What is the capital of France?"), (3, "List three prime numbers."),
        (5, "Explain recursion in one sentence.")]


def test_a_named_label_field():
    t = parse(b'{"prompt": "a", "kind": "x"}\n{"prompt": "b", "category": "y"}\n',
              "t.jsonl", label_field="kind")
    assert [r.label for r in t.requests] == ["x", None]
    with pytest.raises(TrafficFormatError, match="no request has the label field 'team'"):
        parse(b'{"prompt": "a"}\n', "t.jsonl", label_field="team")


def test_format_detection():
    assert detect('{"prompt": 1}', "") == "jsonl"
    assert detect("[{}]", "x.json") == "json"
    assert detect('{"prompt": 1}', "x.txt") == "text"
    assert detect("a,b", "X.CSV") == "csv"
    assert detect("hello", "") == "text"


def test_bounds_refuse_the_file_or_skip_the_request_with_one_line():
    small = Bounds(max_bytes=100, max_requests=2, max_prompt_chars=10)
    with pytest.raises(TrafficFormatError,
                       match=r"^the traffic file is 101 bytes, more than the 100 bytes allowed"):
        parse(b"x" * 101, "t.txt", bounds=small)
    with pytest.raises(TrafficFormatError, match="has 3 requests, more than the 2 allowed"):
        parse(b"a\nb\nc\n", "t.txt", bounds=small)
    t = parse(b"short\n" + b"y" * 11 + b"\n", "t.txt", bounds=small)
    assert [r.prompt for r in t.requests] == ["short"]
    assert [str(s) for s in t.skipped] == ["line 2: the request is 11 characters, more than "
                                           "the 10 allowed"]
    with pytest.raises(TrafficFormatError, match="not UTF-8"):
        parse(b"\xff\xfe\x00", "t.txt")
    with pytest.raises(TrafficFormatError, match="no prompt column"):
        parse(b"question_text,label\nhi,a\n", "t.csv")
    with pytest.raises(TrafficFormatError, match="not valid JSON"):
        parse(b"[{", "t.json")
    assert issubclass(TrafficFormatError, ConfigError)  # the CLI's one line and exit 2


class _Template:
    """A tokenizer with a chat template that records the messages it is given."""

    chat_template = "yes"

    def __init__(self) -> None:
        self.seen: list = []

    def apply_chat_template(self, msgs, add_generation_prompt, tokenize):
        self.seen = msgs
        return [1, 2, 3]


def test_a_conversation_is_templated_whole():
    tok = _Template()
    req = RequestSpec(prompt="reverse it", system="terse",
                      messages=(("user", "a, b"), ("assistant", "ok")))
    assert encode(tok, req, 64) == [1, 2, 3]
    assert tok.seen == [{"role": "system", "content": "terse"},
                        {"role": "user", "content": "a, b"},
                        {"role": "assistant", "content": "ok"},
                        {"role": "user", "content": "reverse it"}]
    encode(tok, RequestSpec(prompt="one"), 64)  # no messages: as before
    assert tok.seen == [{"role": "user", "content": "one"}]
    with pytest.raises(ConfigError, match="role must be one of"):
        RequestSpec(prompt="x", messages=(("robot", "y"),)).validate()
