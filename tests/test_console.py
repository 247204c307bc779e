"""Messages on stderr: a file's name never sends the terminal a command."""

from __future__ import annotations

from specedit import console


def test_control_characters_in_a_message_are_written_as_escapes(capsys):
    console.error("a\x1b]0;title\x07\x1b[2J\x9b.md is empty\tsee above")
    said = capsys.readouterr().err
    assert said == "specedit: error: a\\x1b]0;title\\x07\\x1b[2J\\x9b.md is empty\tsee above\n"
