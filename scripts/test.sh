#!/usr/bin/env bash
# Install everything the tests need, check the code, then run the whole suite:
#   bash scripts/test.sh [pytest args]
# The checks (ruff, mypy, import-linter; configured in pyproject.toml; the docs
# site, mkdocs.yml) all run, and any failure stops the run before the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test

failed=()
check() {
  local name=$1; shift
  echo "==> $name"
  "$@" || failed+=("$name")
}
check "ruff" .venv/bin/ruff check .
check "mypy" .venv/bin/mypy
check "import-linter" .venv/bin/lint-imports
# --strict: a broken link or anchor, or a docs page missing from the nav, fails
# (no -q: it would hide the warnings that strict counts)
site=$(mktemp -d)
check "mkdocs" env NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict -d "$site"
rm -rf "$site"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]} (fix these before the tests run)" >&2
  exit 1
fi
exec .venv/bin/python -m pytest "$@"
