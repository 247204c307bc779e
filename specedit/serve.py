"""`specedit serve`: the model loaded once, behind an OpenAI-compatible HTTP API.

- `POST /v1/chat/completions` (streaming and not): the model sees exactly the messages; a
  `prediction` (OpenAI's Predicted Outputs) is a draft source only, so with temperature 0 the
  answer is exactly the model's own greedy answer, just faster. When the prediction is part of the
  messages (the usual case: the file being edited), the default drafter copies it from the prompt;
  otherwise a draft pool is built over it. Usage reports accepted and rejected prediction tokens.
- `GET /v1/models`: the loaded model.
- `POST /v1/specedit/edit`: what the CLI sends with `--server` (text, instruction, options);
  answers with the edited text, the stats, the attribution and, streamed, every engine step.

One generation runs at a time (a CPU has no room for two); requests wait in order, at most
`max_queue` of them (429 beyond), and a client that disconnects cancels its generation, queued or
running.

Trust: with an API key every request must carry it (`Authorization: Bearer KEY`, else 401); a
body is read up to `max_body_bytes` (413 beyond); `/v1/specedit/edit` takes only the shipped
prompt templates by name, never a path on the server; an unexpected error is logged here and
answered with a generic 500, and no error message carries a path on the server.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import re
import sys
import threading
import time
import traceback
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from specedit import console, prompts
from specedit.drafting import DrafterUnavailable
from specedit.drafting.registry import (
    METHODS,
    DraftSources,
    make_drafter,
    method_for,
)
from specedit.edit import EditError, EditRequest, EditResult, LocalEditor, default_token_limit
from specedit.engine.events import Generation, Step
from specedit.engine.options import VERIFY_MODES, Sampling, Verification
from specedit.engine.session import generate
from specedit.models import LoadedModel
from specedit.prompts import AnswerText, EditPrompt, PromptError
from specedit.region import Surroundings
from specedit.view.attribution import Attribution

CANCELLED = "cancelled"  # the stop reason of a generation whose client went away
MAX_QUEUE = 8  # generations that may wait behind the running one
MAX_BODY_BYTES = 8 * 1024 * 1024
RETRY_AFTER_S = 10  # what a 429 advises: a generation on a CPU takes seconds to minutes
INTERNAL = "internal error; see the server's log"

# An absolute path (POSIX, ~/..., or C:\...) inside a message: not after a word character, a
# slash or a colon, so "3/26", "and/or" and URLs are left alone; a sentence's full stop stays.
_PATH = re.compile(r"(?<![\w/\\.:~-])(?:~|[A-Za-z]:)?[/\\](?=[\w.~-])[^\s'\"`()<>,;]*(?<![.:])")


def without_paths(message: str) -> str:
    """`message` with every absolute path in it replaced: a client learns nothing of the
    server's files (the cache, the model's folder, a user's home) from an error."""
    return _PATH.sub("<path on the server>", message)


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
        error = {"message": without_paths(self.message), "type": kind, "param": self.param,
                 "code": self.code}  # fmt: skip
        return {"error": error}

    def response(self) -> JSONResponse:
        return JSONResponse(self.payload(), status_code=self.status, headers=self.headers)


def log_unexpected(exc: BaseException) -> None:
    console.error(f"a request failed: {type(exc).__name__}: {exc}")
    traceback.print_exception(exc, file=sys.stderr)


# --- requests -------------------------------------------------------------------------------


