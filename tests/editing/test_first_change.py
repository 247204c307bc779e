"""A fix's branch redraw keeps its first change only, so it stops once that change is made and
the first answer gives the rest (editing/first_change.py)."""

from __future__ import annotations

import random

from specedit.editing.first_change import CHANGE_GAP, REJOINED, Rejoin, first_change

EARLIER = "".join(f"x{i} = {i}\n" for i in range(14))


def feed(earlier: str, answer: str) -> tuple[Rejoin, str | None, str]:
    """`answer` fed to a Rejoin a line at a time (a line's text and its newline as two
    tokens); the stop's reason and what had been fed when it stopped."""
    pieces = [piece for line in answer.splitlines(keepends=True) for piece in (line[:-1], "\n")]
    stop = Rejoin(earlier, lambda token: pieces[token])
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
