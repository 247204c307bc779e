"""The `specedit` command: parse, read, call an edit, print. Nothing else lives here.

Exit codes: 0 ok, 2 usage or input error, 3 model error, 130 interrupted.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from specedit import __version__
from specedit.drafting import DEFAULT_METHOD, METHODS
from specedit.models import DEFAULT_MODEL

EXIT_INPUT, EXIT_MODEL, EXIT_INTERRUPTED = 2, 3, 130

app = typer.Typer(
    help="Edit files with a local LLM, fast: the input is the draft (model-free speculative "
    "decoding). The edited text goes to stdout; messages go to stderr.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

Method = Annotated[str, typer.Option("--method", help=f"Drafting method: {', '.join(METHODS)}.")]
Model = Annotated[
    str,
    typer.Option(
        "--model", help="Bundled name, model folder, .gguf file or hub id.", envvar="SPECEDIT_MODEL"
    ),
]
MaxNewTokens = Annotated[
    int | None,
    typer.Option("--max-new-tokens", help="Token limit for the answer [default: 1.5x the input]."),
]
Temperature = Annotated[float, typer.Option(help="0 is greedy (exact); above 0 samples.")]
TopP = Annotated[float, typer.Option("--top-p", help="Nucleus sampling mass.")]
TopK = Annotated[int, typer.Option("--top-k", help="Sample from the k likeliest (0: all).")]
Seed = Annotated[int | None, typer.Option(help="Seed for sampling.")]
Dtype = Annotated[str, typer.Option(help="auto (bf16 where the CPU has it), bf16, fp16 or fp32.")]
Threads = Annotated[int | None, typer.Option(help="CPU threads [default: all cores].")]
Device = Annotated[str, typer.Option(help="cpu, or an accelerate device map such as auto.")]


def _fail(message: str, code: int) -> typer.Exit:
    typer.echo(f"specedit: error: {message}", err=True)
    return typer.Exit(code)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"specedit {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Edit files with a local LLM, fast."""


def _run(
    prompt: str,
    file: str,
    instruction: str,
    method: str,
    model: str,
    max_new_tokens: int | None,
    temperature: float,
    top_p: float,
    top_k: int,
    seed: int | None,
    dtype: str,
    threads: int | None,
    device: str,
) -> None:
    """Read, edit, print the edited text and one stats line; map failures to exit codes."""
    import torch

    from specedit.edit import EditError, EditRequest, run_edit
    from specedit.engine.verify import Sampling
    from specedit.files import InputError, read_text
    from specedit.models import ModelError, load
    from specedit.prompts import PromptError, language_for

    try:
        if method not in METHODS:
            raise InputError(f"unknown method {method!r}: choose one of {', '.join(METHODS)}")
        if not instruction.strip():
            raise InputError("the instruction is empty")
        text = read_text(file)
        if not text.strip():
            raise InputError(f"{'stdin' if file == '-' else file} is empty")
        sampling = Sampling(temperature, top_k, top_p, seed)
        torch.set_num_threads(threads or os.cpu_count() or 1)
        lm = load(model, dtype, device)
        request = EditRequest(
            text,
            instruction,
            prompt=prompt,
            language=language_for(None if file == "-" else file),
            method=method,
            max_new_tokens=max_new_tokens,
            sampling=sampling,
        )
        result = run_edit(lm, request)
    except (InputError, EditError, PromptError, ValueError) as exc:
        raise _fail(str(exc), EXIT_INPUT) from None
    except ModelError as exc:
        raise _fail(str(exc), EXIT_MODEL) from None
    except KeyboardInterrupt:
        raise _fail("interrupted; nothing was written", EXIT_INTERRUPTED) from None
    sys.stdout.write(result.text)
    sys.stdout.flush()
    stats = result.generation.stats
    typer.echo(
        f"specedit: {stats.new_tokens} tokens in {stats.total_seconds:.1f}s "
        f"({stats.tokens_per_second:.1f} tok/s), {stats.forward_passes} forward passes, "
        f"{stats.mean_accepted:.2f} tokens/pass, method {method}"
        + ("" if result.changed else ", no change"),
        err=True,
    )


@app.command()
def fix(
    file: Annotated[str, typer.Argument(help="File to fix, or - for stdin.")],
    instruction: Annotated[str, typer.Argument(help="What is wrong, in your words.")],
    method: Method = DEFAULT_METHOD,
    model: Model = DEFAULT_MODEL,
    max_new_tokens: MaxNewTokens = None,
    temperature: Temperature = 0.0,
    top_p: TopP = 1.0,
    top_k: TopK = 0,
    seed: Seed = None,
    dtype: Dtype = "auto",
    threads: Threads = None,
    device: Device = "cpu",
) -> None:
    """Fix a bug in FILE and print the fixed file.

    Example: specedit fix examples/buggy_stats.py "the median of an even-length list is wrong"
    """
    _run("fix", file, instruction, method, model, max_new_tokens, temperature, top_p, top_k,
         seed, dtype, threads, device)  # fmt: skip


@app.command()
def edit(
    file: Annotated[str, typer.Argument(help="File to edit, or - for stdin.")],
    instruction: Annotated[str, typer.Argument(help="The change to make.")],
    method: Method = DEFAULT_METHOD,
    model: Model = DEFAULT_MODEL,
    max_new_tokens: MaxNewTokens = None,
    temperature: Temperature = 0.0,
    top_p: TopP = 1.0,
    top_k: TopK = 0,
    seed: Seed = None,
    dtype: Dtype = "auto",
    threads: Threads = None,
    device: Device = "cpu",
) -> None:
    """Edit FILE (or stdin) as instructed and print the result.

    Example: cat notes.md | specedit edit - "make it formal"
    """
    _run("edit", file, instruction, method, model, max_new_tokens, temperature, top_p, top_k,
         seed, dtype, threads, device)  # fmt: skip


@app.command()
def bench(
    methods: Annotated[
        str, typer.Option(help="Comma-separated methods; hf-pld is transformers' prompt lookup.")
    ] = "ar,hf-pld,pld,pldplus",
    tasks: Annotated[
        str | None, typer.Option(help="Comma-separated task ids (default: all).")
    ] = None,
    tasks_file: Annotated[
        Path | None, typer.Option("--tasks-file", help="Your own tasks, one JSON object a line.")
    ] = None,
    model: Model = DEFAULT_MODEL,
    dtype: Dtype = "auto",
    repeat: Annotated[int, typer.Option(help="Runs per task and method; the fastest counts.")] = 1,
    max_new_tokens: MaxNewTokens = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write results as JSON.")] = None,
    threads: Threads = None,
) -> None:
    """Measure methods side by side on a task suite: speed against plain decoding, MAL, exactness.

    Example: specedit bench --methods ar,hf-pld,pldplus --tasks fix-bisect-offbyone
    """
    import torch

    from specedit.bench.runner import BenchError, run_bench
    from specedit.models import ModelError, load

    torch.set_num_threads(threads or os.cpu_count() or 1)
    try:
        lm = load(model, dtype, "cpu")
        run_bench(
            lm,
            methods=[m.strip() for m in methods.split(",") if m.strip()],
            task_ids=tasks.split(",") if tasks else None,
            tasks_file=tasks_file,
            repeat=repeat,
            max_new_tokens=max_new_tokens,
            json_file=json_file,
        )
    except BenchError as exc:
        raise _fail(str(exc), EXIT_INPUT) from None
    except ModelError as exc:
        raise _fail(str(exc), EXIT_MODEL) from None
    except KeyboardInterrupt:
        raise _fail("interrupted", EXIT_INTERRUPTED) from None
