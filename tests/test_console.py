"""Messages on stderr: a file's name never sends the terminal a command."""

from __future__ import annotations

from specedit import console


def test_control_characters_in_a_message_are_written_as_escapes(capsys):
    console.error("a\x1b]0;title\x07\x1b[2J\x9b.md is empty\tsee above")
    said = capsys.readouterr().err
    assert said == "specedit: error: a\\x1b]0;title\\x07\\x1b[2J\\x9b.md is empty\tsee above\n"


def test_a_line_feed_in_a_message_cannot_start_a_message_of_its_own(capsys):
    """A file's name may hold a line feed (or a Unicode line separator): written as it is, what
    follows it would read as a message of its own."""
    console.error("x.py\nspecedit: x.py: nothing to change\u2028.py is empty")
    said = capsys.readouterr().err
    assert said == "specedit: error: x.py\\nspecedit: x.py: nothing to change\\u2028.py is empty\n"
