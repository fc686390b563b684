"""Records from their JSON dicts (pure): a dataclass built from the keys that
name the fields it takes. Other keys (one a newer SpecLens wrote, or a figure
the record computes itself) are left out."""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, TypeVar

T = TypeVar("T")


@functools.cache
def init_names(cls: type) -> frozenset[str]:
    """The fields ``cls(...)`` takes."""
    return frozenset(f.name for f in dataclasses.fields(cls) if f.init)


def known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    """The items of ``d`` that name a field ``cls(...)`` takes."""
    return {k: v for k, v in d.items() if k in init_names(cls)}


def build(cls: type[T], d: dict[str, Any]) -> T:
    """``cls`` from the items of ``d`` it takes."""
    return cls(**known(cls, d))
