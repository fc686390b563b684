"""A file of a team's own prompts (JSONL, a JSON array, CSV, plain text: docs/traffic.md)
read into requests (pure). A malformed record is skipped and reported by its line; a file
over the bounds is refused with one line."""
from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any, Literal

from space.records.config import CHAT_ROLES, ConfigError

MiB = 1 << 20
Format = Literal["jsonl", "json", "csv", "text"]
LABEL_FIELDS = ("category", "label", "task")    # looked for in this order
RESPONSE_FIELDS = ("response", "completion", "output")
PROMPT_COLUMNS = ("prompt", "text", "question")  # CSV: the first one present
# ShareGPT's speakers, as its files and FastChat spell them
SHAREGPT_ROLES = {"human": "user", "user": "user", "gpt": "assistant", "chatgpt": "assistant",
                  "assistant": "assistant", "bard": "assistant", "bing": "assistant",
                  "model": "assistant", "system": "system"}


class TrafficFormatError(ConfigError):
    """A traffic file that cannot be read at all; the message is one line."""


@dataclass(frozen=True)
class Bounds:
    """What one traffic file may hold (a page upload and the CLI alike)."""

    max_bytes: int = 8 * MiB          # the file; ShareGPT-sized dumps must be cut first
    max_requests: int = 10_000        # records read (before sampling)
    max_prompt_chars: int = 20_000    # prompt + context, characters (~5k tokens of English)


@dataclass(frozen=True)
class TrafficRequest:
    """One request of the file, as read."""

    line: int                       # 1-based line of the file (its last in CSV, item in an array)
    prompt: str                     # the last user turn
    context: tuple[tuple[str, str], ...] = ()  # earlier turns, (role, content)
    system: str | None = None
    label: str | None = None
    max_tokens: int | None = None   # the file's; None: the run's setting
    temperature: float | None = None
    response: str | None = None     # the recorded answer, for the traffic's weights

    @property
    def chars(self) -> int:
        """Characters the model reads: the prompt, its context and system message."""
        return (len(self.prompt) + sum(len(c) for _, c in self.context)
                + len(self.system or ""))


@dataclass(frozen=True)
class Skipped:
    line: int
    reason: str
    where: str = "line"  # "item" in a JSON array

    def __str__(self) -> str:
        return f"{self.where} {self.line}: {self.reason}"


@dataclass
class TrafficFile:
    format: Format
    requests: list[TrafficRequest]
    skipped: list[Skipped] = field(default_factory=list)
    label_field: str | None = None  # the field the labels came from; None: no labels

    def describe(self) -> str:
        """'read 12 requests (jsonl, labels from category); skipped 2: line 3: ...'"""
        labels = f"labels from {self.label_field}" if self.label_field else "no labels"
        out = f"read {len(self.requests)} requests ({self.format}, {labels})"
        if self.skipped:
            shown = "; ".join(str(s) for s in self.skipped[:5])
            more = f"; and {len(self.skipped) - 5} more" if len(self.skipped) > 5 else ""
            out += f"; skipped {len(self.skipped)}: {shown}{more}"
        return out


class _Bad(ValueError):
    """One record is malformed: skipped, with this reason."""


def parse(data: bytes, name: str = "", label_field: str | None = None,
          bounds: Bounds = Bounds()) -> TrafficFile:  # noqa: B008 (frozen)
    """Read a traffic file's bytes; ``name`` (its file name) picks the format."""
    check_size(len(data), bounds)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TrafficFormatError("the traffic file is not UTF-8 text") from None
    fmt = detect(text, name)
    if fmt == "text":
        records: list[Record] = [(i, {"prompt": line}) for i, line
                                 in enumerate(text.splitlines(), 1) if line.strip()]
    else:
        records = {"csv": _csv_records, "json": _array_records, "jsonl": _jsonl_records}[fmt](text)
    if len(records) > bounds.max_requests:
        raise TrafficFormatError(f"the traffic file has {len(records):,} requests, more than "
                                 f"the {bounds.max_requests:,} allowed; sample it first")
    return _build(fmt, records, label_field, bounds)