class TextPart(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["text"]
    text: str


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[TextPart]
    name: str | None = None


class Prediction(BaseModel):
    model_config = ConfigDict(extra="forbid")
    type: Literal["content"]
    content: str | list[TextPart]


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    include_usage: bool = False


class ChatRequest(BaseModel):
    """The chat-completions fields specedit honours; any other field is refused (400), never
    ignored, so a client never believes a setting took effect when it did not."""

    model_config = ConfigDict(extra="forbid")
    model: str
    messages: list[Message] = Field(min_length=1)
    prediction: Prediction | None = None
    temperature: float = Field(1.0, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    max_tokens: int | None = Field(None, ge=1)
    max_completion_tokens: int | None = Field(None, ge=1)
    stop: str | list[str] | None = None
    seed: int | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: Literal[1] = 1
    user: str | None = None


class SurroundingsBody(BaseModel):
    """A region edit's file around the region (`--lines`)."""

    model_config = ConfigDict(extra="forbid")
    before: str
    after: str
    first: int = Field(ge=1)
    last: int = Field(ge=1)
    context: int | None = Field(None, ge=0)


class EditBody(BaseModel):
    """`/v1/specedit/edit`: one edit, as the CLI describes it."""

    model_config = ConfigDict(extra="forbid")
    text: str
    instruction: str
    prompt: str = "edit"
    language: str = ""
    method: str | None = None  # None: the server's default for its model and engine
    max_new_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(0.0, ge=0)
    top_k: int = Field(0, ge=0)
    top_p: float = Field(1.0, gt=0, le=1)
    seed: int | None = None
    verify: str = "strict"
    delta: float = 0.1
    verify_top_k: int = 5
    references: list[str] = []
    feedback: str = ""
    surroundings: SurroundingsBody | None = None
    stream: bool = False


def _text(content: str | list[TextPart]) -> str:
    return content if isinstance(content, str) else "".join(part.text for part in content)


# --- the worker: one generation at a time ---------------------------------------------------


@dataclass
class Job:
    """A generation's link to its client: steps go out through `emit`, `cancel` stops it."""

    emit: Callable[[Any], None]
    cancel: threading.Event


class Worker:
    """Runs generations one at a time, in order, off the event loop, and counts them; at most
    `max_queue` wait behind the running one."""

    def __init__(self, max_queue: int = MAX_QUEUE) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="specedit-generate")
        self.counts = {"queued": 0, "running": 0, "done": 0, "cancelled": 0}
        self.max_queue = max_queue
        self._lock = threading.Lock()

    def _count(self, **changes: int) -> None:
        with self._lock:
            for key, change in changes.items():
                self.counts[key] += change

    def submit(self, work: Callable[[], Any], job: Job) -> asyncio.Future:
        """Queue `work`; APIError 429 when `max_queue` generations already wait."""
        with self._lock:
            if self.counts["queued"] + self.counts["running"] > self.max_queue:
                raise APIError(
                    429, f"the server is busy: {self.max_queue} generations are waiting "
                    "already; retry later", code="rate_limit_exceeded",
                    headers={"Retry-After": str(RETRY_AFTER_S)},
                )  # fmt: skip
            self.counts["queued"] += 1

        def run() -> Any:
            self._count(queued=-1, running=1)
            try:
                return None if job.cancel.is_set() else work()  # its client may have left
            finally:
                self._count(running=-1, done=1, cancelled=int(job.cancel.is_set()))

        return asyncio.wrap_future(self._pool.submit(run))


def job_stop(job: Job, inner: Callable[[int], Any] | None = None) -> Callable[[int], Any]:
    """A generation's stop condition: its client left, or `inner` says stop."""

    def stop(token: int) -> Any:
        if job.cancel.is_set():
            return CANCELLED
        return inner(token) if inner else None

    return stop


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


class StopStrings:
    """Stops once the decoded answer contains one of `stops` (OpenAI's `stop`); reads the
    answer's new text only, so a token costs the same however long the answer is."""

    def __init__(self, decode: Callable[[list[int]], str], stops: list[str]) -> None:
        self.stops = [s for s in stops if s]
        self.answer = AnswerText(decode)
        self.longest = max(map(len, self.stops), default=0)

    def __call__(self, token: int) -> str | None:
        before = len(self.answer.text)
        self.answer.add([token])
        tail = self.answer.text[max(before - self.longest, 0) :]  # where a new match can be
        return "stop" if any(s in tail for s in self.stops) else None

    def cut(self, text: str) -> str:
        """The answer up to (not including) the first stop string."""
        ends = [text.find(s) for s in self.stops if s in text]
        return text[: min(ends)] if ends else text


# --- who may ask, and how much ---------------------------------------------------------------


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
        error = APIError(401, f"{message}: send Authorization: Bearer KEY, the server's "
                         "--api-key", code="invalid_api_key",
                         headers={"WWW-Authenticate": "Bearer"})  # fmt: skip
        await error.response()(scope, receive, send)


class LimitBody:
    """ASGI middleware: a request's body is read here, up to `max_bytes` (413 beyond, whether
    its Content-Length says so or a chunked body runs past it), then handed on whole."""

    def __init__(self, app, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        too_large = APIError(413, f"the request body is larger than this server takes "
                             f"({self.max_bytes} bytes: its --max-body-bytes)",
                             code="request_too_large")  # fmt: skip
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


# --- the app --------------------------------------------------------------------------------


def create_app(
    lm: LoadedModel,
    api_key: str | None = None,
    max_queue: int = MAX_QUEUE,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> FastAPI:
    """The server's app. With `api_key`, every request must carry it; at most `max_queue`
    generations wait behind the running one; a body holds at most `max_body_bytes`."""
    app = FastAPI(title="specedit", docs_url=None, redoc_url=None)
    app.add_middleware(LimitBody, max_bytes=max_body_bytes)
    if api_key:
        app.add_middleware(RequireKey, api_key=api_key)  # outermost: before any body is read
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
        else:
            message = f"Invalid value for {param}: {first.get('msg')}"
        return APIError(400, message, param, first.get("type")).response()

    @app.get("/v1/models")
    async def models() -> dict:
        entry = {"id": lm.name, "object": "model", "created": created, "owned_by": "specedit"}
        return {"object": "list", "data": [entry]}

    @app.get("/v1/specedit/status")
    async def status() -> dict:
        """The model and the generations so far; `cancelled` counts those whose client left."""
        return {
            "model": lm.name,
            "engine": lm.engine,
            "method": method_for(lm),
            **worker.counts,
        }

    @app.post("/v1/chat/completions")
    async def chat(body: ChatRequest, request: Request):
        if body.model != lm.name:
            raise APIError(404, f"The model `{body.model}` does not exist; this server runs "
                           "only the model it lists", "model", "model_not_found")  # fmt: skip
        run = _chat_run(lm, body)
        if body.stream:
            return _stream(worker, request, run, _chat_events(lm, body, run))
        result = await _wait(worker, request, run)
        return _chat_response(lm, body, run, result)

    @app.post("/v1/specedit/edit")
    async def edit(body: EditBody, request: Request):
        if body.prompt not in shipped:  # never a path: a client reads no file of the server's
            raise APIError(400, "the server edits with its own prompt templates only: choose "
                           f"one of {', '.join(shipped)}", "prompt", "invalid_prompt")  # fmt: skip
        run = _edit_run(lm, body)
        if body.stream:
            return _stream(worker, request, run, _edit_events(lm, run))
        result = await _wait(worker, request, run)
        return _edit_response(lm, result)

    return app


@dataclass
class Run:
    """A prepared generation: `start(job)` runs it in the worker thread."""

    start: Callable[[Job], Any]
    id: str


async def _wait(worker: Worker, request: Request, run: Run) -> Any:
    """Run to the end, cancelling if the client disconnects meanwhile."""
    job = Job(lambda _: None, threading.Event())
    future = worker.submit(lambda: run.start(job), job)
    while True:
        try:
            result = await asyncio.wait_for(asyncio.shield(future), 0.25)
        except TimeoutError:
            if await request.is_disconnected():
                job.cancel.set()
            continue
        except Exception as exc:  # logged here, before the client hears of it
            raise APIError.of(exc) from None
        if isinstance(result, APIError):
            raise result
        return result


class _GenerationStream(StreamingResponse):
    """Server-sent events that call `on_close` once the response ends, however it ends: a
    client that leaves even before the first event is sent is noticed."""

    def __init__(self, content: AsyncIterator[str], on_close: Callable[[], None]) -> None:
        super().__init__(content, media_type="text/event-stream")
        self.on_close = on_close

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self.on_close()


def _stream(worker: Worker, request: Request, run: Run, render) -> StreamingResponse:
    """Server-sent events: `render(item)` turns what the generation emits into SSE data lines;
    a client that goes away cancels the generation. The generation is queued now, so a full
    queue is a 429 rather than an error inside a stream that has begun."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue = asyncio.Queue()
    job = Job(lambda item: loop.call_soon_threadsafe(queue.put_nowait, ("item", item)),
              threading.Event())  # fmt: skip
    ended = False  # the generation's end reached the stream

    def work() -> None:
        try:
            result = run.start(job)
        except BaseException as exc:  # reported to the client, never lost in the thread
            result = exc
        loop.call_soon_threadsafe(queue.put_nowait, ("end", result))

    async def events() -> AsyncIterator[str]:
        nonlocal ended
        while True:
            what, item = await queue.get()
            for data in render(what, item):
                yield f"data: {data}\n\n"
            if what == "end":
                ended = True
                break
        yield "data: [DONE]\n\n"

    def close() -> None:
        if not ended:
            job.cancel.set()

    worker.submit(work, job)
    return _GenerationStream(events(), close)


# --- chat completions -----------------------------------------------------------------------


def _chat_run(lm: LoadedModel, body: ChatRequest) -> Run:
    tokenizer = lm.tokenizer
    messages = [{"role": "system" if m.role == "developer" else m.role, "content": _text(m.content)}
                for m in body.messages]  # fmt: skip
    continues = messages[-1]["role"] == "assistant"  # a pre-filled answer is continued
    try:
        prompt = tokenizer.apply_chat_template(
            messages, add_generation_prompt=not continues, continue_final_message=continues,
            tokenize=True, return_dict=False,
        )  # fmt: skip
    except Exception as exc:  # templates raise their own errors for unsupported roles/orders
        raise APIError(400, f"the messages do not fit the model's chat template: {exc}",
                       "messages") from None  # fmt: skip
    if isinstance(prompt, dict):
        prompt = prompt["input_ids"]
    prompt = list(prompt)
    room = lm.context_length - len(prompt)
    prediction = _text(body.prediction.content) if body.prediction else ""
    predicted = tokenizer(prediction, add_special_tokens=False)["input_ids"] if prediction else []
    limit = body.max_completion_tokens or body.max_tokens
    if limit is None:
        limit = default_token_limit(len(predicted)) if predicted else 2048
    if room < 1:
        raise APIError(400, f"the messages take {len(prompt)} tokens; the model's context holds "
                       f"{lm.context_length}", "messages", "context_length_exceeded")  # fmt: skip
    stops = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    in_prompt = bool(prediction) and any(prediction in m["content"] for m in messages)
    method = "pool" if prediction and not in_prompt else method_for(lm)
    sources = DraftSources(references=[predicted] if method == "pool" else [], draft=lm.draft)
    sampling = Sampling(body.temperature, 0, body.top_p, body.seed)

    def start(job: Job) -> dict:
        decode = LocalEditor(lm).decode
        stop_strings = StopStrings(decode, stops) if stops else None
        # Whole characters, decoded as they come; the stop condition already reads every
        # committed token, so its text is the answer's.
        answer = stop_strings.answer if stop_strings else AnswerText(decode)
        sent = 0  # characters of the answer already emitted

        def current() -> str:
            return stop_strings.cut(answer.text) if stop_strings else answer.text

        def emit_new() -> None:
            nonlocal sent
            text = current()
            if len(text) > sent:
                job.emit(text[sent:])
                sent = len(text)

        def on_step(step: Step) -> None:
            if stop_strings is None:
                answer.add(step.tokens)
            emit_new()

        generation = generate(
            lm.model, prompt, make_drafter(method, lm.model, sources),
            max_new_tokens=min(limit, room), sampling=sampling,
            eos_token_ids=lm.eos_token_ids, stop=job_stop(job, stop_strings), on_step=on_step,
            pass_cost=lm.pass_cost(),
        )  # fmt: skip
        emit_new()
        return {"text": current(), "generation": generation, "predicted": len(predicted),
                "prompt_tokens": len(prompt)}  # fmt: skip

    return Run(start, f"chatcmpl-{uuid.uuid4().hex[:24]}")


def _usage(result: dict) -> dict:
    generation: Generation = result["generation"]
    accepted = generation.stats.accepted_tokens if result["predicted"] else 0
    completion = len(generation.tokens)
    return {
        "prompt_tokens": result["prompt_tokens"],
        "completion_tokens": completion,
        "total_tokens": result["prompt_tokens"] + completion,
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "accepted_prediction_tokens": accepted,
            "rejected_prediction_tokens": max(result["predicted"] - accepted, 0),
        },
    }


def _finish_reason(generation: Generation) -> str:
    return "length" if generation.stop_reason == "length" else "stop"


def _chat_response(lm: LoadedModel, body: ChatRequest, run: Run, result: dict) -> dict:
    return {
        "id": run.id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": lm.name,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": result["text"], "refusal": None},
            "finish_reason": _finish_reason(result["generation"]),
            "logprobs": None,
        }],
        "usage": _usage(result),
    }  # fmt: skip


def _chat_events(lm: LoadedModel, body: ChatRequest, run: Run):
    created = int(time.time())
    include_usage = bool(body.stream_options and body.stream_options.include_usage)
    opened = [False]

    def chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> str:
        data = {"id": run.id, "object": "chat.completion.chunk", "created": created,
                "model": lm.name,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish,
                             "logprobs": None}] if usage is None else [],
                "usage": usage}  # fmt: skip
        return json.dumps(data, ensure_ascii=False)

    def render(what: str, item) -> list[str]:
        out = []
        if not opened[0]:
            out.append(chunk({"role": "assistant", "content": ""}))
            opened[0] = True
        if what == "item":
            out.append(chunk({"content": item}))
        elif isinstance(item, BaseException):
            out.append(json.dumps(APIError.of(item).payload()))
        else:
            out.append(chunk({}, _finish_reason(item["generation"])))
            if include_usage:
                out.append(chunk({}, usage=_usage(item)))
        return out

    return render


# --- specedit's own edit endpoint -----------------------------------------------------------


def _edit_run(lm: LoadedModel, body: EditBody) -> Run:
    method = body.method or method_for(lm)
    if method not in METHODS:
        raise APIError(400, f"unknown method {method!r}: choose one of {', '.join(METHODS)}",
                       "method")  # fmt: skip
    if body.verify not in VERIFY_MODES:
        raise APIError(400, f"unknown verification {body.verify!r}", "verify")
    try:
        request = EditRequest(
            body.text, body.instruction, prompt=body.prompt, language=body.language,
            method=method, max_new_tokens=body.max_new_tokens,
            sampling=Sampling(body.temperature, body.top_k, body.top_p, body.seed),
            verification=Verification(body.verify, body.delta, body.verify_top_k),
            references=tuple(body.references), feedback=body.feedback,
            surroundings=Surroundings(**body.surroundings.model_dump())
            if body.surroundings else None,
        )  # fmt: skip
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


def _edit_response(
    lm: LoadedModel, outcome: tuple[EditResult, Attribution | None] | APIError
) -> dict:
    if isinstance(outcome, APIError):
        raise outcome
    result, attribution = outcome
    answer = {
        "model": lm.name,
        "text": result.text,
        "changed": result.changed,
        "statement": result.statement,
        "timings": result.timings,
        "stop_reason": result.generation.stop_reason,
        "tokens": result.generation.tokens,
        "stats": result.generation.stats.as_dict(),
        "prompt": asdict(result.prompt),
    }
    if attribution is not None:
        answer["attribution"] = json.loads(attribution.to_json())
    return answer


def _edit_events(lm: LoadedModel, run: Run):
    def render(what: str, item) -> list[str]:
        if what == "item":
            kind, payload = item
            if kind == "start":
                prompt, max_new_tokens = payload
                data = {"type": "start", "prompt": asdict(prompt),
                        "max_new_tokens": max_new_tokens}  # fmt: skip
            else:
                data = {"type": "step", **asdict(payload),
                        "bytes": token_bytes(lm.tokenizer, payload.tokens)}  # fmt: skip
            return [json.dumps(data, ensure_ascii=False)]
        if isinstance(item, BaseException):
            error = APIError.of(item)
            return [json.dumps({"type": "error", "status": error.status, **error.payload()})]
        return [json.dumps({"type": "result", **_edit_response(lm, item)}, ensure_ascii=False)]

    return render
