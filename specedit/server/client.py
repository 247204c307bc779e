"""Edits on a server (`--server URL`): a warm `specedit serve`, or any OpenAI-compatible one.

`connect` asks the server what it is. `specedit serve` gets the edit itself and streams back
every engine step, so delivery (cli/deliver.py), the dashboard and every output option behave
as for a local edit.
Any other chat-completions server (vLLM, SGLang, llama.cpp's llama-server, a hosted API) gets
the same prompt as messages with the file as `prediction`; its answer's code block is the edit,
and the safety checks, --test and exit codes apply as always.

The standard library and the wire schema (protocol.py, pydantic) are all it uses: the client
side never loads torch.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator

from specedit.console import warning
from specedit.drafting.registry import DEFAULT_METHOD
from specedit.editing import prompts
from specedit.editing.editor import (
    STATEMENT_TOKENS,
    EditError,
    Editor,
    EditorUnavailable,
    EditRequest,
    EditResult,
    OnStart,
    cut_off,
    default_token_limit,
)
from specedit.editing.prompts import EditPrompt
from specedit.engine.events import Generation, Stats, Step
from specedit.engine.options import Sampling
from specedit.server.hosts import is_loopback
from specedit.server.protocol import EditAnswer, prompt_from, read_step, to_body


def _events(response) -> Iterator[dict]:
    """The JSON objects of a server-sent event stream, until [DONE]."""
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            return
        yield json.loads(line[6:])


class ServerRefused(EditorUnavailable):
    """The server answered, with an HTTP error (`status`)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class _NotRedirected(urllib.request.HTTPRedirectHandler):
    """A redirect is an error: urllib would send the key (and a GET's question) on to
    whatever address the answer names, past the checks made on the one the user gave."""

    def redirect_request(self, *args, **kwargs) -> None:
        return None


def _request(url: str, body: dict | None = None, timeout: float | None = None, key=None):
    """Open `url` (POST `body` as JSON if given) with `key` as its bearer token; errors become
    EditorUnavailable (ServerRefused when the server answered with an error). A redirect is
    not followed: the key and the code go to the address the user gave, and nowhere else."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        # built for each request, as urlopen's is not: the proxies are the environment's now
        return urllib.request.build_opener(_NotRedirected).open(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            exc.close()
            where = exc.headers.get("Location")
            said = f"redirects to {where!r}" if where else f"answered {exc.code}"
            raise EditorUnavailable(
                f"the server at {url} {said}, which is not followed: give the address to use "
                "with --server"
            ) from None
        try:
            message = json.loads(exc.read())["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = exc.reason
        if exc.code == 401:
            message += "; give the server's key with --api-key or SPECEDIT_API_KEY"
        raise ServerRefused(
            f"the server at {url} refused the request: {message}", exc.code
        ) from None
    except OSError as exc:
        raise EditorUnavailable(
            f"cannot reach the server at {url}: {exc}; start one with `specedit serve` "
            "or drop --server"
        ) from None


def sendable_key(url: str, key: str | None) -> str | None:
    """`key`, unless it would cross the network in clear text: plain http to a host other than
    this machine gets no key (a warning says so; https or a loopback address does)."""
    if not key:
        return None
    address = urllib.parse.urlsplit(url)
    if address.scheme == "http" and not is_loopback(address.hostname or ""):
        warning(
            f"not sending the API key to {address.hostname} over plain http, where anyone on "
            "the way could read it: use https"
        )
        return None
    return key


def connect(url: str, api_key: str | None = None) -> Editor:
    """The editor for the server at `url`: `specedit serve`'s own, else chat completions.
    `api_key` is what the user gave (--api-key, SPECEDIT_API_KEY); no other key is sent."""
    url = url.rstrip("/").removesuffix("/v1")
    key = sendable_key(url, api_key)
    try:
        with _request(url + "/v1/specedit/status", timeout=10, key=key) as answer:
            status = json.loads(answer.read())
            return RemoteEditor(
                url, status.get("method", DEFAULT_METHOD), status.get("engine", "server"), key
            )
    except ServerRefused as refused:  # a server, but not specedit's (unless it wants a key)
        if refused.status == 401:
            raise
        return OpenAIEditor(url, api_key=key)


class RemoteEditor:
    """Sends each edit to `specedit serve` at `url` and replays its stream of engine steps."""

    def __init__(
        self,
        url: str,
        default_method: str = DEFAULT_METHOD,
        engine: str = "server",
        api_key: str | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.default_method = default_method  # the server's, for its model and engine
        self.engine = engine
        self._bytes: dict[int, bytes] = {}  # token -> the bytes the server's tokenizer gives it
        self.startup: dict[str, float] = {}  # the server was ready before us

    def learn(self, tokens: list[int], hex_bytes: list[str]) -> None:
        """Keep the bytes the server's tokenizer gives these tokens (`server.app.token_bytes`)."""
        for token, raw in zip(tokens, hex_bytes, strict=True):
            self._bytes[token] = bytes.fromhex(raw)

    def decode(self, tokens: list[int]) -> str:
        """Exactly the server's decoding: each token's bytes, joined, then read as UTF-8."""
        return b"".join(self._bytes.get(t, b"") for t in tokens).decode("utf-8", "replace")

    def edit(
        self,
        request: EditRequest,
        on_start: OnStart | None = None,
        on_step: Callable[[Step], None] | None = None,
    ) -> EditResult:
        body = to_body(request, stream=True).model_dump(mode="json")
        prompt = None
        with _request(self.url + "/v1/specedit/edit", body, key=self.api_key) as response:
            for event in _events(response):
                kind = event["type"]
                if kind == "start":
                    prompt = prompt_from(event["prompt"])
                    if on_start:
                        on_start(prompt, event["max_new_tokens"])
                elif kind == "step":
                    step, hex_bytes = read_step(event)
                    self.learn(step.tokens, hex_bytes)
                    if on_step:
                        on_step(step)
                elif kind == "result":
                    return EditAnswer.model_validate(event).result(prompt)
                elif kind == "error":
                    message = event["error"]["message"]
                    if event["status"] == 422:  # the edit itself failed: cut off, runaway, ...
                        raise EditError(message)
                    raise EditorUnavailable(f"the server at {self.url} failed: {message}")
        raise EditorUnavailable(f"the server at {self.url} ended the stream without a result")


