"""The data folder (space/ui/datadir.py): tmp/ emptied at start and nothing else
touched, one app per folder, a session's files removed when it ends."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from space.ui import datadir
from space.ui.datadir import DataDirError


@pytest.fixture
def restore(monkeypatch):
    """prepare() sets GRADIO_TEMP_DIR and the active folder: undone after each test."""
    monkeypatch.setenv("GRADIO_TEMP_DIR", "unset-by-test")
    monkeypatch.setattr(datadir, "ACTIVE", None)
    opened = []
    yield opened
    for d in opened:
        d.close()


def test_start_empties_tmp_and_keeps_everything_else(tmp_path, restore):
    root = tmp_path / "data"
    (root / "tmp" / "old" / "deep").mkdir(parents=True)
    (root / "tmp" / "old" / "deep" / "x.json").write_text("{}")
    (root / "tmp" / "stray.csv").write_text("a")
    (root / "runs").mkdir()
    (root / "runs" / "kept.json").write_text("{}")
    (root / "notes.txt").write_text("mine")
    d = datadir.prepare(root)
    restore.append(d)
    assert d.root == root.resolve() and list(d.tmp.iterdir()) == []
    assert (root / "runs" / "kept.json").read_text() == "{}"
    assert (root / "notes.txt").read_text() == "mine"
    assert os.environ["GRADIO_TEMP_DIR"] == str(d.tmp)
    assert datadir.ACTIVE is d


def test_a_tmp_symlink_is_removed_not_followed(tmp_path, restore):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("x")
    root = tmp_path / "data"
    root.mkdir()
    (root / "tmp").symlink_to(outside)
    d = datadir.prepare(root)
    restore.append(d)
    assert (outside / "precious").read_text() == "x"
    assert d.tmp.is_dir() and not d.tmp.is_symlink()


def test_default_folder_follows_the_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("SPECLENS_DATA_DIR", raising=False)
    monkeypatch.setenv("SPECLENS_CACHE", str(tmp_path / "cache"))
    assert datadir.default_data_dir() == tmp_path / "cache" / "data"
    monkeypatch.delenv("SPECLENS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert datadir.default_data_dir() == tmp_path / "xdg" / "speclens" / "data"
    monkeypatch.setenv("SPECLENS_DATA_DIR", str(tmp_path / "elsewhere"))
    assert datadir.default_data_dir() == tmp_path / "elsewhere"


def test_one_app_per_folder(tmp_path, restore):
    d = datadir.prepare(tmp_path / "data")
    restore.append(d)
    datadir.ACTIVE = None  # as if another process held it
    with pytest.raises(DataDirError, match="in use by another SpecLens app"):
        datadir.prepare(tmp_path / "data")
    d.close()
    restore.append(datadir.prepare(tmp_path / "data"))


def test_an_unusable_folder_says_so(tmp_path, restore):
    (tmp_path / "file").write_text("x")
    with pytest.raises(DataDirError, match="cannot be used"):
        datadir.prepare(tmp_path / "file")


def test_a_session_end_removes_its_files_only(tmp_path, restore):
    d = datadir.prepare(tmp_path / "data")
    restore.append(d)
    mine, other = d.new_folder("sess-a"), d.new_folder("sess-b")
    (mine / "t.json").write_text("{}")
    (other / "t.json").write_text("{}")
    upload = d.tmp / "0123abcd" / "trace.json"  # Gradio's layout for an upload
    upload.parent.mkdir()
    upload.write_text("{}")
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    d.claim("sess-a", upload)
    d.claim("sess-a", outside)  # not under tmp/: never ours to delete
    d.end_session("sess-a")
    assert not mine.exists() and not upload.exists() and not upload.parent.exists()
    assert (other / "t.json").exists() and outside.exists()
    d.end_session("sess-a")  # twice, or an unknown session: nothing happens
    d.end_session(None)


def test_client_chosen_session_hashes_stay_inside_sessions(tmp_path, restore):
    d = datadir.prepare(tmp_path / "data")
    restore.append(d)
    (tmp_path / "data" / "keep").mkdir()
    for evil in ("..", "../..", "../keep", "/", ""):
        assert d.session_folder(evil).parent == d.tmp / datadir.SESSIONS
        d.end_session(evil)
    assert (tmp_path / "data" / "keep").is_dir() and d.tmp.is_dir()


def test_exports_go_to_the_session_folder(tmp_path, restore, monkeypatch):
    from space.records.trace import make_compare
    from space.ui import views
    from tests.helpers.traces import ngram_run, short_baseline

    d = datadir.prepare(tmp_path / "data")
    restore.append(d)
    monkeypatch.setattr(datadir, "current_session", lambda: "sess-x")
    record = make_compare([short_baseline()], [ngram_run()])
    json_path, csv_path = (Path(p) for p in views.write_exports(record))
    assert json_path.parent.parent == d.session_folder("sess-x")
    assert csv_path.parent == json_path.parent
    d.end_session("sess-x")
    assert not json_path.exists() and not csv_path.exists()


def test_without_a_data_folder_exports_use_the_system_temp(restore):
    folder = datadir.export_folder()
    assert folder.is_dir()
    folder.rmdir()
