"""`specedit bench`: setups side by side, in one process, on the same tasks: speed and quality.

Baselines come from transformers itself: `ar` is plain greedy `generate`, the reference for
speed and for exactness, and `hf-pld` is `generate(prompt_lookup_num_tokens=10)`; `llama.cpp` and
`llama.cpp-pld` are what local users run (`bench/llamacpp.py`). Every other method is a specedit
drafter run through the engine. All stop at the same closing fence.

Quality: a task with `tests` passes when its tests pass after the edited text (run in a child
process, never here); a task with only `expected` passes when the output equals it.
"""

from __future__ import annotations

import difflib
import json
import math
import platform
import re
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table
from transformers import StoppingCriteria, StoppingCriteriaList

from specedit.bench.llamacpp import LLAMA_CPP_METHODS, LlamaCpp, LlamaCppUnavailable
from specedit.bench.tasks import Task, TaskError, load_tasks
from specedit.drafting.registry import (
    ABLATIONS,
    DRAFT_MODEL_METHODS,
    METHODS,
    make_drafter,
    method_for,
    refusal,
)
from specedit.editing import prompts, selection, snippets
from specedit.editing.checks import CheckResult, run_program
from specedit.editing.editor import (
    EditRequest,
    EditResult,
    LocalEditor,
    PreparedEdit,
    attempt_edits,
    generate_edit,
    in_region,
    prepare,
)
from specedit.editing.region import Region
from specedit.editing.runaway import RUNAWAY
from specedit.editing.safety import dropped_lines
from specedit.engine.events import Stats
from specedit.engine.options import STRICT, Verification
from specedit.engine.session import generate
from specedit.models.bundled import ModelError
from specedit.models.load import ENGINES, LoadedModel, load

BASELINES = {"ar": None, "hf-pld": 10}  # method -> transformers' prompt_lookup_num_tokens
EXTERNAL = {*BASELINES, *LLAMA_CPP_METHODS}  # setups that are not the engine: strict, run once
# `specedit apply`'s default: the snippet merged without the model where it leaves no doubt
# (snippets.py), else by the model with the engine's default method. Apply tasks only.
MERGE = "merge"


class BenchError(Exception):
    """Bad bench arguments or tasks."""


@dataclass
class Row:
    """One task run by one setup (the fastest of --repeat runs)."""

    task: str
    method: str  # the setup's label: method, ~verification, @prompts, xattempts
    new_tokens: int
    seconds: float  # generation only (prefill included)
    forward_passes: int
    group: str = ""
    stop: str = ""  # why generation ended: stop (the fence), eos, length (cut off), runaway
    wall_seconds: float = 0.0  # the whole edit: prompt, generation, extraction, every attempt
    passed: bool | None = None  # the task's tests (or the expected text); None: uncheckable
    check: str = ""  # the check's one-line summary
    attempts: int = 1
    unchanged: bool | None = None  # output == input
    dropped: int | None = None  # input lines without a counterpart in the output
    identical: bool | None = None  # same tokens as `ar` on the same engine
    speedup: float | None = None  # tokens/s over `ar` on the same engine
    exact_match: bool | None = None  # edited text == ground truth
    similarity: float | None = None
    unrequested: int | None = None  # input lines changed outside the planted edit
    relaxed: int = 0  # tokens accepted only by conditional verification
    reuse: dict | None = None  # the engine's reuse counters (drafted, accepted, paths, ...)
    tokens: list[int] = field(default_factory=list, repr=False)  # compared with `ar`'s

    @property
    def cut_off(self) -> bool:
        """The answer never closed: token limit or a runaway stop."""
        return self.stop in ("length", RUNAWAY)

    @property
    def tokens_per_second(self) -> float:
        return self.new_tokens / self.seconds if self.seconds else 0.0

    @property
    def mean_accepted(self) -> float:
        return self.new_tokens / max(self.forward_passes, 1)


class _ForwardCounter:
    """Counts the model's forward calls, whoever makes them."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.calls = 0
        self._handle = model.register_forward_pre_hook(self._count)

    def _count(self, *_: object) -> None:
        self.calls += 1

    def close(self) -> None:
        self._handle.remove()


class _FenceCriteria(StoppingCriteria):
    """Lets transformers' generate stop at the same closing fence as the engine."""

    def __init__(self, stop: prompts.FenceStop, prompt_length: int) -> None:
        self.stop, self.seen = stop, prompt_length

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs) -> torch.Tensor:
        new = input_ids[0, self.seen :].tolist()
        self.seen = input_ids.shape[1]
        done = any([self.stop(token) for token in new])  # feed every token, in order
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


