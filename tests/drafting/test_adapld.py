"""AdaPLD's copies where the answer opens: the input's first line of text, not the template's."""

from __future__ import annotations

from specedit.bench.replay import TOKENS_ONLY_MODEL
from specedit.drafting.registry import DraftSources, make_drafter
from specedit.engine.memory import Memory

NEWLINE, FENCE, PYTHON, BLANKS_AND_NEWLINE = 3, 80, 81, 33
# The template's words (their line break 3 after "system" 91), the input's fence, its first
# token the fence's line break and the file's blank lines in one (33), its code, the answer's
# opening fence ending with a line break of its own.
TEMPLATE = [90, 91, NEWLINE, 92, 93, 94]
INPUT = [BLANKS_AND_NEWLINE, 40, 41, 42, NEWLINE, 43, 44]
PROMPT = [*TEMPLATE, FENCE, PYTHON, *INPUT, FENCE, 95, 96, FENCE, PYTHON, NEWLINE]
INPUT_START = len(TEMPLATE) + 2


def _drafter(first_copy: int | None):
    sources = DraftSources(INPUT_START, INPUT, first_copy=first_copy)
    return make_drafter("adapld", TOKENS_ONLY_MODEL, sources)


def test_the_answer_s_first_copy_starts_at_the_input_s_first_line_of_text():
    """Found by its last token, the answer's line break copies the template's words after
    "system"; told where the input's text starts, the first copy is the input from there, up
    to the input's end."""
    assert _drafter(None).propose(Memory(PROMPT), 64).main_chain().tokens[:2] == [92, 93]
    drafter = _drafter(INPUT_START + 1)
    main = drafter.propose(Memory(PROMPT), 64).main_chain()
    assert main.tokens == INPUT[1:]
    assert main.sources[0] == INPUT_START + 1
    assert drafter.report() == {"retrieval_opening": 1}


def test_once_the_answer_has_begun_its_copies_are_found_by_their_tokens_again():
    memory = Memory(PROMPT)
    memory.extend([40, 41, 42, NEWLINE])
    main = _drafter(INPUT_START + 1).propose(memory, 64).main_chain()
    assert main.tokens == [43, 44]  # after the input's 42 and line break
