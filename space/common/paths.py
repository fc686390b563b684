"""Where SpecLens keeps its files: the model cache, the data folder, and the texts (CSS,
JavaScript, HTML, Markdown, SQL) a package keeps in its ``assets/`` folder."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$SPECLENS_CACHE``, else ``$XDG_CACHE_HOME/speclens``, else ``~/.cache/speclens``."""
    if os.environ.get("SPECLENS_CACHE"):
        return Path(os.environ["SPECLENS_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "speclens"


def data_dir() -> Path:
    """The default data folder (run history, tipping curves, the app's tmp/):
    ``$SPECLENS_DATA_DIR``, else ``data/`` in the model cache."""
    given = os.environ.get("SPECLENS_DATA_DIR")
    return Path(given) if given else cache_dir() / "data"


def asset(module_file: str, name: str) -> str:
    """The text ``name`` in the ``assets/`` folder beside ``module_file`` (pass ``__file__``)."""
    return (Path(module_file).parent / "assets" / name).read_text(encoding="utf-8")
