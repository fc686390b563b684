"""deploy/docker-compose.yml's ``servers`` profile, read without Docker or a GPU:
each ``vllm serve`` command is parsed and checked by vLLM's own serve parser and
engine config classes, and it carries the flags SpecLens needs from a server; the
app's command is parsed by the app's own parser and declares what the speculative
server runs. (The containers themselves were never started here.)"""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.engine

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "deploy" / "docker-compose.yml"


def _defaults(arg: str) -> str:
    """Compose's ``${VAR:-default}`` read as its default (no variable set)."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", arg)


@pytest.fixture(scope="module")
def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


@pytest.fixture(scope="module")
def serve_args(services) -> dict:
    """Each vLLM service's command as vLLM's ``serve`` parses and validates it."""
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    out = {}
    for name in ("vllm-baseline", "vllm-speculative"):
        assert services[name]["profiles"] == ["servers"]
        args = make_arg_parser(FlexibleArgumentParser()).parse_args(
            [_defaults(a) for a in services[name]["command"]])
        validate_parsed_serve_args(args)  # e.g. per-request metrics refuse --disable-log-stats
        out[name] = args
    return out


def test_both_servers_give_what_speclens_reads(serve_args):
    base, spec = serve_args["vllm-baseline"], serve_args["vllm-speculative"]
    for args in (base, spec):
        assert args.enable_prefix_caching is False  # a server cannot be reset between runs
        assert args.enable_per_request_metrics and not args.disable_log_stats
        assert args.port == 8000
    assert base.speculative_config is None
    assert spec.per_request_spec_decode_metrics == "detailed"
    # one GPU: the two servers split it, with room left for the CUDA context
    assert base.gpu_memory_utilization + spec.gpu_memory_utilization <= 0.95


def test_speculative_config_is_one_vllm_builds(serve_args, tmp_path):
    """vLLM's own EngineArgs -> VllmConfig (SpeculativeConfig included) accepts the
    speculative server's flags, on the default model here (its config only: no
    engine is built)."""
    from vllm.engine.arg_utils import AsyncEngineArgs

    from space.engine.models import resolve_model

    args = copy.copy(serve_args["vllm-speculative"])
    args.model = str(resolve_model("default"))  # the hub id's stand-in: no hub here
    engine_args = AsyncEngineArgs.from_cli_args(args)
    engine_args.device = "cpu"
    config = engine_args.create_engine_config()
    assert config.speculative_config.method == "ngram"
    assert config.speculative_config.num_speculative_tokens == 4


def test_app_declares_what_the_speculative_server_runs(services, serve_args):
    """The app's command (after the image's entrypoint) parses with the app's
    parser, points at the two services and declares their method and k."""
    import app

    dockerfile = (ROOT / "Dockerfile").read_text()
    entry = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", dockerfile, re.M).group(1))
    assert entry[:2] == ["python3", "app.py"]
    a = app.parse_args(entry[2:] + [_defaults(x) for x in services["app-servers"]["command"]])
    spec_config = serve_args["vllm-speculative"].speculative_config
    assert (a.method, a.k) == (spec_config["method"], spec_config["num_speculative_tokens"])
    assert a.baseline_url == "http://vllm-baseline:8000/v1"
    assert a.speculative_url == "http://vllm-speculative:8000/v1"
    assert a.model == serve_args["vllm-speculative"].model
    depends = services["app-servers"]["depends_on"]
    assert {n: d["condition"] for n, d in depends.items()} == {
        "vllm-baseline": "service_healthy", "vllm-speculative": "service_healthy"}
