"""What a candidate edit is worth, knowable from its text without running it.

- a candidate the safety checks refuse (the syntax breaks, much of the file vanished) is wrong;
- an unchanged answer to a fix or an edit is wrong: the user says there is a bug, or asks for
  a change (`unchanged_problem`), and so is one that changed only blanks, or only the prose of
  Python code where the instruction does not speak of it (`same_code`);
- Python that uses a name nothing defines, calls a function with arguments it does not take or
  an attribute nothing has, or reads a variable where no assignment may have run, where the
  input did not, is wrong (editing/lint.py);
- an edit of Python that no longer defines a function, class or method of the input the
  instruction leaves alone is wrong (editing/removed.py);
- an answer that copies a sentence of its prompt's own words is wrong (`copied_from_prompt`);
- among the rest, the candidate whose change the others agree with most is the likeliest right
  (self-consistency: `choose`), so that a pick can be tested on recorded candidates.

Which candidates to draw and which to deliver is editing/selection.py's.
"""

from __future__ import annotations

import ast
import difflib
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from specedit.editing import asked, lint, removed, safety
from specedit.editing.checks import CheckResult
from specedit.editing.editor import EditRequest, EditResult, Mode
from specedit.editing.region import UNPARSABLE, documented
from specedit.editing.snippets import indentation

UNCHANGED_FIX = "unchanged, but a fix was asked for"
UNCHANGED_EDIT = "unchanged, but a change was asked for"
UNCHANGED = (UNCHANGED_FIX, UNCHANGED_EDIT)

# An instruction that may ask for no change to what Python code does: its prose, its typos, its
# layout. Elsewhere an answer that changes the code's prose or layout alone changed nothing.
NO_CODE_WORDS = re.compile(
    r"\b(?:comments?|docstrings?|doc strings?|documentation|typos?|spelling|(?:re)?format\w*"
    r"|indent\w*|white ?space|spac(?:e|es|ing)|wrap\w*|long lines?|line length|style|quotes?"
    r"|pep ?8|blank lines?)\b",
    re.I,
)

# An answer line this long or longer that the prompt's own words hold, and the input does not,
# was copied from the prompt ("Return the complete edited file in a single code block ..."),
# not written for the file.
LEAK_CHARS = 24
PROMPT_WORDS = "it copied the prompt's own words"


@dataclass(frozen=True)
class Verdict:
    """A candidate judged on its text: why it cannot be right (None: it may be), what the
    safety checks found where they ran, which the delivery reads instead of checking again,
    what it writes that cannot run or the definitions it removed where that is its problem
    (editing/lint.py, editing/removed.py), the names asked for that it never writes and the
    raises it never adds (noted, not a problem: editing/asked.py), and how the examples went
    where they ran (editing/examples.py)."""

    text: str
    problem: str | None
    checked: safety.Checked | None = None
    finding: lint.Finding | None = None
    examples: CheckResult | None = None
    removed: tuple[str, ...] = ()
    # The names the instruction asks for that it never writes, and as `raise Name` the
    # exceptions it asks to be raised that it raises nowhere new.
    absent: tuple[str, ...] = ()

    @property
    def acceptable(self) -> bool:
        return self.problem is None

    @property
    def failed_examples(self) -> bool:
        """Its one problem is the examples (they run only on an answer that is right
        in every other way)."""
        return self.examples is not None and not self.examples.passed

    @property
    def left_out_lines(self) -> bool:
        """Whether it leaves out lines of its input in one place that its instruction does not
        ask to remove (`safety.left_out`): written, it would lose them."""
        checked = self.checked
        return (
            checked is not None
            and not safety.asks_for_removal(checked.instruction)
            and safety.left_out(checked.original, checked.edited)
        )


