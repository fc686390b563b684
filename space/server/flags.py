"""The operator's server flags, shared by the CLI and the page. Visitors never choose
URLs; API keys come from the environment only.
"""
from __future__ import annotations

import argparse

from space.records.config import ConfigError, EngineSpec
from space.server.build import Declared
from space.server.client import DEFAULT_READ_S, KEY_ENV, Server
from space.server.compare import ServerPair


def server_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "running vLLM servers (instead of in-process engines; docs/servers.md); "
        f"API keys from ${KEY_ENV['baseline']} and ${KEY_ENV['speculative']}")
    g.add_argument("--baseline-url", metavar="URL",
                   help="a vLLM server without speculation, e.g. http://gpu-box:8000/v1")
    g.add_argument("--speculative-url", metavar="URL",
                   help="the same model with speculation and "
                        "--per-request-spec-decode-metrics detailed; declare its method, "
                        "--k and --draft-model with the engine flags")
    g.add_argument("--server-timeout", type=float, default=DEFAULT_READ_S, metavar="S",
                   help=f"a server silent this long is stuck (default {DEFAULT_READ_S:.0f})")


def pair_from_args(a: argparse.Namespace, spec: EngineSpec) -> ServerPair | None:
    """The two servers, or None for in-process engines."""
    base, specu = getattr(a, "baseline_url", None), getattr(a, "speculative_url", None)
    if not base and not specu:
        return None
    if not (base and specu):
        raise ConfigError("give both --baseline-url and --speculative-url")
    if spec.method is None:
        raise ConfigError("declare the speculative server's --method (and --k, --draft-model)")
    timeout = getattr(a, "server_timeout", DEFAULT_READ_S)
    if not timeout > 0:
        raise ConfigError("--server-timeout must be positive")
    declared = Declared(method=spec.method, k=spec.k, draft_model=spec.draft_model,
                        prompt_lookup_min=spec.prompt_lookup_min,
                        prompt_lookup_max=spec.prompt_lookup_max)
    return ServerPair(Server.from_flag("baseline", base, timeout),
                      Server.from_flag("speculative", specu, timeout), declared)
