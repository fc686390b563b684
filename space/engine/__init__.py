"""The engine layer: the only package that imports vLLM. ``VLLM_ENABLE_V1_MULTIPROCESSING=0``
must be set before vLLM is imported, so that the engine core (and its scheduler) runs here."""
import os

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
