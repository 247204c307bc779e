"""The options of the commands, declared once: those several commands take, and those of
every editing command (fix, edit, rewrite, apply)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from specedit.cli.startup import AUTO
from specedit.drafting.registry import DEFAULT_METHOD, HYBRID_METHOD, METHODS
from specedit.engine.options import VERIFY_MODES
from specedit.models.bundled import DEFAULT_MODEL
from specedit.models.load import DTYPES, ENGINES

# Candidates an edit may draw unless told: a second one where the first cannot be right (an
# unchanged fix or edit, an unsafe answer) or is a fix to look at again, which wins on the suite
# (docs/quality.md, "--samples").
DEFAULT_SAMPLES = 2


def opt(*names: str, help: str, env: str | None = None, **extra) -> typer.Option:
    return typer.Option(*names, help=help, envvar=env and f"SPECEDIT_{env}", **extra)


# Options more than one command takes, declared once.
ModelOption = Annotated[
    str, opt("--model", help="Bundled name, model folder, .gguf file or hub id.", env="MODEL")
]
DraftModelOption = Annotated[
    str | None,
    opt(
        "--draft-model",
        help="A small model with the same tokenizer that drafts new text where the input has "
        "nothing to copy, e.g. qwen2.5-coder-0.5b; the default method is then evospec.",
        env="DRAFT_MODEL",
    ),
]
DtypeOption = Annotated[
    Literal[tuple(DTYPES)],
    opt("--dtype", help="auto: bf16 where the CPU has it, else fp32.", env="DTYPE"),
]
ThreadsOption = Annotated[
    int | None, opt("--threads", help="CPU threads [default: all cores].", env="THREADS")
]
DeviceOption = Annotated[
    str, opt("--device", help="cpu, or an accelerate device map such as auto.", env="DEVICE")
]
EngineOption = Annotated[
    Literal[(AUTO, *ENGINES)],
    opt(
        "--engine",
        help="Where the model runs: torch (transformers), or llama.cpp (its GGUF file as it is, "
        "quantized; faster on most CPUs; methods pld, pool, adapld, ar, and evospec with a GGUF "
        "--draft-model; needs the llamacpp extra); auto: llama.cpp where it is installed and "
        "runs what was asked, else torch.",
        env="ENGINE",
    ),
]


def edit_options(
    method: Annotated[
        Literal[tuple(METHODS)] | None,
        opt(
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
        bool, opt("-i", "--in-place", help="Rewrite the file (atomically) instead of printing it.")
    ] = False,
    diff: Annotated[bool, opt("--diff", help="Print a unified diff instead of the file.")] = False,
    check: Annotated[
        bool, opt("--check", help="Write nothing; exit 1 if the edit would change the file.")
    ] = False,
    output: Annotated[
        Path | None, opt("-o", "--output", help="Write the edited text to this file.")
    ] = None,
    quiet: Annotated[
        bool, opt("-q", "--quiet", help="No dashboard, no stats line; errors only.")
    ] = False,
    stats: Annotated[
        Literal["text", "json"], opt("--stats", help="Stats on stderr.", env="STATS")
    ] = "text",
    stats_file: Annotated[
        Path | None, opt("--stats-file", help="Also write the stats as JSON to this file.")
    ] = None,
    attribution: Annotated[
        Path | None,
        opt("--attribution", help="Write copied spans (output span <- input span) as JSON."),
    ] = None,
    force: Annotated[
        bool,
        opt("--force", help="Write even if the edit breaks the file's syntax or drops many lines."),
    ] = False,
    test: Annotated[
        str | None,
        opt(
            "--test",
            help="A shell command that must pass on the edited file, run in a temporary copy of "
            "its folder; {file} names the edited copy.",
        ),
    ] = None,
    attempts: Annotated[
        int,
        opt(
            "--attempts",
            help="Tries when --test fails: redraws with the runner-up token where the first "
            "answer was least sure, then the failure output shown to the model, sampled.",
        ),
    ] = 3,
    test_timeout: Annotated[
        float, opt("--test-timeout", help="Seconds each --test run may take.")
    ] = 120.0,
    samples: Annotated[
        int | None,
        opt(
            "--samples",
            help="Candidates an edit may draw without --test, while the answer is unchanged "
            "for a fix or an edit of code, or fails the safety checks: an unchanged answer is "
            "redrawn with the runner-up token where it was least sure (in the functions the "
            "instruction names first), the rest sampled (temperature 0.2, top-p 0.95). A fix "
            "that changed the file is redrawn so once too, and the redraw delivered if it is "
            "acceptable; a fix's redraw keeps its first change only. A rewrite is proofread: "
            "the words it copied against the model's doubt, and its repeated words, "
            f"corrected. [default: {DEFAULT_SAMPLES}; 1 with --test]",
            show_default=False,
        ),
    ] = None,
    vote: Annotated[
        bool,
        opt(
            "--vote",
            help="Draw all --samples candidates and keep the one whose change the others agree "
            "with most.",
        ),
    ] = False,
    lines: Annotated[
        str | None,
        opt(
            "--lines",
            help="A-B: rewrite only lines A to B (1-based, inclusive), or NAME: only that Python "
            "function or class (Class.method for a method); the model sees the whole file, and "
            "every other line is kept byte for byte.",
        ),
    ] = None,
    context: Annotated[
        int | None,
        opt(
            "--context",
            help="With --lines: show the model only N lines on each side of the region, not the "
            "whole file (a long file's prompt is most of an edit's time).",
            min=0,
        ),
    ] = None,
    max_new_tokens: Annotated[
        int | None,
        opt(
            "--max-new-tokens",
            help="Token limit for the answer [default: 1.5x the input + 128].",
            env="MAX_NEW_TOKENS",
        ),
    ] = None,
    temperature: Annotated[
        float, opt("--temperature", help="0 is greedy (exact); above 0 samples.")
    ] = 0.0,
    top_p: Annotated[float, opt("--top-p", help="Nucleus sampling mass.")] = 1.0,
    top_k: Annotated[int, opt("--top-k", help="Sample from the k likeliest tokens (0: all).")] = 0,
    seed: Annotated[int | None, opt("--seed", help="Seed for sampling.")] = None,
    verify: Annotated[
        Literal[VERIFY_MODES],
        opt(
            "--verify",
            help="strict is exact; conditional and mixed also accept plausible drafts (lossy).",
            env="VERIFY",
        ),
    ] = "strict",
    delta: Annotated[
        float,
        opt(
            "--delta",
            help="Conditional verification: accept a drafted token x if p(x) > max(delta, p(eos)).",
        ),
    ] = 0.1,
    verify_top_k: Annotated[
        int,
        opt("--verify-top-k", help="Mixed verification: x must also be among the model's top k."),
    ] = 5,
    reference: Annotated[
        list[Path] | None,
        opt(
            "--reference",
            help="A file that feeds only the draft pool (repeatable); needs --method pool.",
        ),
    ] = None,
    dtype: DtypeOption = "auto",
    threads: ThreadsOption = None,
    device: DeviceOption = "cpu",
    engine: EngineOption = AUTO,
    server: Annotated[
        str | None,
        opt(
            "--server",
            help="Edit through a running `specedit serve` at this URL (its model, warm); "
            "--model, --dtype, --threads, --device and --engine are then the server's.",
            env="SERVER",
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        opt(
            "--api-key",
            help="The key --server wants (sent as a bearer token; never over plain http to "
            "another machine).",
            env="API_KEY",
            show_envvar=True,
        ),
    ] = None,
    send_openai_key: Annotated[
        bool,
        opt(
            "--send-openai-key",
            help="Send OPENAI_API_KEY to --server when no --api-key is given (a hosted API).",
        ),
    ] = False,
) -> None:
    """The options every editing command shares (declared once; commands._command adds them)."""
