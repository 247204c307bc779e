"""The `specedit` command: parse options, load the model once, hand each file to deliver.py.

Thin on purpose: options are declared once and checked by click; everything heavy (torch, the
model, drafters) is imported only by the command that needs it, so `--help` answers at once.
Exit codes are `specedit.cli.exits.Exit`.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from typer.core import TyperCommand

from specedit import __version__
from specedit.cli.exits import Exit
from specedit.cli.options import EditOptions, WriteBack
from specedit.cli.startup import interruptible, load_model
from specedit.cli.tools import bench, cache, calibrate, models_app, serve
from specedit.cli.trust import trust_command
from specedit.console import error

if TYPE_CHECKING:
    from specedit.files import Source

app = typer.Typer(
    help="Edit files with a local LLM, fast: the input is the draft (model-free speculative "
    "decoding). The edited text goes to stdout; messages go to stderr.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _run_edits(
    mode: str,
    files: list[str],
    instruction: str,
    options: EditOptions,
    snippet: str | None = None,
) -> None:
    """Validate, load the model once, edit each file in `mode` (the command's: fix, edit,
    rewrite, apply); exit with the worst file's code. With a `snippet` (apply) it is first
    merged without the model, which then loads only if that leaves a doubt."""
    from dataclasses import replace

    from rich.console import Console

    from specedit.cli.deliver import CheckCommand, edit_file, merge_file
    from specedit.cli.output import Delivery
    from specedit.editing.editor import EditorUnavailable, EditRequest, Mode, context_needed
    from specedit.editing.local import LocalEditor
    from specedit.editing.localize import narrowed
    from specedit.editing.prompts import language_for
    from specedit.editing.selection import Samples
    from specedit.files import InputError, read_input, read_text

    problems = options.problems(files, instruction)
    try:
        references = tuple(read_text(str(path)) for path in options.reference or ())
    except InputError as exc:
        problems.append(str(exc))
    if problems:
        error(problems[0])
        raise typer.Exit(Exit.INPUT)
    files = _once_each(files)
    texts, unreadable = _read_inputs(files)
    written: list[str] = []  # the files written so far, named if Ctrl-C stops the batch
    files = [file for file in files if file not in unreadable]
    if not files:  # nothing to edit: no model is loaded for that
        raise typer.Exit(Exit.INPUT)
    delivery = Delivery(
        in_place=options.write_back is WriteBack.IN_PLACE,
        diff=options.write_back is WriteBack.DIFF,
        check=options.write_back is WriteBack.CHECK,
        output=options.output_file,
        quiet=options.quiet,
        stats=options.stats,
        stats_file=options.stats_file,
        attribution=options.attribution,
        force=options.force,
        on_write=written.append,
    )
    test = (
        CheckCommand(options.test, options.attempts, options.test_timeout) if options.test else None
    )
    samples = Samples(
        options.candidates, options.vote, options.examples_run, options.checked_candidates
    )
    region = options.region()
    if snippet is not None and region is None:
        (file,) = files
        try:
            source = texts[file] = texts.get(file) or read_input(file)  # stdin is read now
        except InputError as exc:
            error(str(exc))
            raise typer.Exit(Exit.INPUT) from None
        code = merge_file(
            file, source.text, snippet, instruction, delivery, test, source.fingerprint
        )
        if code is not None:
            raise typer.Exit(code)

    template = EditRequest(  # its method is the editor's, once there is one
        "",
        instruction,
        prompt=mode,  # the mode's own template
        mode=Mode(mode),
        max_new_tokens=options.max_new_tokens,
        sampling=options.sampling(),
        verification=options.verification(),
        references=references,
    )
    if options.server:
        from specedit.server.client import connect

        with interruptible():
            try:
                editor = connect(options.server, options.server_key)
            except EditorUnavailable as exc:
                error(str(exc))
                raise typer.Exit(Exit.MODEL) from None
    else:
        # sized for what the first edits read: a long file's region, not all of it
        asked = [replace(template, text=t.text, language=language_for(f)) for f, t in texts.items()]
        context = max(
            (context_needed(r, narrowed(r, region, not options.whole)[0]) for r in asked),
            default=1,
        )
        editor = LocalEditor(
            *load_model(
                options.model,
                options.dtype,
                options.threads,
                options.device,
                options.draft_model,
                options.engine_in_use,
                context,
            )
        )
    template = replace(template, method=options.method or editor.default_method)
    console = Console(stderr=True)
    code = Exit.INPUT if unreadable else Exit.OK
    with interruptible(written):
        for file in files:
            source = texts.get(file)  # None for stdin: read when its turn comes
            text, read = (source.text, source.fingerprint) if source else (None, None)
            code = max(
                code,
                edit_file(
                    editor,
                    file,
                    template,
                    delivery,
                    console,
                    test,
                    text,
                    region,
                    read,
                    samples,
                    narrow=not options.whole,
                ),
            )
    raise typer.Exit(code)


def _once_each(files: list[str]) -> list[str]:
    """`files` with each file once: a file named twice (`a.py ./a.py`, a link and its target)
    would be edited twice, the second edit refused as changed on disk by the first."""
    from specedit.console import warning

    seen, kept = set(), []
    for file in files:
        key = file if file == "-" else os.path.realpath(file)
        if key in seen:
            warning(f"{file} names a file given before; it is edited once")
            continue
        seen.add(key)
        kept.append(file)
    return kept


def _read_inputs(files: list[str]) -> tuple[dict[str, Source], set[str]]:
    """The files' texts and fingerprints, read once, before a model is loaded; those that
    cannot be edited (missing, binary, not UTF-8, empty) are reported now and returned apart.
    Stdin is read when its turn comes."""
    from specedit.files import InputError, read_input

    texts, bad = {}, set()
    for file in files:
        if file == "-":
            continue
        try:
            texts[file] = read_input(file)
        except InputError as exc:
            error(str(exc))
            bad.add(file)
    return texts, bad


def _read_snippet(snippet: str, file: str) -> str:
    """`apply`'s snippet, from a file or - for stdin."""
    from specedit.files import InputError, read_text

    if snippet == "-" and file == "-":
        error("the file and the snippet cannot both come from stdin")
        raise typer.Exit(Exit.INPUT)
    try:
        text = read_text(snippet)
    except InputError as exc:
        error(str(exc))
        raise typer.Exit(Exit.INPUT) from None
    if not text.strip():
        error("the snippet is empty")
        raise typer.Exit(Exit.INPUT)
    return text


