"""HTTP to a vLLM OpenAI-compatible server: what it serves, and one streamed completion
(docs/servers.md). Every failure is a one-line ``ServerError`` (no host); a stop is
``Cancelled``, its stream closed so that vLLM aborts the request.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

from space.common.cancel import Cancelled
from space.records.config import ConfigError, RequestSpec

Role = Literal["baseline", "speculative"]
DETAILED_FLAG = "--per-request-spec-decode-metrics detailed"
KEY_ENV = {"baseline": "SPECLENS_BASELINE_API_KEY", "speculative": "SPECLENS_SPECULATIVE_API_KEY"}
CONNECT_S = 5.0
DEFAULT_READ_S = 120.0  # longest silence between two chunks before a server counts as stuck


class ServerError(RuntimeError):
    """A server that is down, slow, answers an error or lacks a flag: one line."""


@dataclass(frozen=True)
class Server:
    """One OpenAI-compatible base URL, e.g. ``http://gpu-box:8000/v1``."""

    role: Role
    url: str
    api_key: str | None = field(default=None, repr=False)
    read_timeout_s: float = DEFAULT_READ_S

    @classmethod
    def from_flag(cls, role: Role, url: str, read_timeout_s: float = DEFAULT_READ_S) -> Server:
        """Checked at start: http(s) with a host; the key from the environment only."""
        parts = urlsplit(url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"--{role}-url must be an http:// or https:// URL with a host, "
                              f"e.g. http://gpu-box:8000/v1 (got {url[:80]!r})")
        return cls(role, url.strip().rstrip("/"), os.environ.get(KEY_ENV[role]) or None,
                   read_timeout_s)

    @property
    def host(self) -> str:
        """host:port, for the operator's console only (never in a record)."""
        return urlsplit(self.url).netloc

    @property
    def root(self) -> str:
        """Where /version, /metrics and /tokenize live."""
        return self.url[:-3] if self.url.endswith("/v1") else self.url

    def client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        timeout = httpx.Timeout(self.read_timeout_s, connect=CONNECT_S)
        return httpx.Client(headers=headers, timeout=timeout)


@dataclass(frozen=True)
class ServerInfo:
    """What a server says about itself before a run."""

    model: str                  # the served model's id (/v1/models)
    max_model_len: int | None
    vllm_version: str | None    # /version
    num_draft_positions: int    # vllm:spec_decode_num_accepted_tokens_per_pos series: k; 0 plain
    prefix_caching: bool | None = None  # vllm:cache_config_info's label; None: not exported


@dataclass(frozen=True)
class Chunk:
    token_ids: list[int]
    text: str
    arrival_s: float  # time.perf_counter() when the chunk was read


@dataclass
class Stream:
    sent_s: float
    chunks: list[Chunk] = field(default_factory=list)
    prompt_token_ids: list[int] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)    # the final chunk's usage
    metrics: dict[str, Any] = field(default_factory=dict)  # the final chunk's metrics ({}: none sent)


OnChunk = Callable[[Chunk], None]  # called on the reading thread as each chunk arrives


def _send(server: Server, method: str, url: str, body: Any = None) -> httpx.Response:
    """One request, its failure or a refused API key as a ServerError."""
    try:
        with server.client() as c:
            r = c.request(method, url, json=body)
    except httpx.TimeoutException:
        raise ServerError(f"the {server.role} server did not answer within "
                          f"{server.read_timeout_s:.0f} s") from None
    except httpx.HTTPError as exc:
        raise ServerError(f"the {server.role} server is down or unreachable "
                          f"({type(exc).__name__})") from None
    if r.status_code in (401, 403):
        raise ServerError(_http_error(server, r))
    return r


def describe(server: Server) -> ServerInfo:
    """/v1/models, /version and /metrics; raises ServerError."""
    r = _send(server, "GET", server.url + "/models")
    if r.status_code != 200:
        raise ServerError(f"the {server.role} server answered /models with HTTP "
                          f"{r.status_code}: is {server.role}-url its /v1 base?")
    try:
        model = r.json()["data"][0]
    except (ValueError, KeyError, IndexError, TypeError):
        raise ServerError(f"the {server.role} server's /models is not an OpenAI model "
                          "list") from None
    v = _send(server, "GET", server.root + "/version")
    version = v.json().get("version") if v.status_code == 200 else None
    text = read_metrics(server)
    return ServerInfo(model=str(model.get("id")), max_model_len=model.get("max_model_len"),
                      vllm_version=version, num_draft_positions=draft_positions(text),
                      prefix_caching=prefix_caching(text))


