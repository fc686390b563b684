"""The engine layer: the only package that imports vLLM. ``VLLM_ENABLE_V1_MULTIPROCESSING=0``
must be set before vLLM is imported, so that the engine core (and its scheduler) runs here."""
import importlib
import os
from typing import TYPE_CHECKING

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

if TYPE_CHECKING:
    from space.engine.core import TracedEngine
    from space.engine.pool import EnginePool

__all__ = ["TracedEngine", "EnginePool"]
_LAZY = {"TracedEngine": "space.engine.core", "EnginePool": "space.engine.pool"}


def __getattr__(name: str):
    # vLLM loads with the first engine, not this package, so the page serves first.
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
