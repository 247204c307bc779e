"""Who may ask, and how much: the API key and the body's size, checked before any route runs."""

from __future__ import annotations

import hmac
import ipaddress

from specedit.server.errors import APIError

MAX_BODY_BYTES = 8 * 1024 * 1024


def needs_key_warning(host: str, api_key: str | None) -> bool:
    """Whether serving on `host` without a key lets other machines in: any address but
    loopback (127.0.0.0/8, ::1, localhost)."""
    if api_key:
        return False
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost":
        return False
    try:
        return not ipaddress.ip_address(name).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return True


class RequireKey:
    """ASGI middleware: every request carries `Authorization: Bearer KEY`, or gets a 401
    before anything else is read."""

    def __init__(self, app, api_key: str) -> None:
        self.app, self._key = app, api_key.encode()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":  # lifespan
            return await self.app(scope, receive, send)
        given = dict(scope["headers"]).get(b"authorization")
        scheme, _, token = (given or b"").strip().partition(b" ")
        # compared whatever the scheme, so a wrong scheme takes as long as a wrong key
        right = hmac.compare_digest(token.strip(), self._key) and scheme.lower() == b"bearer"
        if right:
            return await self.app(scope, receive, send)
        message = "Incorrect API key provided" if given else "You didn't provide an API key"
        error = APIError(
            401,
            f"{message}: send Authorization: Bearer KEY, the server's --api-key",
            code="invalid_api_key",
            headers={"WWW-Authenticate": "Bearer"},
        )
        await error.response()(scope, receive, send)


class LimitBody:
    """ASGI middleware: a request's body is read here, up to `max_bytes` (413 beyond, whether
    its Content-Length says so or a chunked body runs past it), then handed on whole."""

    def __init__(self, app, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_large = APIError(
            413,
            f"the request body is larger than this server takes "
            f"({self.max_bytes} bytes: its --max-body-bytes)",
            code="request_too_large",
        )
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None:
            if not declared.strip().isdigit():
                error = APIError(400, "the Content-Length header is not a number")
                return await error.response()(scope, receive, send)
            if int(declared) > self.max_bytes:
                return await too_large.response()(scope, receive, send)
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left; nobody to answer
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.max_bytes:
                return await too_large.response()(scope, receive, send)
            if not message.get("more_body", False):
                break
        body = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def replay() -> dict:
            return body.pop() if body else await receive()  # then the client's disconnect

        await self.app(scope, replay, send)
