"""A fix's branch redraw keeps its first change only, so it stops once that change is made and
the first answer gives the rest (editing/first_change.py)."""

from __future__ import annotations

import random

from specedit.editing.first_change import CHANGE_GAP, REJOINED, Rejoin, first_change

EARLIER = "".join(f"x{i} = {i}\n" for i in range(14))


def feed(earlier: str, answer: str, keep_lines: bool = False) -> tuple[Rejoin, str | None, str]:
    """`answer` fed to a Rejoin a line at a time (a line's text and its newline as two
    tokens); the stop's reason and what had been fed when it stopped."""
    pieces = [piece for line in answer.splitlines(keepends=True) for piece in (line[:-1], "\n")]
    stop = Rejoin(earlier, lambda token: pieces[token], keep_lines=keep_lines)
    for token in range(len(pieces)):
        if said := stop(token):
            return stop, said, "".join(pieces[: token + 1])
    return stop, None, answer


def test_a_redraw_stops_once_its_change_is_followed_by_the_earlier_lines():
    """Changed at x1, it stops at the CHANGE_GAP + 1-th line after that which the earlier
    answer has in a row, and what it delivers is the first change of the whole redraw, even
    where the redraw would have gone on to change more."""
    redraw = EARLIER.replace("x1 = 1", "x1 = 10")
    stop, said, fed = feed(EARLIER, redraw)
    assert said == REJOINED
    assert fed.count("\n") == 2 + CHANGE_GAP + 1  # x0, the change, then the rejoined run
    assert stop.text(fed) == redraw == first_change(EARLIER, redraw)
    more = redraw.replace("x9 = 9", "x9 = 90")
    stop, said, fed = feed(EARLIER, more)
    assert stop.text(fed) == first_change(EARLIER, more) == redraw


def test_changes_closer_than_the_gap_are_one_change():
    """Lines changed CHANGE_GAP unchanged lines apart or fewer are one change: the redraw goes
    on until it has passed both."""
    near = EARLIER.replace("x1 = 1", "x1 = 10").replace("x5 = 5", "x5 = 50")
    stop, said, fed = feed(EARLIER, near)
    assert said == REJOINED and "x5 = 50" in fed
    assert stop.text(fed) == near == first_change(EARLIER, near)


def test_inserted_and_removed_lines_rejoin_where_the_earlier_answer_goes_on():
    inserted = EARLIER.replace("x2 = 2\n", "x2 = 2\nif x2:\n    x2 += 1\n")
    removed = EARLIER.replace("x3 = 3\nx4 = 4\n", "")
    for redraw in (inserted, removed):
        stop, said, fed = feed(EARLIER, redraw)
        assert said == REJOINED
        assert stop.text(fed) == redraw == first_change(EARLIER, redraw)


def test_a_redraw_that_puts_lines_back_rejoins_where_it_leaves_none_out():
    """The first answer lost `b`'s head and docstring, whose last lines are `a`'s too; the
    redraw puts them back. Its last lines then stand later in the first answer (at `c`'s
    docstring): a redraw does not rejoin there, which would leave out `b`'s body and `c`'s
    head, but where it goes on with `b`'s body, and delivers the whole file. A stop that may
    leave lines out (a first answer's, against the input) rejoins at `c`."""
    doc = ['    """Docstring.', "", "    Same ending.", "    of lines.", '    """']
    whole = [
        *("def a():", *doc, "    return 1", "", ""),
        *("def b():", *doc, "    x = 2", "    y = 3", "    z = 4", "    return x + y + z"),
        *("", "", "def c():", *doc, "    return 5", ""),
    ]
    text = "\n".join(whole)
    lost = text.replace("\n".join(whole[6:15]) + "\n", "")  # a's body to b's docstring
    stop, said, fed = feed(lost, text, keep_lines=True)
    assert said == REJOINED and stop.text(fed) == text
    assert fed.count("\n") == 15 + CHANGE_GAP + 1  # b's body written, then rejoined
    stop, said, fed = feed(lost, text)
    assert said == REJOINED and "    x = 2" not in stop.text(fed)


