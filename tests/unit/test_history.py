"""space/records/history.py: the run history in SQLite: saves, listing, retention,
owners, migration, concurrent writers, and a writer killed mid-write."""
from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from space.records import history as hist
from space.records.history import Filters, History, HistoryError, NewRun, compare_run, sweep_run
from space.records.run import RequestRecord
from space.records.schema import load
from space.records.trace import make_compare
from tests.helpers.traces import ngram_run, short_baseline

ROOT = Path(__file__).resolve().parents[2]


def new_run(model="smol", method="ngram", verdict="worth-it", user=None, size=10) -> NewRun:
    return NewRun(kind="compare", model=model, method=method, k=4, temperature=0.0,
                  verdict=verdict, speedup=1.5, title="t", record_json="x" * size, user=user)


@pytest.fixture
def db(tmp_path) -> History:
    return History(tmp_path / "history.sqlite3")


def test_a_comparison_round_trips_through_the_history(db):
    cmp = make_compare([short_baseline()], [ngram_run()])
    cmp.speculative.request = RequestRecord(temperature=0.0)
    run_id = db.save(compare_run(cmp, "ada"))
    row, record_json = db.get(run_id)
    assert (row.kind, row.user, row.method, row.k, row.temperature) == ("compare", "ada", "ngram",
                                                                        4, 0.0)
    assert row.speedup == pytest.approx(cmp.speedup)
    again = load(record_json)  # the stored record passes the schema check
    assert again.speculative.num_accepted_tokens_per_pos == \
        cmp.speculative.num_accepted_tokens_per_pos
    assert row.size_bytes == len(record_json.encode())
    assert db.get(run_id + 1) is None


def test_newest_first_filters_and_paging(db):
    for i in range(25):
        db.save(new_run(method="ngram" if i % 2 else "draft_model",
                        verdict="worth-it" if i % 3 else "not-worth-it"), now_s=1000.0 + i)
    rows, total = db.runs(limit=10)
    assert total == 25 and [r.created_s for r in rows] == [1024.0 - i for i in range(10)]
    page3, _ = db.runs(offset=20, limit=10)
    assert len(page3) == 5 and page3[-1].created_s == 1000.0
    ngram, n = db.runs(Filters(method="ngram"), limit=100)
    assert n == 12 and {r.method for r in ngram} == {"ngram"}
    _, n = db.runs(Filters(method="ngram", verdict="not-worth-it"), limit=100)
    assert n == len([i for i in range(25) if i % 2 and not i % 3])
    assert db.choices() == {"model": ["smol"], "method": ["draft_model", "ngram"],
                            "verdict": ["not-worth-it", "worth-it"]}


def test_only_the_owner_deletes_and_never_without_a_login(db):
    mine, anon = db.save(new_run(user="ada")), db.save(new_run(user=None))
    assert not db.delete(mine, None) and not db.delete(mine, "")
    assert not db.delete(mine, "bob")
    assert not db.delete(anon, "ada")  # a run saved without logins has no owner
    assert db.delete(mine, "ada") and db.get(mine) is None
    assert db.get(anon) is not None


def test_retention_caps_count_and_size(tmp_path):
    by_count = History(tmp_path / "a.sqlite3", max_runs=3)
    ids = [by_count.save(new_run()) for _ in range(5)]
    assert [r.id for r in by_count.runs()[0]] == ids[:1:-1]
    by_size = History(tmp_path / "b.sqlite3", max_bytes=250)
    ids = [by_size.save(new_run(size=100)) for _ in range(4)]
    assert [r.id for r in by_size.runs()[0]] == ids[:1:-1]  # 2 x 100 bytes fit in 250
    assert sum(r.size_bytes for r in by_size.runs()[0]) == 200
    huge = by_size.save(new_run(size=1000))  # the newest run stays even alone over the cap
    assert [r.id for r in by_size.runs()[0]] == [huge]


def test_a_sweep_is_saved_with_its_best_speedup(db):
    result = {"workload_id": "code_editing", "variable": "k", "crossover": None,
              "table": [{"value": 1, "speedup": 1.2}, {"value": 4, "speedup": float("nan")},
                        {"value": 8, "speedup": 0.9}]}
    row, stored = db.get(db.save(sweep_run(result, "smol", "ngram", 4, None)))
    assert (row.kind, row.k, row.verdict, row.speedup) == ("sweep", None, None, 1.2)
    assert row.title == "sweep over k (1, 4, 8) of code_editing"
    assert "NaN" not in stored and "null" in stored