def tokenize(server: Server, model: str, text: str) -> list[int]:
    """The server's token ids for ``text``, no special tokens added; raises ServerError."""
    body = {"model": model, "prompt": text, "add_special_tokens": False}
    r = _send(server, "POST", server.root + "/tokenize", body)
    if r.status_code != 200:
        raise ServerError(_http_error(server, r).replace("answered", "answered /tokenize with"))
    try:
        ids = r.json()["tokens"]
    except (ValueError, KeyError, TypeError):
        ids = None
    if not (isinstance(ids, list) and all(isinstance(t, int) for t in ids)):
        raise ServerError(f"the {server.role} server's /tokenize sent no token ids")
    return ids


def read_metrics(server: Server) -> str:
    r = _send(server, "GET", server.root + "/metrics")
    return r.text if r.status_code == 200 else ""


def draft_positions(prom_text: str) -> int:
    """Distinct ``position`` labels of vLLM's per-position acceptance counter: k."""
    name = "vllm:spec_decode_num_accepted_tokens_per_pos"
    positions = {line.split('position="', 1)[1].split('"', 1)[0]
                 for line in prom_text.splitlines()
                 if line.startswith(name) and 'position="' in line}
    return len(positions)


def prefix_caching(prom_text: str) -> bool | None:
    """The ``enable_prefix_caching`` label of ``vllm:cache_config_info``; None when
    the server exports no such series."""
    for line in prom_text.splitlines():
        if line.startswith("vllm:cache_config_info{") and 'enable_prefix_caching="' in line:
            return line.split('enable_prefix_caching="', 1)[1].startswith("True")
    return None


def requests_running(prom_text: str) -> float:
    """vLLM's ``num_requests_running`` gauge, summed over engines (data parallel)."""
    return sum((float(line.rsplit(" ", 1)[1]) for line in prom_text.splitlines()
                if line.startswith(("vllm:num_requests_running{", "vllm:num_requests_running "))),
               0.0)


def completion_body(model: str, prompt_ids: list[int], req: RequestSpec,
                    max_tokens: int) -> dict[str, Any]:
    """The request: the prompt as token ids (no chat template can drift), n = 1."""
    body: dict[str, Any] = {
        "model": model, "prompt": prompt_ids, "max_tokens": max_tokens,
        "temperature": req.temperature, "top_p": req.top_p, "n": 1, "stream": True,
        "stream_options": {"include_usage": True}, "return_token_ids": True,
        "ignore_eos": req.ignore_eos,
    }
    if req.seed is not None:
        body["seed"] = req.seed
    return body


def stream_completion(server: Server, body: dict[str, Any], *,
                      cancel: threading.Event | None = None,
                      on_chunk: OnChunk | None = None,
                      abort: threading.Event | None = None) -> Stream:
    """POST /v1/completions and read its stream; raises ServerError. ``cancel`` (a Stop)
    or ``abort`` (another stream of the batch failed) set: ``Cancelled`` within
    ``STOP_POLL_S``, even in a long prefill. ``on_chunk`` hears each chunk with tokens."""
    with server.client() as c:
        sent = time.perf_counter()
        try:
            with c.stream("POST", server.url + "/completions", json=body) as r:
                if r.status_code != 200:
                    r.read()
                    raise ServerError(_http_error(server, r))
                with _watching(r, cancel, abort):
                    try:
                        return _read_stream(server, r, sent, cancel, on_chunk, abort)
                    except (ServerError, httpx.HTTPError):
                        _raise_if_stopped(server, cancel, abort)
                        raise
        except httpx.TimeoutException:
            raise ServerError(f"the {server.role} server went silent for "
                              f"{server.read_timeout_s:.0f} s") from None
        except httpx.ConnectError:
            raise ServerError(f"the {server.role} server is down or unreachable") from None
        except httpx.HTTPError as exc:
            raise ServerError(f"the {server.role} server stopped mid-stream "
                              f"({type(exc).__name__}): did it die?") from None


STOP_POLL_S = 0.1  # how often a stream's watcher looks at Stop while the server is silent


