"""The wire schema of `POST /v1/specedit/edit`, the one both sides use: the server reads and
answers with it, the `--server` client writes and reads it.

A request goes `EditRequest -> to_body -> JSON -> EditBody -> from_body -> EditRequest`; the answer
is an `EditAnswer`, plain or as the `result` event that ends a stream of `start` and `step`
events. Nothing here needs torch or fastapi: the client imports it. The request's mode is not
sent: it steers which candidates the client draws, not the one generation the server makes,
and the server reads it from the template the body names, a shipped one, named after its mode.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from specedit.editing.editor import UNSTEERED, EditRequest, EditResult, Steering
from specedit.editing.prompts import EditPrompt
from specedit.editing.proofread import Correction
from specedit.editing.region import Surroundings
from specedit.engine.events import Generation, Stats, Step
from specedit.engine.options import Sampling, Verification

MAX_STOPS = 4  # stop strings a request may give, as OpenAI takes
MAX_STOP_CHARS = 256  # characters in one stop string

# A sampling seed: the generator takes no negative one.
Seed = Annotated[int, Field(ge=0, le=2**64 - 1)]


def _bounded_stops(stop: str | list[str] | None) -> str | list[str] | None:
    """`stop` as OpenAI takes it: a few short strings, so that matching them stays cheap."""
    stops = [stop] if isinstance(stop, str) else stop or []
    if len(stops) > MAX_STOPS or any(len(s) > MAX_STOP_CHARS for s in stops):
        raise ValueError(
            f"at most {MAX_STOPS} stop strings of at most {MAX_STOP_CHARS} characters each"
        )
    return stop


Stop = Annotated[str | list[str] | None, AfterValidator(_bounded_stops)]


class SurroundingsBody(BaseModel):
    """A region edit's file around the region (`--lines`)."""

    model_config = ConfigDict(extra="forbid")
    before: str
    after: str
    first: int = Field(ge=1)
    last: int = Field(ge=1)
    context: int | None = Field(None, ge=0)
    head: str = ""  # a function's body: its head, which `before` ends with


class SteeringBody(BaseModel):
    """How the generation is steered (`Steering`): what a client's redraws ask."""

    model_config = ConfigDict(extra="forbid")
    forced: list[int] = []  # the answer's first tokens, given (a redraw's branch)
    statement: str | None = None  # the model's statement of the change, given (a redraw's)
    choices: bool = False  # the answer's probabilities and runners-up, for a redraw
    proofread: bool = False  # a document's rewrite: its copied doubts tried (editing/proofread.py)
    rejoin: str | None = None  # a fix's redraw: the answer it branched from (first_change.py)
    rejoin_input: bool = False  # a fix's first answer: it stops once its change is made


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
    seed: Seed | None = None
    verify: str = "strict"
    delta: float = 0.1
    verify_top_k: int = 5
    references: list[str] = []
    feedback: str = ""
    surroundings: SurroundingsBody | None = None
    steering: SteeringBody | None = None  # None: not steered
    stream: bool = False


def to_body(request: EditRequest, stream: bool = False) -> EditBody:
    """The body that sends `request`. Not validated here: the server checks it and answers
    what is wrong, as it does for any client."""
    sampling, verification, around = request.sampling, request.verification, request.surroundings
    return EditBody.model_construct(
        text=request.text,
        instruction=request.instruction,
        prompt=request.prompt,
        language=request.language,
        method=request.method,
        max_new_tokens=request.max_new_tokens,
        temperature=sampling.temperature,
        top_k=sampling.top_k,
        top_p=sampling.top_p,
        seed=sampling.seed,
        verify=verification.mode,
        delta=verification.delta,
        verify_top_k=verification.top_k,
        references=list(request.references),
        feedback=request.feedback,
        surroundings=SurroundingsBody.model_construct(**asdict(around)) if around else None,
        steering=_steering_body(request.steering),
        stream=stream,
    )