class OpenAIEditor:
    """Edits through any OpenAI-compatible chat-completions server: the prompt as messages, the
    file as `prediction` (servers that support it draft from it), the answer's code block as the
    edit. No engine steps come back, so the dashboard shows the input and the final stats."""

    def __init__(self, url: str, model: str | None = None, api_key: str | None = None) -> None:
        self.url = url.rstrip("/").removesuffix("/v1")
        self.api_key = api_key
        self.model = model
        self.startup: dict[str, float] = {}
        self.default_method = DEFAULT_METHOD  # reported only: the server drafts as it does
        self.engine = "server"  # its own, unknown here

    def decode(self, tokens: list[int]) -> str:
        return ""  # no tokens come back from a chat-completions server

    def _model(self) -> str:
        if self.model is None:
            with _request(self.url + "/v1/models", timeout=30, key=self.api_key) as response:
                self.model = json.loads(response.read())["data"][0]["id"]
        return self.model

    def edit(
        self,
        request: EditRequest,
        on_start: OnStart | None = None,
        on_step: Callable[[Step], None] | None = None,
    ) -> EditResult:
        template = prompts.load_template(request.prompt)
        text = request.text
        fence = prompts.fence_for(text)
        body = prompts.with_final_newline(text)
        prompt = EditPrompt([], fence, text, 0, 0)
        limit = request.max_new_tokens or default_token_limit(len(text) // 3)
        if on_start:
            on_start(prompt, limit)

        def messages(statement: str | None = None) -> list[dict[str, str]]:
            return prompts.chat_messages(
                template,
                body,
                request.instruction,
                request.language,
                fence,
                request.surroundings,
                statement,
            )

        started = time.perf_counter()
        statement = None
        if template.then:  # the model's statement of the change first, in a turn of its own
            said = self._complete(messages(), STATEMENT_TOKENS, request.sampling)
            statement = prompts.statement_of(said["message"]["content"] or "")
        choice = self._complete(messages(statement), limit, request.sampling, text)
        content = choice["message"]["content"] or ""
        edited = prompts.extract_text(
            _after_opening(content), choice["finish_reason"] == "stop", prompt
        )
        if edited is None:
            raise cut_off(limit, request.surroundings)
        edited = prompts.framed(edited, prompt)
        usage = choice["usage"]
        details = usage.get("completion_tokens_details") or {}
        stats = Stats(
            prompt_tokens=usage.get("prompt_tokens", 0),
            new_tokens=usage.get("completion_tokens", 0),
            accepted_tokens=details.get("accepted_prediction_tokens") or 0,
            total_seconds=time.perf_counter() - started,
        )
        generation = Generation([], choice["finish_reason"], stats)
        return EditResult(edited, generation, prompt, statement)

    def _complete(
        self,
        messages: list[dict],
        max_tokens: int,
        sampling: Sampling,
        prediction: str | None = None,
    ) -> dict:
        """One chat completion: its first choice, with the answer's `usage` beside it. The
        file goes as `prediction`, which servers that support it draft from."""
        payload = {
            "model": self._model(),
            "messages": messages,
            **({"prediction": {"type": "content", "content": prediction}} if prediction else {}),
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": max_tokens,
            **({"seed": sampling.seed} if sampling.seed is not None else {}),
        }
        with _request(self.url + "/v1/chat/completions", payload, key=self.api_key) as response:
            answer = json.loads(response.read())
        return {**answer["choices"][0], "usage": answer.get("usage") or {}}


def _after_opening(answer: str) -> str:
    """The answer after its opening fence line (the answer as a whole if it has none)."""
    lines = answer.split("\n")
    opening = next((i for i, line in enumerate(lines) if prompts.FENCE_LINE.match(line)), None)
    return answer if opening is None else "\n".join(lines[opening + 1 :])
