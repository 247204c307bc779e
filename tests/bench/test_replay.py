"""`specedit bench --replay`: recorded answers drafted again without the model, pass for pass
as the engine drafts them, and costed at the recorded costs."""

from __future__ import annotations

import json

import pytest
from helpers import repeating_prompt
from typer.testing import CliRunner

from specedit.bench.replay import ReplayError, replay_answer, replay_run, replayable
from specedit.cli import app
from specedit.drafting.registry import DraftSources, make_drafter
from specedit.engine.cost import ContextCost, PassCost
from specedit.engine.session import generate

STEEP = PassCost((1, 2, 4, 8, 64), (0.08, 0.12, 0.17, 0.45, 2.0), 0.02)
FLAT = ContextCost(prefill=(0.01, 0.0), verify=(0.02, 0.0))


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("method", ["pld", "adapld-tokens", "ar"])
@pytest.mark.parametrize(
    "input_span, instruction_span, first_copy, line_breaks",
    [
        (None, None, None, None),
        ((0, 24), (30, 36), None, None),
        ((0, 24), (30, 36), 3, None),
        ((0, 24), (30, 36), 3, list(range(0, 96, 4))),  # a token in four breaks its line
    ],
)
def test_a_replay_drafts_as_the_engine_did(
    qwen_tiny, seed, method, input_span, instruction_span, first_copy, line_breaks
):
    """The engine's passes on a real model and the replay's on its answer are the same: as
    many, as wide, as much accepted; with the input's and the instruction's places in the
    prompt, where the answer's first copy starts and which tokens break lines, as the edit
    told its drafter (copies end with either span)."""
    prompt = repeating_prompt(seed)
    sources = None
    if input_span:
        input_tokens = prompt[input_span[0] : input_span[1]]
        breaks = frozenset(line_breaks).__contains__ if line_breaks is not None else None
        sources = DraftSources(
            input_span[0],
            input_tokens,
            instruction=instruction_span,
            first_copy=first_copy,
            line_break=breaks,
        )
    widths: list[int] = []
    result = generate(
        qwen_tiny,
        prompt,
        make_drafter(method, qwen_tiny, sources),
        max_new_tokens=48,
        pass_cost=STEEP,
        on_step=lambda step: widths.append(1 + step.drafted),
    )
    assert result.stop_reason == "length"  # the budgets match up to the last token
    marks = input_span, instruction_span, first_copy, line_breaks
    replayed = replay_answer(method, prompt, result.tokens, STEEP, *marks)
    stats = result.stats
    assert replayed.widths == widths
    assert (replayed.drafted, replayed.accepted) == (stats.drafted_tokens, stats.accepted_tokens)
    # a flat context: the prompt at 10 ms a token, each pass at its width's cost
    seconds = replayed.seconds(len(prompt), STEEP, FLAT)
    assert seconds == pytest.approx(len(prompt) * 0.01 + sum(STEEP(w) for w in widths))


def test_only_drafters_that_read_tokens_alone_are_replayed():
    for method in ("ar", "pld", "pld-fixed", "adapld", "adapld-tokens", "adapld-no-branch"):
        assert replayable(method), method
    for method in ("hf-pld", "llama.cpp", "pldplus", "adapld-states", "evospec", "pool", "x"):
        assert not replayable(method), method


def _recording(tmp_path, rows: list[dict]) -> str:
    path = tmp_path / "bench.json"
    path.write_text(
        json.dumps(
            {
                "engine": "torch",
                "rows": rows,
                "pass_costs": {
                    "llama.cpp": {"sizes": list(STEEP.sizes), "seconds": list(STEEP.seconds)}
                },
                "floor_costs": {
                    "llama.cpp": [
                        {"prefill": [0.01, 0.0], "verify": [0.02, 0.0]},
                        {"prefill": [0.02, 0.0], "verify": [0.04, 0.0]},  # a busier moment
                    ]
                },
            }
        )
    )
    return path


def test_a_recorded_run_is_replayed_once_a_task_at_its_engine_s_lowest_costs(tmp_path):
    prompt = [1, 2, 3, 4, 5, 6, 7, 8] * 4
    answer = [1, 2, 3, 9, 5, 6, 7, 8, 1, 2, 3, 4]
    row = {"task": "t", "method": "pld/llama.cpp", "prompt_ids": prompt, "tokens": answer}
    rows = [
        {**row, "method": "pld~conditional/llama.cpp", "tokens": [1, 1, 1]},  # lossy: skipped
        row,
        {**row, "method": "adapld/llama.cpp"},  # the same task: its first strict answer only
        {**row, "task": "u", "method": "pld"},  # torch: no costs recorded for it
        {"task": "v", "method": "llama.cpp", "prompt_ids": [], "tokens": []},  # no answer
    ]
    results = replay_run(_recording(tmp_path, rows), ["ar", "pld"])
    assert [(r.task, r.method) for r in results] == [("t", "ar"), ("t", "pld")]
    ar, pld = results
    assert ar.passes == len(answer) and ar.drafted == 0
    expected = replay_answer("pld", prompt, answer, STEEP)
    assert pld.seconds == pytest.approx(expected.seconds(len(prompt), STEEP, FLAT))
    assert (pld.passes, pld.drafted, pld.accepted) == (
        len(expected.widths),
        expected.drafted,
        expected.accepted,
    )
    assert pld.passes < ar.passes
    # no copy drafter does better than the copy bound of the same answer at the same costs
    assert all(r.seconds >= r.copy_bound > 0 for r in results)
    assert pld.copy_bound == pytest.approx(FLAT.copy_bound(prompt, answer, STEEP))