class EditCommand(TyperCommand):
    """fix, edit, rewrite and apply: the command's own arguments, then the options every
    editing command takes (EditOptions' fields, declared once), which its function reads back
    as one frozen EditOptions (`options_of`)."""

    def __init__(self, *args, params: list, **kwargs) -> None:
        super().__init__(*args, params=[*params, *_edit_params()], **kwargs)

    def invoke(self, ctx: typer.Context):
        shared = {param.name: ctx.params.pop(param.name) for param in _edit_params()}
        ctx.meta[EditOptions] = EditOptions(**shared)
        return super().invoke(ctx)


@functools.cache
def _edit_params() -> list:
    """EditOptions' fields as click parameters, made by typer from their annotations."""
    holder = typer.Typer(add_completion=False, rich_markup_mode=None)
    holder.command()(EditOptions)
    return typer.main.get_command(holder).params


def options_of(ctx: typer.Context) -> EditOptions:
    return ctx.meta[EditOptions]


FileArgument = Annotated[str, typer.Argument(metavar="FILE", help="The file, or - for stdin.")]


@app.command(cls=EditCommand)
def fix(
    ctx: typer.Context,
    file: FileArgument,
    instruction: Annotated[str, typer.Argument(metavar="INSTRUCTION", help="What is wrong.")],
) -> None:
    """Fix a bug in FILE and print the fixed file.

    \b
    Examples:
      specedit fix bug.py "the loop skips the last item"
      specedit fix bug.py "off-by-one in the range" --diff
      specedit fix bug.py "wrong operator in mean()" -i
      specedit fix bug.py "mean() of [] fails" -i --test "pytest -q tests/test_bug.py"
    """
    _run_edits("fix", [file], instruction, options_of(ctx))


