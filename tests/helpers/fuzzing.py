"""Hypothesis strategies for hostile input: trace files broken in every way,
and page requests with any value in any field. Shared by the pure fuzz test
(tests/unit/test_fuzz_trace.py) and the one against the real app
(tests/ui/test_fuzz_api.py).
"""
from __future__ import annotations

import json

from hypothesis import strategies as st

from tests.helpers.hostile import clean_compare, hostile_compare, payloads

MARKUP = st.sampled_from(payloads(99) + ["\x00", "\u202e", "\ud7ff", "\r\n", "%{x}", "&amp;"])
# Control characters, lone surrogates, private use, line and paragraph separators.
ODD = st.text(alphabet=st.characters(categories=["Cc", "Cs", "Co", "Zl", "Zp"]), max_size=10)
TEXT = st.one_of(st.text(max_size=40), MARKUP, ODD)
NUMBER = st.one_of(st.integers(min_value=-(2**70), max_value=2**70),
                   st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from([0, -1, 2**31, 2**31 - 1, 1e308, -1e308, 5e-324]))
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, TEXT)
JSON = st.recursive(SCALAR, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)), max_leaves=12)

def _paths(value, path=()):
    """Every place in a JSON document: dict keys and list items, depth first."""
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value[:6]):
            yield from _paths(v, path + (i,))


def _set(doc, path, value, delete=False):
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if delete and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


@st.composite
def broken_files(draw) -> str:
    doc = draw(st.sampled_from([clean_compare, hostile_compare]))()
    if draw(st.booleans()):
        doc = doc["speculative"]  # a single-run trace file
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(doc) if p]
        path = draw(st.sampled_from(paths))
        _set(doc, path, draw(JSON), delete=draw(st.integers(0, 5)) == 0)
    text = json.dumps(doc)  # NaN and Infinity are written as JSON's extensions
    if draw(st.integers(0, 9)) == 0:
        text = text[:draw(st.integers(0, len(text)))]
    return text


def _like(value):
    """Another value of the same JSON type: a file the schema lets through, but
    whose values are extreme or disagree with each other (counts past the drafts,
    ids without text, times going backwards, enormous numbers)."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.one_of(st.integers(0, 40), st.integers(0, 2**31 - 1))
    if isinstance(value, float):
        return st.floats(allow_nan=False, allow_infinity=False)
    if isinstance(value, str):
        return TEXT
    if isinstance(value, list) and all(isinstance(v, int) for v in value):
        return st.lists(st.one_of(st.integers(0, 40), st.integers(0, 2**31 - 1)), max_size=8)
    return st.just(value)


@st.composite
def odd_valid_files(draw) -> str:
    doc = draw(st.sampled_from([clean_compare, hostile_compare]))()
    if draw(st.booleans()):
        doc = doc["speculative"]
    for _ in range(draw(st.integers(1, 6))):
        paths = [p for p in _paths(doc) if p and p[-1] != "version"]
        path = draw(st.sampled_from(paths))
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        _set(doc, path, draw(_like(parent[path[-1]])))
    return json.dumps(doc)




# --- Page requests: the run endpoint's parameters, in ``Controls.run_inputs`` order ---

RUN_PARAMS = ("prompt", "method", "draft", "k", "temperature", "top_p", "max_tokens", "seed",
              "repeats", "pair")
NUMERIC = {"k", "temperature", "top_p", "max_tokens", "seed", "repeats"}  # sliders, a number
# What a JSON client can send (gradio_client refuses NaN and lone surrogates itself).
SENDABLE_TEXT = st.one_of(
    st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=200),
    MARKUP,
    st.text(alphabet=st.characters(categories=["Cc", "Co", "Zl", "Zp"]), max_size=10))
WILD = st.recursive(
    st.one_of(st.none(), st.booleans(), SENDABLE_TEXT,
              st.integers(min_value=-(2**70), max_value=2**70),
              st.floats(allow_nan=False, allow_infinity=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=5)


def _costly(name: str, value) -> bool:
    """A wild value that is valid and would make the example slow: a long run,
    repeats, another k (a new engine), or a draft model (which may download)."""
    if name == "method":
        return value == "draft_model"
    if not isinstance(value, int | float):
        return False
    n = round(value) if abs(value) < 2**53 else value
    return ((name == "max_tokens" and 8 < n <= 1024) or (name == "repeats" and 1 < n <= 10)
            or (name == "k" and 1 <= n <= 16 and n not in (3, 4)))


def wrong_type(name: str, value) -> bool:
    """A slider or number given something that is not a number: refused in
    Gradio's preprocess, in one line (panels.refuse_wrong_types)."""
    if name not in NUMERIC or (name == "seed" and value is None):
        return False
    return not isinstance(value, int | float)


@st.composite
def run_requests(draw) -> dict:
    """Keyword arguments for the run endpoint. A third are valid requests with odd
    prompts, sampling values and seeds (they run the engine, max_tokens <= 8); the
    rest also carry one to three wild values (wrong types, markup, huge numbers)."""
    req = {
        "prompt": draw(st.one_of(SENDABLE_TEXT, MARKUP, st.just("".join(payloads(20))))),
        # a draft the page does not offer is Gradio's refusal: mostly offered ones
        "method": "ngram", "draft": draw(st.one_of(st.sampled_from(["", "default-truncated"]),
                                                   SENDABLE_TEXT)),
        "k": draw(st.sampled_from([3, 4])),
        "temperature": draw(st.floats(0, 2)), "top_p": draw(st.floats(0.05, 1)),
        "max_tokens": draw(st.integers(1, 8)),
        "seed": draw(st.one_of(st.none(), st.integers(-(2**70), 2**70))),
        "repeats": 1, "pair": draw(st.sampled_from([None, "cpu-ngram"])),
    }
    if draw(st.integers(0, 2)):
        for name in draw(st.lists(st.sampled_from(RUN_PARAMS), min_size=1, max_size=3)):
            req[name] = draw(WILD.filter(lambda v, n=name: not _costly(n, v)))
    return req