def version_1_file(path: Path) -> None:
    """A history as the first schema wrote it, with one run."""
    conn = sqlite3.connect(path, isolation_level=None)
    hist.migrate(conn, target=1)
    conn.execute("INSERT INTO runs (created_s, kind, user, model, method, k, temperature, "
                 "verdict, speedup, record) VALUES (5.0, 'compare', 'ada', 'smol', 'ngram', 4, "
                 "0.0, 'worth-it', 1.3, '{\"a\": \"\u00e9\"}')")
    conn.close()


def test_an_older_schema_is_migrated_on_open(tmp_path):
    path = tmp_path / "old.sqlite3"
    version_1_file(path)
    db = History(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == hist.SCHEMA_VERSION
    indexes = {r[1] for r in conn.execute("PRAGMA index_list(runs)")}
    conn.close()
    (row,), total = db.runs()
    assert total == 1 and row.user == "ada" and row.title == ""
    assert row.size_bytes == len('{"a": "\u00e9"}'.encode())  # bytes, not characters
    assert "runs_created" in indexes
    assert db.save(new_run()) == 2  # and it takes new runs


def test_a_newer_schema_is_refused_with_one_line(tmp_path):
    path = tmp_path / "new.sqlite3"
    History(path)
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version={hist.SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(HistoryError, match="newer than this SpecLens knows") as e:
        History(path)
    assert "\n" not in str(e.value)


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    path = tmp_path / "junk.sqlite3"
    path.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(HistoryError, match="junk.sqlite3"):
        History(path)


WRITER = """
import sys
from space.records.history import History, NewRun
db = History(sys.argv[1])
for i in range(int(sys.argv[2])):
    run_id = db.save(NewRun("compare", "smol", "ngram", 4, 0.0, "worth-it", 1.0,
                            sys.argv[3], "{}".ljust(int(sys.argv[4]), " "), user=None))
    print(run_id, flush=True)
"""


def writer(path: Path, n: int, tag: str, size: int = 100) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(n), tag, str(size)],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)


def integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def test_concurrent_writers_corrupt_nothing(tmp_path):
    path = tmp_path / "history.sqlite3"
    db = History(path)
    procs = [writer(path, 40, f"p{i}") for i in range(3)]

    def thread_writes():
        for _ in range(40):
            db.save(new_run())

    threads = [threading.Thread(target=thread_writes) for _ in range(3)]
    for t in threads:
        t.start()
    outs = [p.communicate(timeout=120)[0] for p in procs]
    for t in threads:
        t.join(120)
    assert all(p.returncode == 0 for p in procs)
    saved = {int(x) for out in outs for x in out.split()}
    assert len(saved) == 120
    assert integrity(path) == "ok"
    rows, total = db.runs(limit=1000)
    assert total == 240 and saved <= {r.id for r in rows}
    assert sorted(r.title for r in rows if r.title != "t") == \
        sorted(f"p{i}" for i in range(3) for _ in range(40))


def test_a_writer_killed_mid_write_loses_nothing_it_committed(tmp_path):
    path = tmp_path / "history.sqlite3"
    History(path)
    # Records of 2 MB: the process spends most of its time inside a write.
    proc = writer(path, 10_000, "kill", size=2 << 20)
    committed = []
    assert proc.stdout is not None
    deadline = time.monotonic() + 60
    while len(committed) < 5 and time.monotonic() < deadline:
        committed.append(int(proc.stdout.readline()))
    time.sleep(0.05)  # into the next write
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    committed += [int(x) for x in proc.stdout.read().split()]  # printed before the kill
    assert len(committed) >= 5
    db = History(path)  # opens cleanly: the unfinished transaction rolls back
    assert integrity(path) == "ok"
    ids = {r.id for r in db.runs(limit=10_000)[0]}
    assert set(committed) <= ids
    assert len(ids - set(committed)) <= 1  # at most the save whose id was never printed
    assert db.save(new_run()) > max(ids)