def test_only_a_redraw_of_an_answer_that_left_lines_out_keeps_every_line():
    """A redraw keeps the earlier answer's lines where that answer left out lines of the input
    (the redraw puts them back); a redraw of any other answer rejoins as its change, shorter
    or not, leads it."""
    from specedit.editing.editor import EditRequest
    from specedit.editing.local import rejoining

    request = EditRequest(EARLIER, "x1 is wrong", prompt="fix")
    lost = EARLIER.replace("x3 = 3\nx4 = 4\nx5 = 5\n", "")
    for earlier, keeps in ((lost, True), (EARLIER.replace("x3 = 3\n", ""), False)):
        stop = rejoining(request.steered(rejoin=earlier), str)
        assert stop.keep_lines is keeps and stop.earlier == earlier.split("\n")


def test_no_stop_while_the_answer_copies_or_never_comes_back():
    """The same answer never stops (it has no change yet), nor does one that rewrote all
    that follows its change: both end as the model ends them."""
    assert feed(EARLIER, EARLIER)[1] is None
    rewritten = EARLIER.replace(" = ", " == ")
    assert feed(EARLIER, rewritten)[1] is None


def random_redraws(pool: list[str], count: int, seed: int):
    """`count` (earlier, redraw) texts: earlier lines drawn from `pool`, each redraw that text
    with one to three changes (a line replaced, inserted or removed)."""
    chance = random.Random(seed)
    for _ in range(count):
        earlier = [chance.choice(pool) for _ in range(chance.randint(8, 30))]
        redraw = list(earlier)
        for _ in range(chance.randint(1, 3)):
            at = chance.randrange(len(redraw))
            kind = chance.choice("rid")
            if kind == "r":
                redraw[at] = f"changed {chance.random()}"
            elif kind == "i":
                redraw.insert(at, f"new {chance.random()}")
            elif len(redraw) > 1:
                del redraw[at]
        yield "\n".join(earlier) + "\n", "\n".join(redraw) + "\n"


def delivered(earlier: str, redraw: str) -> str | None:
    """What a fix's redraw delivers when the stop ends it (selection.py makes the first change
    of what it answers), None where it did not stop."""
    stop, said, fed = feed(earlier, redraw)
    return first_change(earlier, stop.text(fed)) if said else None


def test_what_it_delivers_is_the_first_change_of_the_whole_redraw():
    """Random redraws of code whose lines differ: wherever the stop ends one, what it delivers
    is what the whole redraw delivers."""
    pool = [f"line {i}" for i in range(1000)]
    stopped = 0
    for earlier, redraw in random_redraws(pool, 500, seed=7):
        if (text := delivered(earlier, redraw)) is not None:
            stopped += 1
            assert text == first_change(earlier, redraw)
    assert stopped > 300  # the check above ran on many


def test_repeated_lines_still_deliver_one_change_the_redraw_made_first():
    """Where lines repeat (blank lines, `pass`), which of two equal lines a removal took is
    the diff's guess: on the whole redraw it may join a later change to the first, which the
    stop never reads. What is delivered is still the earlier text with one change, up to
    which it is the redraw, and nearly always what the whole redraw delivers."""
    pool = ["", "", "pass", "    pass", "return x", "def f():", "x = 1", "y = 2", "# note"]
    same = stopped = 0
    for earlier, redraw in random_redraws(pool, 1000, seed=7):
        if (text := delivered(earlier, redraw)) is None:
            continue
        stopped += 1
        same += text == first_change(earlier, redraw)
        assert first_change(earlier, text) == text != earlier
        changed = next(i for i, (a, b) in enumerate(zip(earlier, text, strict=False)) if a != b)
        assert text[:changed] == redraw[:changed]
    assert stopped > 600 and same >= 0.99 * stopped