def _cut(tokens: list[int], stop: Callable[[int], bool], eos: set[int]) -> tuple[list[int], str]:
    """Tokens up to and including the first stop, and the engine's name for why it stopped."""
    for i, token in enumerate(tokens):
        if token in eos:
            return tokens[: i + 1], "eos"
        if stop(token):
            return tokens[: i + 1], "stop"
    return tokens, "length"


@dataclass
class _Run:
    tokens: list[int]
    seconds: float
    passes: int  # forward passes that produced tokens
    stop: str
    stats: Stats | None = None  # the engine's counters (None for the baselines)


def _run_once(lm: LoadedModel, prepared: PreparedEdit, method: str, llama: LlamaCpp | None) -> _Run:
    model, eos, prompt = lm.model, lm.eos_token_ids, prepared.prompt
    if method in LLAMA_CPP_METHODS:
        stop = prompts.FenceStop(lm.tokenizer, prompt)
        run = llama.run(method, prompt.ids, prepared.max_new_tokens, stop, eos)
        return _Run(run.tokens, run.seconds, run.passes, run.stop)
    start = time.perf_counter()
    if method not in BASELINES or lm.engine != "torch":
        generation = generate_edit(lm, prepared)
        seconds = time.perf_counter() - start
        stats = generation.stats
        return _Run(generation.tokens, seconds, stats.forward_passes, generation.stop_reason, stats)
    counter = _ForwardCounter(model)
    try:
        ids = torch.tensor([prompt.ids], device=model.device)
        stop = prompts.FenceStop(lm.tokenizer, prompt)
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=prepared.max_new_tokens,
            do_sample=False,
            prompt_lookup_num_tokens=BASELINES[method],
            stopping_criteria=StoppingCriteriaList([_FenceCriteria(stop, len(prompt.ids))]),
            pad_token_id=lm.tokenizer.pad_token_id or next(iter(eos)),
        )
        seconds = time.perf_counter() - start
    finally:
        counter.close()
    tokens = out[0, len(prompt.ids) :].tolist()
    tokens, stop = _cut(tokens, prompts.FenceStop(lm.tokenizer, prompt), eos)
    return _Run(tokens, seconds, counter.calls, stop)  # the prefill pass yields the first token


def _changed_lines(before: str, after: str) -> set[int]:
    """Indices of `before`'s lines that a line diff replaces, deletes or inserts at."""
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines())
    changed: set[int] = set()
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            changed.update(range(i1, max(i2, i1 + 1)))
    return changed


def check_task(task: Task, text: str | None) -> CheckResult | None:
    """Whether `text` is a right edit for `task`: its tests pass after it (in a child process),
    or, for a task without tests, it equals the expected text. None: nothing to check against."""
    if text is None:
        return CheckResult(False, 1, "no edited text (the answer was cut off)", 0.0)
    if task.tests is not None:
        return run_program(text + "\n" + task.tests)
    if task.expected is not None:
        same = text == task.expected
        return CheckResult(same, 0 if same else 1, "" if same else "differs from expected", 0.0)
    return None


def _score(row: Row, text: str | None, task: Task, check: CheckResult | None) -> None:
    """Edit quality: the check, and against the input and the ground truth; unrequested =
    input lines changed that the planted edit did not touch."""
    if check is not None:
        row.passed, row.check = check.passed, check.summary()
    if text is None:
        return
    row.unchanged = text == task.input
    row.dropped = dropped_lines(task.input, text)
    if task.expected is None:
        return
    row.exact_match = text == task.expected
    row.similarity = round(difflib.SequenceMatcher(None, text, task.expected).ratio(), 4)
    requested = _changed_lines(task.input, task.expected)
    row.unrequested = len(_changed_lines(task.input, text) - requested)


