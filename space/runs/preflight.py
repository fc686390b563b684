"""Every check that needs no engine, run before vLLM is imported: bad input fails
in about a second with one line, not after an engine start."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from space.common.progress import Progress
from space.engine import models, prompts
from space.engine.hardware import on_gpu
from space.records import methods
from space.records.config import ConfigError, EngineSpec, RequestSpec


def missing_packages(packages) -> list[str]:
    """The PyPI packages among ``packages`` that cannot be imported here."""
    return [p for p in packages if importlib.util.find_spec(p.replace("-", "_")) is None]


def preflight(spec: EngineSpec, reqs: list[RequestSpec],
              progress: Progress | None = None) -> list[list[int]]:
    """Validate settings, resolve models, check the draft, encode prompts."""
    for r in reqs:
        r.validate()
    path = check_spec(spec, progress)
    return [prompts.encode(prompts.load_tokenizer(str(path)), r, spec.max_model_len) for r in reqs]


def check_spec(spec: EngineSpec, progress: Progress | None = None) -> Path:
    """The engine settings' checks without the tokenizer (transformers' import costs
    seconds, spent after the page is served); returns the target's folder."""
    spec.validate(on_gpu())
    row = methods.info(spec.method) if spec.method else None
    missing = missing_packages(row.requires if row else ())
    if missing:
        raise ConfigError(f"{spec.method} needs the PyPI package {', '.join(missing)}, which is "
                          "not installed here (GPU boxes only; see docs/install.md)")
    path = models.resolve_model(spec.model, progress)
    models.resolve_draft(spec.method, spec.draft_model, path, progress)
    return path
