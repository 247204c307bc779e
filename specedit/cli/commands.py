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
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, get_type_hints

import typer

from specedit import __version__
from specedit.cli.exits import Exit
from specedit.console import error, say
from specedit.drafting.registry import (
    ABLATIONS,
    DEFAULT_METHOD,
    DRAFT_MODEL_METHODS,
    HYBRID_METHOD,
    METHODS,
    refusal,
)
from specedit.engine.options import VERIFY_MODES
from specedit.models.bundled import DEFAULT_MODEL
from specedit.models.load import DTYPES, ENGINES

if TYPE_CHECKING:
    from specedit.files import Source

STARTED = time.perf_counter()  # the CLI's start, for the stats' start-up seconds

app = typer.Typer(
    help="Edit files with a local LLM, fast: the input is the draft (model-free speculative "
    "decoding). The edited text goes to stdout; messages go to stderr.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)
models_app = typer.Typer(help="List, prepare and inspect models.", no_args_is_help=False)
app.add_typer(models_app, name="models")


def _opt(*names: str, help: str, env: str | None = None, **extra) -> typer.Option:
    return typer.Option(*names, help=help, envvar=env and f"SPECEDIT_{env}", **extra)


# Options more than one command takes, declared once.
ModelOption = Annotated[
    str, _opt("--model", help="Bundled name, model folder, .gguf file or hub id.", env="MODEL")
]
DraftModelOption = Annotated[
    str | None,
    _opt(
        "--draft-model",
        help="A small model with the same tokenizer that drafts new text where the input has "
        "nothing to copy, e.g. qwen2.5-coder-0.5b; the default method is then evospec.",
        env="DRAFT_MODEL",
    ),
]
DtypeOption = Annotated[
    Literal[tuple(DTYPES)],
    _opt("--dtype", help="auto: bf16 where the CPU has it, else fp32.", env="DTYPE"),
]
ThreadsOption = Annotated[
    int | None, _opt("--threads", help="CPU threads [default: all cores].", env="THREADS")
]
DeviceOption = Annotated[
    str, _opt("--device", help="cpu, or an accelerate device map such as auto.", env="DEVICE")
]
EngineOption = Annotated[
    Literal[ENGINES],
    _opt(
        "--engine",
        help="Where the model runs: torch (transformers), or llama.cpp (its GGUF file as it is, "
        "quantized; faster on most CPUs; methods pld, pool, ar; needs the llamacpp extra).",
        env="ENGINE",
    ),
]


def _edit_options(
    method: Annotated[
        Literal[tuple(METHODS)] | None,
        _opt(
            "--method",
            help=f"How drafts are made [default: {DEFAULT_METHOD}; {HYBRID_METHOD} with "
            "--draft-model].",
            env="METHOD",
            show_default=False,
        ),
    ] = None,
    model: ModelOption = DEFAULT_MODEL,
    draft_model: DraftModelOption = None,
    in_place: Annotated[
        bool, _opt("-i", "--in-place", help="Rewrite the file (atomically) instead of printing it.")
    ] = False,
    diff: Annotated[bool, _opt("--diff", help="Print a unified diff instead of the file.")] = False,
    check: Annotated[
        bool, _opt("--check", help="Write nothing; exit 1 if the edit would change the file.")
    ] = False,
    output: Annotated[
        Path | None, _opt("-o", "--output", help="Write the edited text to this file.")
    ] = None,
    quiet: Annotated[
        bool, _opt("-q", "--quiet", help="No dashboard, no stats line; errors only.")
    ] = False,
    stats: Annotated[
        Literal["text", "json"], _opt("--stats", help="Stats on stderr.", env="STATS")
    ] = "text",
    stats_file: Annotated[
        Path | None, _opt("--stats-file", help="Also write the stats as JSON to this file.")
    ] = None,
    attribution: Annotated[
        Path | None,
        _opt("--attribution", help="Write copied spans (output span <- input span) as JSON."),
    ] = None,
    force: Annotated[
        bool,
        _opt(
            "--force", help="Write even if the edit breaks the file's syntax or drops many lines."
        ),
    ] = False,
    test: Annotated[
        str | None,
        _opt(
            "--test",
            help="A shell command that must pass on the edited file, run in a temporary copy of "
            "its folder; {file} names the edited copy.",
        ),
    ] = None,
    attempts: Annotated[
        int,
        _opt(
            "--attempts",
            help="Tries when --test fails; the failure output is shown to the model, later tries "
            "sample.",
        ),
    ] = 3,
    test_timeout: Annotated[
        float, _opt("--test-timeout", help="Seconds each --test run may take.")
    ] = 120.0,
    samples: Annotated[
        int,
        _opt(
            "--samples",
            help="Candidates an edit may draw without --test: after the first, another is "
            "sampled (temperature 0.2, top-p 0.95) while the answer is unchanged for a fix or "
            "fails the safety checks.",
        ),
    ] = 1,
    vote: Annotated[
        bool,
        _opt(
            "--vote",
            help="Draw all --samples candidates and keep the one whose change the others agree "
            "with most.",
        ),
    ] = False,
    lines: Annotated[
        str | None,
        _opt(
            "--lines",
            help="A-B: rewrite only lines A to B (1-based, inclusive), or NAME: only that Python "
            "function or class (Class.method for a method); the model sees the whole file, and "
            "every other line is kept byte for byte.",
        ),
    ] = None,
    context: Annotated[
        int | None,
        _opt(
            "--context",
            help="With --lines: show the model only N lines on each side of the region, not the "
            "whole file (a long file's prompt is most of an edit's time).",
            min=0,
        ),
    ] = None,
    max_new_tokens: Annotated[
        int | None,
        _opt(
            "--max-new-tokens",
            help="Token limit for the answer [default: 1.5x the input + 128].",
            env="MAX_NEW_TOKENS",
        ),
    ] = None,
    temperature: Annotated[
        float, _opt("--temperature", help="0 is greedy (exact); above 0 samples.")
    ] = 0.0,
    top_p: Annotated[float, _opt("--top-p", help="Nucleus sampling mass.")] = 1.0,
    top_k: Annotated[int, _opt("--top-k", help="Sample from the k likeliest tokens (0: all).")] = 0,
    seed: Annotated[int | None, _opt("--seed", help="Seed for sampling.")] = None,
    verify: Annotated[
        Literal[VERIFY_MODES],
        _opt(
            "--verify",
            help="strict is exact; conditional and mixed also accept plausible drafts (lossy).",
            env="VERIFY",
        ),
    ] = "strict",
    delta: Annotated[
        float,
        _opt(
            "--delta",
            help="Conditional verification: accept a drafted token x if p(x) > max(delta, p(eos)).",
        ),
    ] = 0.1,
    verify_top_k: Annotated[
        int,
        _opt("--verify-top-k", help="Mixed verification: x must also be among the model's top k."),
    ] = 5,
    reference: Annotated[
        list[Path] | None,
        _opt(
            "--reference",
            help="A file that feeds only the draft pool (repeatable); needs --method pool.",
        ),
    ] = None,
    dtype: DtypeOption = "auto",
    threads: ThreadsOption = None,
    device: DeviceOption = "cpu",
    engine: EngineOption = "torch",
    server: Annotated[
        str | None,
        _opt(
            "--server",
            help="Edit through a running `specedit serve` at this URL (its model, warm); "
            "--model, --dtype, --threads, --device and --engine are then the server's.",
            env="SERVER",
        ),
    ] = None,
) -> None:
    """The options every editing command shares (declared once, see `_command`)."""  # fmt: skip


def _run_edits(
    prompt: str, files: list[str], instruction: str, snippet: str | None = None, **options
) -> None:
    """Validate, load the model once, edit each file; exit with the worst file's code. With a
    `snippet` (apply) it is first merged without the model, which then loads only if that
    leaves a doubt."""
    from rich.console import Console

    from specedit.cli.deliver import CheckCommand, Delivery, edit_file, merge_file
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
        if "-" in files:
            problems.append("--test runs on a copy of the file's folder: it cannot check stdin")
        if options["attempts"] < 1:
            problems.append("--attempts must be at least 1")
        if options["test_timeout"] <= 0:
            problems.append("--test-timeout must be above 0 seconds")
        if options["samples"] > 1:
            problems.append("--samples chooses without tests; with --test, use --attempts")
    if options["samples"] < 1:
        problems.append("--samples must be at least 1")
    if options["vote"] and options["samples"] < 2:
        problems.append("--vote chooses among --samples candidates: add --samples 3 or more")
    if options["reference"] and options["method"] != "pool":
        problems.append("--reference feeds the draft pool: add --method pool")
    if options["engine"] == "llama.cpp" and not options["server"]:
        if options["draft_model"]:
            problems.append("--draft-model runs on the torch engine, not on llama.cpp")
        elif options["method"] and (why := refusal(options["method"], "llama.cpp")):
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
        in_place=options["in_place"], diff=options["diff"], check=options["check"],
        output=options["output"], quiet=options["quiet"], stats=options["stats"],
        stats_file=options["stats_file"], attribution=options["attribution"],
        force=options["force"], on_write=written.append,
    )  # fmt: skip
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
        code = merge_file(file, source.text, snippet, instruction, delivery, test,
                          source.fingerprint)  # fmt: skip
        if code is not None:
            raise typer.Exit(code)

    if options["server"]:
        from specedit.server.client import connect

        with _interruptible():
            try:
                editor = connect(options["server"])
            except EditorUnavailable as exc:
                error(str(exc))
                raise typer.Exit(Exit.MODEL) from None
    else:
        limit = options["max_new_tokens"]
        context = max((context_estimate(s.text, limit) for s in texts.values()), default=1)
        editor = LocalEditor(
            *_load(
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
        "", instruction, prompt=prompt, method=options["method"] or editor.default_method,
        max_new_tokens=options["max_new_tokens"], sampling=sampling,
        verification=verification, references=references,
    )  # fmt: skip
    console = Console(stderr=True)
    code = Exit.INPUT if unreadable else Exit.OK
    with _interruptible(written):
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


def _load(
    model: str,
    dtype: str,
    threads: int | None,
    device: str = "cpu",
    draft: str | None = None,
    engine: str = "torch",
    context: int = 0,
):
    """Pin the CPU threads and load the model (and its draft model) once; a model error exits
    with code 3. On llama.cpp the weights start loading before torch is imported, in a context
    sized for `context` tokens (an estimate of what the first edit needs).

    Returns the model and the start-up seconds: imports (from the CLI's start to torch
    imported; on llama.cpp the tokenizer and config are read by then and the weights' load has
    begun) and the model's load after them."""
    from specedit.models.bundled import ModelError
    from specedit.models.load import load, with_draft

    threads = threads or os.cpu_count() or 1
    with _interruptible():
        try:
            # On llama.cpp the weights start loading, on a thread, before torch is imported.
            early = (
                None if engine == "torch" else load(model, dtype, device, engine, threads, context)
            )
            import torch

            torch.set_num_threads(threads)
            if early is None:
                import transformers  # noqa: F401  (timed here, so the load below is the load alone)
            imported = time.perf_counter()
            lm = early or load(model, dtype, device, engine)
            lm.ready()
            if draft:
                lm = with_draft(lm, draft, dtype, device)
        except ModelError as exc:
            error(str(exc))
            raise typer.Exit(Exit.MODEL) from None
    startup = {"imports": imported - STARTED, "model_load": time.perf_counter() - imported}
    return lm, startup


@contextmanager
def _interruptible(written: list[str] | None = None) -> Iterator[None]:
    """Ctrl-C ends with one line and code 130, no traceback; writes are atomic, so nothing
    half-written is left behind. The line names the files in `written` (those a batch wrote
    before it was stopped)."""
    try:
        yield
    except KeyboardInterrupt:
        if written:
            error(f"interrupted; already written: {', '.join(written)}; nothing else was written")
        else:
            error("interrupted; nothing was written")
        raise typer.Exit(Exit.INTERRUPTED) from None


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
    """A command function: its own arguments, then the shared options of `_edit_options`."""
    shared = inspect.signature(_edit_options).parameters
    hints = get_type_hints(_edit_options, include_extras=True) | {
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
    """Settings come from [tool.specedit] in pyproject.toml or a .specedit.toml at the project
    root, then SPECEDIT_* environment variables, then flags."""
    from specedit.cli.settings import SettingsError, default_map, find_settings
    from specedit.console import warning

    commands = {name: {p.name for p in cmd.params} for name, cmd in ctx.command.commands.items()}
    try:
        settings = find_settings()
        for message in settings.warnings:
            warning(message)
        ctx.default_map = default_map(settings.values, commands, settings.source)
    except SettingsError as exc:
        error(str(exc))
        raise typer.Exit(Exit.INPUT) from None


@app.command()
def bench(
    methods: Annotated[
        str,
        typer.Option(
            help="Comma-separated methods: hf-pld (transformers' prompt lookup), llama.cpp and "
            "llama.cpp-pld (on the model's GGUF file; the llamacpp extra), "
            f"{', '.join(METHODS)}, merge (apply tasks: without the model where the snippet "
            "leaves no doubt, as `specedit apply` does), and ablations: "
            f"{', '.join(ABLATIONS)}; {', '.join(DRAFT_MODEL_METHODS)} need --draft-model."
        ),
    ] = "ar,hf-pld,pld,pldplus,adapld",
    tasks: Annotated[
        str | None, typer.Option(help="Comma-separated task ids [default: all].")
    ] = None,
    suite: Annotated[
        Literal["edit", "apply"],
        typer.Option(help="The shipped suite: edit (fixes, features, docs) or apply (snippets)."),
    ] = "edit",
    tasks_file: Annotated[
        Path | None, typer.Option("--tasks-file", help="Your own tasks, one JSON object a line.")
    ] = None,
    model: ModelOption = DEFAULT_MODEL,
    draft_model: DraftModelOption = None,
    dtype: DtypeOption = "auto",
    repeat: Annotated[int, typer.Option(help="Runs per task and method; the fastest counts.")] = 1,
    max_new_tokens: Annotated[int | None, typer.Option(help="Token limit per task.")] = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write results as JSON.")] = None,
    threads: ThreadsOption = None,
    verify: Annotated[
        str, typer.Option(help="Comma-separated verification modes: strict, conditional, mixed.")
    ] = "strict",
    prompt_sets: Annotated[
        str | None,
        typer.Option(
            "--prompts",
            help="Comma-separated folders of <kind>.toml prompt templates to compare "
            "[default: the shipped prompts].",
        ),
    ] = None,
    bench_attempts: Annotated[  # not `attempts`: a settings file's `attempts` is for edits
        int,
        typer.Option(
            "--attempts", help="Tries per task with its tests as the check (the --test loop)."
        ),
    ] = 1,
    engines: Annotated[
        str,
        typer.Option(
            help="Comma-separated engines the methods run on: torch, llama.cpp (there: pld, "
            "pool, ar; labelled method/llama.cpp)."
        ),
    ] = "torch",
    regions: Annotated[
        str,
        typer.Option(
            help="Comma-separated: whole (the whole input), named (only the function or class "
            "the instruction names, as --lines NAME; labelled method+named)."
        ),
    ] = "whole",
    samples: Annotated[
        str,
        typer.Option(
            help="Comma-separated candidate selections: N (up to N candidates, another drawn "
            "while the answer is unchanged for a fix or unsafe), voteN (N drawn, the one the "
            "others agree with kept); labelled method~sN."
        ),
    ] = "1",
) -> None:
    """Measure setups side by side on a task suite: edit quality (the tasks' tests pass, output
    unchanged, cut off, lines dropped), speed against plain greedy decoding and transformers'
    prompt lookup, mean accepted tokens per pass, exactness.

    \b
    Examples:
      specedit bench --json bench.json
      specedit bench --methods ar,hf-pld,adapld --tasks fix-bisect-offbyone
      specedit bench --methods adapld --verify strict,conditional --json quality.json
      specedit bench --methods adapld --attempts 3
      specedit bench --methods adapld --regions whole,named
      specedit bench --suite apply --methods ar,adapld
      specedit bench --methods ar,adapld,evospec --draft-model qwen2.5-coder-0.5b
      specedit bench --methods adapld,llama.cpp,llama.cpp-pld
      specedit bench --methods ar,pld,llama.cpp-pld --engines torch,llama.cpp
      specedit bench --tasks-file my_tasks.jsonl
    """
    from specedit.bench.runner import BenchError, run_bench
    from specedit.drafting import DrafterUnavailable

    engine_list = [e.strip() for e in engines.split(",") if e.strip()] or ["torch"]
    if unknown := [e for e in engine_list if e not in ENGINES]:
        error(f"unknown engine {unknown[0]}: choose from {', '.join(ENGINES)}")
        raise typer.Exit(Exit.INPUT)
    lm, _ = _load(model, dtype, threads, draft=draft_model, engine=engine_list[0])
    with _interruptible():
        try:
            run_bench(
                lm,
                methods=[m.strip() for m in methods.split(",") if m.strip()],
                task_ids=tasks.split(",") if tasks else None,
                tasks_file=tasks_file,
                repeat=repeat,
                max_new_tokens=max_new_tokens,
                json_file=json_file,
                verify=[v.strip() for v in verify.split(",") if v.strip()],
                prompt_sets=[p.strip() for p in prompt_sets.split(",")] if prompt_sets else None,
                attempts=bench_attempts,
                suite=suite,
                engines=engine_list,
                regions=[r.strip() for r in regions.split(",") if r.strip()],
                selections=[s.strip() for s in samples.split(",") if s.strip()],
            )
        except (BenchError, DrafterUnavailable) as exc:
            error(str(exc))
            raise typer.Exit(Exit.INPUT) from None


@app.command()
def calibrate(
    model: ModelOption = DEFAULT_MODEL,
    dtype: DtypeOption = "auto",
    threads: ThreadsOption = None,
) -> None:
    """Find the model's induction heads for pldplus-attn (and train the pre-verifier) on the
    bench suite, and cache them; a few minutes, once per model.

    \b
    Example:
      specedit calibrate && specedit fix bug.py "..." --method pldplus-attn
    """
    from specedit.calibrate import calibrate as run_calibration

    lm, _ = _load(model, dtype, threads)
    with _interruptible():
        run_calibration(lm)


@app.command()
def serve(
    model: ModelOption = DEFAULT_MODEL,
    draft_model: DraftModelOption = None,
    dtype: DtypeOption = "auto",
    threads: ThreadsOption = None,
    device: DeviceOption = "cpu",
    engine: EngineOption = "torch",
    host: Annotated[str, _opt("--host", help="Address to listen on.", env="HOST")] = "127.0.0.1",
    port: Annotated[int, _opt("--port", help="Port to listen on.", env="PORT")] = 8000,
    api_key: Annotated[
        str | None,
        _opt(
            "--api-key",
            help="Every request must carry it (Authorization: Bearer KEY); set it, through the "
            "environment rather than the command line, to serve beyond this machine.",
            env="API_KEY",
            show_default=False,
        ),
    ] = None,
    max_queue: Annotated[
        int,
        _opt(
            "--max-queue",
            help="Generations that may wait behind the running one; more get a 429.",
            env="MAX_QUEUE",
            min=0,
        ),
    ] = 8,
    max_body_bytes: Annotated[
        int,
        _opt(
            "--max-body-bytes",
            help="The largest request body read; a larger one gets a 413.",
            env="MAX_BODY_BYTES",
            min=1,
        ),
    ] = 8 * 1024 * 1024,
) -> None:
    """Serve the model, loaded once, over an OpenAI-compatible API that honours `prediction`
    (/v1/chat/completions, /v1/models), plus /v1/specedit/edit for `--server`.

    \b
    Examples:
      specedit serve --port 8000
      specedit fix bug.py "off-by-one" --server http://127.0.0.1:8000
      OPENAI_BASE_URL=http://127.0.0.1:8000/v1 your-editor-or-agent
      SPECEDIT_API_KEY=... specedit serve --host 0.0.0.0   # clients send the same variable
    """
    try:
        import uvicorn

        from specedit.server.app import create_app
        from specedit.server.guards import needs_key_warning
    except ImportError as exc:
        error(f"the server needs {exc.name}: pip install 'specedit[serve]'")
        raise typer.Exit(Exit.INPUT) from None
    if api_key is not None and not api_key.strip():
        error("--api-key is empty: give a key, or leave the option out")
        raise typer.Exit(Exit.INPUT)
    if needs_key_warning(host, api_key):
        from specedit.console import warning

        warning(f"serving on {host} without --api-key: anyone who can reach it can use the "
                "model; set SPECEDIT_API_KEY")  # fmt: skip
    lm, _ = _load(model, dtype, threads, device, draft_model, engine)
    keyed = " with an API key" if api_key else ""
    say(f"serving {lm.name} on http://{host}:{port}/v1{keyed} (Ctrl-C stops)")
    app = create_app(lm, api_key, max_queue=max_queue, max_body_bytes=max_body_bytes)
    uvicorn.run(app, host=host, port=port, log_level="warning")


@models_app.callback(invoke_without_command=True)
def models_list(ctx: typer.Context) -> None:
    """List the bundled models and the prepared ones in the cache."""
    if ctx.invoked_subcommand:
        return
    from specedit.models.bundled import BUNDLED, cache_dir

    prepared = cache_dir() / "models"
    for name, bundled in BUNDLED.items():
        state = "prepared" if (prepared / name / "config.json").exists() else "not prepared"
        typer.echo(f"{name:22} {state:13} {bundled.description}")
    others = sorted(p.name for p in prepared.glob("*") if p.name not in BUNDLED)
    for name in others:
        typer.echo(f"{name:22} {'prepared':13} converted from a .gguf file")


@models_app.command("prepare")
def models_prepare(
    name: Annotated[str, typer.Argument(help="Bundled name or .gguf file.")],
) -> None:
    """Join, check and convert a model ahead of time."""
    from specedit.models.bundled import ModelError
    from specedit.models.prepare import resolve

    try:
        typer.echo(str(resolve(name)))
    except ModelError as exc:
        error(str(exc))
        raise typer.Exit(Exit.MODEL) from None


@models_app.command("info")
def models_info(
    name: Annotated[str, typer.Argument(help="Model name, folder or .gguf file.")],
) -> None:
    """Show a model's architecture, size and context length."""
    from transformers import AutoConfig

    from specedit.models.bundled import ModelError
    from specedit.models.prepare import resolve

    try:
        source = resolve(name)
        config = AutoConfig.from_pretrained(source)
    except (ModelError, OSError) as exc:
        error(str(exc))
        raise typer.Exit(Exit.MODEL) from None
    typer.echo(f"source         {source}")
    for key in (
        "model_type",
        "num_hidden_layers",
        "hidden_size",
        "vocab_size",
        "max_position_embeddings",
    ):
        typer.echo(f"{key:14} {getattr(config, key, '?')}")  # fmt: skip


def run() -> None:
    """The `specedit` script and `python -m specedit`: the app, then a prompt exit.

    Tearing the interpreter down after an edit (freeing llama.cpp's buffers, unloading torch)
    takes about half a second that the OS does at once. Nothing is lost by skipping it: writes
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
