"""An answer that leaves out the end of the file is made to go on (editing/resume.py)."""

from __future__ import annotations

from specedit.editing.resume import dropped_run, resume

SOURCE = (
    "def first(a):\n"
    "    return a + 1\n"
    "\n"
    "\n"
    "def second(b):\n"
    "    return b * 2\n"
    "\n"
    "\n"
    "def third(c):\n"
    "    return c - 3\n"
)
CHANGED = SOURCE.replace("first(a)", "first(a: int)")
STOPPED = CHANGED[: CHANGED.index("\n\n\ndef second")] + "\n"  # the change, then the end


def test_an_answer_that_stops_after_its_change_left_out_the_rest():
    assert dropped_run(SOURCE, STOPPED, "add a type hint to first") == (2, 2)
    stopped_later = CHANGED[: CHANGED.index("\n\n\ndef third")] + "\n"
    assert dropped_run(SOURCE, stopped_later, "add a type hint to first") == (6, 6)


def test_a_whole_answer_a_removal_or_a_move_is_left_as_answered():
    assert dropped_run(SOURCE, CHANGED, "add a type hint to first") is None
    assert dropped_run(SOURCE, STOPPED, "remove second and third") is None
    # the last functions moved up: their lines are in the answer, elsewhere
    moved = SOURCE[SOURCE.index("def second") :] + "\n\n" + SOURCE[: SOURCE.index("\n\ndef second")]
    assert dropped_run(SOURCE, moved + "\n", "put first last") is None
    # the answer changed its last line: it may have meant to end there
    assert dropped_run(SOURCE, STOPPED.replace("a + 1", "a + 10"), "x") is None
    changed_last = SOURCE.replace("return c - 3", "return c - 4")
    assert dropped_run(SOURCE, changed_last, "make third subtract 4") is None


FIVE = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(5))


def test_an_answer_the_safety_checks_would_refuse_goes_on_where_it_first_left_the_input():
    """It starts at the function it changes, or jumps over functions to it: the run it left
    out first is where it goes on. A jump over fewer than DROP_MIN_LINES lines, or a drop the
    safety checks pass, is left as answered."""
    only_third = "def third(c):\n    return c - 4\n"
    assert dropped_run(SOURCE, only_third, "make third subtract 4") == (0, 0)
    jumped = FIVE.replace("def f1(x):\n    return x + 1\n\n\n", "").replace(
        "def f2(x):\n    return x + 2\n\n\n", ""
    )
    assert dropped_run(FIVE, jumped.replace("x + 3", "x + 30"), "f3 adds 30") == (4, 4)
    small = FIVE.replace("def f1(x):\n    return x + 1\n\n\n", "")
    assert dropped_run(FIVE, small, "f3 adds 30") is None  # 2 of 10 lines: not refused
    pieces = ["def", " third(c):\n", "    return c - 4\n"]
    decode = lambda tokens: "".join(pieces[t] for t in tokens)  # noqa: E731
    where = resume(SOURCE, only_third, "make third subtract 4", [0, 1, 2], decode)
    assert where is not None
    assert (where.kept, where.given, where.line) == (1, " first(a):\n", 1)


def test_the_answer_goes_on_from_its_last_line_with_the_input_s_next_lines():
    """Its tokens are kept up to the end of its last line, a token that runs on past it (one
    that starts the closing fence) is given again as text, and the input's lines follow up to
    the first that is not blank."""
    pieces = ["def first(a: int):\n", "    return a + 1", "\n```", "\n"]
    decode = lambda tokens: "".join(pieces[t] for t in tokens)  # noqa: E731
    where = resume(SOURCE, STOPPED, "add a type hint to first", [0, 1, 2, 3], decode)
    assert where is not None
    assert (where.kept, where.given, where.line) == (2, "\n\n\ndef second(b):\n", 5)
    assert resume(SOURCE, CHANGED, "add a type hint to first", [0, 1, 2, 3], decode) is None


def test_line_endings_stay_as_the_input_has_them():
    crlf = SOURCE.replace("\n", "\r\n")
    stopped = STOPPED.replace("\n", "\r\n")
    pieces = ["def first(a: int):\r\n", "    return a + 1\r\n", "```"]
    decode = lambda tokens: "".join(pieces[t] for t in tokens)  # noqa: E731
    where = resume(crlf, stopped, "add a type hint to first", [0, 1, 2], decode)
    assert where is not None
    assert (where.kept, where.given) == (2, "\r\n\r\ndef second(b):\r\n")


def test_an_edit_goes_on_where_its_answer_stopped_early(tiny_model_dir, monkeypatch):
    """The editor gives the answer's tokens up to its last line (never its end-of-text token)
    and the input's next lines as the start of a new generation, delivers what that comes to
    with the work of both counted, and says where it went on; what the first answer showed
    past the kept tokens is taken back, so the attribution reads the delivered answer. An
    end the instruction asks for stays."""
    from dataclasses import replace

    from specedit.editing.editor import EditRequest, prepare
    from specedit.editing.local import execute
    from specedit.engine.events import Generation, Stats, Step
    from specedit.models.load import load
    from specedit.view.attribution import Attribution

    lm = load(str(tiny_model_dir), dtype="fp32")
    encode = lambda text: lm.tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    eos = sorted(lm.eos_token_ids)[0]
    asked: list[tuple[int, ...]] = []

    def answering(first: str):
        def generate_edit(lm, prepared, on_step=None, stop=None, timings=None, show_forced=True):
            forced = prepared.request.steering.forced
            asked.append(forced)
            if forced:
                written = lm.tokenizer.decode(list(forced))
                new = encode(CHANGED[len(written) :] + "```\n")
                stats = Stats(new_tokens=len(new), forward_passes=1)
            else:
                new = [*encode(first), eos]
                stats = Stats(new_tokens=len(new), forward_passes=2)
            shown_now = [*forced, *new] if show_forced else new
            if on_step:
                on_step(Step(shown_now, [None] * len(shown_now), [None] * len(shown_now), 1))
            return Generation([*forced, *new], "eos", stats)

        return generate_edit

    request = EditRequest(SOURCE, "add a type hint to first", method="pld")
    monkeypatch.setattr("specedit.editing.local.generate_edit", answering(STOPPED))
    prepared = prepare(lm, request)
    attribution = Attribution(
        prepared.prompt, lambda t: lm.tokenizer.decode(t, skip_special_tokens=True)
    )
    result = execute(lm, prepared, on_step=attribution.add)
    assert result.text == CHANGED and result.resumed == [5]
    assert lm.tokenizer.decode(list(asked[1])) == STOPPED + "\n\ndef second(b):\n"
    assert eos not in asked[1]
    assert attribution.tokens == result.generation.tokens
    assert attribution.text == CHANGED + "```\n"
    stats = result.generation.stats
    assert stats.forward_passes == 3
    assert stats.new_tokens == len(encode(STOPPED)) + 1 + len(result.generation.tokens) - len(
        asked[1]
    )
    asked.clear()
    removal = replace(request, instruction="remove second and third")
    result = execute(lm, prepare(lm, removal))
    assert result.text == STOPPED and result.resumed == [] and asked == [()]
