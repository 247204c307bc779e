"""`specedit serve`: the model loaded once, behind an OpenAI-compatible HTTP API.

- `POST /v1/chat/completions` (streaming and not): chat completions with Predicted Outputs
  (openai.py).
- `GET /v1/models`: the loaded model.
- `POST /v1/specedit/edit`: what the CLI sends with `--server` (text, instruction, options; the
  schema is protocol.py's); answers with the edited text, the stats, the attribution and,
  streamed, every engine step.

One generation runs at a time (a CPU has no room for two); requests wait in order, at most
`max_queue` of them (429 beyond), and a client that disconnects cancels its generation, queued or
running (worker.py).

Trust: a web page's request is refused (its Origin, 403) and so is one for another host name
(DNS rebinding, 421); with an API key every request must carry it (`Authorization: Bearer KEY`,
else 401); a body is read up to `max_body_bytes` (413 beyond), each piece within
`body_timeout_s` (408 after) (guards.py); `/v1/specedit/edit` takes only the shipped prompt
templates by name, never a path on the server; the model is named without its folder
(`public_name`); an unexpected error is logged here and answered with a generic 500, and no error
message carries a path on the server (errors.py).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse

from specedit.drafting import DrafterUnavailable
from specedit.drafting.registry import METHODS, method_for
from specedit.editing import prompts
from specedit.editing.editor import EditError, EditResult
from specedit.editing.local import LocalEditor
from specedit.editing.prompts import EditPrompt, PromptError
from specedit.engine.events import Step
from specedit.engine.options import VERIFY_MODES
from specedit.models.load import LoadedModel
from specedit.server import openai
from specedit.server.errors import INTERNAL, APIError
from specedit.server.guards import (
    BODY_TIMEOUT_S,
    MAX_BODY_BYTES,
    CheckHostAndOrigin,
    LimitBody,
    RequireKey,
    host_name,
    origin,
)
from specedit.server.openai import ChatRequest
from specedit.server.protocol import (
    EditAnswer,
    EditBody,
    error_event,
    from_body,
    result_event,
    start_event,
    step_event,
)
from specedit.server.worker import MAX_QUEUE, Job, Run, Worker, job_stop, stream, wait
from specedit.view.attribution import Attribution


def token_bytes(tokenizer, ids: list[int]) -> list[str]:
    """Each token's bytes as hex, so a client decodes exactly what this tokenizer decodes
    (byte-level BPE: the bytes behind each token; otherwise each token's own text)."""
    special = set(tokenizer.all_special_ids)
    decoder = getattr(getattr(tokenizer, "backend_tokenizer", None), "decoder", None)
    if decoder is not None and type(decoder).__name__ == "ByteLevel":
        from transformers.convert_slow_tokenizer import bytes_to_unicode

        byte_of = {char: byte for byte, char in bytes_to_unicode().items()}
        pieces = tokenizer.convert_ids_to_tokens(ids)
        return [
            b"".hex() if i in special else bytes(byte_of.get(c, 0) for c in piece).hex()
            for i, piece in zip(ids, pieces, strict=True)
        ]
    return [tokenizer.decode([i], skip_special_tokens=True).encode().hex() for i in ids]


def public_name(model: str) -> str:
    """What clients call the model `model` names: a bundled name or a hub id as it is, a local
    folder or file by its own name only, so no answer tells where the server keeps it."""
    path = Path(model).expanduser()
    return (path.resolve().name or "model") if path.exists() else model


def create_app(
    lm: LoadedModel,
    api_key: str | None = None,
    max_queue: int = MAX_QUEUE,
    max_body_bytes: int = MAX_BODY_BYTES,
    host: str = "127.0.0.1",
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
    body_timeout_s: float = BODY_TIMEOUT_S,
) -> FastAPI:
    """The server's app, listening on `host`. A request must name this server in its Host
    (`allow_hosts`: more names) and come from no web page but those of `allow_origins`; with
    `api_key`, it must carry the key; at most `max_queue` generations wait behind the running
    one; a body holds at most `max_body_bytes`, each piece within `body_timeout_s` of the last.
    ValueError for a host name or origin that is not one."""
    hosts, origins = [host_name(h) for h in allow_hosts], [origin(o) for o in allow_origins]
    app = FastAPI(title="specedit", docs_url=None, redoc_url=None)
    # Starlette runs the middleware added last first: the Host and Origin, then the browser's
    # preflight (which carries no key), then the key, all before any body is read.
    app.add_middleware(LimitBody, max_bytes=max_body_bytes, timeout_s=body_timeout_s)
    if api_key:
        app.add_middleware(RequireKey, api_key=api_key)
    if origins:  # a page allowed must be able to read the answers, and to send JSON and a key
        app.add_middleware(
            CORSMiddleware,
            allow_origins=origins,
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type"],
        )
    app.add_middleware(CheckHostAndOrigin, bound=host, hosts=hosts, origins=origins)
    name = public_name(lm.name)
    worker = Worker(max_queue)
    created = int(time.time())
    shipped = prompts.available()

    @app.exception_handler(APIError)
    async def api_error(request: Request, exc: APIError) -> JSONResponse:
        return exc.response()

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        # Outside a generation: Starlette raises `exc` on after this answer, and uvicorn logs
        # it with its traceback.
        return APIError(500, INTERNAL).response()

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0]
        where = [str(p) for p in first.get("loc", ()) if p != "body"]
        param = ".".join(where) or None
        if first.get("type") == "extra_forbidden":
            message = f"Unrecognized request argument supplied: {param}"
        elif first.get("type") == "value_error":  # a validator's own words
            message = f"Invalid value for {param}: {first['ctx']['error']}"
        else:
            message = f"Invalid value for {param}: {first.get('msg')}"
        return APIError(400, message, param, first.get("type")).response()

    @app.get("/v1/models")
    async def models() -> dict:
        entry = {"id": name, "object": "model", "created": created, "owned_by": "specedit"}
        return {"object": "list", "data": [entry]}

    @app.get("/v1/specedit/status")
    async def status() -> dict:
        """The model and the generations so far; `cancelled` counts those whose client left."""
        return {
            "model": name,
            "engine": lm.engine,
            "method": method_for(lm),
            **worker.counts,
        }

    @app.post("/v1/chat/completions")
    async def chat(body: ChatRequest, request: Request):
        return await openai.chat(lm, name, worker, body, request)

    @app.post("/v1/specedit/edit")
    async def edit(body: EditBody, request: Request):
        if body.prompt not in shipped:  # never a path: a client reads no file of the server's
            raise APIError(
                400,
                "the server edits with its own prompt templates only: choose "
                f"one of {', '.join(shipped)}",
                "prompt",
                "invalid_prompt",
            )
        run = _edit_run(lm, body)
        if body.stream:
            return stream(worker, request, run, _edit_events(lm, name, run))
        result = await wait(worker, request, run)
        return _edit_answer(name, result).wire()

    return app


