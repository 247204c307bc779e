"""A live view of an edit on stderr: the output streaming in, coloured by where each token came
from, beside the input with the copied spans lit in the same colours, and a stats bar.

Steps only update counters and the attribution (work proportional to the step); the picture is
built by rich's refresh thread at 8 frames per second from the visible windows alone: the tail
of the output and the input lines around the latest copy. Both sides hold one lock.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_right
from collections.abc import Callable

from rich.cells import get_character_cell_size
from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from specedit.drafting.kinds import BRANCH, MAIN, MODEL, POOL, SUCCESSOR
from specedit.editing.prompts import EditPrompt
from specedit.engine.events import Stats, Step
from specedit.view.attribution import GENERATED, RELAXED, Attribution, step_kinds

STYLES = {
    MAIN: "green",
    BRANCH: "cyan",
    SUCCESSOR: "bright_blue",
    POOL: "magenta",
    MODEL: "bright_green",
    RELAXED: "yellow",
    GENERATED: "bold red",
}
WIDE = 140  # from this many columns, input and output stand side by side
TAB = 4  # cells a tab takes on screen
_UNCOPIED = "dim"
_CODES = {kind: code for code, kind in enumerate(STYLES, start=1)}  # input marks; 0 = uncopied
_MARK_STYLES = [_UNCOPIED, *STYLES.values()]
# Tabs become spaces; other control characters are dropped, as their cell width (0) says.
_CLEAN = {c: None for c in [*range(32), 127]} | {ord("\t"): " " * TAB, ord("\n"): None}

Run = tuple[int, int, str]  # characters [start, end) of a text and their style


def dashboard_enabled(console: Console, quiet: bool = False) -> bool:
    """Only a real, roomy terminal gets the live view; pipes and logs get plain lines."""
    return (
        not quiet
        and console.is_terminal
        and not console.is_dumb_terminal
        and console.width >= 40
        and console.height >= 12
    )


def _percent(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def _fold(text: str, start: int, end: int, width: int) -> list[tuple[int, int]]:
    """Screen rows of at most `width` cells covering text[start:end]; newlines end rows."""
    rows = []
    row, cells = start, 0
    for i in range(start, end):
        char = text[i]
        if char == "\n":
            rows.append((row, i))
            row, cells = i + 1, 0
            continue
        size = 1 if " " <= char < "\x7f" else TAB if char == "\t" else get_character_cell_size(char)
        if cells + size > width and i > row:
            rows.append((row, i))
            row, cells = i, 0
        cells += size
    rows.append((row, end))
    return rows


def _styled(text: str, rows: list[tuple[int, int]], runs: list[Run]) -> Text:
    """The rows as one Text, styled by runs sorted by position (walked once for all rows)."""
    lines = []
    first = 0
    for start, end in rows:
        line = Text()
        while first < len(runs) and runs[first][1] <= start:
            first += 1
        k = first
        while k < len(runs) and runs[k][0] < end:
            run_start, run_end, style = runs[k]
            line.append(text[max(run_start, start) : min(run_end, end)].translate(_CLEAN), style)
            k += 1
        lines.append(line)
    return Text("\n", no_wrap=True, overflow="crop").join(lines)


class Dashboard:
    """Use as a context manager around the edit, pass `on_step` to it, then call `finish`."""

    def __init__(
        self,
        prompt: EditPrompt,
        decode: Callable[[list[int]], str],
        max_new_tokens: int,
        title: str,
        console: Console,
    ) -> None:
        self.prompt = prompt
        self.attribution = Attribution(prompt, decode)
        self.max_new_tokens = max_new_tokens
        self.title = title
        self.console = console
        text = prompt.text
        # Where each line starts; a final newline ends the last line rather than starting one.
        self._lines = [0] + [i + 1 for i, char in enumerate(text[:-1]) if char == "\n"]
        self._marks = bytearray(len(text))  # per input character: code of its latest copy's kind
        self._focus: tuple[int, int] | None = None  # input characters of the latest copy
        self._passes = self._drafted = self._accepted = 0
        self._started = time.perf_counter()
        self._lock = threading.Lock()
        self._live = Live(
            self,
            console=console,
            auto_refresh=True,
            refresh_per_second=8,
            transient=True,
            redirect_stdout=False,  # stdout carries the edited text
        )

    def __enter__(self) -> Dashboard:
        self._started = time.perf_counter()
        self._live.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._live.stop()

    def on_step(self, step: Step) -> None:
        with self._lock:
            self.attribution.add(step)
            self._passes += 1
            self._drafted += step.drafted
            for source, kind in zip(step.sources, step_kinds(step)):
                self._accepted += kind is not None
                chars = None if source is None else self.prompt.input_span(source)
                if chars:
                    start, end = chars
                    self._marks[start:end] = bytes([_CODES.get(kind, 1)]) * (end - start)
                    self._focus = chars

    def finish(self, stats: Stats) -> None:
        """Close the live view and print a few lines that stay: the numbers and the make-up."""
        self._live.stop()
        kinds = self.attribution.kinds
        total = sum(kinds.values()) or 1
        bar, shares = Text(), Text()
        for kind, style in STYLES.items():
            if kinds[kind]:
                bar.append("█" * max(1, round(20 * kinds[kind] / total)), style)
                shares.append(f"  {kind} {kinds[kind] / total:.0%}", style)
        self.console.print(
            Text.assemble(
                (self.title, "bold"),
                f": {stats.new_tokens} tokens in {stats.total_seconds:.1f}s, "
                f"{stats.tokens_per_second:.1f} tok/s, {stats.mean_accepted:.2f} tok/pass over "
                f"{stats.forward_passes} passes",
            )
        )
        self.console.print(
            f"drafts: {_percent(stats.accepted_tokens, stats.drafted_tokens)} of "
            f"{stats.drafted_tokens} accepted; {self.attribution.copied_share:.0%} of the output "
            "copied from the input",
            highlight=False,
        )
        makeup = Text.assemble(bar, shares)
        if makeup.cell_len > self.console.width:  # a share must not break in two
            self.console.print(bar)
            makeup = shares[2:]
        self.console.print(makeup, no_wrap=True, overflow="ellipsis")

    def __rich__(self) -> RenderableType:
        """The current picture, fitted to the console; the live view calls it 8 times a second."""
        with self._lock:
            width, height = self.console.size
            footer = [self._progress(width), self._stats(), self._legend(width)]
            rows = max(height - 1 - len(footer) - 2, 1)  # one line spare, two panel borders
            if width >= WIDE:
                half = width // 2
                body = Table.grid()
                body.add_row(self._input_panel(half, rows), self._output_panel(width - half, rows))
                return Group(body, *footer)
            if rows < 8:  # too short for both: the output matters most
                return Group(self._output_panel(width, rows), *footer)
            above = (rows - 2) // 3
            return Group(
                self._input_panel(width, above),
                self._output_panel(width, rows - 2 - above),
                *footer,
            )

    def _panel(self, content: Text, title: str, width: int, rows: int) -> Panel:
        return Panel(
            content,
            title=title,
            title_align="left",
            border_style="grey50",
            padding=(0, 1),
            width=width,
            height=rows + 2,
        )

    def _output_panel(self, width: int, rows: int) -> Panel:
        """The last `rows` screen rows of the output, each token in the colour of its kind."""
        text, spans = self.attribution.text, self.attribution.spans
        title = f"output · {len(self.attribution.tokens)} tokens"
        if not text:
            waiting = Text("waiting for the first forward pass…", style="dim italic")
            return self._panel(waiting, title, width, rows)
        inner = width - 4
        start = max(len(text) - rows * inner, 0)  # no more characters can be visible
        runs: list[Run] = []
        for span in reversed(spans):
            if span.output[1] <= start:
                break
            runs.append((*span.output, STYLES.get(span.kind or GENERATED, STYLES[MAIN])))
        runs.reverse()
        visible = _fold(text, start, len(text), inner)[-rows:]
        return self._panel(_styled(text, visible, runs), title, width, rows)

    def _input_panel(self, width: int, rows: int) -> Panel:
        """The input rows around the latest copy source (a third above it), copies lit."""
        text, inner = self.prompt.text, width - 4
        lines = self._lines
        focus_start, focus_end = self._focus or (0, 0)
        line = bisect_right(lines, focus_start) - 1
        last = min(line + rows, len(lines) - 1)
        reach = rows * inner  # characters either side of the focus that can be visible
        start = max(lines[max(line - rows, 0)], focus_start - reach)
        end = lines[last + 1] - 1 if last + 1 < len(lines) else len(text.removesuffix("\n"))
        folded = _fold(text, start, min(end, focus_end + reach), inner)
        here = next((i for i, row in enumerate(folded) if row[1] >= focus_start), len(folded) - 1)
        top = min(max(here - rows // 3, 0), max(len(folded) - rows, 0))
        visible = folded[top : top + rows]
        runs = self._input_runs(visible[0][0], visible[-1][1], focus_start, focus_end)
        title = f"input · line {bisect_right(lines, visible[0][0])} of {len(lines)}"
        return self._panel(_styled(text, visible, runs), title, width, rows)

    def _input_runs(self, start: int, end: int, focus_start: int, focus_end: int) -> list[Run]:
        """Runs of equal copy marks in [start, end); the latest copy source is underlined."""
        runs: list[Run] = []
        marks = self._marks
        for piece_start, piece_end, extra in (
            (start, focus_start, ""),
            (focus_start, focus_end, " underline"),
            (focus_end, end, ""),
        ):
            i, piece_end = max(piece_start, start), min(piece_end, end)
            while i < piece_end:
                j = i + 1
                while j < piece_end and marks[j] == marks[i]:
                    j += 1
                runs.append((i, j, _MARK_STYLES[marks[i]] + extra))
                i = j
        return runs

    def _progress(self, width: int) -> Table:
        tokens = len(self.attribution.tokens)
        line = Table.grid(expand=True, padding=(0, 1))
        line.add_column(no_wrap=True, overflow="ellipsis", max_width=width // 2)
        line.add_column(ratio=1)
        line.add_column(no_wrap=True, justify="right")
        line.add_row(
            Text(self.title, style="bold"),
            ProgressBar(total=self.max_new_tokens, completed=tokens),
            f"{tokens}/{self.max_new_tokens} tokens",
        )
        return line

    def _stats(self) -> Text:
        elapsed = time.perf_counter() - self._started
        tokens = len(self.attribution.tokens)
        rate = _percent(self._accepted, self._drafted)
        parts = [
            (f"{tokens / elapsed:.1f}" if elapsed else "-", "tok/s"),
            (f"{tokens / max(self._passes, 1):.2f}", "tok/pass"),
            (rate, "accepted"),
            (str(self._passes), "passes"),
            (f"{self.attribution.copied_share:.0%}", "copied"),
            (f"{elapsed:.1f}", "s"),
        ]
        line = Text(no_wrap=True, overflow="ellipsis")
        for i, (value, label) in enumerate(parts):
            line.append(" · " if i else "", "dim").append(value, "bold").append(f" {label}", "dim")
        return line

    def _legend(self, width: int) -> Text:
        legend = Text(no_wrap=True, overflow="ellipsis")
        for kind, style in STYLES.items():
            legend.append("■ ", style).append(f"{kind}  ")
        if width >= 100:
            legend.append("input: ", "dim").append("dim", _UNCOPIED).append(" not copied, ", "dim")
            legend.append("underlined", "underline").append(" latest source", "dim")
        return legend
