"""Workloads (one file each in ``presets/workloads/``) and model pairs (entries of
``presets/model_pairs.json``), loaded and checked (pure); nothing branches on an id."""
from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, TypeVar

from space.records.config import FIELD_VLLM_KEYS, ConfigError, EngineSpec
from space.records.methods import METHODS

log = logging.getLogger(__name__)

PRESETS_DIR = Path(__file__).resolve().parents[2] / "presets"  # the repository's presets/
SOURCE_PLACEHOLDER = "{source}"
# Token estimate without a tokenizer: English prose runs ~1.3 tokens per
# whitespace-separated word in Llama-style BPE vocabularies (SmolLM2's included).
TOKENS_PER_WORD = 1.3


class PresetError(ValueError):
    """A preset file that cannot be used; the message names the file and the field."""


class UnknownPreset(ConfigError):
    """An id no preset has; the message lists the ids there are."""


@dataclass(frozen=True)
class Prompt:
    id: str
    text: str                       # the prompt as sent, source text included
    source_file: str | None = None  # file under presets/texts/ the source came from

    @property
    def estimated_tokens(self) -> int:
        """Tokens estimated as words x TOKENS_PER_WORD, rounded up.

        Example:
            >>> Prompt("p", "one two three four five six seven eight nine ten").estimated_tokens
            13
        """
        # round first: 10 * 1.3 is 13.000000000000002 in floating point
        return math.ceil(round(len(self.text.split()) * TOKENS_PER_WORD, 6))


@dataclass(frozen=True)
class Workload:
    id: str
    title: str
    reason: str                 # one line: why speculation should or shouldn't help
    temperature: float
    max_tokens: int
    prompts: tuple[Prompt, ...]
    concurrency: int = 1        # requests submitted together; prompts are cycled to fill them
    note: str = ""

    def prompt(self, prompt_id: str) -> Prompt:
        return _by_id(list(self.prompts), prompt_id, f"workload {self.id!r} has no prompt")


@dataclass(frozen=True)
class ModelPair:
    id: str
    title: str
    target: str                 # "default", or a hub id
    method: str                 # vLLM speculative method
    k: int                      # num_speculative_tokens
    needs_gpu: bool
    note: str                   # what the pair shows; for GPU pairs, why it is off on CPU
    draft: str | None = None    # draft model / head: "default-truncated" or a hub id
    speculative: dict[str, Any] = field(default_factory=dict)  # more vLLM speculative_config keys
    # GPU memory an in-process compare holds (both engines, KV for one 32k-token
    # sequence each): an estimate from parameter counts, not a reading
    memory_gib: float | None = None
    fits: tuple[str, ...] = ()  # GPUs that hold ``memory_gib`` (and run the weights' format)

    @property
    def requires(self) -> tuple[str, ...]:
        return METHODS[self.method].requires  # type: ignore[index]  # checked at parse

    def engine_spec(self) -> EngineSpec:
        known = {k: v for k, v in self.speculative.items() if k in FIELD_VLLM_KEYS}
        extra = tuple((k, v) for k, v in self.speculative.items() if k not in FIELD_VLLM_KEYS)
        return EngineSpec(model=self.target, method=self.method, draft_model=self.draft,
                          k=self.k, extra_speculative=extra, **known)


def load_workloads(directory: Path | None = None) -> list[Workload]:
    """Every ``*.json`` under ``presets/workloads/``, in file-name order; ids are unique."""
    directory = Path(directory) if directory else PRESETS_DIR / "workloads"
    texts_dir = directory.parent / "texts"
    workloads = [_parse_workload(_read_json(p), p.name, texts_dir)
                 for p in sorted(directory.glob("*.json"))]
    if not workloads:
        raise PresetError(f"no workload files in {directory}")
    _check_unique([w.id for w in workloads], str(directory))
    return workloads


def get_workload(workload_id: str, directory: Path | None = None) -> Workload:
    return _by_id(load_workloads(directory), workload_id, "no workload")


def load_model_pairs(path: Path | None = None) -> list[ModelPair]:
    """The pairs in ``presets/model_pairs.json``, in file order; ids are unique."""
    path = Path(path) if path else PRESETS_DIR / "model_pairs.json"
    data = _read_json(path)
    entries = data.get("pairs") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise PresetError(f"{path.name}: expected a non-empty 'pairs' list")
    pairs = [_parse_pair(e, f"{path.name} pairs[{n}]") for n, e in enumerate(entries)]
    _check_unique([p.id for p in pairs], path.name)
    return pairs


def get_model_pair(pair_id: str, path: Path | None = None) -> ModelPair:
    return _by_id(load_model_pairs(path), pair_id, "no model pair")


_P = TypeVar("_P", Workload, ModelPair, Prompt)


def load_or_warn(load: Callable[[], list[_P]], what: str, instead: str) -> list[_P] | None:
    """``load()``, or None after one warning "<what>: <problem>; <instead>": a broken
    preset file costs the page its samples or pairs, never its start."""
    try:
        return load()
    except PresetError as exc:
        log.warning("%s: %s; %s", what, exc, instead)
        return None


def _by_id(presets: list[_P], preset_id: str, missing: str) -> _P:
    """The preset with this id; ``UnknownPreset`` "<missing> '<id>': one of <ids>" if none."""
    for p in presets:
        if p.id == preset_id:
            return p
    raise UnknownPreset(f"{missing} {preset_id!r}: one of {', '.join(p.id for p in presets)}")


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise PresetError(f"{path.name}: cannot read JSON: {e}") from e