def judge(
    original: str,
    text: str,
    instruction: str,
    language: str,
    unchanged: str | None,
    drops: bool = True,
    read: bool = True,
) -> Verdict:
    """What is wrong with `text` as an answer, knowable without tests; `unchanged` is what is
    wrong with an unchanged one (None: it may be right, as a clean document's rewrite). For a
    fix, an answer that changed only blanks (spaces inside a line, blank lines) is as
    unchanged as the input: a redraw that took a space for the runner-up at its branch point
    fixed nothing. So, for a fix or an edit of code, is Python whose code is the input's
    (`same_code`: a docstring, a comment or the layout changed, and nothing the code does;
    the first answer to "make `commonprefix` accept any iterable" changed a docstring's
    quotes alone), unless the instruction speaks of the prose, the typos or the layout
    (`NO_CODE_WORDS`), which may ask for just that (trailing spaces removed). Python that
    writes what cannot run (a name nothing defines, a call or an attribute that does not match
    its definition), where the input did not, is wrong too (editing/lint.py), and so is an edit
    of Python that removed a definition its instruction leaves alone (editing/removed.py);
    the new names its instruction writes as code that such an edit never writes, and the raises
    it asks for that it never adds, are noted (`absent`, editing/asked.py).
    `drops`: whether lines it drops count (`safety.problems`); `read`: whether the code is
    read here too (`read_code`; without, the caller reads it, beside the file's examples)."""
    if counts_unchanged(original, text, instruction, language, unchanged):
        return Verdict(text, unchanged)
    checked = safety.check(original, text, instruction, language, drops)
    if checked.problems:
        return Verdict(text, checked.problems[0], checked)
    edit_of_python = unchanged == UNCHANGED_EDIT and language == "python"
    if edit_of_python and (gone := removed.removed_definitions(original, text, instruction)):
        return Verdict(text, removed.problem(gone), checked, removed=tuple(gone))
    # Noted, not refused: drawn again and told, the model leaves them out again.
    absent = tuple(asked.asked_for(original, text, instruction)) if edit_of_python else ()
    verdict = Verdict(text, None, checked, absent=absent)
    return read_code(verdict, original, language) if read else verdict


def read_code(verdict: Verdict, original: str, language: str) -> Verdict:
    """`judge`'s last step for an acceptable `verdict`: what its Python writes that cannot run
    where `original` did not (editing/lint.py) is its problem."""
    text = verdict.text
    if language == "python" and (finding := lint.first_new(original, text)):
        return replace(verdict, problem=finding.problem(text), finding=finding)
    return verdict


def counts_unchanged(
    original: str,
    text: str,
    instruction: str,
    language: str,
    unchanged: str | None,
    imports: bool = False,
) -> bool:
    """Whether `text` is as unchanged as `original` itself for a request whose unchanged
    answer is `unchanged`'s problem (`judge`'s first test); with `imports`, its imports set
    aside too (`same_code`)."""
    return (
        text == original
        or (unchanged == UNCHANGED_FIX and blanks_only(original, text))
        or (
            unchanged is not None
            and language == "python"
            and not NO_CODE_WORDS.search(instruction)
            and same_code(original, text, imports)
        )
    )


def blanks_only(original: str, text: str) -> bool:
    """Whether `text` differs from `original` in blank lines and runs of spaces inside lines
    alone (indentation counts: in Python it is code)."""

    def lines(of: str) -> list[str]:
        return [
            indentation(line) + " ".join(line.split()) for line in of.splitlines() if line.strip()
        ]

    return lines(original) == lines(text)


def same_code(original: str, text: str, imports: bool = False) -> bool:
    """Whether Python `text` does what `original` does: the same syntax tree once docstrings
    are set aside (comments and layout are not in it). With `imports`, import statements are
    set aside too: an import alone changes nothing the code does until code uses it. False
    where either does not parse."""
    before = _code(original, imports)
    return before is not None and before == _code(text, imports)


@functools.lru_cache(maxsize=4)
def _code(source: str, imports: bool) -> str | None:
    """Python `source`'s syntax tree as `same_code` compares it, dumped; None where it does not
    parse. Kept for the texts compared again and again: an edit's input, against each
    candidate and, while a fix's first answer is written, at each change it completes."""
    try:
        tree = ast.parse(source)
    except UNPARSABLE:
        return None
    for node in documented(tree):
        node.body = node.body[1:]
    if imports:
        for node in ast.walk(tree):
            if isinstance(body := getattr(node, "body", None), list):
                node.body = [s for s in body if not isinstance(s, (ast.Import, ast.ImportFrom))]
    return ast.dump(tree)