def check_size(size_bytes: int, bounds: Bounds) -> None:
    """``TrafficFormatError`` for a file over the bound (an upload, before it is read)."""
    if size_bytes > bounds.max_bytes:
        raise TrafficFormatError(f"the traffic file is {_size(size_bytes)}, more than the "
                                 f"{_size(bounds.max_bytes)} allowed; sample it first")


def _size(n: int) -> str:
    """'8 MB', '8.5 MB', or '1,700 bytes' under a tenth of a MB."""
    return f"{n / MiB:.1f}".removesuffix(".0") + " MB" if n >= MiB // 10 else f"{n:,} bytes"


def detect(text: str, name: str = "") -> Format:
    """The format from the file name, else from the first non-blank character."""
    lower = name.lower()
    first = text.lstrip()[:1]
    if lower.endswith(".csv"):
        return "csv"
    if lower.endswith(".jsonl"):
        return "jsonl"
    if first == "[" and (lower.endswith(".json") or not lower):
        return "json"
    if lower.endswith(".json") or (first == "{" and not lower.endswith(".txt")):
        return "jsonl"
    return "text"


Record = tuple[int, Any]  # (line, the parsed record, or the exception that stopped it)


def _jsonl_records(text: str) -> list[Record]:
    out: list[Record] = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((i, json.loads(line)))
        except (ValueError, RecursionError) as exc:
            out.append((i, _Bad(f"not valid JSON ({str(exc).splitlines()[0][:60]})")))
    return out


def _array_records(text: str) -> list[Record]:
    try:
        items = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise TrafficFormatError(f"the traffic file is not valid JSON "
                                 f"({str(exc).splitlines()[0][:80]})") from None
    if not isinstance(items, list):
        raise TrafficFormatError("a .json traffic file must hold an array of requests")
    return list(enumerate(items, 1))


def _csv_records(text: str) -> list[Record]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    columns = [c.strip() for c in reader.fieldnames or []]
    column = next((c for c in PROMPT_COLUMNS if c in columns), None)
    if column is None:
        raise TrafficFormatError(f"the CSV has no prompt column (one of "
                                 f"{', '.join(PROMPT_COLUMNS)}); its columns: "
                                 f"{', '.join(columns)[:120] or 'none'}")
    out: list[Record] = []
    try:
        for row in reader:
            clean = {(k or "").strip(): v for k, v in row.items() if k is not None}
            clean["prompt"] = clean.pop(column, None)
            # a cell given as "" is a cell not given (a CSV has no null)
            out.append((reader.line_num, {k: v for k, v in clean.items() if v not in ("", None)
                                          or k == "prompt"}))
    except csv.Error as exc:
        out.append((reader.line_num, _Bad(f"not valid CSV ({exc})")))
    return out


def _build(fmt: Format, records: list[Record], label_field: str | None,
           bounds: Bounds) -> TrafficFile:
    present = {k for _, rec in records if isinstance(rec, dict) for k in rec}
    if label_field and label_field not in present:
        raise TrafficFormatError(f"no request has the label field {label_field!r}")
    # one field labels the file: the named one, else the first of LABEL_FIELDS present
    label = label_field or next((f for f in LABEL_FIELDS if f in present), None)
    requests, skipped = [], []
    for line, rec in records:
        try:
            if isinstance(rec, _Bad):
                raise rec
            req = _request(line, rec, label)
            if req.chars > bounds.max_prompt_chars:
                raise _Bad(f"the request is {req.chars:,} characters, more than the "
                           f"{bounds.max_prompt_chars:,} allowed")
            requests.append(req)
        except _Bad as exc:
            skipped.append(Skipped(line, str(exc), "item" if fmt == "json" else "line"))
    return TrafficFile(fmt, requests, skipped, label)


