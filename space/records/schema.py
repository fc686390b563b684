"""Reading a trace file: the JSON contract's schema, older versions, ``load``.

Every file a visitor or a user opens (the page's replay, the history, ``load``
in Python) is checked against the schema here before any record is built, so
views and exports only ever see well-typed values (escaping is still done where
HTML is written). Unknown keys are ignored; derived figures are recomputed, not
read. Writing is ``space.records.trace``'s (``to_dict``, ``dumps``), with the contract's
version, ``TRACE_VERSION``.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, NoReturn

from space.records.anatomy import ANATOMY_PARTS, problems
from space.records.anatomy import from_json as anatomy_from_json
from space.records.config import PREFIX_CACHE_MODES
from space.records.counts import COUNTS_SOURCES, FROM_VLLM_METRICS
from space.records.run import SERVER, SOURCES, upgrade_config
from space.records.target_view import TOP_N
from space.records.trace import (
    PLACEHOLDER_CAUSES,
    PREFILL,
    STEP_KINDS,
    STEP_PLACEMENTS,
    TARGET_TOKEN_KINDS,
    TRACE_VERSION,
    UNCERTAIN,
    CompareRecord,
    RunTrace,
)
from space.records.verdict import CHECK_NAMES, CHECK_OPS, DECISION_RULES, VERDICTS


class TraceFormatError(ValueError):
    """A file that is not a valid trace; the message is one line for the user."""


def load(text: str) -> RunTrace | CompareRecord:
    """Load a trace or compare JSON written by the CLI or the app, any version.

    Everything is checked against the schema (below) before a record is
    built: a bad file raises ``TraceFormatError`` with one line naming the
    first bad field, e.g. "not a SpecLens trace: steps[3].index must be an
    integer".
    """
    try:
        d = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise TraceFormatError(f"not a SpecLens trace: not valid JSON ({_first_line(exc)})") \
            from None
    _refuse_lone_surrogates(text, d)
    d = validate_record(_upgrade(d))
    return CompareRecord.from_dict(d) if "baseline" in d else RunTrace.from_dict(d)


def _upgrade(d: Any) -> Any:
    """An older version's dict in today's names (in place; checked afterwards).

    Version 1 (no ``version`` key): a step's accepted count was ``num_accepted``.
    Version 2 lacks only fields that default (``num_cached_tokens``, steps'
    ``num_placeholder_draft_tokens``, ``config.prefix_cache``): nothing to rename.
    Version 3 has no target views (added in 4): the defaults (none) stand.
    Version 4 has no step anatomy (added in 5): steps replay without it.
    Version 5 may keep method and k only in ``speculative_config`` and has no
    source or request (added in 6): ``space.records.run.upgrade_config``;
    nor has any older file a server run's step split, notes or unreported
    drafts (the defaults, none, stand).
    Version 6 decided verdicts by the spread rule (``upgrade_verdict_rule``).
    Version 6 has no counts source nor step placements (added in 7): ``_upgrade_to_7``.
    """
    if not isinstance(d, dict):
        return d
    version = d.get("version", 1)
    runs = [d.get("baseline"), d.get("speculative")] if "baseline" in d else [d]
    for run in runs:
        if not isinstance(run, dict):
            continue
        steps = run.get("steps") if version == 1 else None
        for s in steps if isinstance(steps, list) else []:
            if isinstance(s, dict) and "num_accepted" in s:
                s.setdefault("num_accepted_tokens", s.pop("num_accepted"))
        if isinstance(version, int) and version < 6 and isinstance(run.get("config"), dict):
            upgrade_config(run["config"])
        if isinstance(version, int) and version < 7:
            _upgrade_to_7(run)
    if isinstance(version, int) and version < 7:
        upgrade_verdict_rule(d)
    return d


def upgrade_verdict_rule(d: dict) -> dict:
    """Version 6 -> 7: a comparison's checklist was decided by the spread rule (every
    repeat at or above 1.00x), not by an interval. Its verdict stays as recorded;
    ``rule`` says how it was reached, so the page does not present it as an interval's.

    Example:
        >>> upgrade_verdict_rule({"checklist": {"verdict": "worth-it", "checks": []}})
        {'checklist': {'verdict': 'worth-it', 'checks': [], 'rule': 'spread'}}
    """
    checklist = d.get("checklist")
    if isinstance(checklist, dict):
        checklist.setdefault("rule", "spread")
    return d


def _upgrade_to_7(run: dict) -> None:
    """Version 6 had no ``counts_from`` nor steps' ``placement`` (issue 29).

    A server run took its counts from its steps, and where no placement fitted
    its chunks those steps made counts up: its counts now come from vLLM's
    metrics it carries (``counts_from: vllm_metrics``). Its steps were exact
    where its step split said so; an approximate split did not say which steps
    it guessed, so its steps after the prefill are ``uncertain``. In-process
    steps were all seen: the default, exact, stands.
    """
    config = run.get("config")
    if not (isinstance(config, dict) and config.get("source") == SERVER):
        return
    if isinstance(run.get("vllm_spec_metrics"), dict):
        run.setdefault("counts_from", FROM_VLLM_METRICS)
    split, steps = run.get("step_split"), run.get("steps")
    if isinstance(split, dict) and split.get("exact") is False and isinstance(steps, list):
        for s in steps:
            if isinstance(s, dict) and s.get("kind") != PREFILL:
                s.setdefault("placement", UNCERTAIN)


def _refuse_lone_surrogates(text: str, d: Any) -> None:
    """A lone ``\\ud800`` escape parses to a string that cannot be written as
    UTF-8: the page's own JSON (orjson) and every export would fail on it.
    Looked for only when the file has a surrogate escape at all (our own files
    write emoji as escaped pairs, which are fine).

    Example:
        >>> _refuse_lone_surrogates('"\\\\ud83d\\\\ude00"', "\\U0001f600")  # a pair: one emoji
        >>> _refuse_lone_surrogates('"\\\\ud800"', "\\ud800")
        Traceback (most recent call last):
        ...
        space.records.schema.TraceFormatError: not a SpecLens trace: a lone surrogate escape, not Unicode text
    """
    if not _SURROGATE_ESCAPE.search(text):
        return
    try:
        json.dumps(d, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise TraceFormatError("not a SpecLens trace: a lone surrogate escape, "
                               "not Unicode text") from None


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _first_line(exc: BaseException) -> str:
    return (str(exc).splitlines() or [type(exc).__name__])[0][:120]


# --- The schema: every field a visitor's file may carry, with types and bounds ---

MAX_COUNT = 2**31 - 1   # ids, indices and counts: vLLM's token ids are int32
Check = Callable[[Any, str], Any]


def _fail(path: str, what: str) -> NoReturn:
    raise TraceFormatError(f"not a SpecLens trace: {path} must be {what}")


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        _fail(path, f"an integer in 0..{MAX_COUNT}")
    return value


def _number(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        _fail(path, "a finite number")
    return value


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        _fail(path, "true or false")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        _fail(path, "a string")
    return value


def _optional(check: Check) -> Check:
    return lambda v, path: None if v is None else check(v, path)


def _one_of(*allowed: str) -> Check:
    def check(value: Any, path: str) -> str:
        if value not in allowed:
            _fail(path, "one of " + ", ".join(allowed))
        return value
    return check


def _list(check: Check, max_len: int | None = None) -> Check:
    def each(value: Any, path: str) -> list:
        if not isinstance(value, list):
            _fail(path, "a list")
        if max_len is not None and len(value) > max_len:
            _fail(path, f"a list of at most {max_len}")
        return [check(v, f"{path}[{i}]") for i, v in enumerate(value)]
    return each


def _prob(value: Any, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        _fail(path, "a probability in 0..1")
    return value


def _json_object(value: Any, path: str) -> dict:
    """Free-form settings (vLLM's keys): a JSON object, its values not rendered as markup."""
    if not isinstance(value, dict):
        _fail(path, "an object")
    return value


def _record(fields: dict[str, tuple[Check, bool]], post: Check | None = None) -> Check:
    """An object whose known keys pass their checks; (check, required) per key;
    then ``post`` (checks across fields) on the result."""
    def check(value: Any, path: str) -> dict:
        if not isinstance(value, dict):
            _fail(path, "an object")
        out = dict(value)
        for key, (check_field, required) in fields.items():
            where = f"{path}.{key}" if path else key
            if key in value:
                out[key] = check_field(value[key], where)
            elif required:
                _fail(where, "present")
        return post(out, path) if post else out
    return check


def _token_text(value: Any, path: str) -> dict:
    if not isinstance(value, dict):
        _fail(path, "an object of token id -> text")
    for key, text in value.items():
        if not (isinstance(key, str) and key.isdigit() and int(key) <= MAX_COUNT):
            _fail(f"{path} key {key[:20]!r}", "a token id")
        _str(text, f"{path}[{key}]")
    return value


_ids = _list(_int)
MAX_VIEWS_PER_STEP = 64  # one per verified draft: k is at most 16 here, vLLM allows more


def _tops_pair_up(view: dict, path: str) -> dict:
    if len(view.get("top_token_ids", [])) != len(view.get("top_probs", [])):
        _fail(f"{path}.top_probs", "as long as top_token_ids")
    return view


def _anatomy_holds(step: dict, path: str) -> dict:
    """The timed parts lie inside the step, in order, without overlapping (so the
    remainder, "other", is never negative)."""
    a = step.get("anatomy")
    if a is None:
        return step
    compact = [key for key in ("parts", "start_us", "end_us") if key in a]
    if ("intervals" in a) == bool(compact):
        _fail(f"{path}.anatomy", "either intervals or parts, start_us and end_us")
    if compact and len({len(a.get(key, ())) for key in ("parts", "start_us", "end_us")}) != 1:
        _fail(f"{path}.anatomy.parts", "as long as start_us and end_us")
    anatomy = anatomy_from_json(a, step["start_s"], step["end_s"])
    if problems(anatomy, step["start_s"], step["end_s"]):
        _fail(f"{path}.anatomy.{'parts' if compact else 'intervals'}",
              "in time order, not overlapping, inside the step")
    return step


def _views_match_drafts(step: dict, path: str) -> dict:
    """Each view names a draft of its own step: the views index into the drafts."""
    drafts = step.get("draft_token_ids", [])
    for i, view in enumerate(step.get("target_views", [])):
        pos = view["draft_pos"]
        if pos >= len(drafts) or drafts[pos] != view["draft_token_id"]:
            _fail(f"{path}.target_views[{i}].draft_pos", "the position of its draft_token_id "
                                                          "in draft_token_ids")
    return step


EXPLANATION_SCHEMA = _record({
    "temperature": (_number, True), "top_p": (_prob, True), "score_s": (_number, True),
    "num_scored_tokens": (_int, True), "engine": (_str, False),
})
TARGET_VIEW_SCHEMA = _record({
    "draft_pos": (_int, True), "draft_token_id": (_int, True), "draft_prob": (_prob, True),
    "top_token_ids": (_list(_int, TOP_N), False), "top_probs": (_list(_prob, TOP_N), False),
    "draft_q": (_optional(_prob), False),
}, post=_tops_pair_up)
MAX_INTERVALS_PER_STEP = 256  # about 8 timed calls per step; a generous bound
INTERVAL_SCHEMA = _record({
    "part": (_one_of(*ANATOMY_PARTS), True), "start_s": (_number, True),
    "end_s": (_number, True),
})
# Two forms (space.records.anatomy.from_json): the compact one, written since
# 2026-12-02, and intervals with perf_counter times (version 5, early version 6).
ANATOMY_SCHEMA = _record({
    "parts": (_list(_one_of(*ANATOMY_PARTS), MAX_INTERVALS_PER_STEP), False),
    "start_us": (_list(_int, MAX_INTERVALS_PER_STEP), False),
    "end_us": (_list(_int, MAX_INTERVALS_PER_STEP), False),
    "intervals": (_list(INTERVAL_SCHEMA, MAX_INTERVALS_PER_STEP), False),
    "num_drafter_forwards": (_int, False),
})
STEP_SCHEMA = _record({
    "index": (_int, True), "kind": (_one_of(*STEP_KINDS), True),
    "start_s": (_number, True), "end_s": (_number, True),
    "num_scheduled_tokens": (_int, True), "draft_token_ids": (_ids, False),
    "num_accepted_tokens": (_int, False), "emitted_token_ids": (_ids, False),
    "target_token_kind": (_optional(_one_of(*TARGET_TOKEN_KINDS)), False),
    "output_offset": (_int, False), "propose_s": (_number, False),
    "num_placeholder_draft_tokens": (_int, False),
    "placeholder_cause": (_optional(_one_of(*PLACEHOLDER_CAUSES)), False),
    "target_views": (_list(TARGET_VIEW_SCHEMA, MAX_VIEWS_PER_STEP), False),
    "anatomy": (_optional(ANATOMY_SCHEMA), False),
    "num_unreported_draft_tokens": (_int, False),
    "placement": (_one_of(*STEP_PLACEMENTS), False),
}, post=lambda step, path: _anatomy_holds(_views_match_drafts(step, path), path))
CONFIG_SCHEMA = _record({
    key: (_optional(_str), False)
    for key in ("model", "model_path", "method", "draft_model", "draft_path", "dtype", "device",
                "dtype_reason", "cpu_model", "vllm_version")
} | {"k": (_optional(_int), False), "max_model_len": (_optional(_int), False),
     "source": (_one_of(*SOURCES), False),
     "cpu_bf16_flags": (_optional(_list(_str, 16)), False),
     "speculative_config": (_optional(_json_object), False),
     "tracing_settings": (_optional(_json_object), False),
     "synthetic": (_bool, False), "prefix_cache": (_optional(_one_of(*PREFIX_CACHE_MODES)), False)})
REQUEST_SCHEMA = _record({
    "temperature": (_optional(_number), False), "top_p": (_optional(_number), False),
    "seed": (_optional(_int), False), "max_tokens": (_optional(_int), False),
    "prompt_sha256": (_optional(_str), False),
})
STEP_SPLIT_SCHEMA = _record({"exact": (_bool, True), "note": (_str, True)})
RUN_SCHEMA = _record({
    "version": (_int, False), "config": (CONFIG_SCHEMA, True), "prompt": (_str, True),
    "prompt_token_ids": (_ids, True), "output_token_ids": (_ids, True), "text": (_str, True),
    "arrival_s": (_number, True), "first_token_s": (_number, True),
    "finish_s": (_number, True), "finish_reason": (_optional(_str), True),
    "steps": (_list(STEP_SCHEMA), True), "token_text": (_token_text, False),
    "vllm_spec_metrics": (_optional(_json_object), False), "num_cached_tokens": (_int, False),
    "explanation": (_optional(EXPLANATION_SCHEMA), False),
    "request": (_optional(REQUEST_SCHEMA), False),
    "step_split": (_optional(STEP_SPLIT_SCHEMA), False), "server": (_optional(_json_object), False),
    "counts_from": (_one_of(*COUNTS_SOURCES), False),
})
CHECK_SCHEMA = _record({
    "name": (_one_of(*CHECK_NAMES), True), "detail": (_str, True),
    "value": (_optional(lambda v, p: v if isinstance(v, str) else _number(v, p)), True),
    "threshold": (_optional(lambda v, p: v if isinstance(v, str) else _number(v, p)), True),
    "passed": (_optional(_bool), True), "decisive": (_bool, False),
    "op": (_one_of(*CHECK_OPS), False), "unit": (_str, False),
})
CHECKLIST_SCHEMA = _record({"verdict": (_one_of(*VERDICTS), True),
                            "rule": (_one_of(*DECISION_RULES), False),
                            "checks": (_list(CHECK_SCHEMA), True)})
_figures = _list(lambda v, p: {k: _number(x, f"{p}.{k}") for k, x in _json_object(v, p).items()})
COMPARE_SCHEMA = _record({
    "version": (_int, False), "baseline": (RUN_SCHEMA, True), "speculative": (RUN_SCHEMA, True),
    "baseline_runs": (_figures, False), "speculative_runs": (_figures, False),
    "speedup": (_number, False), "e2e_speedup": (_number, False),
    "outputs_identical": (_bool, False), "first_divergence": (_optional(_int), False),
    "checklist": (_optional(CHECKLIST_SCHEMA), False),
    "tipping_curve": (_optional(_json_object), False),
})


def validate_record(d: Any) -> dict:
    """``d`` checked against the compare or the run schema; raises TraceFormatError.

    Example:
        >>> validate_record({"steps": [{"index": "<b>"}]})
        Traceback (most recent call last):
        ...
        space.records.schema.TraceFormatError: not a SpecLens trace: config must be present
    """
    if not isinstance(d, dict) or not ("steps" in d or "baseline" in d):
        raise TraceFormatError("not a SpecLens trace: expected 'steps' or "
                               "'baseline'/'speculative' keys")
    version = d.get("version", 1)
    if isinstance(version, int) and not isinstance(version, bool) and version > TRACE_VERSION:
        raise TraceFormatError(f"this trace was written by a newer SpecLens (version "
                               f"{version}; this one reads up to {TRACE_VERSION})")
    return COMPARE_SCHEMA(d, "") if "baseline" in d else RUN_SCHEMA(d, "")
