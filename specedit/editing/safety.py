"""Checks before an edit is written: the file still parses, and no large part of it vanished.

Like black's --safe: a fast wrong edit must never cost the user code. These checks compare the
input with the edited text only; they know nothing about how the edit was made.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
import tomllib
import warnings
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterable
from dataclasses import dataclass

import yaml

from specedit.editing.localize import without_code
from specedit.editing.region import NAME_IN_BACKTICKS, Region, first_line, parse_lines

# An edit that drops more than this share of the input's non-blank lines, and at least
# DROP_MIN_LINES of them, is refused unless the instruction asks to remove something. A fix or
# a change rarely removes a fifth of a file; a small model that loses its place does: it stops
# early, leaves out a function, or answers with only the part it changed. The minimum keeps
# short inputs editable (in a 6-line file one merged line is already 17%). Lines of a function
# the instruction asks to reshape do not count (`reshaped_definitions`): "convert the loops in
# `filter` to comprehensions" rightly shortens `filter`.
DROP_SHARE = 0.2
DROP_MIN_LINES = 3

# Instructions that ask for less text: with one of these verbs (whole words, any case) a large
# deletion is what the user wanted: remove, delete, drop, strip, trim, shorten (and "shorter"),
# simplify, condense, summarize, cut, clean up, get rid of, prune, dedupe/deduplicate. Their
# inflections count too ("removes", "trimmed"); nouns such as "removal" do not.
REMOVAL_WORDS = re.compile(
    r"\b(?:remov(?:e|es|ed|ing)|delet(?:e|es|ed|ing)|drop(?:s|ped|ping)?"
    r"|strip(?:s|ped|ping)?|trim(?:s|med|ming)?|shorten(?:s|ed|ing)?|shorter"
    r"|simplif(?:y|ies|ied|ying)|condens(?:e|es|ed|ing)|summari[sz](?:e|es|ed|ing)"
    r"|cut(?:s|ting)?|clean(?:s|ed|ing)?[ -]?up|get rid of|prun(?:e|es|ed|ing)"
    r"|dedup(?:e|licate)?)\b",
    re.IGNORECASE,
)


# Instructions under which a definition may rightly go or shrink, besides those that ask for
# less text (REMOVAL_WORDS): it is renamed, moved, merged, split, inlined, turned into a
# property, a dataclass or a named tuple, or the code reorganised. Read in the instruction's
# prose (`localize.without_code`): a new `merge_sort` asks for no merge.
RESHAPING_WORDS = re.compile(
    r"\b(?:renam(?:e|es|ed|ing)|replac(?:e|es|ed|ing)|merg(?:e|es|ed|ing)|mov(?:e|es|ed|ing)"
    r"|inlin(?:e|es|ed|ing)|combin(?:e|es|ed|ing)|consolidat(?:e|es|ed|ing)"
    r"|rewrit(?:e|es|ing|ten)|refactor(?:s|ed|ing)?|restructur(?:e|es|ed|ing)"
    r"|reorgani[sz](?:e|es|ed|ing)|unif(?:y|ies|ied|ying)|extract(?:s|ed|ing)?"
    r"|split(?:s|ting)?|convert(?:s|ed|ing)?|turn(?:s|ed|ing)?|propert(?:y|ies)"
    r"|dataclass(?:es)?|named ?tuples?)\b",
    re.IGNORECASE,
)


def non_blank(lines: Iterable[str]) -> int:
    """How many of `lines` are not blank."""
    return sum(1 for line in lines if line.strip())


def dropped_lines(before: str, after: str) -> int:
    """How many of `before`'s non-blank lines have no counterpart in `after` (deleted, or
    replaced by fewer lines)."""
    return sum(count for count, _ in gaps(before, after))


def gaps(before: str, after: str) -> list[tuple[int, int]]:
    """Each place where `after` leaves out non-blank lines of `before` (deleted, or replaced by
    fewer lines): how many, and the line of `after` (from 0) that follows them there."""
    old, new = before.splitlines(), after.splitlines()
    # Lines the two share at either end are kept: matching only the middle keeps a local edit
    # of a long file fast (the matcher is quadratic in a line that repeats, such as a blank).
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    old, new = old[start : len(old) - end], new[start : len(new) - end]
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    found = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            gone, kept = non_blank(old[i1:i2]), non_blank(new[j1:j2])
            if gone > kept:
                found.append((gone - kept, start + j2))
    return found


def lost_place(before: str, after: str) -> int | None:
    """The line of `after` (from 0) that follows the first place where it leaves out
    DROP_MIN_LINES or more of `before`'s non-blank lines: where an answer lost its place
    (editing/redraws.py's GapRedraw); None where it leaves out none so."""
    return next((line for count, line in gaps(before, after) if count >= DROP_MIN_LINES), None)


def left_out(before: str, after: str) -> bool:
    """Whether `after` lost its place in `before` (`lost_place`)."""
    return lost_place(before, after) is not None


def _python(text: str) -> None:
    with warnings.catch_warnings():  # invalid escapes and the like are not our business
        warnings.simplefilter("ignore")
        ast.parse(text)


# libyaml's loader where PyYAML was built with it: the pure-Python scanner slows with every level
# of nesting, and libyaml refuses a text nested past its limit with a complaint of its own.
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _yaml(text: str) -> None:
    for _ in yaml.load_all(text, Loader=_YAML_LOADER):
        pass


PARSERS = {
    "python": ("Python", _python),
    "json": ("JSON", json.loads),
    "toml": ("TOML", tomllib.loads),
    "yaml": ("YAML", _yaml),
    "xml": ("XML", ElementTree.fromstring),
}


def _describe(exc: Exception) -> str:
    """The parser's message with its line, in one line."""
    if isinstance(exc, SyntaxError) and not isinstance(exc, ElementTree.ParseError):
        return f"{exc.msg} (line {exc.lineno})"
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        what = exc.problem or exc.context or "invalid YAML"
        return f"{what} (line {exc.problem_mark.line + 1}, column {exc.problem_mark.column + 1})"
    return " ".join(str(exc).split())  # TOML and XML name the line in their message


# What a text nested deeper than its parser's stack gets instead of the parser's complaint.
TOO_DEEP = "nested too deeply to parse"


def syntax_error(text: str, language: str) -> str | None:
    """The parser's complaint about `text` in `language`, or None if it parses (or there is no
    parser for the language). One leading byte order mark is not part of the text: `ast` and
    `json` refuse one in a str, so a file saved with a BOM would otherwise never be checked.

    json, tomllib and yaml recurse once per level of nesting and Python's parser has a fixed
    stack, so `[[[...` a hundred thousand deep is a RecursionError or MemoryError, not a
    complaint: it cannot be parsed, which is TOO_DEEP here rather than a traceback."""
    if language not in PARSERS:
        return None
    try:
        PARSERS[language][1](text.removeprefix("\ufeff"))
    except (SyntaxError, ValueError, yaml.YAMLError, ElementTree.ParseError) as exc:
        return _describe(exc)  # JSONDecodeError and TOMLDecodeError are ValueErrors
    except (RecursionError, MemoryError):
        return TOO_DEEP
    return None


def sniff(text: str) -> str:
    """A language for text without a file name (stdin): only JSON, when it already parses."""
    text = text.removeprefix("\ufeff")
    if text.lstrip()[:1] in ("{", "["):
        try:
            json.loads(text)
        except (ValueError, RecursionError):
            return ""
        return "json"
    return ""


def asks_for_removal(instruction: str) -> bool:
    return REMOVAL_WORDS.search(instruction) is not None


def problems(
    original: str, edited: str, instruction: str, language: str = "", drops: bool = True
) -> list[str]:
    """Why `edited` should not replace `original`, one line each; [] when it is safe.

    Syntax: the input parses as its language (from the file name; stdin is only sniffed for
    JSON) and the edit does not. Deletion (unless `drops` is False: another check stands for
    it): the edit drops more than DROP_SHARE of the input's non-blank lines (and at least
    DROP_MIN_LINES) while the instruction asks to remove nothing, the lines of a function it
    asks to reshape aside (`drop_problem`).
    """
    found = []
    language = language or sniff(original)
    if language in PARSERS and syntax_error(original, language) is None:
        message = syntax_error(edited, language)
        if message is not None:
            found.append(f"the edit breaks its {PARSERS[language][0]} syntax: {message}")
    if drops and (dropped := drop_problem(original, edited, instruction)) is not None:
        found.append(dropped)
    return found


@dataclass(frozen=True)
class Checked:
    """What `problems` found, with what it was asked: a candidate judged before its delivery
    (editing/selection.py) carries it there, and the delivery, asked the same, reads it
    instead of parsing the file again."""

    original: str
    edited: str
    instruction: str
    language: str
    problems: tuple[str, ...]

    def answers(self, original: str, edited: str, instruction: str, language: str) -> bool:
        return (self.original, self.edited, self.instruction, self.language) == (
            original,
            edited,
            instruction,
            language,
        )


def check(
    original: str, edited: str, instruction: str, language: str = "", drops: bool = True
) -> Checked:
    """`problems`, kept with what it was asked: the delivery reads it as the judgement made."""
    found = tuple(problems(original, edited, instruction, language, drops))
    return Checked(original, edited, instruction, language, found)


def problems_of(
    original: str, edited: str, instruction: str, language: str, known: Checked | None
) -> list[str]:
    """`problems`, read from `known` where it answered the same question."""
    if known is not None and known.answers(original, edited, instruction, language):
        return list(known.problems)
    return problems(original, edited, instruction, language)


def drop_problem(original: str, edited: str, instruction: str) -> str | None:
    """What is wrong where `edited` drops more than DROP_SHARE of `original`'s non-blank lines
    (and at least DROP_MIN_LINES) while the instruction asks to remove nothing, not counting the
    lines of the functions it asks to reshape (`reshaped_definitions`); None where it does
    not."""
    if asks_for_removal(instruction):
        return None
    total = non_blank(original.splitlines())
    reshaped = reshaped_definitions(original, edited, instruction)
    before = _without(original, [spans[0] for spans in reshaped.values()])
    after = _without(edited, [spans[1] for spans in reshaped.values()])
    dropped = dropped_lines(before, after)
    if dropped < DROP_MIN_LINES or dropped <= DROP_SHARE * total:
        return None
    outside = f" outside `{'`, `'.join(reshaped)}`" if reshaped else ""
    return (
        f"the edit drops {dropped} of {total} non-blank lines ({dropped / total:.0%}){outside} "
        "and the instruction asks to remove nothing"
    )


def reshaped_definitions(
    original: str, edited: str, instruction: str
) -> dict[str, tuple[tuple[int, int], tuple[int, int]]]:
    """The Python functions and methods that the instruction names in backticks and asks to
    reshape (RESHAPING_WORDS in its prose: "convert the loops in `filter` to comprehensions",
    "extract a helper from `median`"), each with its first and last lines in `original` and in
    `edited`; only those both texts define once. Such a function may rightly come back
    shorter: the deletion check counts the lines dropped around it. A class is not one: it
    holds most of a file, which the check is there to keep whole. {} where the instruction
    reshapes nothing it names, or a text is not Python."""
    if not RESHAPING_WORDS.search(without_code(instruction)):
        return {}
    try:
        trees = parse_lines(original), parse_lines(edited)
    except ValueError:  # not Python
        return {}
    found = {}
    for name in dict.fromkeys(NAME_IN_BACKTICKS.findall(instruction)):
        try:
            before, after = map(Region(symbol=name).within, trees)
        except ValueError:  # not defined once in both (a value, a parameter)
            continue
        if not isinstance(before, ast.ClassDef):
            found[name] = (
                (first_line(before), before.end_lineno),
                (first_line(after), after.end_lineno),
            )
    return found


def _without(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """`text` without the lines (1-based, inclusive) of `spans`."""
    gone = {line for first, last in spans for line in range(first, last + 1)}
    return "\n".join(line for k, line in enumerate(text.split("\n"), 1) if k not in gone)