# What a setup rewrites: the whole input, or (NAMED) only the first function or class that the
# instruction names in backticks and the input defines, as a user who names it would pass it to
# `--lines NAME` (a task that names none is edited whole).
WHOLE, NAMED = "whole", "named"
REGIONS = (WHOLE, NAMED)
NAME_IN_BACKTICKS = re.compile(r"`([^\W\d]\w*(?:\.[^\W\d]\w*)*)")


def named_region(task: Task, request: EditRequest) -> tuple[EditRequest, Callable[[str], str]]:
    """The request for the region NAMED picks, and what turns its answer into the whole text."""
    for name in NAME_IN_BACKTICKS.findall(task.instruction):
        try:
            return in_region(request, Region.parse(name))
        except ValueError:  # not defined here (a value, a parameter, another module's name)
            continue
    return request, str


@dataclass(frozen=True)
class Setup:
    """One column of the comparison: how a task is edited."""

    method: str
    verification: Verification = STRICT
    prompts: str = ""  # a folder of <kind>.toml templates; "" = the shipped ones
    attempts: int = 1  # > 1: retry with the task's tests as the check (the --test loop)
    engine: str = "torch"  # where the engine's passes run: transformers or llama.cpp
    region: str = WHOLE  # NAMED: only the definition the instruction names (`--lines NAME`)
    selection: str = "1"  # candidates per edit: N (drawn while unacceptable) or voteN (--samples)

    @property
    def label(self) -> str:
        label = self.method
        if self.verification.mode != "strict":
            label += f"~{self.verification.mode}"
        if self.prompts:
            label += f"@{Path(self.prompts).name}"
        if self.attempts > 1:
            label += f"x{self.attempts}"
        if self.region != WHOLE:
            label += f"+{self.region}"
        if self.selection != "1":
            label += f"~s{self.selection}"
        return label + engine_suffix(self.engine)

    def prompt_for(self, task: Task) -> str:
        return str(Path(self.prompts) / f"{task.kind}.toml") if self.prompts else task.kind


def engine_suffix(engine: str) -> str:
    """How a setup's label names the engine it ran on: nothing for transformers."""
    return "" if engine == "torch" else f"/{engine}"


def _reference(label: str) -> str:
    """The plain-decoding setup a label is compared with: `ar` on the same engine, editing the
    same region (its answer is another text than the whole file's)."""
    region = f"+{NAMED}" if f"+{NAMED}" in label else ""
    return "ar" + region + (label[label.index("/") :] if "/" in label else "")


