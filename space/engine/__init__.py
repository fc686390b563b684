"""The engine layer: the only package that imports vLLM.

``VLLM_ENABLE_V1_MULTIPROCESSING=0`` must be set before vLLM is imported, so
that the engine core (and its scheduler) runs in this process.
"""
import os
from typing import TYPE_CHECKING

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

if TYPE_CHECKING:  # for the type checker; at runtime, __getattr__ below
    from space.engine.core import TracedEngine
    from space.engine.pool import EnginePool

__all__ = ["TracedEngine", "EnginePool"]


def __getattr__(name: str):
    # vLLM is imported with the first engine, not with this package: the page
    # serves within seconds and builds the engines behind it (space.ui.startup).
    # The light modules of this layer (hardware, models, prompts) import
    # without the engines too.
    if name == "EnginePool":
        from space.engine.pool import EnginePool
        return EnginePool
    if name == "TracedEngine":
        from space.engine.core import TracedEngine
        return TracedEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
