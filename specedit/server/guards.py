"""Who may ask, and how much: the Host and Origin a request names, the API key, and the body's
size and pace, checked before any route runs."""

from __future__ import annotations

import asyncio
import hmac
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from specedit.server.errors import APIError
from specedit.server.hosts import is_loopback

MAX_BODY_BYTES = 8 * 1024 * 1024
BODY_TIMEOUT_S = 30.0  # the longest wait for the next piece of a body
KEEP_ALIVE_S = 5  # how long an idle connection stays open after an answer
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

# A Host header: a name or an IPv4 address, or an IPv6 address in brackets; then maybe a port.
_HOST = re.compile(r"(\[[0-9a-f:.]+\]|[^\[\]:/@\s]+)(?::(\d{1,5}))?")


def needs_key_warning(host: str, api_key: str | None) -> bool:
    """Whether serving on `host` without a key lets other machines in: any address but
    loopback."""
    return not api_key and not is_loopback(host)


def _split_host(value: str) -> tuple[str, str | None] | None:
    """A Host header's name (lower case, without a final dot; an IPv6 address in brackets) and
    its port; None when it is neither."""
    match = _HOST.fullmatch(value.strip().lower())
    return (match[1].removesuffix("."), match[2]) if match else None


def host_name(value: str) -> str:
    """`--allow-host`'s name as a Host header names it (an IPv6 address in brackets);
    ValueError for anything else, a port included."""
    value = value.strip()
    if value.count(":") > 1 and not value.startswith("["):  # an IPv6 address
        value = f"[{value}]"
    split = _split_host(value)
    if split is None or split[1] is not None:
        raise ValueError(f"--allow-host takes a host name or address, without a port: {value!r}")
    return split[0]


def origin(value: str) -> str:
    """`--allow-origin`'s URL as a browser sends it in `Origin` (scheme://host[:port], without
    the scheme's default port); ValueError for anything else."""
    parts = urlsplit(value.strip().lower())
    default = {"http": 80, "https": 443}.get(parts.scheme)
    try:
        port = parts.port
    except ValueError:  # not a number, or out of range
        port = -1
    extra = parts.path.strip("/") or parts.query or parts.fragment or parts.username
    if default is None or not parts.hostname or extra or port == -1:
        raise ValueError(f"--allow-origin takes scheme://host[:port], as in Origin: {value!r}")
    return f"{parts.scheme}://{parts.netloc.removesuffix(f':{default}')}"


class CheckHostAndOrigin:
    """ASGI middleware against a web page's requests (DNS rebinding, cross-site requests): a
    request whose `Origin` is not one of this server's own (http://NAME:PORT for a loopback
    NAME and the port it came in on) nor of `origins` gets a 403; where Host is checked (bound
    to loopback, or `hosts` given), a request whose Host names neither a loopback NAME (with
    no port or this port) nor one of `hosts` (with any port) gets a 421."""

    def __init__(
        self, app, bound: str, hosts: Iterable[str] = (), origins: Iterable[str] = ()
    ) -> None:
        self.app = app
        self.hosts, self.origins = set(hosts), set(origins)
        self.loopback = set(LOOPBACK_NAMES)
        local = is_loopback(bound)
        if local:  # 127.8.9.10 answers to its own address too
            self.loopback.add(host_name(bound))
        self.check_host = local or bool(self.hosts)

    def _refusal(self, scope) -> APIError | None:
        headers = dict(scope["headers"])
        port = str((scope.get("server") or (None, None))[1])
        split = _split_host(headers.get(b"host", b"").decode("latin-1"))
        if self.check_host and not (
            split is not None
            and (split[0] in self.hosts or (split[0] in self.loopback and split[1] in (None, port)))
        ):
            return APIError(
                421,
                f"this server answers requests for {', '.join(sorted(self.loopback))} and the "
                "names of its --allow-host only",
                code="misdirected_request",
            )
        given = headers.get(b"origin")
        if given is not None:
            own = {f"http://{name}:{port}" for name in self.loopback}
            if given.decode("latin-1").lower() not in own | self.origins:
                return APIError(
                    403,
                    "requests from web pages are refused; the server's --allow-origin allows a "
                    "page's origin",
                    code="origin_not_allowed",
                )
        return None

    async def __call__(self, scope, receive, send) -> None:
        refusal = self._refusal(scope) if scope["type"] == "http" else None
        if refusal is None:
            return await self.app(scope, receive, send)
        await refusal.response()(scope, receive, send)


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
    its Content-Length says so or a chunked body runs past it), each piece within `timeout_s`
    of the last (408 after: a client that sends less than it declared holds no connection for
    ever), then handed on whole."""

    def __init__(self, app, max_bytes: int, timeout_s: float = BODY_TIMEOUT_S) -> None:
        self.app, self.max_bytes, self.timeout_s = app, max_bytes, timeout_s

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
            try:
                message = await asyncio.wait_for(receive(), self.timeout_s)
            except TimeoutError:
                too_slow = APIError(
                    408,
                    f"the request body did not arrive: nothing came for {self.timeout_s:g} s",
                    code="request_timeout",
                    headers={"Connection": "close"},
                )
                return await too_slow.response()(scope, receive, send)
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