def test_an_edit_that_rejoins_stops_there_and_the_earlier_answer_gives_the_rest(
    tiny_model_dir, monkeypatch
):
    """The editor ends a request with `rejoin` where its answer rejoined the earlier one, and
    its text is its own lines so far and the earlier answer's after them; without `rejoin` the
    same answer goes on to its end (a second change there, which a fix would not keep)."""

    from specedit.editing.editor import EditRequest, prepare
    from specedit.editing.local import execute
    from specedit.engine import session
    from specedit.engine.events import Generation, Stats
    from specedit.models.load import load

    lm = load(str(tiny_model_dir), dtype="fp32")
    encode = lambda text: lm.tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    redraw = EARLIER.replace("x1 = 1", "x1 = 10").replace("x12 = 12", "x12 = 120")
    forced = encode("x0 = 0\n")
    written = encode(redraw[len("x0 = 0\n") :] + "```\n")

    def generate(model, prompt_ids, drafter, stop=None, **options):
        """The model's answer as scripted, cut at the first stop, as the engine cuts it."""
        tokens: list[int] = []
        for token in written:
            tokens.append(token)
            if said := stop(token):
                return Generation(tokens, said, Stats(new_tokens=len(tokens)))
        return Generation(tokens, "eos", Stats(new_tokens=len(tokens)))

    monkeypatch.setattr(session, "generate", generate)
    request = EditRequest(EARLIER, "x1 is wrong", prompt="fix", method="pld")
    request = request.steered(forced=tuple(forced))
    whole = execute(lm, prepare(lm, request))
    assert whole.text == redraw and whole.generation.stop_reason != REJOINED
    rejoined = execute(lm, prepare(lm, request.steered(rejoin=EARLIER)))
    assert rejoined.generation.stop_reason == REJOINED
    assert rejoined.text == EARLIER.replace("x1 = 1", "x1 = 10") == first_change(EARLIER, redraw)
    stopped_at = lm.tokenizer.decode(rejoined.generation.tokens)
    assert stopped_at.count("\n") == 2 + CHANGE_GAP + 1 and "x12" not in stopped_at


def test_an_earlier_text_is_read_past_its_leading_blank_lines_which_no_answer_writes():
    """A file's leading blank lines come in one token with the input fence's line break, so
    the answer starts at the file's first line of text: read against the earlier text from
    there, a change further down is found where it is (not at the first line)."""
    redraw = EARLIER.replace("x5 = 5", "x5 = 50")
    stop, said, fed = feed("\n\n" + EARLIER, redraw)
    assert said == REJOINED and "x5 = 50" in fed
    assert stop.text(fed) == redraw


def test_the_delivered_text_keeps_the_input_s_leading_blank_lines(tiny_model_dir, monkeypatch):
    """The model's answer has no leading blank lines; the text delivered has the input's, as
    it ends with the input's trailing newlines, whether the answer ended or rejoined."""
    from specedit.editing.editor import EditRequest, prepare
    from specedit.editing.local import execute
    from specedit.engine import session
    from specedit.engine.events import Generation, Stats
    from specedit.models.load import load

    lm = load(str(tiny_model_dir), dtype="fp32")
    fixed = EARLIER.replace("x5 = 5", "x5 = 50")
    written = lm.tokenizer(fixed + "```\n", add_special_tokens=False)["input_ids"]

    def generate(model, prompt_ids, drafter, stop=None, **options):
        tokens: list[int] = []
        for token in written:
            tokens.append(token)
            if stop and (said := stop(token)):
                return Generation(tokens, said, Stats(new_tokens=len(tokens)))
        return Generation(tokens, "eos", Stats(new_tokens=len(tokens)))

    monkeypatch.setattr(session, "generate", generate)
    request = EditRequest("\n\n" + EARLIER, "x5 is wrong", prompt="fix", method="pld")
    assert execute(lm, prepare(lm, request)).text == "\n\n" + fixed
    rejoined = execute(lm, prepare(lm, request.steered(rejoin="\n\n" + EARLIER)))
    assert rejoined.generation.stop_reason == REJOINED and rejoined.text == "\n\n" + fixed


DOCUMENTED = '''def f(x):
    """Return x doubled.

    It raises for None.

    >>> f(1)
    2
    >>> f(2)
    4
    """
    if x is None:
        raise TypeError("no x")
    y = x * 3
    a = 1
    b = 2
    c = 3
    d = 4
    e = 5
    g = 6
    h = 7
    return y
'''


def fed_to(stop: Rejoin, pieces: list[str]) -> tuple[str | None, str]:
    """`pieces` fed to `stop` one token each; the stop's reason and what had been fed."""
    for token in range(len(pieces)):
        if said := stop(token):
            return said, "".join(pieces[: token + 1])
    return None, "".join(pieces)


def lines_of(answer: str) -> list[str]:
    return [piece for line in answer.splitlines(keepends=True) for piece in (line[:-1], "\n")]


