"""Headless CLI: ``python -m space trace|compare ...``.

Bad input gets one line on stderr and exit code 2; nothing else is printed.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from space.config import ConfigError, EngineSpec, RequestSpec
from space.models import ModelError

log = logging.getLogger("space")


def engine_flags(p: argparse.ArgumentParser) -> None:
    """Model and method flags, shared with ``app.py``."""
    g = p.add_argument_group("engine")
    g.add_argument("--model", default="default",
                   help="target: 'default' (SmolLM2-135M-Instruct, embedded), a folder or a hub id")
    g.add_argument("--method", default="ngram",
                   help="ngram | draft_model | suffix | eagle | eagle3 | mtp (default ngram)")
    g.add_argument("--draft-model", default=None, help="draft folder or hub id (draft_model, eagle*)")
    g.add_argument("--k", type=int, default=4, help="num_speculative_tokens, 1..16 (default 4)")
    g.add_argument("--max-model-len", type=int, default=4096)
    g.add_argument("--dtype", default="bfloat16")
    g.add_argument("--kv-cache-mib", type=int, default=512, help="CPU: KV cache per engine (MiB)")
    g.add_argument("--gpu-memory-utilization", type=float, default=0.40,
                   help="GPU: fraction of GPU memory per engine")


def spec_from_args(a: argparse.Namespace) -> EngineSpec:
    method = None if a.method in ("none", "baseline", "") else a.method
    return EngineSpec(model=a.model, method=method, draft_model=a.draft_model, k=a.k,
                      max_model_len=a.max_model_len, dtype=a.dtype,
                      kv_cache_bytes=a.kv_cache_mib << 20,
                      gpu_memory_utilization=a.gpu_memory_utilization)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m space", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name, helptext in (("trace", "run one prompt through the speculative engine"),
                           ("compare", "baseline vs speculative on one prompt, medians")):
        s = sub.add_parser(name, help=helptext)
        s.add_argument("--prompt", help="the prompt text")
        s.add_argument("--prompt-file", help="read the prompt from this file")
        s.add_argument("--raw", action="store_true", help="send the prompt as is (no chat template)")
        s.add_argument("--max-tokens", type=int, default=128)
        s.add_argument("--temperature", type=float, default=0.0)
        s.add_argument("--top-p", type=float, default=1.0)
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--json", metavar="PATH", help="write the record as JSON here")
        s.add_argument("-v", "--verbose", action="store_true", help="show vLLM's logs")
        if name == "compare":
            s.add_argument("--repeats", type=int, default=3, help="measured runs per engine")
        engine_flags(s)
    return p


def request_from_args(a: argparse.Namespace) -> RequestSpec:
    if a.prompt_file:
        try:
            prompt = Path(a.prompt_file).read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read --prompt-file: {exc.strerror}: {a.prompt_file}")
    else:
        prompt = a.prompt or ""
    req = RequestSpec(prompt=prompt, temperature=a.temperature, top_p=a.top_p,
                      max_tokens=a.max_tokens, seed=a.seed, raw=a.raw)
    req.validate()
    return req


def main(argv: list[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO" if a.verbose else "ERROR")
    logging.basicConfig(level=logging.INFO if a.verbose else logging.WARNING,
                        format="%(message)s")
    try:
        from space import runner  # imports vLLM: after the logging level is set

        req = request_from_args(a)
        spec = spec_from_args(a)
        if a.cmd == "trace":
            record = runner.trace_one(spec, req)
            print(runner.describe_run(record))
        else:
            if a.repeats < 1:
                raise ConfigError("--repeats must be at least 1")
            record = runner.compare(spec, req, repeats=a.repeats)
            print(runner.describe_compare(record))
    except (ConfigError, ModelError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if a.json:
        from space.trace import dumps

        Path(a.json).write_text(dumps(record))
        print(f"wrote {a.json}")
    return 0
