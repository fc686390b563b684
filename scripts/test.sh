#!/usr/bin/env bash
# Install everything the tests need, check the code, then run the whole suite:
#   bash scripts/test.sh [pytest args]
# The checks (ruff, mypy, import-linter; configured in pyproject.toml) all run,
# and any failure stops the run before the tests.
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
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]} (fix these before the tests run)" >&2
  exit 1
fi
exec .venv/bin/python -m pytest "$@"
