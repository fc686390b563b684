"""Run history: every compare, sweep, tipping curve and traffic run the page finishes,
one row each in ``<data folder>/history.sqlite3`` (the record as JSON, and the columns the
History tab filters and shows); migrated one schema version (SQLite's user_version) a step.
"""
from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from space.common.paths import asset
from space.records.config import GRID
from space.records.run import RunConfig
from space.records.trace import CompareRecord, dumps

FILENAME = "history.sqlite3"
DEFAULT_MAX_RUNS = 1000
DEFAULT_MAX_MB = 500
SCHEMA_VERSION = 2
BUSY_TIMEOUT_MS = 30_000
FILTER_COLUMNS = ("model", "method", "verdict")

# One list of statements per version; step n turns version n-1 into version n.
MIGRATIONS: dict[int, list[str]] = {
    1: [asset(__file__, "history_v1.sql").rstrip("\n")],
    2: ["ALTER TABLE runs ADD COLUMN title TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE runs ADD COLUMN size_bytes INTEGER NOT NULL DEFAULT 0",
        "UPDATE runs SET size_bytes = length(CAST(record AS BLOB))",
        "CREATE INDEX runs_created ON runs (created_s DESC, id DESC)"],
}


class HistoryError(ValueError):
    """A history file this SpecLens cannot use (a one-line message)."""


@dataclass(frozen=True)
class RunColumns:
    kind: str  # compare | sweep | traffic | tipping (the run builders below)
    model: str
    method: str | None
    k: int | None
    temperature: float | None
    verdict: str | None
    speedup: float | None
    title: str


@dataclass(frozen=True)
class RunRow(RunColumns):
    id: int
    created_s: float
    user: str | None
    size_bytes: int


@dataclass(frozen=True)
class NewRun(RunColumns):
    record_json: str
    user: str | None = None


ROW_COLUMNS = tuple(f.name for f in fields(RunRow))


@dataclass(frozen=True)
class Filters:
    model: str | None = None
    method: str | None = None
    verdict: str | None = None