def _field(d: dict, key: str, kind: type | tuple[type, ...], where: str, default: Any = ...) -> Any:
    """d[key], checked for type; missing is an error unless a default is given."""
    if key not in d:
        if default is ...:
            raise PresetError(f"{where}: missing field {key!r}")
        return default
    value = d[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):  # bool is an int
        raise PresetError(f"{where}: field {key!r} has the wrong type ({type(value).__name__})")
    if isinstance(value, str) and not value.strip():
        raise PresetError(f"{where}: field {key!r} is empty")
    return value


def _check_keys(d: Any, kind: type, where: str, *extra: str) -> None:
    """An object whose keys are ``kind``'s fields (and ``extra``)."""
    if not isinstance(d, dict):
        raise PresetError(f"{where}: expected an object")
    unknown = sorted(set(d) - {f.name for f in fields(kind)} - set(extra))
    if unknown:  # a typo in a field name would otherwise be silently ignored
        raise PresetError(f"{where}: unknown field(s) {', '.join(unknown)}")


def _check_unique(ids: list[str], where: str) -> None:
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise PresetError(f"{where}: duplicate id(s) {', '.join(dupes)}")


def _parse_workload(d: Any, where: str, texts_dir: Path) -> Workload:
    _check_keys(d, Workload, where)
    temperature = float(_field(d, "temperature", (int, float), where))
    max_tokens = _field(d, "max_tokens", int, where)
    concurrency = _field(d, "concurrency", int, where, 1)
    if not 0.0 <= temperature <= 2.0:
        raise PresetError(f"{where}: temperature must be in 0..2, got {temperature}")
    if max_tokens < 1 or concurrency < 1:
        raise PresetError(f"{where}: max_tokens and concurrency must be >= 1")
    raw_prompts = _field(d, "prompts", list, where)
    if not raw_prompts:
        raise PresetError(f"{where}: 'prompts' is empty")
    prompts = tuple(_parse_prompt(p, f"{where} prompts[{n}]", texts_dir)
                    for n, p in enumerate(raw_prompts))
    _check_unique([p.id for p in prompts], where)
    texts = {k: _field(d, k, str, where) for k in ("id", "title", "reason")}
    return Workload(**texts, temperature=temperature, max_tokens=max_tokens, prompts=prompts,
                    concurrency=concurrency, note=_field(d, "note", str, where, ""))


def _parse_prompt(d: Any, where: str, texts_dir: Path) -> Prompt:
    """``{source}`` in the text is replaced by the ``source`` text or ``source_file`` (under
    ``presets/texts/``) by plain replacement, so JSON braces need no escaping."""
    _check_keys(d, Prompt, where, "source")
    text = _field(d, "text", str, where)
    if "source" in d and "source_file" in d:
        raise PresetError(f"{where}: give 'source' or 'source_file', not both")
    source_file = _field(d, "source_file", str, where, None)
    source = _field(d, "source", str, where, None)
    if source_file is not None:
        path = texts_dir / source_file
        if not path.is_file():
            raise PresetError(f"{where}: source_file {source_file!r} not found in {texts_dir}")
        source = path.read_text(encoding="utf-8")
    if (SOURCE_PLACEHOLDER in text) != (source is not None):
        raise PresetError(f"{where}: '{SOURCE_PLACEHOLDER}' in text and a source go together")
    if source is not None:
        text = text.replace(SOURCE_PLACEHOLDER, source)
    return Prompt(id=_field(d, "id", str, where), text=text, source_file=source_file)


def _parse_pair(d: Any, where: str) -> ModelPair:
    _check_keys(d, ModelPair, where)
    method = _field(d, "method", str, where)
    if method not in METHODS:
        raise PresetError(f"{where}: unknown method {method!r} (one of {', '.join(METHODS)})")
    draft = _field(d, "draft", str, where, None)
    if METHODS[method].needs_draft and draft is None:
        raise PresetError(f"{where}: method {method} needs a 'draft'")
    if not METHODS[method].takes_draft and draft is not None:
        raise PresetError(f"{where}: method {method} takes no 'draft'")
    k = _field(d, "k", int, where)
    if k < 1:
        raise PresetError(f"{where}: k must be >= 1, got {k}")
    speculative = dict(_field(d, "speculative", dict, where, {}))
    lo, hi = speculative.get("prompt_lookup_min"), speculative.get("prompt_lookup_max")
    if lo is not None and hi is not None and lo > hi:
        raise PresetError(f"{where}: prompt_lookup_min {lo} > prompt_lookup_max {hi}")
    gib = _field(d, "memory_gib", (int, float), where, None)
    if gib is not None and not 0 < gib < 10_000:  # _field refused booleans
        raise PresetError(f"{where}: memory_gib must be a positive number of GiB, got {gib!r}")
    fits = _field(d, "fits", list, where, [])
    if not all(isinstance(g, str) and g.strip() for g in fits):
        raise PresetError(f"{where}: fits must be a list of GPU names")
    texts = {k: _field(d, k, str, where) for k in ("id", "title", "target")}
    return ModelPair(**texts, method=method, k=k, needs_gpu=_field(d, "needs_gpu", bool, where),
                     note=_field(d, "note", str, where), draft=draft, speculative=speculative,
                     memory_gib=None if gib is None else float(gib), fits=tuple(fits))