@contextlib.contextmanager
def _watching(r: httpx.Response, cancel: threading.Event | None,
              abort: threading.Event | None) -> Iterator[None]:
    """Shuts the response's socket once ``cancel`` or ``abort`` is set, so that a read
    blocked on a silent server (a long prefill) returns at once."""
    if cancel is None and abort is None:
        yield
        return
    done = threading.Event()

    def watch() -> None:
        while not done.wait(STOP_POLL_S):
            if any(e is not None and e.is_set() for e in (cancel, abort)):
                sock = r.extensions.get("network_stream")
                sock = sock.get_extra_info("socket") if sock is not None else None
                if sock is not None:
                    with contextlib.suppress(OSError):  # closed: the reader ends anyway
                        sock.shutdown(socket.SHUT_RDWR)
                return

    thread = threading.Thread(target=watch, daemon=True, name="speclens-stream-watch")
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def _raise_if_stopped(server: Server, cancel: threading.Event | None,
                      abort: threading.Event | None, tokens: int | None = None) -> None:
    """Cancelled if Stop (``cancel``) or the batch (``abort``) closed the stream."""
    after = "" if tokens is None else f" after {tokens} tokens"
    if cancel is not None and cancel.is_set():
        raise Cancelled(f"the {server.role} server's stream was closed{after or ' by Stop'}")
    if abort is not None and abort.is_set():
        raise Cancelled(f"the {server.role} server's stream was closed{after}: another "
                        "request of its batch failed")


def _read_stream(server: Server, r: httpx.Response, sent: float,
                 cancel: threading.Event | None = None,
                 on_chunk: OnChunk | None = None,
                 abort: threading.Event | None = None) -> Stream:
    out = Stream(sent)
    for line in r.iter_lines():
        _raise_if_stopped(server, cancel, abort, sum(len(c.token_ids) for c in out.chunks))
        if not line.startswith("data:"):
            continue  # blank separators and ": keep-alive" comments
        data = line[5:].strip()
        if data == "[DONE]":
            if out.usage:
                return out
            break
        seen = len(out.chunks)
        _take_chunk(server, out, data, time.perf_counter())
        if on_chunk is not None and len(out.chunks) > seen:
            on_chunk(out.chunks[-1])
    raise ServerError(f"the {server.role} server stopped mid-stream after "
                      f"{sum(len(c.token_ids) for c in out.chunks)} tokens: did it die?")


def _take_chunk(server: Server, out: Stream, data: str, now: float) -> None:
    """One ``data:`` line; anything malformed is one ServerError line."""
    try:
        d = json.loads(data)
        if not isinstance(d, dict):
            raise TypeError("not an object")
        if "error" in d:
            err = d["error"]
            msg = err.get("message") if isinstance(err, dict) else err
            raise ServerError(f"the {server.role} server failed mid-stream: "
                              f"{_one_line(str(msg))}")
        choices = d.get("choices") or []
        if choices:
            ch = choices[0]
            ids = ch.get("token_ids")
            if ids is None:
                raise ServerError(f"the {server.role} server sent no token ids: vLLM 0.32 or "
                                  "later is needed (return_token_ids)")
            if not _ids(ids) or not _ids(ch.get("prompt_token_ids") or []):
                raise TypeError("token ids that are not integers")
            if not isinstance(ch.get("text") or "", str):
                raise TypeError("a text that is not a string")
            if ch.get("prompt_token_ids"):
                out.prompt_token_ids = list(ch["prompt_token_ids"])
            if ids:
                out.chunks.append(Chunk(list(ids), ch.get("text") or "", now))
            if ch.get("finish_reason"):
                out.finish_reason = ch["finish_reason"]
        if d.get("usage"):
            if not isinstance(d["usage"], dict) or not isinstance(d.get("metrics") or {}, dict):
                raise TypeError("usage or metrics that are not objects")
            out.usage = d["usage"]
            out.metrics = d.get("metrics") or {}
    except (ValueError, TypeError, KeyError, AttributeError, IndexError) as exc:
        why = "not JSON" if isinstance(exc, ValueError) else _one_line(str(exc))[:80]
        raise ServerError(f"the {server.role} server sent a malformed chunk ({why})") from None


def _ids(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(t, int) and not isinstance(t, bool)
                                       for t in v)


def _http_error(server: Server, r: httpx.Response) -> str:
    if r.status_code in (401, 403):
        return (f"the {server.role} server refused the API key (HTTP {r.status_code}): "
                f"set {KEY_ENV[server.role]}")
    try:
        msg = r.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        msg = r.text
    return f"the {server.role} server answered HTTP {r.status_code}: {_one_line(str(msg))}"


def _one_line(msg: str) -> str:
    return " ".join(msg.split())[:200]
