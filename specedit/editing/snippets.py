"""Lazy edit snippets merged into their file without the model, where the snippet leaves no doubt.

A chat model's lazy snippet shows the changed parts of a file, with comments such as
`# ... existing code ...` for the code that stays. Most snippets say exactly where each part
goes: a changed function starts with a line the file has once at that level, and markers stand
for the code between. Such a snippet is merged here by blocks (indentation shows them), exactly
and in milliseconds. Wherever it leaves a doubt (a part whose first line the file has twice or at
another level, code left out without a marker, a new part between two markers, parts out of the
file's order, a part that drops most of what it replaces, a result that no longer parses, prose),
`merge` returns None and the model merges it.

What is read as what, in each block (the file, a function's body, a class's body):

- units: a line at the block's indentation with its deeper lines (decorators, `else:`, and
  closing brackets included); a unit is known by its first line that is not a decorator;
- a unit of the snippet the file has once replaces it; if its body holds a marker (or it leaves
  out a nested `def`/`class` of the file's), the two bodies are merged the same way instead;
- a marker keeps the file's units it stands for; new units go where the snippet puts them,
  next to the unit or marker they follow or precede;
- what a snippet leaves out before its first part or after its last stays, and so does all it
  leaves out at a level without markers; between two parts it must be a marker's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from specedit.editing.safety import dropped_lines, non_blank, syntax_error

COMMENT = r"^\s*(?:#|//|/\*|<!--|--|;|%)\s*"
MARKER = re.compile(
    COMMENT + r"(?:.*(?:\.\.\.|…)|.*\b(?:existing code|unchanged|rest of (?:the )?"
    r"(?:code|file|function|class|method|module))\b)",
    re.IGNORECASE,
)
CONTINUES = re.compile(r"^\s*(?:[)\]}]|else\b|elif\b|except\b|finally\b|catch\b)")
DEFINITION = re.compile(r"^\s*(?:async\s+def|def|class|function|func|fn)\b")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
# Prose has no blocks to read: whether a paragraph under a heading replaces the old one or goes
# beside it, only the words say. The model merges those.
PROSE = {"markdown", "rst", "text", "latex"}


def is_marker(line: str) -> bool:
    return MARKER.match(line) is not None


def indentation(line: str) -> str:
    """The blanks that start `line`."""
    return line[: len(line) - len(line.lstrip())]


@dataclass
class Unit:
    """A line at a block's indentation and the lines that belong to it."""

    blank: list[str]  # the blank lines before it
    lines: list[str] = field(default_factory=list)
    marker: bool = False

    @property
    def head(self) -> int:
        """Index of its first line that is not a decorator (nor a decorator's continuation)."""
        base = len(indentation(self.lines[0]))
        for i, line in enumerate(self.lines):
            if len(indentation(line)) == base and not line.lstrip().startswith("@"):
                return i
        return 0

    @property
    def key(self) -> str:
        return self.lines[self.head].strip()

    def parts(self) -> tuple[list[str], list[str], list[str]]:
        """(header, body, footer): the header runs to where its brackets close; the footer is
        the closing lines at the unit's own indentation (a `}`)."""
        end, depth = self.head, 0
        while True:
            line = self.lines[end]
            depth += sum(line.count(c) for c in "([") - sum(line.count(c) for c in ")]")
            end += 1
            if depth <= 0 or end == len(self.lines):
                break
        own = indentation(self.lines[0])
        footer_start = len(self.lines)
        while footer_start > end and indentation(self.lines[footer_start - 1]) == own:
            footer_start -= 1
        return self.lines[:end], self.lines[end:footer_start], self.lines[footer_start:]


def split(lines: list[str]) -> tuple[list[Unit], list[str]]:
    """A block's lines as units at its indentation, and the blank lines after the last."""
    units: list[Unit] = []
    blank: list[str] = []
    base = min((len(indentation(line)) for line in lines if line.strip()), default=0)
    decorated = False  # the last line at the base was a decorator: the next one joins it
    for line in lines:
        if not line.strip():
            blank.append(line)
            continue
        at_base = len(indentation(line)) == base
        joins = (
            units
            and not units[-1].marker
            and (not at_base or decorated or (CONTINUES.match(line) and not is_marker(line)))
        )
        if joins:
            units[-1].lines += [*blank, line]
        else:
            units.append(Unit(blank, [line], marker=at_base and is_marker(line)))
        blank = []
        if at_base:
            decorated = line.lstrip().startswith("@")
    return units, blank


def _shift(lines: list[str], old: str, new: str) -> list[str] | None:
    """Lines moved from indentation `old` to `new` (None if one is indented less than `old`)."""
    moved = []
    for line in lines:
        if not line.strip():
            moved.append(line)
        elif line.startswith(old):
            moved.append(new + line[len(old) :])
        else:
            return None
    return moved


def _base(units: list[Unit]) -> str:
    return indentation(units[0].lines[0]) if units else ""


class Doubt(Exception):
    """The snippet does not say where one of its parts goes."""


