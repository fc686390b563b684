"""Flags shared by the CLI and ``app.py``: the engine (and its ``EngineSpec``) and the
history's retention. Imports neither vLLM nor Gradio."""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from space.common import paths
from space.engine.hardware import resolve_spec
from space.engine.pool import budget_from_flag
from space.records import history
from space.records.config import PREFIX_CACHE_MODES, ConfigError, EngineSpec
from space.records.methods import METHODS
from space.runs import runner


def engine_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("engine")
    g.add_argument("--model", default="default",
                   help="target: 'default' (SmolLM2-135M-Instruct, embedded), a folder or a hub id")
    g.add_argument("--method", default="ngram",
                   help=f"{' | '.join(METHODS)} (default ngram)")
    g.add_argument("--draft-model", default=None, help="draft folder or hub id (draft_model, eagle*)")
    g.add_argument("--k", type=int, default=4, help="num_speculative_tokens, 1..16 (default 4)")
    g.add_argument("--max-model-len", type=int, default=4096)
    g.add_argument("--dtype", default=None,
                   help="bfloat16 | float16 | float32 (default: what this machine runs "
                        "natively: on CPU bf16 only with bf16 units (AVX512-BF16, AMX, Arm "
                        "BF16), else float32; on GPU the model's own dtype)")
    g.add_argument("--kv-cache-mib", type=int, default=512,
                   help="CPU: KV cache per engine (MiB at 2 bytes per value; float32 gets "
                        "twice, so the same number of tokens fits)")
    g.add_argument("--gpu-memory-utilization", type=float, default=0.40,
                   help="GPU: fraction of GPU memory per engine")
    g.add_argument("--prefix-cache", choices=PREFIX_CACHE_MODES, default="cold",
                   help="cold (default): every run starts with an empty prefix cache, so "
                        "repeats measure what a new prompt costs; warm: runs reuse the KV "
                        "blocks of earlier runs of the same prompt")
    g.add_argument("--memory-budget-gb", type=float, default=None, metavar="GIB",
                   help="memory the in-process engines may hold together, in GiB; the least "
                        "recently used engines close to make room, and an engine that cannot "
                        "fit is refused in one line (default: 80%% of the RAM available, or "
                        "of the GPU's free memory, when the first engine is built)")
    g.add_argument("--tensor-parallel-size", type=int, default=1,
                   help="in-process engines: 1 only; for more, measure running servers "
                        "(--baseline-url/--speculative-url)")


def spec_from_args(a: argparse.Namespace) -> EngineSpec:
    """The engine settings, dtype resolved; ``--pair`` (a model-pair preset)
    replaces model, method, draft and k."""
    tp = getattr(a, "tensor_parallel_size", 1)
    if tp != 1 and not getattr(a, "speculative_url", None):
        raise ConfigError(f"--tensor-parallel-size {tp}: in-process engines run on one GPU "
                          "(the tracing hooks need vLLM's single-process driver worker); serve "
                          f"the model with `vllm serve --tensor-parallel-size {tp}` and measure it "
                          "with `python -m space compare --baseline-url URL --speculative-url URL` "
                          "(docs/servers.md)")
    if getattr(a, "pair", None):
        from space.runs import presets
        from space.runs.workloads import pair_status

        pair = presets.get_model_pair(a.pair)
        status = pair_status(pair)
        if not status.available:
            raise ConfigError(f"model pair {pair.id} is not available here: {status.reason}")
        spec = pair.engine_spec()
    else:
        method = None if a.method in ("none", "baseline", "") else a.method
        spec = EngineSpec(model=a.model, method=method, draft_model=a.draft_model, k=a.k)
    return resolve_spec(dataclasses.replace(
        spec, max_model_len=a.max_model_len, dtype=a.dtype, kv_cache_bytes=a.kv_cache_mib << 20,
        gpu_memory_utilization=a.gpu_memory_utilization, prefix_cache=a.prefix_cache))


def apply_memory_budget(a: argparse.Namespace) -> None:
    """``--memory-budget-gb`` onto the process's engine pool (``runner.POOL``)."""
    runner.POOL.set_budget(budget_from_flag(getattr(a, "memory_budget_gb", None)))


def history_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("run history (<data folder>/history.sqlite3)")
    g.add_argument("--history-max-runs", type=int, default=history.DEFAULT_MAX_RUNS, metavar="N",
                   help=f"keep at most N runs, the oldest go first (default {history.DEFAULT_MAX_RUNS})")
    g.add_argument("--history-max-mb", type=int, default=history.DEFAULT_MAX_MB, metavar="MB",
                   help="keep at most this many MB of saved records "
                        f"(default {history.DEFAULT_MAX_MB})")


def data_folder(a: argparse.Namespace) -> Path:
    """The folder the app prepared (``a.data``), else ``--data-dir``, else the default."""
    data = getattr(a, "data", None)
    if data is not None:
        return Path(data.root)
    given = getattr(a, "data_dir", None)
    return Path(given) if given else paths.data_dir()


def open_history(a: argparse.Namespace) -> history.History:
    """The app's history with its retention flags; HistoryError says why not."""
    max_runs = getattr(a, "history_max_runs", history.DEFAULT_MAX_RUNS)
    max_mb = getattr(a, "history_max_mb", history.DEFAULT_MAX_MB)
    if max_runs < 1 or max_mb < 1:
        raise history.HistoryError("--history-max-runs and --history-max-mb must be at least 1")
    return history.History(data_folder(a) / history.FILENAME, max_runs=max_runs, max_bytes=max_mb << 20)
