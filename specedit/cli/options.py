"""The options of the commands, declared once: those several commands take, and those of
every editing command (fix, edit, rewrite, apply)."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from specedit.cli.startup import AUTO, choose_engine
from specedit.drafting.registry import (
    DEFAULT_METHOD,
    DRAFT_MODEL_METHODS,
    HYBRID_METHOD,
    METHODS,
    refusal,
)
from specedit.editing.examples import Examples
from specedit.editing.selection import DEFAULT_SAMPLES, EXAMPLES_SAMPLES, SHORT_TEXT_TOKENS
from specedit.engine.options import VERIFY_MODES
from specedit.models.bundled import DEFAULT_MODEL
from specedit.models.load import DTYPES, ENGINES

if TYPE_CHECKING:
    from specedit.editing.region import Region
    from specedit.engine.options import Sampling, Verification


STDOUT_NAME = Path("-")  # the file name that means stdout (or stdin), as black reads it


class WriteBack(Enum):
    """Where the edited text goes: one place per edit (black's WriteBack)."""

    STDOUT = "stdout"
    IN_PLACE = "-i/--in-place"
    DIFF = "--diff"  # a unified diff on stdout
    CHECK = "--check"  # nothing: the exit code says whether it would change
    OUTPUT = "-o"  # another file


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


@dataclass(frozen=True)
class EditOptions:
    """Every option of fix, edit, rewrite and apply, declared once: each field's annotation is
    its command-line option (commands.EditCommand adds them to each editing command), and a
    command gets them back as this one frozen object, checked by `problems`."""

    method: Annotated[
        Literal[tuple(METHODS)] | None,
        opt(
            "--method",
            help=f"How drafts are made [default: {DEFAULT_METHOD}; {HYBRID_METHOD} with "
            "--draft-model].",
            env="METHOD",
            show_default=False,
        ),
    ] = None
    model: ModelOption = DEFAULT_MODEL
    draft_model: DraftModelOption = None
    in_place: Annotated[
        bool, opt("-i", "--in-place", help="Rewrite the file (atomically) instead of printing it.")
    ] = False
    diff: Annotated[bool, opt("--diff", help="Print a unified diff instead of the file.")] = False
    check: Annotated[
        bool, opt("--check", help="Write nothing; exit 1 if the edit would change the file.")
    ] = False
    output: Annotated[
        Path | None,
        opt("-o", "--output", help="Write the edited text to this file (- for stdout)."),
    ] = None
    quiet: Annotated[
        bool, opt("-q", "--quiet", help="No dashboard, no stats line; errors only.")
    ] = False
    stats: Annotated[
        Literal["text", "json"], opt("--stats", help="Stats on stderr.", env="STATS")
    ] = "text"
    stats_file: Annotated[
        Path | None, opt("--stats-file", help="Also write the stats as JSON to this file.")
    ] = None
    attribution: Annotated[
        Path | None,
        opt("--attribution", help="Write copied spans (output span <- input span) as JSON."),
    ] = None
    force: Annotated[
        bool,
        opt("--force", help="Write even if the edit breaks the file's syntax or drops many lines."),
    ] = False
    test: Annotated[
        str | None,
        opt(
            "--test",
            help="A shell command that must pass on the edited file, run in a temporary copy of "
            "its folder; {file} names the edited copy.",
        ),
    ] = None
    attempts: Annotated[
        int,
        opt(
            "--attempts",
            help="Tries when --test fails: redraws with the runner-up token where the first "
            "answer was least sure, then the failure output shown to the model, sampled.",
        ),
    ] = 3
    test_timeout: Annotated[
        float, opt("--test-timeout", help="Seconds each --test run may take.")
    ] = 120.0
    samples: Annotated[
        int | None,
        opt(
            "--samples",
            help="Candidates an edit may draw without --test: an unchanged or unsafe answer is "
            "redrawn from where the model was least sure, a rewrite proofread "
            f"(docs/options.md). [default: {DEFAULT_SAMPLES}; 1 with --test]",
            show_default=False,
        ),
    ] = None
    examples: Annotated[
        bool | None,
        opt(
            "--examples/--no-examples",
            help="Run the >>> examples in the Python file's docstrings, its own tests (a "
            "__main__ block's asserts, test_* functions, TestCase classes) and each call the "
            'instruction gives with its value ("`f(2)` returns 5 instead of 4"), on each '
            "candidate as your own code (in a temporary copy of its folder, as --test runs) "
            "and deliver one that passes them where one does. By default they run confined "
            "to computing (no files, commands or network), where the system allows it; "
            f"--no-examples: never. [--samples default where they run: {EXAMPLES_SAMPLES}; "
            f"{DEFAULT_SAMPLES} where an answer is over {SHORT_TEXT_TOKENS} tokens]",
            show_default=False,
        ),
    ] = None
    vote: Annotated[
        bool,
        opt(
            "--vote",
            help="Draw all --samples candidates and keep the one whose change the others agree "
            "with most.",
        ),
    ] = False
    lines: Annotated[
        str | None,
        opt(
            "--lines",
            help="A-B: rewrite only lines A to B (1-based, inclusive), or NAME: only that Python "
            "function or class (Class.method for a method); the model sees the whole file, and "
            "every other line is kept byte for byte.",
        ),
    ] = None
    context: Annotated[
        int | None,
        opt(
            "--context",
            help="With --lines: show the model only N lines on each side of the region, not the "
            "whole file (a long file's prompt is most of an edit's time).",
            min=0,
        ),
    ] = None
    whole: Annotated[
        bool,
        opt(
            "--whole",
            help="Edit the whole file even where the instruction is about one function of a long "
            "Python file (such an edit otherwise reads and writes only that function).",
        ),
    ] = False
    max_new_tokens: Annotated[
        int | None,
        opt(
            "--max-new-tokens",
            help="Token limit for the answer [default: 1.5x the input + 128].",
            env="MAX_NEW_TOKENS",
        ),
    ] = None
    temperature: Annotated[
        float, opt("--temperature", help="0 is greedy (exact); above 0 samples.")
    ] = 0.0
    top_p: Annotated[float, opt("--top-p", help="Nucleus sampling mass.")] = 1.0
    top_k: Annotated[int, opt("--top-k", help="Sample from the k likeliest tokens (0: all).")] = 0
    seed: Annotated[int | None, opt("--seed", help="Seed for sampling.")] = None
    verify: Annotated[
        Literal[VERIFY_MODES],
        opt(
            "--verify",
            help="strict is exact; conditional and mixed also accept plausible drafts (lossy).",
            env="VERIFY",
        ),
    ] = "strict"
    delta: Annotated[
        float,
        opt(
            "--delta",
            help="Conditional verification: accept a drafted token x if p(x) > max(delta, p(eos)).",
        ),
    ] = 0.1
    verify_top_k: Annotated[
        int,
        opt("--verify-top-k", help="Mixed verification: x must also be among the model's top k."),
    ] = 5
    reference: Annotated[
        list[Path] | None,
        opt(
            "--reference",
            help="A file that feeds only the draft pool (repeatable); needs --method pool.",
        ),
    ] = None
    dtype: DtypeOption = "auto"
    threads: ThreadsOption = None
    device: DeviceOption = "cpu"
    engine: EngineOption = AUTO
    server: Annotated[
        str | None,
        opt(
            "--server",
            help="Edit through a running `specedit serve` at this URL (its model, warm); "
            "--model, --dtype, --threads, --device and --engine are then the server's.",
            env="SERVER",
        ),
    ] = None
    api_key: Annotated[
        str | None,
        opt(
            "--api-key",
            help="The key --server wants (sent as a bearer token; never over plain http to "
            "another machine).",
            env="API_KEY",
            show_envvar=True,
        ),
    ] = None
    send_openai_key: Annotated[
        bool,
        opt(
            "--send-openai-key",
            help="Send OPENAI_API_KEY to --server when no --api-key is given (a hosted API).",
        ),
    ] = False

    @property
    def write_back(self) -> WriteBack:
        """The one place asked for (`problems` says when more than one was)."""
        chosen = [w for w, on in self._write_backs().items() if on]
        return chosen[0] if chosen else WriteBack.STDOUT

    def _write_backs(self) -> dict[WriteBack, bool]:
        return {
            WriteBack.IN_PLACE: self.in_place,
            WriteBack.DIFF: self.diff,
            WriteBack.CHECK: self.check,
            WriteBack.STDOUT: self.output == STDOUT_NAME,
            WriteBack.OUTPUT: self.output_file is not None,
        }

    @property
    def output_file(self) -> Path | None:
        """-o's file: none where it names stdout (`-o -`, as pipes' tools spell it)."""
        return None if self.output == STDOUT_NAME else self.output

    @property
    def candidates(self) -> int:
        """--samples, or its default: one where --test judges the candidates, more where the
        examples do."""
        if self.samples is not None:
            return self.samples
        if self.test is not None:
            return 1
        return EXAMPLES_SAMPLES if self.examples else DEFAULT_SAMPLES

    @property
    def examples_run(self) -> Examples:
        """How the file's examples judge its candidates: as your own code (--examples), not at
        all (--no-examples; --test judges instead; a single candidate), else confined."""
        if self.examples:
            return Examples.ASKED
        if self.examples is False or self.test is not None or self.checked_candidates < 2:
            return Examples.OFF
        return Examples.CONFINED

    @property
    def checked_candidates(self) -> int:
        """--samples, or its default where the examples judge the candidates."""
        return EXAMPLES_SAMPLES if self.samples is None else self.samples

    @property
    def engine_in_use(self) -> str:
        """The engine --engine stands for here (`startup.choose_engine`)."""
        return choose_engine(
            self.engine, self.model, self.draft_model, self.device, self.dtype, self.method
        )

    @property
    def server_key(self) -> str | None:
        """The key the user gave for --server: --api-key (SPECEDIT_API_KEY), or OPENAI_API_KEY
        where asked by --send-openai-key; never a key the user did not name for it."""
        if self.api_key:
            return self.api_key
        return os.environ.get("OPENAI_API_KEY") if self.send_openai_key else None

    def region(self) -> Region | None:
        """--lines (with --context) as a Region; ValueError when it names none."""
        from specedit.editing.region import Region

        if self.lines is None:
            return None
        return replace(Region.parse(self.lines), context=self.context)

    def sampling(self) -> Sampling:
        from specedit.engine.options import Sampling

        return Sampling(self.temperature, self.top_k, self.top_p, self.seed)

    def verification(self) -> Verification:
        from specedit.engine.options import Verification

        return Verification(self.verify, self.delta, self.verify_top_k)

    def problems(self, files: list[str], instruction: str) -> list[str]:
        """What makes these options unusable for `files` and `instruction`, a line each (the
        first is reported, exit 2, before any model loads)."""
        from specedit.editing.checks import CheckRefused, fill_in

        problems = []
        for build in (self.region, self.sampling, self.verification):
            try:
                build()
            except ValueError as exc:
                problems.append(str(exc))
        if self.lines is not None and len(files) > 1:
            problems.append("--lines edits one file")
        if self.lines is not None and self.whole:
            problems.append("--lines edits a region and --whole the whole file: choose one")
        if self.lines is None and self.context is not None:
            problems.append("--context is the context of a region: add --lines")
        if not instruction.strip():
            problems.append("the instruction is empty")
        if sum(self._write_backs().values()) > 1:
            problems.append("choose one of -i/--in-place, --diff, --check and -o")
        if "-" in files and self.in_place:
            problems.append("stdin cannot be edited in place")
        if len(files) > 1 and self.write_back not in (
            WriteBack.IN_PLACE,
            WriteBack.DIFF,
            WriteBack.CHECK,
        ):
            problems.append("several files need -i/--in-place, --diff or --check")
        if self.test is not None:
            if not self.test.strip():
                problems.append("--test needs a command")
            try:  # a misplaced {file} is refused before the model loads
                fill_in(self.test, Path("file"))
            except CheckRefused as exc:
                problems.append(str(exc))
            if "-" in files:
                problems.append("--test runs on a copy of the file's folder: it cannot check stdin")
            if self.attempts < 1:
                problems.append("--attempts must be at least 1")
            if self.test_timeout <= 0:
                problems.append("--test-timeout must be above 0 seconds")
            if (self.samples or 1) > 1:
                problems.append("--samples chooses without tests; with --test, use --attempts")
        if self.examples:
            if self.test is not None:
                problems.append("--examples and --test both check candidates: give one")
            if "-" in files:
                problems.append("--examples runs the file in a copy of its folder: not stdin")
            if self.candidates < 2:
                problems.append("--examples chooses among candidates: --samples 2 or more")
        if self.candidates < 1:
            problems.append("--samples must be at least 1")
        if self.vote and self.candidates < 3:
            problems.append("--vote chooses among --samples candidates: add --samples 3 or more")
        if self.reference and self.method != "pool":
            problems.append("--reference feeds the draft pool: add --method pool")
        if self.send_openai_key and not self.api_key and not os.environ.get("OPENAI_API_KEY"):
            problems.append("--send-openai-key: OPENAI_API_KEY is not set")
        local_llama_cpp = self.engine_in_use == "llama.cpp" and not self.server
        if local_llama_cpp and self.method and (why := refusal(self.method, "llama.cpp")):
            problems.append(why)
        if self.method in DRAFT_MODEL_METHODS and not (self.draft_model or self.server):
            problems.append(f"--method {self.method} drafts with a second model: add --draft-model")
        return problems
