"""SpecLens web app: ``python app.py`` serves it on http://127.0.0.1:7860.

Flags: --host, --port, --share, logins (--auth-file FILE, or $SPECLENS_AUTH /
$SPECLENS_AUTH_FILE; --auth user:password for a quick trial), --insecure-no-auth,
--data-dir, --max-upload-mb, what a visitor may load (--drafts NAME,
--allow-any-model, --max-prompt-chars N), --pair ID (a model-pair preset), --workload ID (its
first prompt is the initial prompt), and the engine flags of the CLI (--model,
--method, --draft-model, --k, ...; see --help).

Bound to an address other machines can reach (--host 0.0.0.0, a LAN address)
or with --share, the app refuses to start without a login unless
--insecure-no-auth is given. Bad logins, a refused start or an unusable data
folder get one line on stderr and exit code 2, before any engine is built.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings

from space.runs import flags
from space.runs.flags import engine_flags
from space.runs.offer import MAX_PROMPT_CHARS
from space.server.flags import server_flags
from space.ui import auth, datadir


def positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {value!r}")
    return n


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python app.py", description=__doc__.splitlines()[0])
    g = p.add_argument_group("server")
    g.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    g.add_argument("--port", type=int, default=7860, help="port (default 7860)")
    g.add_argument("--share", action="store_true", help="also serve on a public gradio.live link")
    g.add_argument("--auth", action="append", default=[], metavar="USER:PASSWORD",
                   help="a login (repeatable). Shows in the process list: prefer --auth-file "
                        f"or ${auth.ENV_AUTH}")
    g.add_argument("--auth-file", metavar="FILE",
                   help="logins, one user:password per line (# comments, blank lines); "
                        f"also ${auth.ENV_AUTH_FILE}=FILE, or ${auth.ENV_AUTH}=user:pass,user2:pass2")
    g.add_argument("--insecure-no-auth", action="store_true",
                   help="serve a reachable address or --share link without any login")
    g.add_argument("--data-dir", metavar="DIR",
                   help="the app's folder; its tmp/ is emptied at start "
                        f"(default {datadir.default_data_dir()})")
    g.add_argument("--max-upload-mb", type=positive_int, default=20, metavar="MB",
                   help="largest file a visitor may upload (default 20)")
    g.add_argument("-v", "--verbose", action="store_true", help="show vLLM's logs")
    g = p.add_argument_group("what a visitor may load (space/runs/offer.py)")
    g.add_argument("--drafts", action="append", default=[], metavar="NAME[,NAME]",
                   help="also offer these drafts in the page (repeatable; a folder or a hub "
                        "id, which may download on first use). Offered anyway: the start's "
                        "draft and the presets' drafts for the model that are on disk")
    g.add_argument("--allow-any-model", action="store_true",
                   help="let visitors type any draft: a folder on this machine or a hub id "
                        "(downloaded with this server's HF_TOKEN)")
    g.add_argument("--max-prompt-chars", type=positive_int, default=MAX_PROMPT_CHARS,
                   metavar="N", help=f"longest prompt a visitor may send (default {MAX_PROMPT_CHARS:,})")
    g = p.add_argument_group("presets (presets/*.json)")
    g.add_argument("--pair", metavar="ID",
                   help="a model-pair preset (replaces --model/--method/--draft-model/--k)")
    g.add_argument("--workload", metavar="ID",
                   help="start with this workload's first prompt (and select it for sweeps)")
    g = p.add_argument_group("your traffic (the Traffic tab)")
    g.add_argument("--traffic", metavar="FILE",
                   help="a traffic file the Traffic tab runs when a visitor uploads none "
                        "(JSONL, ShareGPT .json, CSV or text; see docs/traffic.md)")
    g.add_argument("--traffic-private", action="store_true",
                   help="keep traffic prompts out of the run history: a traffic run is "
                        "saved with its figures only, no prompt or output text")
    engine_flags(p)
    server_flags(p)
    flags.history_flags(p)
    return p.parse_args(argv)


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr, flush=True)
    return 2


def _logins_and_data(a: argparse.Namespace) -> str | None:
    """Logins and the data folder into ``a``, checked before anything heavy loads;
    the refusal's line, or None."""
    try:
        a.logins = auth.collect_logins(a.auth, a.auth_file)
    except auth.AuthError as exc:
        return str(exc)
    refusal = auth.login_required_error(a.host, a.share, a.logins, a.insecure_no_auth)
    if refusal:
        return refusal
    for path in filter(None, (a.auth_file, os.environ.get(auth.ENV_AUTH_FILE))):
        if auth.readable_by_others(path):
            print(f"warning: {path} holds passwords and others may read it (chmod 600 it)",
                  file=sys.stderr, flush=True)
    if not len(a.logins) and not (auth.is_loopback(a.host) and not a.share):
        print("warning: --insecure-no-auth: anyone who reaches this address can use the app",
              file=sys.stderr, flush=True)
    try:
        # Before Gradio is imported: it reads GRADIO_TEMP_DIR (set here) at import.
        a.data = datadir.prepare(a.data_dir)
    except datadir.DataDirError as exc:
        return str(exc)
    return None


def main(argv: list[str] | None = None) -> int:
    a = parse_args(argv)
    refusal = _logins_and_data(a)
    if refusal:
        return _fail(refusal)
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
