"""What an edit gives the engine besides its prompt (editing/editor.py)."""

from __future__ import annotations

from specedit.editing.editor import LineBreaks, line_breaks


def test_a_token_breaks_a_line_where_its_text_holds_a_line_break_each_decoded_once():
    """The copy drafters' word for lines (DraftSources.line_break): the tokenizer's text of a
    token, asked once however often the drafters ask."""
    texts = {1: "def", 2: ":\n", 3: "\n\n    ", 4: " x"}
    asked: list[int] = []

    class Tokenizer:
        def decode(self, ids: list[int]) -> str:
            asked.extend(ids)
            return "".join(texts[token] for token in ids)

    breaks = LineBreaks(Tokenizer())
    assert [breaks(t) for t in (1, 2, 3, 4, 2, 3)] == [False, True, True, False, True, True]
    assert asked == [1, 2, 3, 4]


def test_a_tokenizer_s_line_breaks_are_shared_by_everything_that_reads_its_tokens():
    """The drafter of each edit and redraw, a server's requests and a bench row ask the same
    LineBreaks, so a token is decoded once a process."""

    class Tokenizer:
        def decode(self, ids: list[int]) -> str:
            return "\n"

    tokenizer = Tokenizer()
    assert line_breaks(tokenizer) is line_breaks(tokenizer)
    assert line_breaks(tokenizer) is not line_breaks(Tokenizer())
