"""SpecLens web app: ``python app.py`` serves it on http://127.0.0.1:7860.

Flags: --host, --port, --share, --auth user:password, --pair ID (a model-pair
preset), --workload ID (its first prompt is the initial prompt), and the engine
flags of the CLI (--model, --method, --draft-model, --k, ...; see --help).
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings

from space import history
from space.args import engine_flags


def parse_auth(value: str) -> tuple[str, str]:
    user, sep, password = value.partition(":")
    if not sep or not user or not password:
        raise argparse.ArgumentTypeError("--auth takes user:password")
    return user, password


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python app.py", description=__doc__.splitlines()[0])
    g = p.add_argument_group("server")
    g.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    g.add_argument("--port", type=int, default=7860, help="port (default 7860)")
    g.add_argument("--share", action="store_true", help="also serve on a public gradio.live link")
    g.add_argument("--auth", type=parse_auth, default=None, metavar="USER:PASSWORD",
                   help="require this login (Gradio's login page)")
    g.add_argument("-v", "--verbose", action="store_true", help="show vLLM's logs")
    g = p.add_argument_group("presets (presets/*.json)")
    g.add_argument("--pair", metavar="ID",
                   help="a model-pair preset (replaces --model/--method/--draft-model/--k)")
    g.add_argument("--workload", metavar="ID",
                   help="start with this workload's first prompt (and select it for sweeps)")
    engine_flags(p)
    history.add_flags(p)
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    # Before vLLM is imported: its log level, and no usage analytics calls from Gradio.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "INFO" if a.verbose else "ERROR")
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    if not a.verbose:
        warnings.filterwarnings("ignore", category=FutureWarning)
    logging.basicConfig(level=logging.INFO if a.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from space.ui.app import serve  # imports vLLM and Gradio

    return serve(a)


if __name__ == "__main__":
    sys.exit(main())
