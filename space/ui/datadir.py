"""The app's folder (``--data-dir``), locked while an app runs: its ``tmp/`` (Gradio's
upload cache, emptied at every start) holds ``sessions/<id>/``, one browser session's
downloads, which go with the uploads it claimed when the session ends."""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from space.common.paths import data_dir as default_data_dir

SESSIONS = "sessions"


class DataDirError(ValueError):
    """A data folder that cannot be used; the message is for the operator."""


def session_id(session_hash: str) -> str:
    """A folder name for a client-chosen session hash: hashed, so "../x" stays inside."""
    return hashlib.sha256(session_hash.encode("utf-8", "surrogatepass")).hexdigest()[:24]


@dataclass
class DataDir:
    root: Path
    _lock_fd: int | None = None
    _claimed: dict[str, set[Path]] = field(default_factory=dict)
    _mutex: threading.Lock = field(default_factory=threading.Lock)

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    def session_folder(self, session_hash: str) -> Path:
        return self.tmp / SESSIONS / session_id(session_hash)

    def new_folder(self, session_hash: str | None, prefix: str = "export-") -> Path:
        """A fresh folder for files handed to a visitor, inside the session's folder."""
        parent = self.session_folder(session_hash) if session_hash else self.tmp / SESSIONS / "_none"
        parent.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))

    def claim(self, session_hash: str | None, path: str | os.PathLike | None) -> None:
        """Remove this file (an upload in tmp/) when the session ends."""
        if not session_hash or not path:
            return
        p = Path(path).resolve()
        if not p.is_relative_to(self.tmp.resolve()):
            return  # not ours to delete
        with self._mutex:
            self._claimed.setdefault(session_hash, set()).add(p)

    def end_session(self, session_hash: str | None) -> None:
        if not session_hash:
            return
        shutil.rmtree(self.session_folder(session_hash), ignore_errors=True)
        with self._mutex:
            claimed = self._claimed.pop(session_hash, set())
        for p in claimed:
            p.unlink(missing_ok=True)
            with contextlib.suppress(OSError):  # Gradio's per-file folder, when now empty
                p.parent.rmdir()

    def close(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)  # closing the descriptor releases the lock
            self._lock_fd = None


def _lock(root: Path) -> int:
    """An exclusive lock on the folder itself (no lock file is left behind)."""
    import fcntl

    fd = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        raise DataDirError(f"the data folder {root} is in use by another SpecLens app: "
                           "give each app its own --data-dir") from None
    return fd


def prepare(root: str | os.PathLike | None = None) -> DataDir:
    """Create and lock the data folder, empty its tmp/, and point Gradio's upload
    cache there: before Gradio builds a component (each reads GRADIO_TEMP_DIR)."""
    global ACTIVE
    path = Path(root).expanduser() if root else default_data_dir()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = path.resolve()
        if ACTIVE is not None and ACTIVE.root == path:
            ACTIVE.close()  # the same process starting over
        data = DataDir(path, _lock(path))
    except OSError as exc:
        raise DataDirError(f"the data folder {path} cannot be used: "
                           f"{exc.strerror or type(exc).__name__}") from None
    try:
        if data.tmp.is_symlink() or (data.tmp.exists() and not data.tmp.is_dir()):
            data.tmp.unlink()  # a link is removed, never followed
        elif data.tmp.exists():
            shutil.rmtree(data.tmp)
        data.tmp.mkdir(mode=0o700)
    except OSError as exc:
        data.close()
        raise DataDirError(f"cannot empty {data.tmp}: "
                           f"{exc.strerror or type(exc).__name__}") from None
    os.environ["GRADIO_TEMP_DIR"] = str(data.tmp)
    ACTIVE = data
    return data


# The app's data folder once ``prepare`` ran; None in library use and unit tests.
ACTIVE: DataDir | None = None


def current_session() -> str | None:
    from gradio.context import LocalContext

    request = LocalContext.request.get(None)
    return getattr(request, "session_hash", None) if request is not None else None


def export_folder(prefix: str = "speclens-") -> Path:
    """A fresh folder for a download in the current session's; without an active
    data folder (library use, unit tests), a system temp folder."""
    if ACTIVE is None:
        return Path(tempfile.mkdtemp(prefix=prefix))
    return ACTIVE.new_folder(current_session(), prefix)


def claim_upload(path: str | os.PathLike | None) -> None:
    if ACTIVE is not None:
        ACTIVE.claim(current_session(), path)


def end_session(session_hash: str | None) -> None:
    if ACTIVE is not None:
        ACTIVE.end_session(session_hash)