def change_of(original: str, text: str) -> frozenset[tuple[str, str]]:
    """The change a candidate makes, as the set of lines it removes ('-') and adds ('+'), with
    runs of blanks counted as one: two candidates that make the same edit, spaced alike or not,
    have the same set."""
    diff = difflib.unified_diff(original.splitlines(), text.splitlines(), lineterm="", n=0)
    return frozenset(
        (line[0], " ".join(line[1:].split()))
        for line in diff
        if line[:1] in "+-" and not line.startswith(("+++", "---")) and line[1:].strip()
    )


def changed_lines(before: str, after: str) -> set[int]:
    """Indices of `before`'s lines that a line diff replaces, deletes or inserts at."""
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines())
    changed: set[int] = set()
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            changed.update(range(i1, max(i2, i1 + 1)))
    return changed


def agreement(changes: list[frozenset]) -> list[float]:
    """Each change's summed similarity (Jaccard) with every other candidate's change."""

    def similarity(a: frozenset, b: frozenset) -> float:
        return len(a & b) / len(a | b) if a | b else 1.0

    return [
        sum(similarity(mine, other) for j, other in enumerate(changes) if j != i)
        for i, mine in enumerate(changes)
    ]


def choose(verdicts: list[Verdict], original: str) -> int:
    """The index of the candidate to deliver: among the acceptable ones (else those that fail
    only the examples), the one the others agree with most, the earliest on a tie (the
    first is the request's own decoding); with neither, the first (the caller reports its
    problem, as for a single edit)."""
    acceptable = [i for i, verdict in enumerate(verdicts) if verdict.acceptable] or [
        i for i, verdict in enumerate(verdicts) if verdict.failed_examples
    ]
    if not acceptable:
        return 0
    changes = [change_of(original, verdicts[i].text) for i in acceptable]
    scores = agreement(changes)
    best = max(range(len(acceptable)), key=lambda k: (scores[k], -k))
    return acceptable[best]


def prompt_words(result: EditResult, instruction: str, decode: Callable[[list[int]], str]) -> str:
    """What `result`'s prompt says after the file, the instruction left out: the template's own
    words ("Return the complete edited file ..."), which an answer has no reason to write."""
    tail = decode(result.prompt.ids[result.prompt.input_end :])
    return tail.replace(instruction, "")


def copied_from_prompt(answer: str, original: str, words: str) -> str | None:
    """The first line of `answer` (its comment marks and quotes aside) that copies a sentence
    of the prompt's own `words` found nowhere in `original`. A docstring that paraphrases the
    instruction ends in a blank line and goes on with the sentence that followed the
    instruction in the prompt; the model then ends the code block as the prompt did, and the
    answer ends inside its docstring."""
    for line in answer.splitlines():
        sentence = line.strip().strip("#/*-'\" ")
        if len(sentence) >= LEAK_CHARS and sentence in words and sentence not in original:
            return sentence
    return None


def judged_language(request: EditRequest) -> str:
    """The language a request's answers are judged in: the one it gives, else the one its
    text shows (`safety.sniff`)."""
    return request.language or safety.sniff(request.text)


def unchanged_problem(mode: Mode | None, language: str) -> str | None:
    """What is wrong with an unchanged answer to a request in `mode` on a file in `language`:
    a fix asks for a change, and so does an edit of code (a language the safety checks parse).
    None where it may be right: a rewrite of a clean document, or an edit of prose, where "fix
    the spelling mistakes" is the everyday instruction and a clean file must come back as it
    was (`--check` in a pre-commit hook)."""
    if mode == Mode.EDIT:
        return UNCHANGED_EDIT if language in safety.PARSERS else None
    return UNCHANGED_FIX if mode == Mode.FIX else None
