"""Everything specedit says on stderr goes through here: stdout belongs to the edited text.

Messages are one line each, prefixed with "specedit:". Long stages (model conversion, index
builds, calibration) show a rich progress bar on a terminal and one line per stage otherwise,
so logs and CI output never fill with carriage returns.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# Control characters (the tab aside) and the Unicode line and paragraph separators: a file's
# name may hold them, a terminal takes ESC and its like as commands (a title set, the screen
# cleared), and a line feed would start a line of its own, a message forged after it
# ("x.py\nspecedit: nothing to change").
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


def printable(text: str) -> str:
    """`text` with its control characters, line feeds included, written as escapes (`\\n`,
    `\\x1b`): one line that sends a terminal no command."""
    return CONTROL.sub(lambda match: ascii(match.group())[1:-1], text)


def line(text: str) -> None:
    """One line on stderr (black-style "would edit FILE", a JSON stats object), `printable`."""
    print(printable(text), file=sys.stderr, flush=True)


def say(message: str) -> None:
    line(f"specedit: {message}")


def error(message: str) -> None:
    say(f"error: {message}")


def warning(message: str) -> None:
    say(f"warning: {message}")


@contextmanager
def progress(label: str, total: int, unit: str = "") -> Iterator[Callable[[int], None]]:
    """Report a stage of `total` steps: yields `advance(done)`, to call with the steps done."""
    started = time.perf_counter()
    if not sys.stderr.isatty():
        say(f"{label} ({total}{' ' + unit if unit else ''})")
        yield lambda done: None
        say(f"{label}: done in {time.perf_counter() - started:.0f}s")
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task(f"specedit: {label}", total=total)
        yield lambda done: bar.update(task, completed=done)
    say(f"{label}: done in {time.perf_counter() - started:.0f}s")