def run_bench(
    lm: LoadedModel,
    methods: list[str],
    task_ids: list[str] | None = None,
    tasks_file: Path | None = None,
    repeat: int = 1,
    max_new_tokens: int | None = None,
    json_file: Path | None = None,
    verify: list[str] | None = None,
    prompt_sets: list[str] | None = None,
    attempts: int = 1,
    console: Console | None = None,
    suite: str = "edit",
    engines: list[str] | None = None,
    regions: list[str] | None = None,
    selections: list[str] | None = None,
) -> list[Row]:
    """Run every setup (method x verification x prompt set x engine) on every task. The
    baselines run strict, on the shipped prompts, once; `ar` on each engine is the reference for
    speed and exactness of that engine's setups when it is among the methods. On llama.cpp only
    the methods that read nothing but tokens run."""
    known = [*BASELINES, *LLAMA_CPP_METHODS, *METHODS, MERGE, *ABLATIONS]
    unknown = [m for m in methods if m not in known]
    if unknown:
        raise BenchError(f"unknown methods {', '.join(unknown)}: choose from {', '.join(known)}")
    needing = [m for m in methods if m in DRAFT_MODEL_METHODS]
    if needing and lm.draft is None:
        raise BenchError(f"{', '.join(needing)} draft with a second model: add --draft-model")
    prompt_sets = ["" if d == "default" else d for d in prompt_sets or [""]]
    missing = [d for d in prompt_sets if d and not Path(d).is_dir()]
    if missing:
        raise BenchError(f"prompt sets must be folders of <kind>.toml files: {missing[0]}")
    regions = regions or [WHOLE]
    selections = selections or ["1"]
    if bad := [s for s in selections if parse_selection(s) is None]:
        raise BenchError(f"unknown selection {bad[0]}: N (up to N candidates) or voteN")
    if unknown := [r for r in regions if r not in REGIONS]:
        raise BenchError(f"unknown region {unknown[0]}: choose from {', '.join(REGIONS)}")
    try:
        modes = [Verification(mode) for mode in verify or ["strict"]]
        tasks = load_tasks(tasks_file, task_ids, suite)
    except (TaskError, ValueError) as exc:
        raise BenchError(str(exc)) from None
    if MERGE in methods and any(task.kind != "apply" for task in tasks):
        raise BenchError(f"{MERGE} merges snippets: it runs on apply tasks (--suite apply)")
    if NAMED in regions and any(task.kind == "apply" for task in tasks):
        raise BenchError(f"--regions {NAMED} is for edits: a snippet to apply names no region")
    engines = engines or ["torch"]
    if unknown := [e for e in engines if e not in ENGINES]:
        raise BenchError(f"unknown engine {unknown[0]}: choose from {', '.join(ENGINES)}")
    models = {lm.engine: lm}
    for engine in engines:
        try:
            models[engine] = models.get(engine) or load(
                lm.name, engine=engine, threads=torch.get_num_threads()
            )
        except ModelError as exc:
            raise BenchError(str(exc)) from None
        if engine == "llama.cpp":  # every run starts cold, as every other setup does
            models[engine].model.reuse_prefix = False
    llama = None
    if any(m in LLAMA_CPP_METHODS for m in methods):
        try:
            llama = LlamaCpp(lm.name, torch.get_num_threads())
        except LlamaCppUnavailable as exc:
            raise BenchError(str(exc)) from None
    methods = list(dict.fromkeys(methods))
    # llama-cpp-python's own decoding runs once, and transformers' when torch is an engine; on
    # another engine, `ar` is that engine's plain decoding (the engine with no draft).
    external = [
        m for m in methods if m in LLAMA_CPP_METHODS or ("torch" in engines and m in BASELINES)
    ]
    setups = [Setup(method) for method in external] + [
        Setup(method, mode, folder, attempts, engine, region, selection)
        for engine in engines
        for method in methods
        for mode in modes
        for folder in prompt_sets
        for region in regions
        for selection in selections
        if (refusal(method, engine) is None if engine != "torch" else method not in EXTERNAL)
    ]
    # The references first, then in the order asked, each method's engines side by side.
    setups.sort(key=lambda setup: (setup.method != "ar", methods.index(setup.method)))
    labels = [setup.label for setup in setups]
    console = console or Console(width=max(Console().width, 110))
    for engine in engines:
        _warm_up(models[engine])
    rows: list[Row] = []
    for task in tasks:
        for setup in setups:
            request = EditRequest(
                task.input, task.instruction, prompt=setup.prompt_for(task),
                language=task.language, method=setup.method, max_new_tokens=max_new_tokens,
                verification=setup.verification,
            )  # fmt: skip
            row = min(
                (
                    _run_setup(models.get(setup.engine, lm), task, request, setup, llama)
                    for _ in range(max(repeat, 1))
                ),
                key=lambda r: r.wall_seconds,
            )
            rows.append(row)
            console.print(
                f"[dim]{task.id:32} {row.method:24} {row.new_tokens:5d} tok "
                f"{row.tokens_per_second:7.1f} tok/s  MAL {row.mean_accepted:5.2f}  "
                f"{_verdict(row)}[/dim]",
                highlight=False,
            )
        _compare_with_reference([r for r in rows if r.task == task.id])
        if json_file:  # after every task, so that a long run that is stopped still reports
            json_file.write_text(json.dumps(_report(lm, rows, _summary(rows, labels)), indent=2))
    if llama:
        llama.close()
    summary = _summary(rows, labels)
    _print(console, rows, summary, labels)
    if json_file:
        json_file.write_text(json.dumps(_report(lm, rows, summary), indent=2) + "\n")
    return rows


def parse_selection(spec: str) -> tuple[int, bool] | None:
    """A bench selection: "N" draws up to N candidates while they are unacceptable, "voteN"
    draws N and votes (`selection.draw`); None when `spec` is neither."""
    vote = spec.startswith("vote")
    count = spec.removeprefix("vote")
    return (int(count), vote) if count.isdigit() and int(count) >= 1 else None


