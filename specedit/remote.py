"""Edits through a warm `specedit serve` (`--server URL`): the same requests, results and live
steps as a local edit, so jobs, the dashboard and every output option behave identically.

Only the standard library is used: the client side adds nothing to the CLI's start-up.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator

from specedit.edit import EditError, EditorUnavailable, EditRequest, EditResult, OnStart
from specedit.engine.events import Generation, Stats, Step
from specedit.prompts import EditPrompt


def _events(response) -> Iterator[dict]:
    """The JSON objects of a server-sent event stream, until [DONE]."""
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line.startswith("data: "):
            continue
        if line == "data: [DONE]":
            return
        yield json.loads(line[6:])


class RemoteEditor:
    """Sends each edit to `specedit serve` at `url` and replays its stream of engine steps."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self._bytes: dict[int, bytes] = {}  # token -> the bytes the server's tokenizer gives it

    def decode(self, tokens: list[int]) -> str:
        """Exactly the server's decoding: each token's bytes, joined, then read as UTF-8."""
        return b"".join(self._bytes.get(t, b"") for t in tokens).decode("utf-8", "replace")

    def _post(self, path: str, body: dict):
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Accept": "text/event-stream"},
        )
        try:
            return urllib.request.urlopen(request)
        except urllib.error.HTTPError as exc:
            try:
                message = json.loads(exc.read())["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = exc.reason
            raise EditorUnavailable(
                f"the server at {self.url} refused the edit: {message}"
            ) from None
        except OSError as exc:
            raise EditorUnavailable(
                f"cannot reach specedit serve at {self.url}: {exc}; start one with "
                "`specedit serve` or drop --server"
            ) from None

    def edit(
        self,
        request: EditRequest,
        on_start: OnStart | None = None,
        on_step: Callable[[Step], None] | None = None,
    ) -> EditResult:
        sampling, verification = request.sampling, request.verification
        body = {
            "text": request.text, "instruction": request.instruction,
            "prompt": request.prompt, "language": request.language, "method": request.method,
            "max_new_tokens": request.max_new_tokens, "temperature": sampling.temperature,
            "top_k": sampling.top_k, "top_p": sampling.top_p, "seed": sampling.seed,
            "verify": verification.mode, "delta": verification.delta,
            "verify_top_k": verification.top_k, "references": list(request.references),
            "feedback": request.feedback, "stream": True,
        }  # fmt: skip
        prompt = None
        with self._post("/v1/specedit/edit", body) as response:
            for event in _events(response):
                kind = event.pop("type")
                if kind == "start":
                    prompt = _prompt(event["prompt"])
                    if on_start:
                        on_start(prompt, event["max_new_tokens"])
                elif kind == "step":
                    for token, hex_bytes in zip(event["tokens"], event.pop("bytes"), strict=True):
                        self._bytes[token] = bytes.fromhex(hex_bytes)
                    if on_step:
                        on_step(Step(**event))
                elif kind == "result":
                    generation = Generation(
                        event["tokens"], event["stop_reason"], Stats.from_dict(event["stats"])
                    )
                    prompt = prompt or _prompt(event["prompt"])
                    return EditResult(event["text"], generation, prompt, event["statement"])
                elif kind == "error":
                    message = event["error"]["message"]
                    if event["status"] == 422:  # the edit itself failed: cut off, runaway, ...
                        raise EditError(message)
                    raise EditorUnavailable(f"the server at {self.url} failed: {message}")
        raise EditorUnavailable(f"the server at {self.url} ended the stream without a result")


def _prompt(data: dict) -> EditPrompt:
    return EditPrompt(**{**data, "input_offsets": tuple(map(tuple, data["input_offsets"]))})
