"""The engine layer: the only package that imports vLLM.

``VLLM_ENABLE_V1_MULTIPROCESSING=0`` must be set before vLLM is imported, so
that the engine core (and its scheduler) runs in this process.
"""
import os

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

from space.engine.pool import EnginePool  # noqa: E402

__all__ = ["TracedEngine", "EnginePool"]


def __getattr__(name: str):
    # vLLM is imported with the first engine, not with this package: the page
    # serves within seconds and builds the engines behind it (space.ui.startup).
    if name == "TracedEngine":
        from space.engine.core import TracedEngine
        return TracedEngine
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