def _run_samples(
    lm: LoadedModel,
    task: Task,
    request: EditRequest,
    setup: Setup,
    whole: Callable[[str], str],
    start: float,
) -> Row:
    """One task edited as `--samples` edits it: candidates judged without tests, one chosen,
    and only that one checked with the task's tests."""
    editor = LocalEditor(lm)
    drawn: list[EditResult] = []  # every candidate's result, for the tokens and passes

    def run(request: EditRequest) -> EditResult:
        drawn.append(editor.edit(request))
        return drawn[-1]

    chosen = selection.draw_edits(
        run, request, whole, selection.Samples(*parse_selection(setup.selection))
    ).chosen
    row = Row(
        task.id, setup.label,
        sum(len(r.generation.tokens) for r in drawn),
        sum(r.generation.stats.total_seconds for r in drawn),
        sum(r.generation.stats.forward_passes for r in drawn),
        group=task.group, wall_seconds=time.perf_counter() - start, attempts=len(drawn),
        stop=chosen.generation.stop_reason if chosen else RUNAWAY,
    )  # fmt: skip
    text = whole(chosen.text) if chosen else None
    _score(row, text, task, check_task(task, text))
    return row


def _verdict(row: Row) -> str:
    if row.passed is None:
        return "-"
    return "pass" if row.passed else ("cut off" if row.cut_off else "FAIL")


def _run_setup(
    lm: LoadedModel, task: Task, request: EditRequest, setup: Setup, llama: LlamaCpp | None
) -> Row:
    """One task by one setup, timed from the request to the checked text."""
    start = time.perf_counter()
    whole: Callable[[str], str] = str  # the whole text, given the answer
    if setup.region == NAMED:
        request, whole = named_region(task, request)
    if setup.method == MERGE:
        merged = snippets.merge(task.input, task.instruction, task.language)
        if merged is not None:
            row = Row(task.id, setup.label, 0, 0.0, 0, group=task.group, stop="merged",
                      wall_seconds=time.perf_counter() - start)  # fmt: skip
            _score(row, merged, task, check_task(task, merged))
            return row
        request = replace(request, method=method_for(lm))  # the model merges it
    if setup.selection != "1":
        return _run_samples(lm, task, request, setup, whole, start)
    if setup.attempts > 1 and task.checkable:
        edit = LocalEditor(lm).edit
        check = lambda text: check_task(task, whole(text))  # noqa: E731
        tries = attempt_edits(edit, request, check, setup.attempts)
        wall = time.perf_counter() - start
        done = [t.result for t in tries if t.result]
        row = Row(
            task.id, setup.label,
            sum(len(r.generation.tokens) for r in done),
            sum(r.generation.stats.total_seconds for r in done),
            sum(r.generation.stats.forward_passes for r in done),
            group=task.group, wall_seconds=wall, attempts=len(tries),
            stop=done[-1].generation.stop_reason if done else RUNAWAY,
        )  # fmt: skip
        last = tries[-1]
        text = whole(last.result.text) if last.result else None
        _score(row, text, task, last.check or check_task(task, None))
        return row
    prepared = prepare(lm, request)
    run = _run_once(lm, prepared, request.method, llama)
    text = prompts.extract(lm.tokenizer, run.tokens, prepared.prompt, request.surroundings)
    text = None if text is None or run.stop == RUNAWAY else whole(text)
    wall = time.perf_counter() - start
    row = Row(task.id, setup.label, len(run.tokens), run.seconds, run.passes, group=task.group,
              stop=run.stop, wall_seconds=wall)  # fmt: skip
    row.tokens = run.tokens
    if run.stats:
        row.relaxed = run.stats.relaxed_tokens
        row.reuse = {
            "drafted": run.stats.drafted_tokens,
            "accepted": run.stats.accepted_tokens,
            "paths": dict(run.stats.accepted_paths),
            "accepted_lengths": dict(run.stats.accepted_lengths),
            "drafting": run.stats.drafting,
            "draft_seconds": round(run.stats.draft_seconds, 4),
            "verify_seconds": round(run.stats.verify_seconds, 4),
        }
    _score(row, text, task, check_task(task, text))
    return row


def _compare_with_reference(rows: list[Row]) -> None:
    """Speedup and token identity against `ar` on the same engine, when it ran."""
    for row in rows:
        base = next((r for r in rows if r.method == _reference(row.method)), None)
        if base is not None:
            row.speedup = row.tokens_per_second / base.tokens_per_second
            row.identical = row.tokens == base.tokens if row.tokens else None


