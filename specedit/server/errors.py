"""The server's errors, as OpenAI's API answers them; none carries a path on the server."""

from __future__ import annotations

import re
import sys
import traceback

from fastapi.responses import JSONResponse

from specedit import console

INTERNAL = "internal error; see the server's log"

# An absolute path (POSIX, ~/..., or C:\...) inside a message: not after a word character, a
# slash or a colon, so "3/26", "and/or" and URLs are left alone; a sentence's full stop stays.
_PATH = re.compile(r"(?<![\w/\\.:~-])(?:~|[A-Za-z]:)?[/\\](?=[\w.~-])[^\s'\"`()<>,;]*(?<![.:])")


def without_paths(message: str) -> str:
    """`message` with every absolute path in it replaced: a client learns nothing of the
    server's files (the cache, the model's folder, a user's home) from an error."""
    return _PATH.sub("<path on the server>", message)


class APIError(Exception):
    """An OpenAI-style error: HTTP status, message, type, and the parameter at fault."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code
        self.headers = headers

    @classmethod
    def of(cls, exc: BaseException) -> APIError:
        """`exc` as the client sees it: an unexpected error's text (which may name files on
        the server) goes to the server's log, the client gets a generic 500."""
        if isinstance(exc, APIError):
            return exc
        log_unexpected(exc)
        return cls(500, INTERNAL)

    def payload(self) -> dict:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        error = {
            "message": without_paths(self.message),
            "type": kind,
            "param": self.param,
            "code": self.code,
        }
        return {"error": error}

    def response(self) -> JSONResponse:
        return JSONResponse(self.payload(), status_code=self.status, headers=self.headers)


def log_unexpected(exc: BaseException) -> None:
    console.error(f"a request failed: {type(exc).__name__}: {exc}")
    traceback.print_exception(exc, file=sys.stderr)
