"""What an edit gives the engine besides its prompt (editing/editor.py)."""

from __future__ import annotations

from specedit.editing.editor import LineBreaks


def test_a_token_breaks_a_line_where_its_text_holds_a_line_break_each_decoded_once():
    """The copy drafters' word for lines (DraftSources.line_break): the tokenizer's text of a
    token, asked once however often the drafters ask."""
    texts = {1: "def", 2: ":\n", 3: "\n\n    ", 4: " x"}
    asked: list[int] = []

    def decode(token: int) -> str:
        asked.append(token)
        return texts[token]

    breaks = LineBreaks(decode)
    assert [breaks(t) for t in (1, 2, 3, 4, 2, 3)] == [False, True, True, False, True, True]
    assert asked == [1, 2, 3, 4]
