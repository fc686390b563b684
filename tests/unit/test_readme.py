"""README.md, the front door: short, its two commands unchanged, every link alive.

The docs site (docs/, mkdocs.yml) checks its own links with `mkdocs build
--strict` in scripts/test.sh; the README lies outside it, so its links are
checked here.
"""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_is_a_front_door():
    assert len(README.splitlines()) <= 250


def test_the_two_commands_are_there_as_ci_and_users_run_them():
    blocks = re.findall(r"```bash\n(.*?)```", README, re.S)
    assert "bash scripts/setup.sh && .venv/bin/python app.py\n" in blocks
    assert "bash scripts/test.sh\n" in blocks


def _slug(heading: str) -> str:
    """GitHub's and mkdocs' anchor for a heading (the cases the docs use)."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def test_every_relative_link_in_the_readme_exists():
    links = re.findall(r"\]\(((?!https?:|#)[^)\s]+)\)", README)
    assert links
    for link in links:
        path, _, anchor = link.partition("#")
        target = ROOT / path
        assert target.exists(), link
        if anchor:
            headings = re.findall(r"^#+ (.+)$", target.read_text(encoding="utf-8"), re.M)
            assert anchor in {_slug(h) for h in headings}, link