def _merge_block(old: list[str], new: list[str]) -> list[str]:
    """The block `old` with the snippet block `new` merged in; raises Doubt."""
    old_units, old_tail = split(old)
    new_units, _ = split(new)
    if not new_units:
        return old
    explicit = any(unit.marker for unit in new_units)
    to, frm = _base(old_units) or _base(new_units), _base(new_units)

    def place(lines: list[str]) -> list[str]:
        moved = _shift(lines, frm, to)
        if moved is None:
            raise Doubt("a line of the snippet is indented less than its block")
        return moved

    # Anchors: each snippet unit that the file has exactly once at this level.
    keys = [unit.key if not unit.marker else None for unit in old_units]
    deeper = {line.strip() for unit in old_units for line in unit.lines[unit.head + 1 :]}
    anchors: list[int | None] = []
    for unit in new_units:
        if unit.marker:
            anchors.append(None)
            continue
        found = [i for i, key in enumerate(keys) if key == unit.key]
        if len(found) > 1:
            raise Doubt(f"the file has {unit.key!r} {len(found)} times")
        if not found and unit.key in deeper:
            raise Doubt(f"{unit.key!r} is at another level in the file")
        anchors.append(found[0] if found else None)
    order = [a for a in anchors if a is not None]
    if order != sorted(set(order)):
        raise Doubt("the snippet's parts are not in the file's order")
    if not order and not explicit:
        raise Doubt("the snippet shares no line with the file")

    out: list[str] = []

    def keep(units: list[Unit]) -> None:
        for unit in units:
            out.extend(unit.blank + unit.lines)

    def add(units: list[Unit]) -> None:
        for unit in units:
            out.extend(unit.blank + place(unit.lines))

    previous, segment = -1, []
    for unit, anchor in [*zip(new_units, anchors), (None, len(old_units))]:
        if unit is not None and anchor is None:
            segment.append(unit)
            continue
        skipped = old_units[previous + 1 : anchor]
        markers = [i for i, item in enumerate(segment) if item.marker]
        fresh = [item for item in segment if not item.marker]
        if markers:
            before, after = segment[: markers[0]], segment[markers[-1] + 1 :]
            if len(before) + len(after) < len(fresh):
                raise Doubt("a new part stands between two markers")
            add(before), keep(skipped), add(after)
        elif not explicit or previous < 0 or anchor == len(old_units):
            # No marker at this level, or before the first part or after the last: what the
            # snippet leaves out stays (no one deletes the imports by not showing them).
            if previous < 0:
                keep(skipped), add(fresh)
            else:
                add(fresh), keep(skipped)
        elif skipped:
            raise Doubt("the snippet leaves code out between two parts without a marker")
        else:
            add(fresh)
        if unit is not None:
            out.extend(old_units[anchor].blank + _merge_unit(old_units[anchor], unit, place))
        previous, segment = anchor, []
    return out + old_tail


def _merge_unit(old: Unit, new: Unit, place) -> list[str]:
    """The file's unit `old` as the snippet's unit `new` has it."""
    if old.head and not new.head:
        raise Doubt(f"the snippet shows {new.key!r} without the file's decorators")
    inner = new.lines[new.head + 1 :]
    names = {line.strip() for line in inner}
    partial = any(is_marker(line) for line in inner) or any(
        DEFINITION.match(line) and line.strip() not in names for line in old.lines[old.head + 1 :]
    )
    if not partial:
        # A lazy snippet may shorten a body without a marker: losing most of it is a doubt.
        old_text, new_text = "\n".join(old.lines), "\n".join(new.lines)
        if 2 * dropped_lines(old_text, new_text) > non_blank(old.lines):
            raise Doubt(f"the snippet's {new.key!r} drops most of the file's")
        return place(new.lines)
    _, old_body, old_footer = old.parts()
    new_header, new_body, new_footer = new.parts()
    footer = place(new_footer) if new_footer else old_footer
    return place(new_header) + _merge_block(old_body, new_body) + footer


def unfence(snippet: str) -> str:
    """The snippet without the code fence a chat answer wraps it in."""
    lines = snippet.strip("\n").splitlines()
    opening = FENCE.match(lines[0]) if lines else None
    if opening and len(lines) >= 2 and lines[-1].strip() == opening.group(1):
        lines = lines[1:-1]
    return "\n".join(lines)


def merge(text: str, snippet: str, language: str = "") -> str | None:
    """`text` with the lazy `snippet` merged in, or None where the snippet leaves a doubt
    (then the model should merge it). A file that parses in `language` must still parse;
    prose is always the model's."""
    if language in PROSE:
        return None
    lines = unfence(snippet).splitlines()
    if not any(line.strip() and not is_marker(line) for line in lines):
        return None
    try:
        merged = _merge_block(text.splitlines(), lines)
    except Doubt:
        return None
    newline = "\r\n" if "\r\n" in text else "\n"  # the file's own line endings stay
    result = newline.join(merged) + (newline if text.endswith("\n") or not text else "")
    if syntax_error(text, language) is None and syntax_error(result, language) is not None:
        return None
    return result
