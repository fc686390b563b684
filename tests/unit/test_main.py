"""space/__main__.py: ``python -m space`` and the ``speclens`` command send
``app`` to app.py and trace/compare/sweep to the CLI."""
from importlib import import_module
from pathlib import Path

import pytest

from space.__main__ import main

ROOT = Path(__file__).resolve().parents[2]


def help_of(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(list(argv))
    assert exit_.value.code == 0
    return capsys.readouterr().out


def test_app_gets_the_page_flags(capsys):
    out = help_of(capsys, "app", "--help")
    assert out.startswith("usage: python app.py") and "--port" in out


@pytest.mark.parametrize("command", ["trace", "compare", "sweep"])
def test_cli_commands(capsys, command):
    assert help_of(capsys, command, "--help").startswith(f"usage: python -m space {command}")


def test_console_script_points_here():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, func = scripts["speclens"].partition(":")
    assert getattr(import_module(module), func) is main
