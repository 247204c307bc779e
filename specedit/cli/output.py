"""Where an edited text goes and what is reported on it: printed, diffed, checked or written
in place (atomically, in the input's line endings and byte order mark, refused when unsafe or
when the file changed on disk since it was read), and the stats and attribution of each file
(--stats, --stats-file, --attribution). cli/deliver.py decides what text that is.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from specedit import console
from specedit.cli.exits import Exit
from specedit.console import error, say, warning
from specedit.editing import safety
from specedit.editing.attempts import Attempt
from specedit.editing.editor import EditRequest, EditResult
from specedit.editing.selection import Candidate
from specedit.files import ChangedOnDisk, Fingerprint, keep_conventions, write_atomic


@dataclass
class Records:
    """What --stats-file and --attribution hold so far: a record per file reported. Both are
    rewritten after each file, so each holds one JSON object after one file and a list of one
    object per file, in the batch's order and each naming its "file", once there are more."""

    stats: list[dict] = field(default_factory=list)
    attribution: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Delivery:
    """Where the edited text goes and what else is reported. One delivery serves a batch, so
    its `records` gather every file's."""

    in_place: bool = False
    diff: bool = False
    check: bool = False
    output: Path | None = None
    quiet: bool = False
    stats: str = "text"  # text or json, on stderr
    stats_file: Path | None = None
    attribution: Path | None = None
    force: bool = False  # write even when the safety checks find problems
    on_write: Callable[[str], None] | None = None  # told each file written (-i, -o)
    records: Records = field(default_factory=Records, compare=False)

    @property
    def writes(self) -> bool:
        """Whether the edited text itself goes somewhere (stdout, -o, -i); --diff and --check
        only report."""
        return not (self.diff or self.check)


def save_records(delivery: Delivery, stats: dict, attribution: Callable[[], str]) -> int:
    """Add a file's stats and attribution to the delivery's records and rewrite --stats-file
    and --attribution with them (`Records`); returns the exit code: 7, with one line on stderr
    for each, when they cannot be written (the edit itself is delivered by then)."""
    code = Exit.OK
    records = delivery.records
    if delivery.stats_file:
        records.stats.append(stats)
        code = _write_records(delivery.stats_file, "stats", records.stats, indent=2)
    if delivery.attribution:
        record = {"file": stats["file"]} | json.loads(attribution())
        records.attribution.append(record)
        written = _write_records(
            delivery.attribution, "attribution", records.attribution, indent=1, ensure_ascii=False
        )
        code = max(code, written)
    return code


def _write_records(path: Path, what: str, records: list[dict], **layout) -> int:
    """Write one record as a JSON object, several as a list; returns the exit code, the reason
    in one line when it is not 0. A plain write, as a shell's `>` does: a report is no file to
    keep whole, and it may be a device or a pipe."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(json.dumps(records[0] if len(records) == 1 else records, **layout) + "\n")
    except OSError as exc:
        error(f"cannot write {what} to {path}: {exc.strerror or exc}")
        return Exit.WRITE
    return Exit.OK


def summary_wanted(delivery: Delivery, stats: dict) -> bool:
    """Print the stats as JSON where asked; returns whether a one-line summary is still wanted
    (neither -q nor --stats json)."""
    if delivery.quiet:
        return False
    if delivery.stats == "json":
        console.line(json.dumps(stats))
        return False
    return True


def unified_diff(original: str, edited: str, name: str) -> list[str]:
    """A unified diff that `patch` and `git apply` take: a line ends at a line feed alone (a
    form feed or a lone carriage return is part of its line, as it is for them), and a last
    line without one is marked as `diff -u` marks it."""
    lines = difflib.unified_diff(
        _lines(original), _lines(edited), fromfile=_quoted(f"a/{name}"), tofile=_quoted(f"b/{name}")
    )
    return [
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    ]


# How git writes these in a file's name in a diff's header, inside double quotes (and
# `git apply` reads them back); other control characters as octal.
C_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "\\": "\\\\",
}
NEEDS_QUOTES = re.compile(r'[\x00-\x1f\x7f-\x9f"\\]')


def _quoted(name: str) -> str:
    """`name` for a diff's header: as it is, or C-quoted as git quotes it where it holds a
    control character, a quote or a backslash (a line feed in a name would otherwise start a
    header or a hunk of its own)."""
    if not NEEDS_QUOTES.search(name):
        return name
    return '"' + "".join(_c_escaped(char) for char in name) + '"'


def _c_escaped(char: str) -> str:
    if char in C_ESCAPES:
        return C_ESCAPES[char]
    if NEEDS_QUOTES.match(char):  # as git writes it: the octal of its UTF-8 bytes
        return "".join(f"\\{byte:03o}" for byte in char.encode())
    return char


def _lines(text: str) -> list[str]:
    """`text`'s lines, each with its line feed; the last without one where the text ends so."""
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    return lines if lines[-1] else lines[:-1]


