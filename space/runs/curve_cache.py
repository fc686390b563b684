"""Tipping-point curves cached under ``<data folder>/tipping``: one JSON per model
pair, k, device, dtype and vLLM version (the curves' maths: space/judge/curves.py)."""
from __future__ import annotations

import json
from pathlib import Path

from space.common import paths
from space.judge.curves import LOOKUP_METHODS, TippingCurve, cache_name, slug
from space.records.run import RunConfig


def curves_dir(folder: Path | None = None) -> Path:
    return (folder or paths.data_dir()) / "tipping"


def save(curve: TippingCurve, folder: Path | None = None) -> Path:
    path = curves_dir(folder) / cache_name(curve)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(curve.to_dict(), indent=1))
    tmp.replace(path)  # a reader never sees half a file
    return path


def load(path: Path) -> TippingCurve | None:
    """The curve in ``path``, or None when it is missing or unreadable."""
    try:
        return TippingCurve.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def find_for_config(config: RunConfig, vllm_version: str | None,
                    folder: Path | None = None) -> TippingCurve | None:
    """The cached curve for a run's pair, k, device, dtype (none recorded: bf16) and
    vLLM version, if one was measured."""
    method, k, dtype = config.method, config.k, config.dtype or "bfloat16"
    if k < 1 or not method or not vllm_version:
        return None
    draft = None if method in LOOKUP_METHODS else config.draft_model
    where = curves_dir(folder)
    found = load(where / cache_name((config.model, method, draft, k, config.device, dtype,
                                     vllm_version)))
    if found is None and dtype == "bfloat16":  # named before the dtype was part of it (all bf16)
        found = load(where / (f"{slug(config.model)}__{slug(method)}__{slug(draft)}__k{int(k)}"
                              f"__{slug(config.device)}__vllm-{slug(vllm_version)}.json"))
    return found if found is not None and found.dtype == dtype else None


def all_curves(folder: Path | None = None) -> list[TippingCurve]:
    """Every cached curve, newest first."""
    found = [load(p) for p in sorted(curves_dir(folder).glob("*.json"))]
    return sorted((c for c in found if c is not None), key=lambda c: c.date, reverse=True)
