"""`POST /v1/chat/completions`, streamed or not: the model sees exactly the messages; a
`prediction` (OpenAI's Predicted Outputs) is a draft source only, so with temperature 0 the answer
is exactly the model's own greedy answer, just faster. When the prediction is part of the messages
(the usual case: the file being edited), the default drafter copies it from the prompt; otherwise
a draft pool is built over it. Usage reports accepted and rejected prediction tokens.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Literal

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, ConfigDict, Field

from specedit.drafting.registry import DraftSources, make_drafter, method_for
from specedit.editing.editor import default_token_limit, line_breaks
from specedit.editing.local import LocalEditor
from specedit.editing.prompts import AnswerText
from specedit.engine.events import Generation, Step
from specedit.engine.options import Sampling
from specedit.engine.session import generate
from specedit.models.load import LoadedModel
from specedit.server.errors import APIError
from specedit.server.protocol import Seed, Stop
from specedit.server.worker import Job, Run, Worker, job_stop, stream, wait


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
    stop: Stop = None
    seed: Seed | None = None
    stream: bool = False
    stream_options: StreamOptions | None = None
    n: Literal[1] = 1
    user: str | None = None


def _text(content: str | list[TextPart]) -> str:
    return content if isinstance(content, str) else "".join(part.text for part in content)


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

    def settled(self, text: str) -> str:
        """The part of the cut answer that no later token can turn into a stop string: a
        stream holds back an ending that begins one (a newline before "\n```"), as OpenAI's
        does, so that what was streamed is what the whole answer says."""
        text = self.cut(text)
        held = max(
            (n for s in self.stops for n in range(1, len(s)) if text.endswith(s[:n])), default=0
        )
        return text[: len(text) - held]


def _chat_run(lm: LoadedModel, body: ChatRequest) -> Run:
    tokenizer = lm.tokenizer
    messages = [
        {"role": "system" if m.role == "developer" else m.role, "content": _text(m.content)}
        for m in body.messages
    ]
    continues = messages[-1]["role"] == "assistant"  # a pre-filled answer is continued
    try:
        prompt = tokenizer.apply_chat_template(
            messages,
            add_generation_prompt=not continues,
            continue_final_message=continues,
            tokenize=True,
            return_dict=False,
        )
    except Exception as exc:  # templates raise their own errors for unsupported roles/orders
        raise APIError(
            400, f"the messages do not fit the model's chat template: {exc}", "messages"
        ) from None
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
        raise APIError(
            400,
            f"the messages take {len(prompt)} tokens; the model's context holds "
            f"{lm.context_length}",
            "messages",
            "context_length_exceeded",
        )
    stops = [body.stop] if isinstance(body.stop, str) else list(body.stop or [])
    in_prompt = bool(prediction) and any(prediction in m["content"] for m in messages)
    method = "pool" if prediction and not in_prompt else method_for(lm)
    references = [predicted] if method == "pool" else []
    sampling = Sampling(body.temperature, 0, body.top_p, body.seed)

    def start(job: Job) -> dict:
        decode = LocalEditor(lm).decode
        stop_strings = StopStrings(decode, stops) if stops else None
        emitter = _Emitter(job, decode, stop_strings)

        sources = DraftSources(
            references=references,
            draft=lm.draft,
            pass_cost=lm.pass_cost(),
            line_break=line_breaks(lm.tokenizer),
        )
        generation = generate(
            lm.model,
            prompt,
            make_drafter(method, lm.model, sources),
            max_new_tokens=min(limit, room),
            sampling=sampling,
            eos_token_ids=lm.eos_token_ids,
            stop=job_stop(job, stop_strings),
            on_step=emitter.on_step,
            pass_cost=sources.pass_cost,
        )
        emitter.emit(final=True)
        return {
            "text": emitter.text(),
            "generation": generation,
            "predicted": len(predicted),
            "prompt_tokens": len(prompt),
        }

    return Run(start, f"chatcmpl-{uuid.uuid4().hex[:24]}")


class _Emitter:
    """The answer's characters to the client as they settle: whole characters, cut at a stop
    string, each sent once."""

    def __init__(
        self, job: Job, decode: Callable[[list[int]], str], stop_strings: StopStrings | None
    ) -> None:
        self.job, self.stop_strings = job, stop_strings
        # Whole characters, decoded as they come; the stop condition already reads every
        # committed token, so its text is the answer's.
        self.answer = stop_strings.answer if stop_strings else AnswerText(decode)
        self.sent = 0  # characters of the answer already emitted

    def text(self) -> str:
        """The answer so far, cut at a stop string."""
        stops = self.stop_strings
        return stops.cut(self.answer.text) if stops else self.answer.text

    def on_step(self, step: Step) -> None:
        if self.stop_strings is None:
            self.answer.add(step.tokens)
        self.emit()

    def emit(self, final: bool = False) -> None:
        """Send what settled since the last call (at the end: all that is left)."""
        stops = self.stop_strings
        text = self.text() if final or not stops else stops.settled(self.answer.text)
        if len(text) > self.sent:
            self.job.emit(text[self.sent :])
            self.sent = len(text)


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


def _chat_response(name: str, run: Run, result: dict) -> dict:
    return {
        "id": run.id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": name,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": result["text"], "refusal": None},
                "finish_reason": _finish_reason(result["generation"]),
                "logprobs": None,
            }
        ],
        "usage": _usage(result),
    }


def _chat_events(name: str, body: ChatRequest, run: Run):
    created = int(time.time())
    include_usage = bool(body.stream_options and body.stream_options.include_usage)
    opened = [False]

    def chunk(delta: dict, finish: str | None = None, usage: dict | None = None) -> str:
        data = {
            "id": run.id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": name,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
            if usage is None
            else [],
            "usage": usage,
        }
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


async def chat(lm: LoadedModel, name: str, worker: Worker, body: ChatRequest, request: Request):
    """A chat completion of the model `lm`, which clients know as `name`, runs (404 for any
    other model). The messages are tokenized off the event loop: a long one holds up no other
    request."""
    if body.model != name:
        raise APIError(
            404,
            f"The model `{body.model}` does not exist; this server runs only the model it lists",
            "model",
            "model_not_found",
        )
    run = await run_in_threadpool(_chat_run, lm, body)
    if body.stream:
        return stream(worker, request, run, _chat_events(name, body, run))
    result = await wait(worker, request, run)
    return _chat_response(name, run, result)