def _edit_run(lm: LoadedModel, body: EditBody) -> Run:
    method = body.method or method_for(lm)
    if method not in METHODS:
        raise APIError(
            400, f"unknown method {method!r}: choose one of {', '.join(METHODS)}", "method"
        )
    if body.verify not in VERIFY_MODES:
        raise APIError(400, f"unknown verification {body.verify!r}", "verify")
    try:
        request = from_body(body, method)
    except ValueError as exc:
        raise APIError(400, str(exc)) from None
    editor = LocalEditor(lm)

    def start(job: Job) -> tuple[EditResult, Attribution | None] | APIError:
        # A streamed edit's client attributes the steps itself; only a plain answer carries it.
        attribution: list[Attribution] = []

        def on_start(prompt: EditPrompt, max_new_tokens: int) -> None:
            job.emit(("start", (prompt, max_new_tokens)))
            if not body.stream:
                attribution.append(Attribution(prompt, editor.decode))

        def on_step(step: Step) -> None:
            for view in attribution:
                view.add(step)
            job.emit(("step", step))

        try:
            result = editor.edit(request, on_start, on_step, stop=job_stop(job))
        except (EditError, PromptError, DrafterUnavailable) as exc:
            return APIError(422, str(exc), code="edit_failed")
        return result, attribution[0] if attribution else None

    return Run(start, f"edit-{uuid.uuid4().hex[:24]}")


def _edit_answer(
    name: str, outcome: tuple[EditResult, Attribution | None] | APIError
) -> EditAnswer:
    if isinstance(outcome, APIError):
        raise outcome
    result, attribution = outcome
    return EditAnswer.of(name, result, attribution.to_json() if attribution is not None else None)


def _edit_events(lm: LoadedModel, name: str, run: Run):
    def render(what: str, item) -> list[str]:
        if what == "item":
            kind, payload = item
            if kind == "start":
                data = start_event(*payload)
            else:
                data = step_event(payload, token_bytes(lm.tokenizer, payload.tokens))
            return [json.dumps(data, ensure_ascii=False)]
        if isinstance(item, BaseException):
            error = APIError.of(item)
            return [json.dumps(error_event(error.status, error.payload()))]
        return [json.dumps(result_event(_edit_answer(name, item)), ensure_ascii=False)]

    return render
