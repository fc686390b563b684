"""What a page visitor may ask the server to load, and how much text it may send (pure):
nothing a visitor picks starts a download unless ``--allow-any-model``. A refusal names
the value only, never whether a path exists."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from space.engine import models
from space.records.config import ConfigError, EngineSpec
from space.runs import presets

MAX_PROMPT_CHARS = 100_000  # about 25k tokens of English: far beyond any page prompt here
_QUOTE_CHARS = 80  # a refused value is quoted up to this many characters


@dataclass(frozen=True)
class Offer:
    """The drafts and model pairs a visitor may pick, and the prompt bound."""

    drafts: tuple[str, ...] = ()     # in the dropdown's order
    pairs: tuple[str, ...] = ()      # model-pair preset ids whose models are offered
    allow_any_model: bool = False    # --allow-any-model: free text as the draft
    max_prompt_chars: int = MAX_PROMPT_CHARS

    def offers_draft(self, draft: str | None) -> bool:
        if not draft or not draft.strip() or self.allow_any_model:
            return True  # no draft is always allowed: the method then needs none or says so
        key = models.canonical_name(draft)
        return any(models.canonical_name(d) == key for d in self.drafts)

    def check_draft(self, draft: str | None) -> None:
        """Refuse a draft that is not offered, by its name alone (no filesystem)."""
        if not self.offers_draft(draft):
            raise ConfigError(f"draft model {quote(draft)} is not offered on this server; "
                              "pick one from the list")

    def check_pair(self, pair_id: str | None) -> None:
        if pair_id and str(pair_id) not in self.pairs:
            raise ConfigError(f"model pair {quote(str(pair_id))} is not offered on this "
                              "server; pick one from the list")

    def check_prompt(self, prompt: str) -> None:
        """Before tokenizing: a tokenizer's time grows with the text."""
        if len(prompt) > self.max_prompt_chars:
            raise ConfigError(f"the prompt is {len(prompt):,} characters; this server takes "
                              f"at most {self.max_prompt_chars:,}")


def quote(value: str | None) -> str:
    text = repr(value if value is not None else "")
    return text if len(text) <= _QUOTE_CHARS else text[:_QUOTE_CHARS] + "\u2026'"


def split_names(values: Iterable[str] | None) -> list[str]:
    """``--drafts a,b --drafts c`` -> ["a", "b", "c"] (blanks dropped, order kept)."""
    return [n.strip() for v in values or () for n in v.split(",") if n.strip()]


def on_disk(name: str) -> bool:
    """Whether a draft name loads without a download: a local alias (built from the
    embedded default), a model folder, or a hub model already in the cache."""
    return (models.canonical_name(name) in (models.DEFAULT_MODEL, models.TRUNCATED_MODEL)
            or models.model_folder(name) is not None
            or (models.is_hub_id(name) and models.cached_hub_model(name) is not None))


def build(spec: EngineSpec, named: Sequence[str] = (), allow_any_model: bool = False,
          max_prompt_chars: int = MAX_PROMPT_CHARS,
          pairs: Sequence[presets.ModelPair] | None = None) -> Offer:
    """The offer for an app started with ``spec``: its draft, the on-disk drafts of
    the presets for its model, then the operator's ``named`` ones."""
    if max_prompt_chars < 1:
        raise ConfigError(f"--max-prompt-chars must be at least 1, got {max_prompt_chars}")
    if pairs is None:
        pairs = presets.load_or_warn(presets.load_model_pairs, "model pairs", "offering none") or []
    for name in named:  # an operator's typo fails the start, not a visitor's run
        if not (on_disk(name) or models.is_hub_id(name)):
            raise ConfigError(f"--drafts {name}: no model folder (with a config.json) there, "
                              "and not a hub id like owner/name")
    target = models.canonical_name(spec.model)
    own = [p for p in pairs if models.canonical_name(p.target) == target]
    drafts = ([spec.draft_model] if spec.draft_model else []) \
        + [p.draft for p in own if p.draft and (allow_any_model or on_disk(p.draft))] \
        + list(named)
    unique: dict[str, str] = {}  # the first spelling of each ("default" and its full name are one)
    for name in drafts:
        unique.setdefault(models.canonical_name(name), name.strip())
    offer = Offer(tuple(unique.values()), allow_any_model=allow_any_model,
                  max_prompt_chars=max_prompt_chars)
    return dataclasses.replace(offer, pairs=tuple(p.id for p in own if offer.offers_draft(p.draft)))