@app.command(cls=EditCommand)
def edit(
    ctx: typer.Context,
    file: FileArgument,
    instruction: Annotated[str, typer.Argument(metavar="INSTRUCTION", help="The change to make.")],
) -> None:
    """Edit FILE (or stdin) as instructed and print the result.

    \b
    Examples:
      cat notes.md | specedit edit - "make it formal" > formal.md
      specedit edit app.py "add type hints to the function signatures" -o typed.py
    """
    _run_edits("edit", [file], instruction, options_of(ctx))


@app.command(cls=EditCommand)
def rewrite(
    ctx: typer.Context,
    files: Annotated[list[str], typer.Argument(metavar="FILES...", help="Files to rewrite.")],
    instruction: Annotated[
        str, typer.Option("-m", "--instruction", metavar="TEXT", help="How to rewrite them.")
    ],
) -> None:
    """Rewrite several documents with one instruction; the model is loaded once.

    \b
    Examples:
      specedit rewrite docs/*.md -m "fix typos" -i
      specedit rewrite README.md CHANGES.md -m "fix typos" --check
    """
    _run_edits("rewrite", files, instruction, options_of(ctx))


@app.command(cls=EditCommand)
def apply(
    ctx: typer.Context,
    file: FileArgument,
    snippet: Annotated[
        str, typer.Argument(metavar="SNIPPET", help="The edit snippet: a file, or - for stdin.")
    ],
    merge: Annotated[
        Literal["auto", "model"],
        typer.Option(
            help="auto: merge without the model where the snippet says exactly where each part "
            "goes (instant; --lines always uses the model), else with the model; model: always "
            "with the model."
        ),
    ] = "auto",
) -> None:
    """Merge a lazy edit snippet into FILE: the snippet shows the changed parts only, with
    comments such as `# ... existing code ...` for what stays. Where the snippet leaves no
    doubt it is merged without the model; otherwise the model merges it, FILE the draft.

    \b
    Examples:
      specedit apply app.py change.py -i
      pbpaste | specedit apply app.py - --diff
    """
    from specedit.editing.prompts import language_for, snippet_block

    text = _read_snippet(snippet, file)
    # the snippet is the instruction, in a code block of its own
    instruction = snippet_block(text, language_for(file))
    _run_edits("apply", [file], instruction, options_of(ctx), text if merge == "auto" else None)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"specedit {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Settings come from ~/.config/specedit/config.toml, then [tool.specedit] in
    pyproject.toml or a .specedit.toml at the project root (a command, a server, files to
    write or the model only once `specedit trust` is run there), then SPECEDIT_* environment
    variables, then flags."""
    from specedit.cli.settings import SettingsError, default_map, find_settings
    from specedit.console import warning

    commands = {name: {p.name for p in cmd.params} for name, cmd in ctx.command.commands.items()}
    try:
        settings = find_settings()
        for message in settings.warnings:
            warning(message)
        ctx.default_map = default_map(settings, commands)
    except SettingsError as exc:
        error(str(exc))
        raise typer.Exit(Exit.INPUT) from None


app.command()(bench)
app.command()(calibrate)
app.command()(serve)
app.command()(cache)
app.command("trust")(trust_command)
app.add_typer(models_app, name="models")


def files_read_as_options(args: list[str]) -> list[str]:
    """The arguments before `--` that read as options and name files here as well. A shell's
    `*.md`, or pre-commit's list of files, puts a cloned repository's file named
    `--test=sh run.sh #.md` among the options, where it would run a command (or
    `--stats-file=...` write a file): that name is the repository's, not the user's, asking."""
    found = []
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("-") and arg != "-" and os.path.lexists(arg):
            found.append(arg)
    return found


def run() -> None:
    """The `specedit` script and `python -m specedit`: the app, then a prompt exit.

    Tearing the interpreter down after an edit (freeing llama.cpp's buffers, unloading torch)
    takes time that the OS saves by doing it at once. Nothing is lost by skipping it: writes
    are atomic and done, and the output streams are flushed here."""
    try:
        if named := files_read_as_options(sys.argv[1:]):
            error(
                f"{named[0]!r} is the name of a file here and reads as an option; give file "
                "names after -- (specedit fix -- FILE ...) or as ./FILE; nothing was done"
            )
            raise SystemExit(Exit.INPUT)
        app(prog_name="specedit")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if isinstance(exc.code, str):
            error(exc.code)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing can reach it
            stream.flush()
    os._exit(code)
