"""The engine layer: the only package that imports vLLM.

``VLLM_ENABLE_V1_MULTIPROCESSING=0`` must be set before vLLM is imported, so
that the engine core (and its scheduler) runs in this process.
"""
import os

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

from space.engine.core import TracedEngine  # noqa: E402
from space.engine.pool import EnginePool  # noqa: E402

__all__ = ["TracedEngine", "EnginePool"]
