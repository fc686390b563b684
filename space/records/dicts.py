"""Records from their JSON dicts (pure): keys that name no field the dataclass
takes (a newer SpecLens's, a derived figure) are left out."""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, TypeVar

T = TypeVar("T")


@functools.cache
def init_names(cls: type) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls) if f.init)


def known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if k in init_names(cls)}


def build(cls: type[T], d: dict[str, Any]) -> T:
    return cls(**known(cls, d))
