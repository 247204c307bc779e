"""What `specedit bench` compares: its setups (method, verification, prompts, attempts, engine,
region, selection), the baselines, and which plain-decoding setup each is measured against."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from specedit.bench.llamacpp import LLAMA_CPP_METHODS
from specedit.bench.llamaserver import PEERS
from specedit.bench.tasks import Task
from specedit.editing.editor import (
    EditRequest,
    in_region,
)
from specedit.editing.examples import Examples
from specedit.editing.localize import locate
from specedit.editing.region import NAME_IN_BACKTICKS, Region
from specedit.editing.selection import DEFAULT_SAMPLES, EXAMPLES_SAMPLES, STEPS, Samples
from specedit.engine.options import STRICT, Verification

BASELINES = {"ar": None, "hf-pld": 10}  # method -> transformers' prompt_lookup_num_tokens


# Setups that are not the engine: strict, run once.
EXTERNAL = {*BASELINES, *LLAMA_CPP_METHODS, *PEERS}


# `specedit apply`'s default: the snippet merged without the model where it leaves no doubt
# (snippets.py), else by the model with the engine's default method. Apply tasks only.
MERGE = "merge"


# What a setup rewrites: (AUTO) what the CLI's edit would, the functions of a long file that the
# instruction is about (editing/localize.py); the whole input; or (NAMED) only the first function
# or class that the instruction names in backticks and the input defines, as a user who names it
# would pass it to `--lines NAME` (a task that names none is edited whole).
AUTO, WHOLE, NAMED = "auto", "whole", "named"


REGIONS = (AUTO, WHOLE, NAMED)


def named_region(task: Task, request: EditRequest) -> tuple[EditRequest, Callable[[str], str]]:
    """The request for the region NAMED picks, and what turns its answer into the whole text."""
    for name in NAME_IN_BACKTICKS.findall(task.instruction):
        try:
            return in_region(request, Region.parse(name))
        except ValueError:  # not defined here (a value, a parameter, another module's name)
            continue
    return request, str


def located_region(request: EditRequest) -> tuple[EditRequest, Callable[[str], str]]:
    """The request for the region AUTO picks (none: the whole input), as the CLI picks it."""
    located = locate(request)
    return in_region(request, located.region) if located else (request, str)


@dataclass(frozen=True)
class Setup:
    """One column of the comparison: how a task is edited."""

    method: str
    verification: Verification = STRICT
    prompts: str = ""  # a folder of <kind>.toml templates; "" = the shipped ones
    attempts: int = 1  # > 1: retry with the task's tests as the check (the --test loop)
    engine: str = "torch"  # where the engine's passes run: transformers or llama.cpp
    region: str = AUTO  # as the CLI edits; WHOLE: the whole input; NAMED: as `--lines NAME`
    selection: str = "1"  # candidates per edit (--samples): `parse_selection`

    @property
    def label(self) -> str:
        label = self.method
        if self.verification.mode != "strict":
            label += f"~{self.verification.mode}"
        if self.prompts:
            label += f"@{Path(self.prompts).name}"
        if self.attempts > 1:
            label += f"x{self.attempts}"
        if self.region != AUTO:
            label += f"+{self.region}"
        if self.selection != "1":
            label += f"~s{self.selection}"
        return label + engine_suffix(self.engine)

    def prompt_for(self, task: Task) -> str:
        return str(Path(self.prompts) / f"{task.kind}.toml") if self.prompts else task.kind


def engine_suffix(engine: str) -> str:
    """How a setup's label names the engine it ran on: nothing for transformers."""
    return "" if engine == "torch" else f"/{engine}"


def costed_on(label: str) -> str:
    """The engine whose measured costs a setup's passes are set against, by its label:
    the one `engine_suffix` names; llama-cpp-python's own decoding runs the GGUF file with the
    threads the llama.cpp engine has, so that engine's; so does llama-server."""
    setup, _, engine = label.rpartition("/")
    if setup:
        return engine
    return "llama.cpp" if label in LLAMA_CPP_METHODS or label in PEERS else "torch"


def reference(label: str) -> str:
    """The plain-decoding setup a label is compared with: `ar` on the same engine, editing the
    same region (its answer is another text than the whole file's)."""
    region = next((f"+{r}" for r in (NAMED, WHOLE) if f"+{r}" in label), "")
    return "ar" + region + (label[label.index("/") :] if "/" in label else "")


def parse_selection(spec: str) -> Samples | None:
    """A bench selection: "N" draws up to N candidates while they are unacceptable, "voteN"
    draws N and votes, "examplesN" draws up to N while they fail the task's own examples too,
    run as `--examples` runs them, "confinedN" the same with the examples confined as the
    default runs them, and "default" edits as the CLI does with no option (`selection.draw`,
    editing/examples.py); each may be followed by "-STEP" for a step of the draw left out
    (`selection.STEPS`: "default-unchanged" is the default with an unchanged answer sampled,
    not redrawn from its branch points). None when `spec` is none of them."""
    spec, *left_out = spec.split("-")
    if not set(left_out) <= set(STEPS) or len(set(left_out)) < len(left_out):
        return None
    samples = _samples(spec)
    return replace(samples, without=frozenset(left_out)) if samples else None


def _samples(spec: str) -> Samples | None:
    """`parse_selection` with no step left out."""
    if spec == "default":
        return Samples(DEFAULT_SAMPLES, examples=Examples.CONFINED, checked=EXAMPLES_SAMPLES)
    kinds = {"vote": (True, Examples.OFF), "examples": (False, Examples.ASKED)}
    kinds["confined"] = (False, Examples.CONFINED)
    prefix = next((p for p in kinds if spec.startswith(p)), "")
    vote, examples = kinds.get(prefix, (False, Examples.OFF))
    count = spec.removeprefix(prefix)
    return Samples(int(count), vote, examples) if count.isdigit() and int(count) >= 1 else None