def from_body(body: EditBody, default_method: str) -> EditRequest:
    """The request `body` sends (`default_method` where it names none); ValueError where a
    sampling or verification setting is out of range."""
    around = body.surroundings
    return EditRequest(
        body.text,
        body.instruction,
        prompt=body.prompt,
        language=body.language,
        method=body.method or default_method,
        max_new_tokens=body.max_new_tokens,
        sampling=Sampling(body.temperature, body.top_k, body.top_p, body.seed),
        verification=Verification(body.verify, body.delta, body.verify_top_k),
        references=tuple(body.references),
        feedback=body.feedback,
        surroundings=Surroundings(**around.model_dump()) if around else None,
        steering=_steering(body.steering),
    )


def _steering_body(steering: Steering) -> SteeringBody | None:
    if steering == UNSTEERED:
        return None
    return SteeringBody.model_construct(**asdict(steering) | {"forced": list(steering.forced)})


def _steering(body: SteeringBody | None) -> Steering:
    if body is None:
        return UNSTEERED
    return Steering(**body.model_dump() | {"forced": tuple(body.forced)})


def prompt_data(prompt: EditPrompt) -> dict:
    return asdict(prompt)


def prompt_from(data: dict) -> EditPrompt:
    """The prompt a server sent, its fields this version knows (a newer server may send more)."""
    known = {field.name for field in fields(EditPrompt)}
    kept = {key: value for key, value in data.items() if key in known}
    return EditPrompt(**{**kept, "input_offsets": tuple(map(tuple, data["input_offsets"]))})


class EditAnswer(BaseModel):
    """What an edit answers: the edited text, the stats, and (a plain answer only) the
    attribution of its tokens."""

    model: str
    text: str
    changed: bool
    statement: str | None
    timings: dict[str, float]
    stop_reason: str
    tokens: list[int]
    probabilities: list[float] = []  # per token: the model's (Generation.probabilities)
    runners_up: list[int] = []
    corrections: list[dict] = []  # proofreading's, as Correction's fields
    resumed: list[int] = []  # the input's lines the answer was made to go on at
    stats: dict
    prompt: dict
    attribution: dict | None = None  # left out of the answer where there is none

    @classmethod
    def of(cls, model: str, result: EditResult, attribution_json: str | None) -> EditAnswer:
        return cls(
            model=model,
            text=result.text,
            changed=result.changed,
            statement=result.statement,
            timings=result.timings,
            stop_reason=result.generation.stop_reason,
            tokens=result.generation.tokens,
            probabilities=result.generation.probabilities,
            runners_up=result.generation.runners_up,
            corrections=[asdict(c) for c in result.corrections],
            resumed=result.resumed,
            stats=result.generation.stats.as_dict(),
            prompt=prompt_data(result.prompt),
            attribution=json.loads(attribution_json) if attribution_json is not None else None,
        )

    def wire(self) -> dict:
        return self.model_dump(exclude={"attribution"} if self.attribution is None else None)

    def result(self, prompt: EditPrompt | None = None) -> EditResult:
        """The result it describes (`prompt`: the one a stream's start event sent)."""
        stats = Stats.from_dict(self.stats)
        generation = Generation(
            self.tokens, self.stop_reason, stats, self.probabilities, self.runners_up
        )
        prompt = prompt or prompt_from(self.prompt)
        corrections = [Correction(**c) for c in self.corrections]
        return EditResult(
            self.text,
            generation,
            prompt,
            self.statement,
            self.timings,
            corrections,
            self.resumed,
        )


# --- the stream's events: JSON objects, each with its "type" ---------------------------------


def start_event(prompt: EditPrompt, max_new_tokens: int) -> dict:
    return {"type": "start", "prompt": prompt_data(prompt), "max_new_tokens": max_new_tokens}


def step_event(step: Step, hex_bytes: list[str]) -> dict:
    """A step and the bytes the server's tokenizer gives each of its tokens, as hex."""
    return {"type": "step", **asdict(step), "bytes": hex_bytes}


def read_step(event: dict) -> tuple[Step, list[str]]:
    fields = {key: value for key, value in event.items() if key not in ("type", "bytes")}
    return Step(**fields), event["bytes"]


def result_event(answer: EditAnswer) -> dict:
    return {"type": "result", **answer.wire()}


def error_event(status: int, payload: dict) -> dict:
    """An error inside a stream: its HTTP status and OpenAI's error payload."""
    return {"type": "error", "status": status, **payload}
