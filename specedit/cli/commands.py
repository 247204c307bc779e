"""The `specedit` command: parse options, load the model once, hand each file to deliver.py.

Thin on purpose: options are declared once and checked by click; everything heavy (torch, the
model, drafters) is imported only by the command that needs it, so `--help` answers at once.
Exit codes are `specedit.cli.exits.Exit`.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, get_type_hints

import typer

from specedit import __version__
from specedit.cli.exits import Exit
from specedit.cli.options import DEFAULT_SAMPLES, edit_options
from specedit.cli.startup import choose_engine, interruptible, load_model
from specedit.cli.tools import bench, calibrate, models_app, serve
from specedit.cli.trust import trust_command
from specedit.console import error
from specedit.drafting.registry import (
    DRAFT_MODEL_METHODS,
    refusal,
)

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
    prompt: str, files: list[str], instruction: str, snippet: str | None = None, **options
) -> None:
    """Validate, load the model once, edit each file; exit with the worst file's code. With a
    `snippet` (apply) it is first merged without the model, which then loads only if that
    leaves a doubt."""
    from rich.console import Console

    from specedit.cli.deliver import CheckCommand, Delivery, edit_file, merge_file
    from specedit.editing.checks import CheckRefused, fill_in
    from specedit.editing.editor import (
        EditorUnavailable,
        EditRequest,
        LocalEditor,
        context_estimate,
    )
    from specedit.editing.region import Region
    from specedit.editing.selection import Samples
    from specedit.engine.options import Sampling, Verification
    from specedit.files import InputError, read_input, read_text

    problems = []
    region = None
    if options["lines"] is not None:
        try:
            region = replace(Region.parse(options["lines"]), context=options["context"])
        except ValueError as exc:
            problems.append(str(exc))
        if len(files) > 1:
            problems.append("--lines edits one file")
    elif options["context"] is not None:
        problems.append("--context is the context of a region: add --lines")
    if not instruction.strip():
        problems.append("the instruction is empty")
    if (
        sum(map(bool, (options["in_place"], options["diff"], options["check"], options["output"])))
        > 1
    ):
        problems.append("choose one of -i/--in-place, --diff, --check and -o")
    if "-" in files and options["in_place"]:
        problems.append("stdin cannot be edited in place")
    if len(files) > 1 and not (options["in_place"] or options["diff"] or options["check"]):
        problems.append("several files need -i/--in-place, --diff or --check")
    if options["test"] is not None:
        if not options["test"].strip():
            problems.append("--test needs a command")
        try:  # a misplaced {file} is refused before the model loads
            fill_in(options["test"], Path("file"))
        except CheckRefused as exc:
            problems.append(str(exc))
        if "-" in files:
            problems.append("--test runs on a copy of the file's folder: it cannot check stdin")
        if options["attempts"] < 1:
            problems.append("--attempts must be at least 1")
        if options["test_timeout"] <= 0:
            problems.append("--test-timeout must be above 0 seconds")
        if (options["samples"] or 1) > 1:
            problems.append("--samples chooses without tests; with --test, use --attempts")
        options["samples"] = 1
    elif options["samples"] is None:
        options["samples"] = DEFAULT_SAMPLES
    if options["samples"] < 1:
        problems.append("--samples must be at least 1")
    if options["vote"] and options["samples"] < 3:
        problems.append("--vote chooses among --samples candidates: add --samples 3 or more")
    if options["reference"] and options["method"] != "pool":
        problems.append("--reference feeds the draft pool: add --method pool")
    options["engine"] = choose_engine(
        options["engine"],
        options["model"],
        options["draft_model"],
        options["device"],
        options["dtype"],
        options["method"],
    )
    local_llama_cpp = options["engine"] == "llama.cpp" and not options["server"]
    if local_llama_cpp and options["method"] and (why := refusal(options["method"], "llama.cpp")):
        problems.append(why)
    if options["method"] in DRAFT_MODEL_METHODS and not (
        options["draft_model"] or options["server"]
    ):
        problems.append(
            f"--method {options['method']} drafts with a second model: add --draft-model"
        )
    try:
        sampling = Sampling(
            options["temperature"], options["top_k"], options["top_p"], options["seed"]
        )
        verification = Verification(options["verify"], options["delta"], options["verify_top_k"])
        references = tuple(read_text(str(path)) for path in options["reference"] or ())
    except (ValueError, InputError) as exc:
        problems.append(str(exc))
    if problems:
        error(problems[0])
        raise typer.Exit(Exit.INPUT)
    texts, unreadable = _read_inputs(files)
    written: list[str] = []  # the files written so far, named if Ctrl-C stops the batch
    files = [file for file in files if file not in unreadable]
    if not files:  # nothing to edit: no model is loaded for that
        raise typer.Exit(Exit.INPUT)
    delivery = Delivery(
        in_place=options["in_place"],
        diff=options["diff"],
        check=options["check"],
        output=options["output"],
        quiet=options["quiet"],
        stats=options["stats"],
        stats_file=options["stats_file"],
        attribution=options["attribution"],
        force=options["force"],
        on_write=written.append,
    )
    test = (
        CheckCommand(options["test"], options["attempts"], options["test_timeout"])
        if options["test"]
        else None
    )
    samples = Samples(options["samples"], options["vote"])
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

    if options["server"]:
        from specedit.server.client import connect

        with interruptible():
            try:
                editor = connect(options["server"], _api_key(options))
            except EditorUnavailable as exc:
                error(str(exc))
                raise typer.Exit(Exit.MODEL) from None
    else:
        limit = options["max_new_tokens"]
        context = max((context_estimate(s.text, limit) for s in texts.values()), default=1)
        editor = LocalEditor(
            *load_model(
                options["model"],
                options["dtype"],
                options["threads"],
                options["device"],
                options["draft_model"],
                options["engine"],
                context,
            )
        )
    template = EditRequest(
        "",
        instruction,
        prompt=prompt,
        method=options["method"] or editor.default_method,
        max_new_tokens=options["max_new_tokens"],
        sampling=sampling,
        verification=verification,
        references=references,
    )
    console = Console(stderr=True)
    code = Exit.INPUT if unreadable else Exit.OK
    with interruptible(written):
        for file in files:
            source = texts.get(file)  # None for stdin: read when its turn comes
            text, read = (source.text, source.fingerprint) if source else (None, None)
            code = max(
                code,
                edit_file(
                    editor, file, template, delivery, console, test, text, region, read, samples
                ),
            )
    raise typer.Exit(code)


def _api_key(options: dict) -> str | None:
    """The key the user gave for --server: --api-key (SPECEDIT_API_KEY), or OPENAI_API_KEY
    where asked by --send-openai-key; never a key the user did not name for it."""
    if options["api_key"]:
        return options["api_key"]
    if options["send_openai_key"]:
        if not os.environ.get("OPENAI_API_KEY"):
            error("--send-openai-key: OPENAI_API_KEY is not set")
            raise typer.Exit(Exit.INPUT)
        return os.environ["OPENAI_API_KEY"]
    return None


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


def _command(prompt: str, positional: list[inspect.Parameter], doc: str):
    """A command function: its own arguments, then the shared options of `edit_options`."""
    shared = inspect.signature(edit_options).parameters
    hints = get_type_hints(edit_options, include_extras=True) | {
        p.name: p.annotation for p in positional
    }

    def command(**kwargs) -> None:
        files = kwargs.pop("files", None) or [kwargs.pop("file")]
        if "snippet" in kwargs:
            from specedit.editing.prompts import language_for, snippet_block

            snippet = _read_snippet(kwargs.pop("snippet"), files[0])
            # the snippet is the instruction, in a code block of its own
            instruction = snippet_block(snippet, language_for(files[0]))
            if kwargs.pop("merge") == "auto":
                kwargs["snippet"] = snippet
        else:
            instruction = kwargs.pop("instruction")
        _run_edits(prompt, files, instruction, **kwargs)

    params = [p.replace(annotation=hints[p.name]) for p in (*positional, *shared.values())]
    command.__signature__ = inspect.Signature(params)
    command.__annotations__ = {p.name: hints[p.name] for p in params}
    command.__doc__ = doc
    return command


def _arg(name: str, annotation) -> inspect.Parameter:
    return inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=annotation)


FILE = _arg("file", Annotated[str, typer.Argument(help="The file, or - for stdin.")])

app.command("fix")(
    _command(
        "fix",
        [FILE, _arg("instruction", Annotated[str, typer.Argument(help="What is wrong.")])],
        """Fix a bug in FILE and print the fixed file.

        \b
        Examples:
          specedit fix bug.py "the loop skips the last item"
          specedit fix bug.py "off-by-one in the range" --diff
          specedit fix bug.py "wrong operator in mean()" -i
          specedit fix bug.py "mean() of [] fails" -i --test "pytest -q tests/test_bug.py"
        """,
    )
)
app.command("edit")(
    _command(
        "edit",
        [FILE, _arg("instruction", Annotated[str, typer.Argument(help="The change to make.")])],
        """Edit FILE (or stdin) as instructed and print the result.

        \b
        Examples:
          cat notes.md | specedit edit - "make it formal" > formal.md
          specedit edit app.py "add type hints to the function signatures" -o typed.py
        """,
    )
)
app.command("rewrite")(
    _command(
        "rewrite",
        [
            _arg("files", Annotated[list[str], typer.Argument(help="Files to rewrite.")]),
            _arg(
                "instruction",
                Annotated[str, typer.Option("-m", "--instruction", help="How to rewrite them.")],
            ),
        ],
        """Rewrite several documents with one instruction; the model is loaded once.

        \b
        Examples:
          specedit rewrite docs/*.md -m "fix typos" -i
          specedit rewrite README.md CHANGES.md -m "fix typos" --check
        """,
    )
)

app.command("apply")(
    _command(
        "apply",
        [
            FILE,
            _arg(
                "snippet",
                Annotated[str, typer.Argument(help="The edit snippet: a file, or - for stdin.")],
            ),
            inspect.Parameter(
                "merge",
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                default="auto",
                annotation=Annotated[
                    Literal["auto", "model"],
                    typer.Option(
                        help="auto: merge without the model where the snippet says exactly "
                        "where each part goes (instant; --lines always uses the model), else "
                        "with the model; model: always with the model."
                    ),
                ],
            ),
        ],
        """Merge a lazy edit snippet into FILE: the snippet shows the changed parts only, with
        comments such as `# ... existing code ...` for what stays. Where the snippet leaves no
        doubt it is merged without the model; otherwise the model merges it, FILE the draft.

        \b
        Examples:
          specedit apply app.py change.py -i
          pbpaste | specedit apply app.py - --diff
        """,
    )
)


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
app.command("trust")(trust_command)
app.add_typer(models_app, name="models")


def run() -> None:
    """The `specedit` script and `python -m specedit`: the app, then a prompt exit.

    Tearing the interpreter down after an edit (freeing llama.cpp's buffers, unloading torch)
    takes time that the OS saves by doing it at once. Nothing is lost by skipping it: writes
    are atomic and done, and the output streams are flushed here."""
    try:
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
