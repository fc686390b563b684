"""ASGI middleware in front of Gradio's ``POST /login``: a locked address or
name gets 429 with Retry-After before Gradio sees the password, and Gradio's
answer (200 right, 400 wrong) feeds the limiter."""
from __future__ import annotations

import json

from space.common.ratelimit import LoginLimiter, retry_after_header, too_many_message

MAX_LOGIN_BODY_BYTES = 64 << 10  # a name and a password, with room to spare
LOGIN_PATHS = ("/login", "/login/")


async def _send_plain(send, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body).encode()
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
    raw += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


async def _read_body(receive, limit: int) -> bytes | None:
    """The whole request body, or None past ``limit`` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks)  # the client left: an empty form
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if size > limit:
            return None
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replay(body: bytes, receive):
    sent = False

    async def replay():
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # later reads wait for the disconnect, as usual
    return replay


async def form_username(scope, body: bytes, receive) -> str:
    """The ``username`` field of a login form (urlencoded or multipart), stripped
    as Gradio strips it; "" when there is none."""
    from starlette.requests import Request

    try:
        form = await Request(scope, _replay(body, receive)).form()
        value = form.get("username")
    except Exception:  # a malformed form: Gradio answers it; count it under ""
        return ""
    return value.strip() if isinstance(value, str) else ""


class LoginGuard:
    def __init__(self, app, limiter: LoginLimiter) -> None:
        self.app, self.limiter = app, limiter

    async def __call__(self, scope, receive, send) -> None:
        if (scope["type"] != "http" or scope.get("method") != "POST"
                or scope.get("path") not in LOGIN_PATHS):
            await self.app(scope, receive, send)
            return
        body = await _read_body(receive, MAX_LOGIN_BODY_BYTES)
        if body is None:
            await _send_plain(send, 413, {"detail": "login form too large"})
            return
        client = scope.get("client")  # the TCP peer: a client sets forwarded-for headers
        address = str(client[0]) if client else "unknown"
        user = await form_username(scope, body, receive)
        wait_s = self.limiter.retry_after_s(address, user)
        if wait_s > 0:
            await _send_plain(send, 429, {"detail": too_many_message(wait_s)},
                              {"Retry-After": retry_after_header(wait_s)})
            return
        status = 0

        async def send_and_watch(message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self.app(scope, _replay(body, receive), send_and_watch)
        if status == 200:
            self.limiter.succeeded(address, user)
        elif status == 400:  # Gradio's "Incorrect credentials."
            self.limiter.failed(address, user)
