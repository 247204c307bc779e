"""Editing files the way a Unix tool does: read, edit, then print, diff, check or write in place.

One `edit_file` call per file; the model is loaded once by the caller. Errors of one file are
reported on stderr and turn into its exit code, so a batch goes on with the next file.
"""

from __future__ import annotations

import difflib
import json
import sys
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from rich.console import Console

from specedit.attribution import Attribution
from specedit.dashboard import Dashboard, dashboard_enabled
from specedit.drafting.heads import CalibrationMissing
from specedit.drafting.preverifier import CalibrationError
from specedit.edit import EditError, EditRequest, EditResult, execute, prepare
from specedit.files import InputError, read_text, write_atomic
from specedit.models import LoadedModel
from specedit.prompts import PromptError, language_for

EXIT_OK, EXIT_CHANGED, EXIT_INPUT, EXIT_MODEL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130


@dataclass(frozen=True)
class Delivery:
    """Where the edited text goes and what else is reported."""

    in_place: bool = False
    diff: bool = False
    check: bool = False
    output: Path | None = None
    quiet: bool = False
    stats: str = "text"  # text or json, on stderr
    stats_file: Path | None = None
    attribution: Path | None = None


def error(message: str) -> None:
    print(f"specedit: error: {message}", file=sys.stderr, flush=True)


def edit_file(
    lm: LoadedModel, path: str, template: EditRequest, delivery: Delivery, console: Console
) -> int:
    """Edit one file (or stdin for '-') and deliver the result; returns the exit code."""
    name = "stdin" if path == "-" else path
    try:
        text = read_text(path)
        if not text.strip():
            raise InputError(f"{name} is empty")
        request = replace(template, text=text, language=language_for(None if path == "-" else path))
        prepared = prepare(lm, request)
        decode = partial(lm.tokenizer.decode, skip_special_tokens=True)
        live = dashboard_enabled(console, delivery.quiet)
        if live:
            with Dashboard(prepared.prompt, decode, prepared.max_new_tokens, name, console) as view:
                result = execute(lm, prepared, view.on_step)
                view.finish(result.generation.stats)
            attribution = view.attribution
        else:
            attribution = Attribution(prepared.prompt, decode)
            result = execute(lm, prepared, attribution.add)
    except (InputError, EditError, PromptError, CalibrationMissing, CalibrationError) as exc:
        error(str(exc))
        return EXIT_INPUT
    return _deliver(path, name, result, attribution, delivery, request.method, live)


def _deliver(
    path: str,
    name: str,
    result: EditResult,
    attribution: Attribution,
    delivery: Delivery,
    method: str,
    summary_shown: bool,
) -> int:
    original, edited = result.prompt.text, result.text
    code = EXIT_OK
    if delivery.check:
        if result.changed:
            print(f"would edit {name}", file=sys.stderr)
            code = EXIT_CHANGED
    elif delivery.diff:
        sys.stdout.writelines(
            difflib.unified_diff(
                original.splitlines(keepends=True),
                edited.splitlines(keepends=True),
                fromfile=f"a/{name}",
                tofile=f"b/{name}",
            )
        )
    elif delivery.in_place:
        if result.changed:
            write_atomic(path, edited)
            if not delivery.quiet:
                print(f"edited {name}", file=sys.stderr)
    elif delivery.output:
        write_atomic(str(delivery.output), edited)
    else:
        sys.stdout.write(edited)
    sys.stdout.flush()

    stats = result.generation.stats.as_dict() | {
        "file": name,
        "method": method,
        "changed": result.changed,
        "copied_share": round(attribution.copied_share, 3),
        "stop_reason": result.generation.stop_reason,
    }
    if delivery.stats_file:
        delivery.stats_file.write_text(json.dumps(stats, indent=2) + "\n")
    if delivery.attribution:
        delivery.attribution.write_text(attribution.to_json() + "\n")
    if not delivery.quiet:  # one line at most; the dashboard already showed its summary
        if delivery.stats == "json":
            print(json.dumps(stats), file=sys.stderr)
        elif not summary_shown:
            s = result.generation.stats
            print(
                f"specedit: {name}: {s.new_tokens} tokens in {s.total_seconds:.1f}s "
                f"({s.tokens_per_second:.1f} tok/s), {s.forward_passes} forward passes, "
                f"{s.mean_accepted:.2f} tokens/pass, {stats['copied_share']:.0%} copied, "
                f"method {method}" + ("" if result.changed else ", no change"),
                file=sys.stderr,
            )
    return code