def _warm_up(lm: LoadedModel) -> None:
    """Page the weights in and measure (or read) the pass-cost curve, before anything is timed."""
    ids = lm.tokenizer("def warm_up():\n    return 1\n", add_special_tokens=False)["input_ids"]
    generate(lm.model, ids, make_drafter("pld", lm.model), max_new_tokens=8)
    lm.pass_cost()


def _summary(rows: list[Row], methods: list[str]) -> dict[str, dict]:
    summary = {}
    for method in methods:
        mine = [r for r in rows if r.method == method]
        speedups = [r.speedup for r in mine if r.speedup]
        scored = [r for r in mine if r.exact_match is not None]
        checked = [r for r in mine if r.passed is not None]
        summary[method] = {
            "pass": f"{sum(bool(r.passed) for r in checked)}/{len(checked)}",
            "pass_rate": round(sum(bool(r.passed) for r in checked) / max(len(checked), 1), 3),
            "pass_by_group": {
                group: f"{sum(bool(r.passed) for r in members)}/{len(members)}"
                for group in sorted({r.group for r in checked})
                for members in [[r for r in checked if r.group == group]]
            },
            "unchanged": sum(bool(r.unchanged) for r in mine),
            "cut_off": sum(r.stop == "length" for r in mine),
            "runaway": sum(r.stop == RUNAWAY for r in mine),
            "dropped_lines": sum(r.dropped or 0 for r in mine),
            "mean_attempts": round(statistics.fmean(r.attempts for r in mine), 2),
            "median_tokens_per_second": round(
                statistics.median(r.tokens_per_second for r in mine), 2
            ),
            "median_wall_seconds": round(statistics.median(r.wall_seconds for r in mine), 2),
            "total_wall_seconds": round(sum(r.wall_seconds for r in mine), 1),
            "median_speedup": round(statistics.median(speedups), 3) if speedups else None,
            "geomean_speedup": round(math.exp(statistics.fmean(map(math.log, speedups))), 3)
            if speedups
            else None,
            "mean_accepted": round(statistics.fmean(r.mean_accepted for r in mine), 3),
            "identical": f"{sum(bool(r.identical) for r in mine)}/{len(mine)}"
            if any(r.identical is not None for r in mine)
            else "-",  # no `ar` to compare with
            "exact_match": f"{sum(bool(r.exact_match) for r in scored)}/{len(scored)}",
            "mean_similarity": round(statistics.fmean(r.similarity for r in scored), 4)
            if scored
            else None,
            "unrequested_lines": sum(r.unrequested or 0 for r in scored),
            "relaxed_tokens": sum(r.relaxed for r in mine),
        }
    for method in methods:
        engine_rows = [r.reuse for r in rows if r.method == method and r.reuse]
        if not engine_rows:
            continue
        paths: Counter[str] = Counter()
        counters: Counter[str] = Counter()
        for reuse in engine_rows:
            paths.update(reuse["paths"])
            counters.update(reuse["drafting"])
        drafted = sum(r["drafted"] for r in engine_rows)
        accepted = sum(r["accepted"] for r in engine_rows)
        summary[method]["reuse"] = {
            "drafted_per_accepted": round(drafted / max(accepted, 1), 3),
            "paths": dict(paths.most_common()),
            "drafter": dict(counters.most_common()),  # the drafter's counters, summed
            "draft_share_of_verify": round(
                sum(r["draft_seconds"] for r in engine_rows)
                / max(sum(r["verify_seconds"] for r in engine_rows), 1e-9),
                4,
            ),
        }
    if "hf-pld" in summary:
        by_task = {r.task: r for r in rows if r.method == "hf-pld"}
        for method in methods:
            ratios = [r.tokens_per_second / by_task[r.task].tokens_per_second
                      for r in rows if r.method == method]  # fmt: skip
            summary[method]["median_over_hf_pld"] = round(statistics.median(ratios), 3)
    for reference in LLAMA_CPP_METHODS:  # what users feel: the whole edit's wall time
        walls = {r.task: r.wall_seconds for r in rows if r.method == reference}
        if not walls:
            continue
        for method in methods:
            ratios = [walls[r.task] / r.wall_seconds for r in rows if r.method == method]
            summary[method][f"wall_over_{reference}"] = {
                "median": round(statistics.median(ratios), 3),
                "faster": f"{sum(ratio > 1 for ratio in ratios)}/{len(ratios)}",
            }
    return summary


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _print(console: Console, rows: list[Row], summary: dict, methods: list[str]) -> None:
    table = Table(title="specedit bench (speedup = tokens/s over plain greedy `ar`)")
    for column in ("task", "setup", "check", "stop", "tokens", "tok/s", "speedup", "MAL",
                   "passes", "wall s", "= ar", "unrequested", "dropped"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("task", "setup") else "right")
    for row in rows:
        table.add_row(
            row.task, row.method, _verdict(row), row.stop, str(row.new_tokens),
            f"{row.tokens_per_second:.1f}", _x(row.speedup), f"{row.mean_accepted:.2f}",
            str(row.forward_passes), f"{row.wall_seconds:.1f}",
            "-" if row.identical is None else ("yes" if row.identical else "NO"),
            "-" if row.unrequested is None else str(row.unrequested),
            "-" if row.dropped is None else str(row.dropped),
        )  # fmt: skip
    console.print(table)
    totals = Table(title="summary over tasks")
    for column in ("setup", "pass@1", "by group", "unchanged", "cut off", "runaway",
                   "unrequested", "dropped", "median tok/s", "median wall s", "speedup",
                   "vs hf-pld", "MAL", "= ar"):  # fmt: skip
        totals.add_column(column, justify="left" if column == "setup" else "right")
    for method in methods:
        s = summary[method]
        totals.add_row(
            method, s["pass"], " ".join(f"{g} {v}" for g, v in s["pass_by_group"].items()),
            str(s["unchanged"]), str(s["cut_off"]), str(s["runaway"]),
            str(s["unrequested_lines"]), str(s["dropped_lines"]),
            f"{s['median_tokens_per_second']:.1f}", f"{s['median_wall_seconds']:.1f}",
            _x(s["median_speedup"]), _x(s.get("median_over_hf_pld")),
            f"{s['mean_accepted']:.2f}", s["identical"],
        )  # fmt: skip
    console.print(totals)
    reuse = Table(title="reuse: where accepted tokens came from (passes by accepted path)")
    for column in ("method", "drafted/accepted", "draft/verify time", "accepted paths",
                   "drafter counters"):  # fmt: skip
        reuse.add_column(column)
    for method in methods:
        r = summary[method].get("reuse")
        if r:
            reuse.add_row(
                method, f"{r['drafted_per_accepted']:.2f}", f"{r['draft_share_of_verify']:.1%}",
                ", ".join(f"{k} {v}" for k, v in r["paths"].items()),
                ", ".join(f"{k.removeprefix('retrieval_')} {v:g}" for k, v in r["drafter"].items())
                or "-",
            )  # fmt: skip
    if reuse.rows:  # none when no setup ran the engine (merges, baselines)
        console.print(reuse)
    references = [m for m in LLAMA_CPP_METHODS if f"wall_over_{m}" in summary[methods[0]]]
    if references:
        versus = Table(title="against llama.cpp: how many times faster the whole edit is")
        versus.add_column("setup")
        for reference in references:
            versus.add_column(f"vs {reference} (median)", justify="right")
            versus.add_column("faster on", justify="right")
        for method in methods:
            cells = [summary[method][f"wall_over_{reference}"] for reference in references]
            versus.add_row(method, *[v for c in cells for v in (_x(c["median"]), c["faster"])])
        console.print(versus)


def _report(lm: LoadedModel, rows: list[Row], summary: dict) -> dict:
    return {
        "model": lm.name,
        "engine": lm.engine,  # the first engine; setups on others name theirs in the label
        "dtype": "gguf" if lm.engine != "torch" else str(lm.model.dtype).removeprefix("torch."),
        "threads": torch.get_num_threads(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "rows": [{k: v for k, v in asdict(r).items() if k != "tokens"}
                 | {"tokens_per_second": round(r.tokens_per_second, 2),
                    "mean_accepted": round(r.mean_accepted, 3)} for r in rows],
        "summary": summary,
    }  # fmt: skip
