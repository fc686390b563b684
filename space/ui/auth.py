"""Who may use a shared SpecLens: the login table and its sources (--auth, --auth-file,
$SPECLENS_AUTH, $SPECLENS_AUTH_FILE). Standard library only, so ``app.py`` refuses a bad
start before Gradio loads; errors name the line's number, never the line (a password)."""
from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

ENV_AUTH = "SPECLENS_AUTH"
ENV_AUTH_FILE = "SPECLENS_AUTH_FILE"
MAX_AUTH_FILE_BYTES = 1 << 20  # a login table, not a data file


class AuthError(ValueError):
    """A login source that cannot be used; the message is for the operator and
    never contains a password."""


def _digest(text: str) -> bytes:
    # Fixed-length digests keep the comparison's time independent of lengths too.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


_NO_SUCH_USER = _digest("\0speclens: no such user\0")


class LoginTable:
    """Names and passwords; ``check`` is the callable Gradio's ``auth=`` takes."""

    def __init__(self, logins: Iterable[tuple[str, str]] = ()) -> None:
        self._digests: dict[str, bytes] = {}
        for user, password in logins:
            if user in self._digests:
                raise AuthError(f"the user {user!r} is given twice")
            self._digests[user] = _digest(password)

    @property
    def names(self) -> list[str]:
        return sorted(self._digests)

    def __len__(self) -> int:
        return len(self._digests)

    def check(self, user: str, password: str) -> bool:
        """Constant time in the password, and an unknown name costs the same
        comparison as a known one."""
        expected = self._digests.get(user, _NO_SUCH_USER)
        ok = hmac.compare_digest(_digest(password), expected)
        return ok and user in self._digests


def parse_login(text: str, where: str) -> tuple[str, str]:
    """``user:password`` -> (user, password), the password may hold colons; ``where``
    names the source in the error."""
    user, sep, password = text.strip().partition(":")
    if not sep or not user.strip() or not password:
        raise AuthError(f"{where}: expected user:password with both parts non-empty")
    return user.strip(), password


def read_auth_file(path: str | Path, source: str = "--auth-file") -> list[tuple[str, str]]:
    p = Path(path)
    where = f"{source} {p}"
    try:
        if p.stat().st_size > MAX_AUTH_FILE_BYTES:
            raise AuthError(f"{where}: larger than {MAX_AUTH_FILE_BYTES >> 10} KiB; "
                            "is it the right file?")
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AuthError(f"{where}: no such file") from None
    except UnicodeDecodeError:
        raise AuthError(f"{where}: not UTF-8 text") from None
    except OSError as exc:
        raise AuthError(f"{where}: cannot read it ({exc.strerror or type(exc).__name__})") from None
    return [parse_login(line, f"{where} line {number}")  # blank lines and # comments skipped
            for number, line in enumerate(text.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith("#")]


def readable_by_others(path: str | Path) -> bool:
    """Whether a group or other users may read the file (worth a warning). Docker
    secrets are left out: their mode is the host file's, which other containers need."""
    p = Path(path)
    if p.is_relative_to("/run/secrets"):
        return False
    try:
        return bool(p.stat().st_mode & (stat.S_IRGRP | stat.S_IROTH))
    except OSError:
        return False


def collect_logins(cli: Iterable[str] = (), auth_file: str | None = None,
                   environ: Mapping[str, str] | None = None) -> LoginTable:
    """Every source merged into one table, in this order (a name given twice is an error)."""
    env = os.environ if environ is None else environ
    logins = [parse_login(v, "--auth") for v in cli]
    if auth_file:
        logins += read_auth_file(auth_file)
    if env.get(ENV_AUTH, "").strip():
        entries = [e for e in env[ENV_AUTH].split(",") if e.strip()]
        logins += [parse_login(e, f"${ENV_AUTH} entry {i}") for i, e in enumerate(entries, 1)]
    if env.get(ENV_AUTH_FILE, "").strip():
        logins += read_auth_file(env[ENV_AUTH_FILE].strip(), f"${ENV_AUTH_FILE}")
    return LoginTable(logins)


def is_loopback(host: str) -> bool:
    """Whether only this machine can reach an address.

    Example:
        >>> [is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "10.0.0.5")]
        [True, True, True, False, False]
    """
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to anything


def login_required_error(host: str, share: bool, logins: LoginTable,
                         insecure_no_auth: bool) -> str | None:
    """The one-line refusal for a reachable server without a login, or None."""
    if len(logins) or insecure_no_auth or (is_loopback(host) and not share):
        return None
    where = "a public --share link" if share else f"--host {host}"
    return (f"{where} lets others reach the app: give logins with --auth-file FILE or "
            f"${ENV_AUTH} (user:pass,...), or pass --insecure-no-auth to serve it to anyone")