class History:
    """The history file; safe to share between threads (a connection per call)."""

    def __init__(self, path: str | Path, max_runs: int | None = None,
                 max_bytes: int | None = None) -> None:
        self.path = Path(path)
        self.max_runs, self.max_bytes = max_runs, max_bytes
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            migrate(conn)
            check = conn.execute("PRAGMA quick_check").fetchone()[0]
        if check != "ok":
            raise HistoryError(f"{self.path}: the history file is damaged ({check})")

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000,
                                   isolation_level=None)  # explicit BEGIN/COMMIT below
        except sqlite3.Error as exc:
            raise HistoryError(f"{self.path}: cannot open the history ({exc})") from None
        try:
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA synchronous=FULL")  # a save that returned survives a power cut
            yield conn
        except sqlite3.DatabaseError as exc:
            raise HistoryError(f"{self.path}: {exc}") from None
        finally:
            conn.close()

    def save(self, run: NewRun, now_s: float | None = None) -> int:
        """Store one run (then apply retention); its id."""
        row = {f.name: getattr(run, f.name) for f in fields(RunColumns)} | {
            "created_s": time.time() if now_s is None else now_s, "user": run.user,
            "size_bytes": len(run.record_json.encode("utf-8")), "record": run.record_json}
        with self._connect() as conn, _transaction(conn):
            cur = conn.execute(f"INSERT INTO runs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                               list(row.values()))
            # Retention: the oldest runs go until both caps hold (the newest always stays).
            if self.max_runs is not None:
                conn.execute("DELETE FROM runs WHERE id NOT IN "
                             "(SELECT id FROM runs ORDER BY id DESC LIMIT ?)", (max(1, self.max_runs),))
            if self.max_bytes is not None:
                conn.execute(
                    "DELETE FROM runs WHERE id IN (SELECT id FROM (SELECT id, SUM(size_bytes) "
                    "OVER (ORDER BY id DESC) AS total FROM runs) WHERE total > ? AND id < "
                    "(SELECT MAX(id) FROM runs))", (self.max_bytes,))
        assert cur.lastrowid is not None
        return cur.lastrowid

    def runs(self, filters: Filters = Filters(), offset: int = 0,  # noqa: B008 (frozen)
             limit: int = 20) -> tuple[list[RunRow], int]:
        """One page of runs, newest first, and how many match in all."""
        given = [column for column in FILTER_COLUMNS if getattr(filters, column)]
        where = " WHERE " + " AND ".join(f"{column} = ?" for column in given) if given else ""
        args = [getattr(filters, column) for column in given]
        with self._connect() as conn:
            total = conn.execute(f"SELECT COUNT(*) FROM runs{where}", args).fetchone()[0]
            rows = conn.execute(f"SELECT {', '.join(ROW_COLUMNS)} FROM runs{where} "
                                "ORDER BY created_s DESC, id DESC LIMIT ? OFFSET ?",
                                [*args, max(0, limit), max(0, offset)]).fetchall()
        return [RunRow(*r) for r in rows], total

    def choices(self) -> dict[str, list[str]]:
        """The distinct models, methods and verdicts stored, for the filters."""
        with self._connect() as conn:
            return {column: [v for (v,) in conn.execute(
                f"SELECT DISTINCT {column} FROM runs WHERE {column} IS NOT NULL ORDER BY {column}")]
                for column in FILTER_COLUMNS}

    def get(self, run_id: int) -> tuple[RunRow, str] | None:
        """The row and its record JSON, or None."""
        with self._connect() as conn:
            r = conn.execute(f"SELECT {', '.join(ROW_COLUMNS)}, record FROM runs WHERE id = ?",
                             (int(run_id),)).fetchone()
        return None if r is None else (RunRow(*r[:-1]), r[-1])

    def delete(self, run_id: int, user: str | None) -> bool:
        """Delete a run of ``user``'s; nothing without a login name."""
        if not user:
            return False
        with self._connect() as conn:
            cur = conn.execute("DELETE FROM runs WHERE id = ? AND user = ?", (int(run_id), user))
        return cur.rowcount == 1


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring the file to ``target``; the version it had."""
    found = conn.execute("PRAGMA user_version").fetchone()[0]
    if found > SCHEMA_VERSION:
        raise HistoryError(f"the history file has schema version {found}, newer than this "
                           f"SpecLens knows ({SCHEMA_VERSION}); upgrade SpecLens or use "
                           "another data folder")
    for version in range(found + 1, target + 1):
        with _transaction(conn):
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            conn.execute(f"PRAGMA user_version={version}")
    return found


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def dumps_sweep(result: dict[str, Any]) -> str:
    """A sweep's dict as stored: NaN (no acceptance at a point) becomes null."""
    def clean(v: Any) -> Any:
        if isinstance(v, float) and v != v:
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return json.dumps(clean(result))


def compare_run(cmp: CompareRecord, user: str | None) -> NewRun:
    """Titled by its prompt on one line, cut at 80 characters."""
    cfg, line = cmp.speculative.config, " ".join(cmp.speculative.prompt.split())
    return NewRun("compare", cfg.model, cfg.method, cfg.k or None, cmp.speculative.request.temperature,
                  cmp.checklist.verdict if cmp.checklist else None, cmp.speedup,
                  line if len(line) <= 80 else line[:79] + "\u2026", dumps(cmp), user)


def sweep_run(result: dict[str, Any], model: str, method: str | None, k: int | None,
              user: str | None) -> NewRun:
    """The speedup is the best point's; no verdict."""
    speedups = [row.get("speedup") for row in result.get("table", [])]
    best = max((x for x in speedups if isinstance(x, int | float) and x == x), default=None)
    values = ", ".join(f"{row.get('value'):g}" for row in result.get("table", [])
                       if isinstance(row.get("value"), int | float))
    swept = "k x concurrency" if result.get("variable") == GRID else f"{result.get('variable')} ({values})"
    return NewRun("sweep", model, method, None if result.get("variable") in ("k", GRID) else k,
                  None, None, best, f"sweep over {swept} of {result.get('workload_id')}",
                  dumps_sweep(result), user)


def traffic_run(result: dict[str, Any], model: str, user: str | None) -> NewRun:
    """The traffic-weighted speedup; a verdict only when every group has the same."""
    verdicts = {g.get("verdict") for g in result.get("groups", [])}
    cfg = RunConfig.from_dict(result.get("config") or {})
    title = f"traffic: {len(result.get('prompts', []))} prompts of {result.get('source')}"
    ws, ci = result.get("weighted_speedup"), result.get("weighted_speedup_ci")
    if isinstance(ws, int | float) and isinstance(ci, list) and len(ci) == 2 \
            and all(isinstance(x, int | float) for x in ci):
        title += f", {ws:.2f}x (90 % CI {ci[0]:.2f}-{ci[1]:.2f})"
    return NewRun("traffic", model, cfg.method, cfg.k or None, None,
                  verdicts.pop() if len(verdicts) == 1 else None, ws, title, dumps_sweep(result), user)


def tipping_run(curve: dict[str, Any], user: str | None) -> NewRun:
    k, method = curve.get("k"), curve.get("method")
    return NewRun("tipping", str(curve.get("model", "")), method, k if isinstance(k, int) else None,
                  None, None, None, f"tipping curve ({curve.get('kind')}) of {method} k={k}",
                  dumps_sweep(curve), user)