def test_a_fix_s_first_answer_goes_on_past_its_docstring_and_stops_after_its_code_change():
    """A fix's first answer (`Steering.rejoin_input`) stops once it changed the code and wrote
    the input's lines again, and the input gives the rest; a change after which it would still
    count as unchanged (a docstring, a comment) does not stop it, and is kept."""
    from specedit.editing.editor import EditRequest
    from specedit.editing.local import rejoining

    answer = (
        DOCUMENTED.replace("It raises for None.", "It returns 0 for None.")
        .replace('raise TypeError("no x")', "return 0")
        .replace("y = x * 3", "y = x * 2")
        .replace("h = 7", "h = 70")  # a second change after the gap, which the stop never reads
    )
    pieces = lines_of(answer)
    request = EditRequest(DOCUMENTED, "f(None) should return 0", prompt="fix", language="python")
    stop = rejoining(request.steered(rejoin_input=True), lambda token: pieces[token])
    said, fed = fed_to(stop, pieces)
    assert said == REJOINED and "h = 70" not in fed
    delivered = stop.text(fed)
    assert delivered == answer.replace("h = 70", "h = 7")  # the docstring's change kept
    assert rejoining(request, lambda token: pieces[token]) is None  # not steered: no stop
    # the same change where the instruction speaks of the docstring: that change ends it
    prose = EditRequest(DOCUMENTED, "the docstring is wrong", prompt="fix", language="python")
    stop = rejoining(prose.steered(rejoin_input=True), lambda token: pieces[token])
    said, fed = fed_to(stop, pieces)
    assert said == REJOINED and stop.text(fed) == DOCUMENTED.replace("raises", "returns 0")
    assert "return 0\n" not in fed


def test_a_fix_s_first_answer_that_adds_an_import_goes_on_to_the_code_that_uses_it():
    """An import added first is not yet the fix (the code that uses it comes later): the
    answer goes on, keeps it, and stops after the change of code."""
    from specedit.editing.editor import EditRequest
    from specedit.editing.local import rejoining

    answer = "import math\n" + DOCUMENTED.replace("y = x * 3", "y = math.prod((x, 2))")
    pieces = lines_of(answer.replace("h = 7", "h = 70"))
    request = EditRequest(DOCUMENTED, "f doubles wrongly", prompt="fix", language="python")
    stop = rejoining(request.steered(rejoin_input=True), lambda token: pieces[token])
    said, fed = fed_to(stop, pieces)
    assert said == REJOINED and "math.prod" in fed and stop.text(fed) == answer


def test_a_region_s_first_answer_is_judged_unchanged_in_its_file():
    """In a region edit (a method, indented) the text the stop weighs is the whole file: its
    docstring's change goes on, its code's change stops."""
    from specedit.editing.editor import EditRequest
    from specedit.editing.local import rejoining
    from specedit.editing.region import Region

    method = "".join(
        "    " + line if line.strip() else line for line in DOCUMENTED.splitlines(True)
    )
    file = f"class K:\n{method}\n\ndef g():\n    return 1\n"
    region, surroundings = Region(symbol="K.f").cut(file)
    answer = region.replace("raises for None", "returns 0 for None").replace("x * 3", "x * 2")
    pieces = lines_of(answer)
    request = EditRequest(
        region, "K.f(None) fails", prompt="fix", language="python", surroundings=surroundings
    )
    stop = rejoining(request.steered(rejoin_input=True), lambda token: pieces[token])
    said, fed = fed_to(stop, pieces)
    assert said == REJOINED and "x * 2" in fed and stop.text(fed) == answer


def test_a_fix_s_first_answer_that_loses_its_place_is_not_stopped():
    """A first answer that skips a stretch of the file and copies on from further down has not
    made a change to stop at (the safety checks would refuse it for the lines dropped): it
    runs to its end, as without the stop, where what follows it may put it right."""
    from specedit.editing.editor import EditRequest
    from specedit.editing.local import rejoining

    text = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(12))
    skipped = text.replace(
        "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in (2, 3, 4, 5, 6)), ""
    )
    pieces = lines_of(skipped)
    request = EditRequest(text, "f1 is wrong", prompt="fix", language="python")
    stop = rejoining(request.steered(rejoin_input=True), lambda token: pieces[token])
    assert fed_to(stop, pieces)[0] is None and stop.astray
    changed = text.replace("x + 1\n", "x - 1\n")  # the same answer with a change made instead
    pieces = lines_of(changed)
    stop = rejoining(request.steered(rejoin_input=True), lambda token: pieces[token])
    said, fed = fed_to(stop, pieces)
    assert said == REJOINED and stop.text(fed) == changed and not stop.astray
