"""``python -m space`` and the ``speclens`` command: ``app`` serves the web page
(``python app.py``'s flags); every other command is the headless CLI (space/cli/main.py).
"""
from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] == ["app"]:
        import app  # app.py at the repository root (a top-level module when installed)

        return app.main(args[1:])
    from space.cli import main as cli

    return cli.main(args)


if __name__ == "__main__":
    raise SystemExit(main())
