"""Proofreading a rewrite: which copied words are doubted, what a correction is, and which are
kept (editing/proofread.py), on answers written as lists of token texts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from specedit.editing import proofread
from specedit.editing.proofread import MARGIN, Correction

ORIGINAL = "Jinja is a fast, epxressive engine.\nYou may need to to add it.\n"


def _doubts(pieces, others, probabilities, original=ORIGINAL):
    return proofread.spelling_doubts(pieces, others, probabilities, original)


def test_a_copied_word_is_doubted_where_the_runner_up_starts_a_longer_word():
    pieces = ["Jinja", " is", " a", " fast", ",", " e", "px", "ressive", " engine", "."]
    others = ["J", " was", " the", " quick", ".", " expressive", "X", "pressive", " tool", "!"]
    probabilities = [0.99, 0.9, 0.9, 0.9, 0.9, 0.47, 0.99, 0.98, 0.6, 0.9]
    assert _doubts(pieces, others, probabilities) == [5]
    # sure of the copy: no doubt
    assert _doubts(pieces, others, [*probabilities[:5], 0.995, *probabilities[6:]]) == []
    # the answer's word is not the input's: the model changed it already
    assert _doubts(pieces, others, probabilities, ORIGINAL.replace("epxressive", "x")) == []


def test_only_a_word_s_first_token_and_a_longer_word_of_the_same_letters_are_doubted():
    pieces = [" sem", "n", "atic", " items"]
    # the runner-up inside a word, or a shorter word, or one that does not extend the copy
    others = [" semantic", "nn", "antic", " item"]
    original = "the semnatic items"
    assert _doubts(pieces, others, [0.9, 0.5, 0.5, 0.5], original) == [0]
    assert _doubts(pieces, [" sem", "n", "atic", " itemsx"], [0.9, 0.5, 0.5, 0.5], original) == [3]
    assert _doubts(pieces, [" Semantic", *others[1:]], [0.9, 0.5, 0.5, 0.5], original) == []


def test_the_least_sure_doubts_come_first_and_their_number_is_bounded():
    count = proofread.MOST_DOUBTS + 3
    pieces = [" ab"] * count
    others = [" abc"] * count
    probabilities = [0.5 + i / 100 for i in reversed(range(count))]
    found = _doubts(pieces, others, probabilities, "ab")
    assert len(found) == proofread.MOST_DOUBTS
    assert found[0] == count - 1 and probabilities[found[0]] == min(probabilities)


def test_a_repeated_word_is_proposed_only_where_the_input_repeats_it():
    found = proofread.repeated_words(ORIGINAL, ORIGINAL)
    assert found == [Correction(1, 13, 18, "to to", "to")]
    assert found[0].applied("You may need to to add it.") == "You may need to add it."
    assert str(found[0]) == "to to -> to"
    assert proofread.repeated_words(ORIGINAL, ORIGINAL.replace("to to", "to")) == []
    assert proofread.repeated_words("a tomato to toast\n", "a tomato to toast\n") == []


def test_a_line_change_is_one_word_replaced_to_the_word_s_end():
    before = "where x.x.x is the semnatic version number."
    after = "where x.x.x is the semantic version number."
    change = proofread.line_change(before, after, before.index(" sem"))
    assert change is not None
    assert (change.old, change.new) == (" semnatic", " semantic")
    assert change.applied(before) == after
    # two words changed, the spacing changed, or the same word: not a correction
    assert proofread.line_change(before, after.replace("number", "count"), 18) is None
    assert proofread.line_change(before, after.replace(" semantic", "  semantic"), 18) is None
    assert proofread.line_change(before, before, 18) is None


def _proofread(pieces, doubts, go_on, score):
    """The text `pieces` write, proofread: each piece a token the model was sure of, but at
    `doubts` (index: the runner-up's text), where it gave the piece a probability of 0.5."""
    vocabulary = sorted(set(pieces) | set(doubts.values()))
    tokens = [vocabulary.index(piece) for piece in pieces]
    runners_up = [vocabulary.index(doubts.get(i, piece)) for i, piece in enumerate(pieces)]
    probabilities = [0.5 if i in doubts else 1.0 for i in range(len(pieces))]
    text = "".join(pieces)

    def decode(ids):
        return "".join(vocabulary[i] for i in ids)

    return proofread.proofread(text, text, tokens, probabilities, runners_up, decode, go_on, score)


LINES = ["Jinja", " is", " a", " fast", ",", " e", "px", "ressive", " engine", ".", "\n"]
LINES += ["You", " may", " need", " to", " to", " add", " it", ".", "\n"]


def test_a_correction_is_kept_where_the_line_alone_is_likelier_by_the_margin():
    text = "".join(LINES)
    asked = []

    def go_on(start, most):
        asked.append((start, most))
        return " expressive engine.\n"

    good = {"Jinja is a fast, expressive engine.", "You may need to add it."}

    def score(texts):
        return [0.0 if text in good else -MARGIN for text in texts]

    fixed, kept = _proofread(LINES, {5: " expressive"}, go_on, score)
    assert fixed == "Jinja is a fast, expressive engine.\nYou may need to add it.\n"
    assert [str(c) for c in kept] == ["epxressive -> expressive", "to to -> to"]
    # the answer up to the doubt and its runner-up; the 5 tokens of the rest of its line, and
    # a few more
    assert [(len(start), most) for start, most in asked] == [(6, 5 + proofread.LINE_SLACK)]
    # not likelier by the margin: the answer stands
    fixed, kept = _proofread(LINES, {5: " expressive"}, go_on, lambda texts: [0.0] * len(texts))
    assert fixed == text and kept == []
    # a line that did not end within its tokens: no correction
    fixed, kept = _proofread(LINES[:11], {5: " expressive"}, lambda s, m: None, score)
    assert fixed == "".join(LINES[:11]) and kept == []


def test_a_doubt_that_goes_on_to_change_more_than_the_word_is_not_a_correction():
    pieces = LINES[:11]
    fixed, kept = _proofread(
        pieces,
        {5: " expressive"},
        lambda start, most: " expressive tool!\n",
        lambda texts: [0.0, 9.0] * (len(texts) // 2),
    )
    assert fixed == "".join(pieces) and kept == []


def test_several_corrections_on_one_line_are_all_applied():
    pieces = ["the", " the", " sem", "n", "atic", " version", "\n"]

    def score(texts):
        return [-(t.count("the the") + t.count("semnatic")) * MARGIN for t in texts]

    fixed, kept = _proofread(
        pieces, {2: " semantic"}, lambda start, most: " semantic version\n", score
    )
    assert fixed == "the semantic version\n"
    assert [str(c) for c in kept] == ["the the -> the", "semnatic -> semantic"]


# --- wired into a rewrite, on the tiny model --------------------------------------------------

DOC = "Teh quick brown fox.\nIt jumsp over the dog.\n"


def _rewrite(tmp_path, tiny_model_dir, monkeypatch, *options: str):
    """`specedit rewrite` of DOC with the engine's answer replaced: it corrects "Teh" and says
    so when proofreading was asked for. Returns the CLI's result and the prepared edits."""
    from dataclasses import replace

    from typer.testing import CliRunner

    from specedit.cli import app
    from specedit.editing import editor

    calls = []

    def execute(lm, prepared, on_step=None, stop=None):
        calls.append(prepared)
        generation = editor.generate_edit(lm, replace(prepared, max_new_tokens=2), on_step)
        if not prepared.request.steering.proofread:
            return editor.EditResult(DOC, generation, prepared.prompt)
        corrections = [Correction(0, 0, 3, "Teh", "The")]
        text = DOC.replace("Teh", "The")
        return editor.EditResult(text, generation, prepared.prompt, corrections=corrections)

    monkeypatch.setattr("specedit.editing.local.execute", execute)
    file = tmp_path / "doc.md"
    file.write_text(DOC)
    tiny = ("--model", str(tiny_model_dir), "--dtype", "fp32", "--method", "pld")
    args = ["rewrite", str(file), "-m", "fix the typos", *tiny, *options]
    return CliRunner().invoke(app, args), calls


def test_a_rewrite_is_proofread_by_default_and_says_what_it_corrected(
    tmp_path, tiny_model_dir, monkeypatch
):
    result, calls = _rewrite(tmp_path, tiny_model_dir, monkeypatch)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == DOC.replace("Teh", "The")
    steering = calls[0].request.steering
    assert len(calls) == 1 and steering.proofread and steering.choices
    assert "corrected after the model (1): Teh -> The" in result.stderr
    # one candidate as the model wrote it, or a vote among samples: no proofreading
    for options in (("--samples", "1"), ("--samples", "3", "--vote")):
        result, calls = _rewrite(tmp_path, tiny_model_dir, monkeypatch, *options)
        assert result.exit_code == 0 and result.stdout == DOC, result.stderr
        assert not any(p.request.steering.proofread for p in calls)


def test_a_fix_or_an_edit_is_not_proofread():
    from specedit.editing.editor import EditError, EditRequest
    from specedit.editing.selection import Samples, draw_edits

    asked = []

    def run(request):
        asked.append(request)
        raise EditError("no model here")

    for prompt in ("fix", "edit"):
        draw_edits(run, EditRequest(DOC, "x", prompt=prompt), str, Samples(2), str)
    assert asked and not any(request.steering.proofread for request in asked)


def test_the_judgement_reads_each_text_as_the_model_does_alone(tiny_model_dir, monkeypatch):
    """Each text's score is the sum of the model's log-softmax over its tokens after a line
    break, with nothing else before: the numbers a plain forward pass of each gives, though
    the texts went in as one tree sharing their first tokens."""
    import torch

    from specedit.models.load import load

    lm = load(str(tiny_model_dir), dtype="fp32")
    texts = ["It jumsp over the dog.", "It jumps over the dog.", "Teh quick fox"]
    start = lm.tokenizer("\n", add_special_tokens=False)["input_ids"][-1]
    expected = []
    for text in texts:
        ids = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = lm.model(torch.tensor([[start, *ids]])).logits[0].double()
        steps = torch.log_softmax(logits, -1)[:-1]
        expected.append(float(steps[torch.arange(len(ids)), torch.tensor(ids)].sum()))
    scores = proofread.log_probabilities(lm, texts)
    assert scores == pytest.approx(expected, abs=1e-3)
    assert len(set(scores)) == 3
    # more texts than one pass takes go in several, the same numbers
    for name, most in (("PASS_TEXTS", 2), ("PASS_TOKENS", 8)):
        monkeypatch.setattr(proofread, name, most)
        assert proofread.log_probabilities(lm, texts) == pytest.approx(expected, abs=1e-3)


def test_the_judgement_reads_the_words_around_a_correction():
    line = "one two three four five six seven eight nine ten the semnatic a b c d e f g h i j"
    start = line.index(" semnatic")
    correction = Correction(0, start, start + len(" semnatic"), " semnatic", " semantic")
    before, after = proofread.window(line, correction, words=3)
    assert before == "nine ten the semnatic a b c"
    assert after == "nine ten the semantic a b c"
    assert proofread.window("a semnatic b", replace(correction, start=1, end=10)) == (
        "a semnatic b",
        "a semantic b",
    )


def test_a_doubt_goes_on_from_its_runner_up_to_the_end_of_its_line(tiny_model_dir, monkeypatch):
    """What proofreading is given to go on with: the model's greedy answer after the answer up
    to the doubt and its runner-up, cut after the first line break."""
    from dataclasses import replace

    from specedit.editing import local
    from specedit.editing.editor import EditRequest, generate_edit, prepare
    from specedit.models.load import load

    lm = load(str(tiny_model_dir), dtype="fp32")
    request = EditRequest(DOC, "fix the typos", prompt="rewrite", method="pld", max_new_tokens=40)
    request = request.steered(choices=True)
    seen = {}

    def spy(text, original, tokens, probabilities, runners_up, decode, go_on, score):
        seen.update(go_on=go_on, decode=decode)
        return text, []

    monkeypatch.setattr("specedit.editing.local.proofread", spy)
    prepared = prepare(lm, request.steered(proofread=True))
    generation = generate_edit(lm, prepared)
    assert local.proofread_answer(lm, prepared, generation, DOC) == (DOC, [])
    start = [*generation.tokens[:2], generation.runners_up[2]]
    branch = replace(request.steered(forced=tuple(start)), max_new_tokens=len(start) + 40)
    plain = generate_edit(lm, prepare(lm, branch))
    whole = seen["decode"](plain.tokens[2:])
    written = seen["go_on"](start, 40)
    if "\n" in whole:  # cut after the line break
        assert written == whole[: whole.index("\n") + 1]
    else:  # the line did not end within the tokens it was given
        assert written is None


def test_a_character_split_across_tokens_belongs_to_the_token_that_completes_it(tokenizer):
    text = "╭─ Error ─╮ the semnatic one\n"
    tokens = tokenizer.encode(text, add_special_tokens=False)

    def decode(ids):
        return tokenizer.decode(ids)

    pieces = proofread.token_texts(tokens, decode)
    assert "".join(pieces) == text and len(pieces) == len(tokens)
    assert any(decode([token]) != piece for token, piece in zip(tokens, pieces))


def test_code_is_not_proofread():
    text = "Run it:\n\n```py\nto to = 1\n```\n\nthe `to to` call, then to to go\n"
    assert [(c.line, c.old) for c in proofread.repeated_words(text, text)] == [(6, "to to")]
    assert proofread.repeated_words(text, text)[0].start == text.split("\n")[6].rindex("to to")
    pieces = ["```", "py", "\n", "a", " py", "\n"]
    others = ["```", "python", "\n", "a", " python", "\n"]
    found = proofread.spelling_doubts(pieces, others, [0.5] * 6, "```py\na py\n")
    assert found == []  # the fence line, and a line inside the unclosed block
    pieces = ["a", " `", "py", "`", " py", "\n"]
    others = ["a", " `", "python", "`", " python", "\n"]
    assert proofread.spelling_doubts(pieces, others, [0.5] * 6, "a `py` py\n") == [4]


def test_code_the_answer_changed_is_put_back():
    original = (
        "See `the docs <https://x.org/en/latest/>`_ for morre.\n\n```python\n{'ok': True}\n```\n"
    )
    answer = (
        "See `the docs <https://x.org/en/stable/>`_ for more.\n\n```python\n{'ok': true}\n```\n"
    )
    text, restored = proofread.restore_code(original, answer)
    assert text == original.replace("morre", "more")
    assert [str(c) for c in restored] == [
        "`the docs <https://x.org/en/stable/>` -> `the docs <https://x.org/en/latest/>`",
        "{'ok': true} -> {'ok': True}",
    ]
    long = Correction(0, 0, 60, "a" * 30 + "b" * 30, "c")  # a long line of code, shortened
    assert str(long) == "a" * 20 + "..." + "b" * 20 + " -> c"
    # code added or dropped, or as many spans no more: the answer's stands
    fewer = "See the docs for more.\n\n```python\n{'ok': True}\n```\n"
    assert proofread.restore_code(original, fewer) == (fewer, [])
    longer = answer.replace("{'ok': true}\n", "{'ok': true}\n{'also': 1}\n")
    assert proofread.restore_code(original, longer)[0].count("{'also': 1}") == 1