def _request(line: int, rec: Any, label_field: str | None) -> TrafficRequest:
    """A conversation's last user turn is the prompt, the turns before it its context, and
    an assistant turn after it the recorded response."""
    if not isinstance(rec, dict):
        raise _Bad(f"a request must be a JSON object, got {_kind(rec)}")
    label = rec.get(label_field) if label_field else None
    if label is not None and (not isinstance(label, str | int) or isinstance(label, bool)):
        raise _Bad(f"{label_field} must be text, got {_kind(label)}")
    turns = _turns(rec)
    system = turns[0][1] if turns and turns[0][0] == "system" else None
    turns = turns[1:] if system is not None else turns
    response = next((rec[k] for k in RESPONSE_FIELDS if k in rec), None)
    response = response if isinstance(response, str) and response else None
    if turns and turns[-1][0] == "assistant":  # the conversation's answer, not a prompt
        response = response if response is not None else turns[-1][1]
        turns = turns[:-1]
    if not turns or turns[-1][0] != "user":
        raise _Bad("no user turn to use as the prompt")
    prompt = turns[-1][1]
    if not prompt.strip():
        raise _Bad("the prompt is empty")
    return TrafficRequest(line=line, prompt=prompt, context=tuple(turns[:-1]), system=system,
                          label=None if label is None or str(label) == "" else str(label),
                          max_tokens=_number(rec, "max_tokens", int, 1, 8192),
                          temperature=_number(rec, "temperature", float, 0.0, 2.0),
                          response=response)


def _turns(rec: dict) -> list[tuple[str, str]]:
    if "prompt" in rec:
        if not isinstance(rec["prompt"], str):
            raise _Bad(f"prompt must be text, got {_kind(rec['prompt'])}")
        return [("user", rec["prompt"])]
    if "messages" in rec:
        return [_turn(m, "role", "content", {r: r for r in CHAT_ROLES})
                for m in _list(rec, "messages")]
    if "conversations" in rec:
        return [_turn(m, "from", "value", SHAREGPT_ROLES) for m in _list(rec, "conversations")]
    if "turns" in rec:  # Spec-Bench: the first user turn (the later ones follow an answer)
        turns = _list(rec, "turns")
        if not isinstance(turns[0], str):
            raise _Bad(f"turns must be text, got {_kind(turns[0])}")
        return [("user", turns[0])]
    raise _Bad("no prompt, messages, conversations or turns field")


def _list(rec: dict, key: str) -> list:
    value = rec[key]
    if not isinstance(value, list) or not value:
        raise _Bad(f"{key} must be a non-empty list")
    return value


def _turn(m: Any, role_key: str, text_key: str, roles: dict[str, str]) -> tuple[str, str]:
    if not isinstance(m, dict):
        raise _Bad(f"a turn must be an object, got {_kind(m)}")
    role = roles.get(str(m.get(role_key, "")).lower())
    if role is None:
        raise _Bad(f"unknown {role_key} {str(m.get(role_key))[:20]!r}")
    content = m.get(text_key)
    if isinstance(content, list):  # OpenAI content parts: the text ones, joined
        content = "".join(p.get("text", "") for p in content
                          if isinstance(p, dict) and p.get("type") == "text")
    if not isinstance(content, str):
        raise _Bad(f"a turn's {text_key} must be text, got {_kind(content)}")
    return role, content


def _number(rec: dict, key: str, kind: type, low: float, high: float) -> Any:
    value = rec.get(key)
    if value is None:
        return None
    try:
        # CSV cells are text; JSON booleans are not numbers
        number = kind(float(value)) if not isinstance(value, bool) else None
    except (TypeError, ValueError, OverflowError):
        number = None
    if number is None or (isinstance(number, float) and not math.isfinite(number)) \
            or not low <= number <= high or (kind is int and float(value) != int(float(value))):
        raise _Bad(f"{key} must be a number in {low:g}..{high:g}, got {str(value)[:20]!r}")
    return number


_KINDS = {bool: "a boolean", int: "a number", float: "a number", dict: "an object",
          list: "a list", str: "text", type(None): "null"}  # JSON's types, as a refusal names them


def _kind(value: Any) -> str:
    return _KINDS.get(type(value), type(value).__name__)