def test_a_recorded_instruction_cuts_the_replay_s_copies_as_it_cut_the_edit_s(tmp_path):
    """A row records where the input and the instruction lie; the replay's copies of the
    instruction end with it, as the edit's did (copy.add_copy), not in the template after it."""
    instruction, template = [30, 31, 32, 33, 34, 35], [40, 41, 42, 43, 44, 45]
    prompt = [1, 2, 3, 4, 5, 6, 7, 8, 20, *instruction, *template]
    answer = [1, 2, 3, 4, 5, 6, 7, 8, 9, 30, 31, 32, 33, 34, 35, 50, 51, 52]
    spans = [0, 8], [9, 15]
    row = {"task": "t", "method": "pld/llama.cpp", "prompt_ids": prompt, "tokens": answer}
    row |= {"input_span": spans[0], "instruction_span": spans[1]}
    (result,) = replay_run(_recording(tmp_path, [row]), ["pld"])
    cut = replay_answer("pld", prompt, answer, STEEP, *spans)
    uncut = replay_answer("pld", prompt, answer, STEEP, spans[0])
    assert (result.passes, result.drafted) == (len(cut.widths), cut.drafted)
    assert cut.drafted < uncut.drafted  # the template's tokens drafted after the quote


def test_a_recorded_first_copy_starts_the_replay_s_answer_where_it_started_the_edit_s(tmp_path):
    """A row records where its answer's first copy started (DraftSources.first_copy): the
    replay's first draft copies from there too, and is accepted, where the answer's line break
    looked up in the template's words drafts what is rejected."""
    template, code = [90, 91, 3, 92, 93, 94, 95, 96], [40, 41, 42, 43, 44, 45, 46, 47]
    prompt = [*template, 80, 81, 33, *code, 80, 97, 80, 81, 3]
    answer = [*code, 80]
    row = {"task": "t", "method": "adapld/llama.cpp", "prompt_ids": prompt, "tokens": answer}
    row |= {"input_span": [10, 19], "instruction_span": [], "first_copy": 11}
    (result,) = replay_run(_recording(tmp_path, [row]), ["adapld"])
    told = replay_answer("adapld", prompt, answer, STEEP, (10, 19), None, 11)
    untold = replay_answer("adapld", prompt, answer, STEEP, (10, 19))
    assert (result.passes, result.drafted) == (len(told.widths), told.drafted)
    assert (told.drafted, told.accepted) == (6, 6) and untold.drafted > 6
    assert told.seconds(len(prompt), STEEP, FLAT) < untold.seconds(len(prompt), STEEP, FLAT)


def test_what_cannot_be_replayed_says_why(tmp_path):
    with pytest.raises(ReplayError, match="cannot replay pldplus"):
        replay_run(_recording(tmp_path, []), ["pld", "pldplus"])
    with pytest.raises(ReplayError, match="no strict answers"):
        replay_run(_recording(tmp_path, []), ["pld"])
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"rows": []}))
    with pytest.raises(ReplayError, match="no bench run recorded with its answers"):
        replay_run(old, ["pld"])


def test_bench_replays_a_recording_from_the_command_line(tmp_path):
    prompt = [1, 2, 3, 4, 5, 6, 7, 8] * 4
    row = {"task": "t", "method": "pld/llama.cpp", "prompt_ids": prompt, "tokens": prompt[:12]}
    recording = _recording(tmp_path, [row])
    runner = CliRunner()
    result = runner.invoke(
        app, ["bench", "--replay", str(recording), "--methods", "ar,pld,pldplus,adapld"]
    )
    assert result.exit_code == 0, result.output
    assert "not replayed (they read more than tokens): pldplus" in result.stderr
    for text in ("replayed", "vs ar", "adapld"):
        assert text in result.stdout
    missing = runner.invoke(app, ["bench", "--replay", str(tmp_path / "no.json")])
    assert missing.exit_code != 0 and "no bench run recorded" in missing.stderr
