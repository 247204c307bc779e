"""The `--server` wire schema: a request crosses client -> JSON -> server whole."""

from __future__ import annotations

from dataclasses import fields, is_dataclass

import pytest
from pydantic import ValidationError

from specedit.editing.editor import EditRequest, Steering
from specedit.editing.region import Surroundings
from specedit.engine.options import Sampling, Verification
from specedit.server.protocol import EditBody, from_body, to_body

# Every field away from its default, nested ones too: a field the wire drops comes back default.
EVERYTHING = EditRequest(
    text="def f():\n    return 1\n",
    instruction="return 2",
    prompt="fix",
    language="python",
    method="pool",
    max_new_tokens=77,
    sampling=Sampling(temperature=0.5, top_k=7, top_p=0.9, seed=3),
    verification=Verification(mode="conditional", delta=0.2, top_k=4),
    references=("a reference", "another"),
    feedback="the test failed",
    surroundings=Surroundings(
        before="x = 1\ndef g():\n", after="y = 2\n", first=3, last=4, context=5, head="def g():\n"
    ),
    steering=Steering(
        forced=(9, 4),
        statement="x should be 2",
        choices=True,
        proofread=True,
        rejoin="def f():\n    return 3\n",
        rejoin_input=True,
    ),
)


def _defaults_left(value, default, where: str) -> list[str]:
    """The fields of `value` (a dataclass, searched into its nested dataclasses) still equal
    to those of `default`."""
    left = []
    for field in fields(value):
        mine, theirs = getattr(value, field.name), getattr(default, field.name)
        if is_dataclass(mine) and is_dataclass(theirs):
            left += _defaults_left(mine, theirs, f"{where}{field.name}.")
        elif mine == theirs:
            left.append(where + field.name)
    return left


def test_the_round_trip_request_sets_every_field():
    """Guards the test below: a field added to EditRequest (or what it holds) must be set
    here, so the round trip carries it."""
    default = EditRequest("", "", surroundings=Surroundings(before="", after="", first=1, last=1))
    assert _defaults_left(EVERYTHING, default, "") == []


def test_every_field_of_a_request_crosses_the_wire():
    wire = to_body(EVERYTHING, stream=True).model_dump_json()
    body = EditBody.model_validate_json(wire)  # as the server reads it: validated
    assert body.stream
    assert from_body(body, default_method="copy") == EVERYTHING


def test_a_request_without_a_method_gets_the_servers():
    body = EditBody(text="x", instruction="y")
    assert from_body(body, default_method="copy").method == "copy"


def test_an_answer_carries_its_corrections_and_resumed_lines_back():
    from specedit.editing.editor import EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.editing.proofread import Correction
    from specedit.engine.events import Generation, Stats
    from specedit.server.protocol import EditAnswer

    prompt = EditPrompt([1, 2, 3], "```", "teh\n", 1, 2, input_offsets=((0, 3),))
    corrections = [Correction(0, 0, 3, "teh", "the")]
    generation = Generation([5], "stop", Stats())
    result = EditResult("the\n", generation, prompt, corrections=corrections, resumed=[7])
    wire = EditAnswer.of("m", result, None).model_dump_json()
    back = EditAnswer.model_validate_json(wire).result()
    assert back.corrections == corrections and back.text == "the\n" and back.prompt == prompt
    assert back.resumed == [7]


def test_a_step_crosses_the_wire_with_what_it_takes_back():
    """A resumed answer's step takes back tokens shown before; a remote dashboard must too."""
    import json

    from specedit.engine.events import Step
    from specedit.server.protocol import read_step, step_event

    step = Step([7, 8], [3, None], ["main", None], 2, [False, False], rewind=5)
    back, hex_bytes = read_step(json.loads(json.dumps(step_event(step, ["61", "62"]))))
    assert back == step and hex_bytes == ["61", "62"]


def test_a_negative_seed_is_refused_by_the_schema():
    with pytest.raises(ValidationError, match="seed"):
        EditBody(text="x", instruction="y", seed=-1)
    assert EditBody(text="x", instruction="y", seed=0).seed == 0


def test_stop_strings_are_bounded_as_openai_bounds_them():
    from specedit.server.openai import ChatRequest

    def chat(stop) -> ChatRequest:
        return ChatRequest(model="m", messages=[{"role": "user", "content": "hi"}], stop=stop)

    assert chat(["a" * 256] * 4).stop == ["a" * 256] * 4
    assert chat("\n```").stop == "\n```"
    for stop in (["a"] * 5, "a" * 257, ["a", "b" * 257]):
        with pytest.raises(ValidationError, match="at most 4 stop strings"):
            chat(stop)


def test_a_prompt_crosses_the_wire_whole_and_a_newer_server_s_fields_are_passed_over():
    import json

    from specedit.editing.prompts import EditPrompt
    from specedit.server.protocol import prompt_data, prompt_from

    prompt = EditPrompt([1, 2, 3, 4], "```", "x\n", 1, 2, False, ((0, 2),), 3, 4)
    data = json.loads(json.dumps(prompt_data(prompt)))
    assert prompt_from(data) == prompt
    assert prompt_from({**data, "a_later_field": 1}) == prompt
