"""Traffic requests into groups, and a seeded sample of each group (pure). A group is a
label, or without labels "<kind>, <length>" of the text alone (what decides how much an
ngram drafter can copy), e.g. "code, medium" (``HOW_BY_LOOK``)."""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass

from space.common import defaults
from space.records.config import at_least_one
from space.runs.traffic_file import TrafficFile, TrafficRequest

SHORT_CHARS = 500      # about 125 tokens of English
LONG_CHARS = 2000      # about 500 tokens
DOCUMENT_CHARS = 800   # a turn this long carries something to work on, not only a question
UNLABELLED = "(no label)"
DEFAULT_MAX_PROMPTS = 48  # in all: near 10 minutes on CPU (space.common.defaults)
_CODE_LINE = re.compile(r"^\s*(def |class |import |from \S+ import |#include|function |"
                        r"public |fn |func |const |let |var |return |SELECT |for \(|if \()",
                        re.MULTILINE)
_JSON_START = re.compile(r"[\[{]")
HOW_BY_LOOK = (f"no label field: grouped by what each request looks like: carries code "
               f"(a ``` fence or lines that start like code), JSON (an object or array that "
               f"parses), a document ({DOCUMENT_CHARS}+ characters in one turn), else chat; "
               f"and its length in characters (short < {SHORT_CHARS}, medium < {LONG_CHARS}, "
               f"long)")


def kind_of(req: TrafficRequest) -> str:
    """What the request carries: "code", "JSON", "document" or "chat"."""
    texts = [req.prompt] + [c for _, c in req.context]
    whole = "\n".join(texts)
    if "```" in whole or len(_CODE_LINE.findall(whole)) >= 2:
        return "code"
    if any(_has_json(t) for t in texts):
        return "JSON"
    if any(len(t) >= DOCUMENT_CHARS for t in texts):
        return "document"
    return "chat"


def _has_json(text: str) -> bool:
    """A JSON object or array (of more than one character) somewhere in the text."""
    decoder = json.JSONDecoder()
    for m in _JSON_START.finditer(text[:DOCUMENT_CHARS * 10]):  # bounded: text is a visitor's
        try:
            value, end = decoder.raw_decode(text, m.start())
        except ValueError:
            continue
        if end - m.start() > 2 and isinstance(value, dict | list):
            return True
    return False


def length_of(req: TrafficRequest) -> str:
    """ "short", "medium" or "long" by characters (the model's tokens come later)."""
    n = req.chars
    return "short" if n < SHORT_CHARS else "medium" if n < LONG_CHARS else "long"


def group_of(req: TrafficRequest, labelled: bool) -> str:
    if labelled:
        return req.label if req.label is not None else UNLABELLED
    return f"{kind_of(req)}, {length_of(req)}"


@dataclass
class Plan:
    """The groups of a file, and which requests of each will run."""

    how: str                                  # how the groups were made, one line
    groups: dict[str, list[TrafficRequest]]   # every request of the file, by group
    sample: dict[str, list[TrafficRequest]]   # the ones to run, in file order

    @property
    def sampled(self) -> list[tuple[str, TrafficRequest]]:
        """(group, request), the groups interleaved: a run stopped early measured each evenly."""
        return _taking_turns(self.sample)

    def counts(self) -> dict[str, int]:
        return {g: len(v) for g, v in self.groups.items()}


def plan(traffic: TrafficFile, per_group: int = defaults.PROMPTS_PER_GROUP,
         max_prompts: int = DEFAULT_MAX_PROMPTS, seed: int = 0) -> Plan:
    """Group the requests and sample at most ``per_group`` of each, ``max_prompts`` in all."""
    at_least_one(per_group=per_group, max_prompts=max_prompts)
    labelled = traffic.label_field is not None
    groups: dict[str, list[TrafficRequest]] = {}
    for r in traffic.requests:
        groups.setdefault(group_of(r, labelled), []).append(r)
    n = min(per_group, max(1, max_prompts // max(1, len(groups))))
    rng = random.Random(seed)
    sample = {g: sorted(rng.sample(reqs, min(n, len(reqs))), key=lambda r: r.line)
              for g, reqs in groups.items()}
    how = (f"grouped by the label field {traffic.label_field!r}" if labelled else HOW_BY_LOOK)
    how += f"; at most {n} prompt{'s' if n != 1 else ''} a group, sampled with seed {seed}"
    return Plan(how, groups, sample)


def unseen(p: Plan, groups: list[str], measured: set[int], per_group: int,
           seed: int) -> list[tuple[str, TrafficRequest]]:
    """Up to ``per_group`` unmeasured requests of each of ``groups``, taking turns."""
    rng = random.Random(seed)
    left = {g: [r for r in p.groups.get(g, []) if r.line not in measured] for g in groups}
    return _taking_turns({g: sorted(rng.sample(rs, min(per_group, len(rs))), key=lambda r: r.line)
                          for g, rs in left.items()})


def _taking_turns(by_group: dict[str, list[TrafficRequest]]) -> list[tuple[str, TrafficRequest]]:
    longest = max(map(len, by_group.values()), default=0)
    return [(g, reqs[i]) for i in range(longest) for g, reqs in by_group.items() if i < len(reqs)]