def deliver_text(
    path: str,
    name: str,
    original: str,
    edited: str,
    delivery: Delivery,
    request: EditRequest,
    read: Fingerprint | None = None,
    checked: safety.Checked | None = None,
) -> int:
    """Print, diff, check or write the edited text, in the input's line endings and byte order
    mark; an unsafe edit is refused unless forced (`checked`: what the safety checks found
    when the candidate was judged, read if they were asked the same). An in-place write is
    refused if the file no longer matches `read` (exit 6); a write that fails is reported in
    one line (exit 7)."""
    edited = keep_conventions(original, edited)
    changed = edited != original
    instruction, language = request.instruction, request.language
    problems = (
        safety.problems_of(original, edited, instruction, language, checked) if changed else []
    )
    if problems and delivery.writes and not delivery.force:
        for problem in problems:
            error(f"refusing to write {name}: {problem}")
        sys.stderr.writelines(unified_diff(original, edited, name))
        sys.stderr.flush()
        return Exit.UNSAFE
    for problem in problems:
        warning(f"{name}: {problem}" + (" (written anyway: --force)" if delivery.writes else ""))
    code = Exit.OK
    if delivery.check:
        if changed:
            console.line(f"would edit {name}")
            code = Exit.CHANGED
    elif delivery.diff:
        sys.stdout.writelines(unified_diff(original, edited, name))
    elif delivery.in_place:
        if changed:
            if code := write_file(path, edited, delivery, read):
                return code
            if not delivery.quiet:
                console.line(f"edited {name}")
    elif delivery.output:
        output = str(delivery.output)
        same = os.path.realpath(output) == os.path.realpath(path)  # -o FILE on FILE itself
        if code := write_file(output, edited, delivery, read if same else None):
            return code
    else:
        sys.stdout.write(edited)
    sys.stdout.flush()
    return code


def write_file(path: str, text: str, delivery: Delivery, read: Fingerprint | None = None) -> int:
    """Write `text` to `path` atomically, if it still matches `read`; returns the exit code, the
    reason on stderr in one line when it is not 0."""
    try:
        write_atomic(path, text, read)
    except ChangedOnDisk as exc:
        error(
            f"refusing to write {path}: it changed on disk while the model worked ({exc}); "
            "nothing was written"
        )
        return Exit.CHANGED_ON_DISK
    except OSError as exc:
        error(f"cannot write {path}: {exc.strerror or exc}; nothing was written to {path}")
        return Exit.WRITE
    if delivery.on_write:
        delivery.on_write(path)
    return Exit.OK


@dataclass
class Report:
    """The stats of the delivered (or last) candidate: --stats, --stats-file, --attribution."""

    name: str
    delivery: Delivery
    method: str
    engine: str
    summary_shown: bool  # the dashboard already showed its summary line
    tries: list[Attempt] | None  # the --test attempts, None without --test
    startup: dict[str, float]  # the editor's start-up seconds by stage
    region: dict | None = None  # the lines edited, where not the whole file, and why

    def stats(self, candidate: Candidate, refused: bool = False) -> int:
        """Report them (`save_records`, `summary_wanted`) with the attribution the candidate
        carries; returns the exit code of the records' writes."""
        delivery, result, attribution = self.delivery, candidate.result, candidate.attribution
        stats = result.generation.stats.as_dict() | {
            "file": self.name,
            "method": self.method,
            "engine": self.engine,
            "changed": result.changed,
            "copied_share": round(attribution.copied_share, 3),
            "stop_reason": result.generation.stop_reason,
            "refused": refused,
        }
        if result.statement is not None:
            stats["statement"] = result.statement
        if self.region is not None:
            stats["region"] = self.region
        if result.before_passes:  # the post-processing passes that changed the answer
            stats["passes"] = list(result.before_passes)
        if candidate.verdict and (finding := candidate.verdict.finding):
            stats["finding"] = {"kind": finding.kind, "name": finding.name, "line": finding.line}
        if candidate.verdict and candidate.verdict.removed:
            stats["removed"] = list(candidate.verdict.removed)
        if candidate.verdict and candidate.verdict.absent:
            stats["absent"] = list(candidate.verdict.absent)
        if candidate.verdict and (examples := candidate.verdict.examples):
            stats["examples"] = examples.summary()
        if candidate.afresh:
            stats["afresh"] = candidate.afresh
        seconds = stats["seconds"]  # where the wall time went, from start-up to the last token
        stats["wall_seconds"] = {
            **{k: round(v, 4) for k, v in {**self.startup, **result.timings}.items()},
            "prefill": seconds["prefill"],
            "decode": round(seconds["total"] - seconds["prefill"], 4),
        }
        passed = bool(self.tries) and self.tries[-1].passed
        if self.tries is not None:
            stats |= {"attempts": len(self.tries), "test": "passed" if passed else "failed"}
        code = save_records(delivery, stats, attribution.to_json)
        if summary_wanted(delivery, stats):
            self._summarize(result, stats)
        return code

    def _summarize(self, result: EditResult, stats: dict) -> None:
        """The stats line, after the model's own words on its change where it said any; only
        the --test outcome where the dashboard already showed its summary."""
        tested = ""
        if self.tries is not None:
            tested = f", --test {stats['test']}"
            if len(self.tries) > 1:
                tested += f" after {len(self.tries)} attempts"
        if result.statement:  # the model's own words on what it changed
            say(f"{self.name}: {result.statement}")
        if not self.summary_shown:
            s = result.generation.stats
            say(
                f"{self.name}: {s.new_tokens} tokens in {s.total_seconds:.1f}s "
                f"({s.tokens_per_second:.1f} tok/s), {s.forward_passes} forward passes, "
                f"{s.mean_accepted:.2f} tokens/pass, {stats['copied_share']:.0%} copied, "
                f"method {self.method} on {self.engine}"
                + ("" if result.changed else ", no change")
                + tested
            )
        elif tested:
            say(f"{self.name}: {tested[2:]}")
