"""Reading a trace file: ``load`` upgrades an older version's dict to today's names, then checks it
against a schema derived from the records' fields and type hints before any record is built. Unknown
keys are ignored; derived fields (``init=False``) never read."""
from __future__ import annotations

import dataclasses
import functools
import json
import operator
import re
import sys
from collections.abc import Callable
from typing import Any, Literal, get_args, get_origin, get_type_hints

from space.records.anatomy import AnatomyPart, StepAnatomy, from_json, problems
from space.records.config import PREFIX_CACHE_MODES
from space.records.target_view import TOP_N
from space.records.trace import TRACE_VERSION, CompareRecord, RunTrace, StepRecord
from space.records.upgrade import upgrade
from space.records.verdict import CHECK_OPS


class TraceFormatError(ValueError):
    """A file that is not a valid trace; the message is one line for the user."""


def load(text: str) -> RunTrace | CompareRecord:
    """A trace or compare JSON of any version; ``TraceFormatError`` naming the first bad
    field, e.g. "not a SpecLens trace: steps[3].index must be an integer"."""
    try:
        d = json.loads(text)
    except (ValueError, RecursionError) as exc:
        first = (str(exc).splitlines() or [type(exc).__name__])[0][:120]
        raise TraceFormatError(f"not a SpecLens trace: not valid JSON ({first})") from None
    # A lone \ud800 escape parses to a str that is no UTF-8: the page's JSON (orjson) and
    # every export would fail on it (our own files escape an emoji as a pair: fine).
    if re.search(r"\\u[dD][89a-fA-F]", text):
        try:
            json.dumps(d, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise TraceFormatError("not a SpecLens trace: a lone surrogate escape, "
                                   "not Unicode text") from None
    d = upgrade(d)
    if not isinstance(d, dict) or not ("steps" in d or "baseline" in d):
        raise TraceFormatError("not a SpecLens trace: expected 'steps' or "
                               "'baseline'/'speculative' keys")
    version = d.get("version", 1)
    if isinstance(version, int) and not isinstance(version, bool) and version > TRACE_VERSION:
        raise TraceFormatError(f"this trace was written by a newer SpecLens (version "
                               f"{version}; this one reads up to {TRACE_VERSION})")
    try:
        (COMPARE_SCHEMA if "baseline" in d else RUN_SCHEMA)(d)
    except _Bad as bad:  # (what, path): the path starts with "." (the top is a record)
        raise TraceFormatError(f"not a SpecLens trace: {bad.args[1][1:]} must be {bad.args[0]}") from None
    return CompareRecord.from_dict(d) if "baseline" in d else RunTrace.from_dict(d)


# --- The schema: one check per type hint, built once from the records ---
Validator = Callable[[Any], None]
MAX_COUNT = 2**31 - 1  # every int field is an id, index or count: vLLM's token ids are int32


class _Bad(Exception):
    """(what a value must be, its path): each container prefixes its key on the way out."""


def _leaf(ok: Callable[[Any], bool], what: str) -> Validator:
    def check(value: Any) -> None:
        if not ok(value):
            raise _Bad(what, "")
    return check


def _one_of(allowed: tuple[str, ...]) -> Validator:
    return _leaf(lambda v: v in allowed, "one of " + ", ".join(allowed))


def _real(v: Any) -> bool:  # a float's range, not isfinite: a 400-digit integer is no float
    return type(v) in (int, float) and -sys.float_info.max <= v <= sys.float_info.max


_prob = _leaf(lambda v: _real(v) and 0 <= v <= 1, "a probability in 0..1")
_object = _leaf(lambda v: isinstance(v, dict), "an object")
SCALARS: dict[Any, Validator] = {
    int: _leaf(lambda v: type(v) is int and 0 <= v <= MAX_COUNT, f"an integer in 0..{MAX_COUNT}"),
    float: _leaf(_real, "a finite number"), str: _leaf(lambda v: isinstance(v, str), "a string"),
    float | str: _leaf(lambda v: isinstance(v, str) or _real(v), "a finite number or a string"),
    bool: _leaf(lambda v: isinstance(v, bool), "true or false")}

# What a type hint does not say, by "Record.field": a str's or a float's narrower
# values (in place of SCALARS'), and the most items a list may hold.
LEAVES = {"TargetView.draft_prob": _prob, "TargetView.top_probs": _prob,
          "TargetView.draft_q": _prob, "Explanation.top_p": _prob,
          "RunConfig.prefix_cache": _one_of(PREFIX_CACHE_MODES), "Check.op": _one_of(CHECK_OPS)}
MAX_ITEMS = {"TargetView.top_token_ids": TOP_N, "TargetView.top_probs": TOP_N, "RunConfig.cpu_bf16_flags": 16,
             "StepRecord.target_views": 64,  # one per verified draft: k <= 16 here, vLLM allows more
             **{f"StepAnatomy.{key}": 256  # about 8 timed calls per step: a generous bound
                for key in ("intervals", "parts", "start_us", "end_us")}}
# Keys a file holds beside the fields: the version, and a step anatomy's compact
# form (``space.records.anatomy.to_json``; files before 2026-12-02 hold intervals).
EXTRA_KEYS: dict[type, dict[str, Any]] = {
    RunTrace: {"version": int}, CompareRecord: {"version": int},
    StepAnatomy: {"parts": list[AnatomyPart], "start_us": list[int], "end_us": list[int]}}
# Null where the hint has none, read as the default by ``from_dict`` (``RunConfig``'s
# drops nulls, a run's request is ``or {}``): the schema always let these through.
NULL_IS_DEFAULT = {"RunConfig.model", "RunConfig.k", "RunConfig.device", "RunTrace.request"}


def _check(hint: Any, where: str) -> Validator:
    """The check of a type hint of field ``where`` ("Record.field", for the tables);
    a hint it does not know fails at import, not on a visitor's file."""
    origin, args = get_origin(hint), get_args(hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _record(hint)
    if hint in SCALARS:
        return LEAVES.get(where, SCALARS[hint])
    if origin is Literal:
        return _one_of(args)
    if type(None) in args:  # X | None
        check = _check(functools.reduce(operator.or_, [a for a in args if a is not type(None)]), where)
        return lambda v: None if v is None else check(v)
    if origin is dict:  # dict[str, Any]: free-form settings (vLLM's), never rendered as markup
        return _object if args[1] is Any else _items(dict, _check(args[1], where), None, args[0] is int)
    if origin is list or (origin is tuple and args[1:] == (...,)):
        return _items(list, _check(args[0], where), MAX_ITEMS.get(where))
    raise TypeError(f"{where}: no check for {hint!r}; teach space.records.schema._check one")


def _items(kind: Any, item: Validator, most: int | None = None, int_keys: bool = False) -> Validator:
    """A list or a dict whose items pass ``item``. Int keys (token_text's token ids) as
    JSON writes them: ASCII digits ("²" is a digit to isdigit, not to int), at most 10."""
    def check(value: Any) -> None:
        if not isinstance(value, kind):
            raise _Bad("a list" if kind is list else "an object", "")
        if most is not None and len(value) > most:
            raise _Bad(f"a list of at most {most}", "")
        key: Any  # a str in a dict
        for key, v in enumerate(value) if kind is list else value.items():
            if int_keys and not (re.fullmatch(r"[0-9]{1,10}", key) and int(key) <= MAX_COUNT):
                raise _Bad("a token id", f" key {key[:20]!r}")
            try:
                item(v)
            except _Bad as bad:  # a text key is cut and quoted: the message stays one short line
                at = key if kind is list or int_keys else repr(key[:20])
                raise _Bad(bad.args[0], f"[{at}]{bad.args[1]}") from None
    return check


@functools.cache
def _record(cls: type) -> Validator:
    """An object whose fields pass their hints' checks, those without a default present."""
    extra, fields = EXTRA_KEYS.get(cls, {}), [f for f in dataclasses.fields(cls) if f.init]
    hints = get_type_hints(cls) | extra
    required = {f.name for f in fields if f.default is f.default_factory is dataclasses.MISSING}
    across = _step_holds if cls is StepRecord else lambda value: None  # checks across fields
    wheres = {name: f"{cls.__name__}.{name}" for name in list(extra) + [f.name for f in fields]}
    checks = {name: _check(hints[name] | None if where in NULL_IS_DEFAULT else hints[name], where)
              for name, where in wheres.items()}

    def check(value: Any) -> None:
        _object(value)
        for name, check_field in checks.items():
            try:
                if name in value:
                    check_field(value[name])
                elif name in required:
                    raise _Bad("present", "")
            except _Bad as bad:
                raise _Bad(bad.args[0], f".{name}{bad.args[1]}") from None
        across(value)
    return check


def _step_holds(step: dict) -> None:
    """Each view names a draft of its own step, with as many top ids as probabilities; the
    anatomy's parts lie inside the step, in order, not overlapping ("other" is never < 0)."""
    drafts = step.get("draft_token_ids", [])
    for i, view in enumerate(step.get("target_views", [])):
        if view["draft_pos"] >= len(drafts) or drafts[view["draft_pos"]] != view["draft_token_id"]:
            raise _Bad("the position of its draft_token_id in draft_token_ids",
                       f".target_views[{i}].draft_pos")
        if len(view.get("top_token_ids", [])) != len(view.get("top_probs", [])):
            raise _Bad("as long as top_token_ids", f".target_views[{i}].top_probs")
    if (a := step.get("anatomy")) is None:
        return
    compact = [key for key in ("parts", "start_us", "end_us") if key in a]
    if ("intervals" in a) == bool(compact):
        raise _Bad("either intervals or parts, start_us and end_us", ".anatomy")
    if compact and len({len(a.get(key, ())) for key in ("parts", "start_us", "end_us")}) != 1:
        raise _Bad("as long as start_us and end_us", ".anatomy.parts")
    if problems(from_json(a, step["start_s"], step["end_s"]), step["start_s"], step["end_s"]):
        raise _Bad("in time order, not overlapping, inside the step",
                   f".anatomy.{'parts' if compact else 'intervals'}")


RUN_SCHEMA, COMPARE_SCHEMA = _record(RunTrace), _record(CompareRecord)
