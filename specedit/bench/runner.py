"""`specedit bench`: setups side by side, in one process, on the same tasks: speed and quality.

Baselines come from transformers itself: `ar` is plain greedy `generate`, the reference for
speed and for exactness, and `hf-pld` is `generate(prompt_lookup_num_tokens=10)`; `llama.cpp` and
`llama.cpp-pld` are what local users run (`bench/llamacpp.py`), and so are `llama-server` and its
n-gram speculation (`bench/llamaserver.py`). Every other method is a specedit
drafter run through the engine. All stop at the same closing fence.

Quality: a task with `tests` passes when its tests pass after the edited text (run in a child
process, never here, but with the user's rights: nothing is sandboxed); a task with only
`expected` passes when the output equals it.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import TypeVar

import torch
from rich.console import Console

from specedit.bench.ablations import ABLATIONS, needs_draft_model
from specedit.bench.floors import floor_costs, reach_of, set_floors, warm_up
from specedit.bench.llamacpp import LLAMA_CPP_METHODS, LlamaCpp, LlamaCppUnavailable
from specedit.bench.llamaserver import PEERS, LlamaServer, PeerUnavailable
from specedit.bench.once import run_once
from specedit.bench.report import print_tables, report, summarize
from specedit.bench.score import Row, check_task, compare_with_reference, score_row, verdict
from specedit.bench.setups import (
    AUTO,
    BASELINES,
    EXTERNAL,
    MERGE,
    NAMED,
    REGIONS,
    Setup,
    located_region,
    named_region,
    parse_selection,
)
from specedit.bench.tasks import SUITES, Task, TaskError, load_tasks
from specedit.console import warning
from specedit.drafting.registry import (
    METHODS,
    method_for,
    refusal,
)
from specedit.editing import prompts, selection, snippets
from specedit.editing.attempts import Attempt, attempt_edits
from specedit.editing.checks import CheckResult
from specedit.editing.editor import (
    EditRequest,
    EditResult,
    Mode,
    first_copy,
    line_breaks,
    prepare,
)
from specedit.editing.examples import Examples, examples_check, judging, reported
from specedit.editing.local import LocalEditor
from specedit.editing.runaway import RUNAWAY
from specedit.engine.cost import (
    ContextCost,
    PassCost,
)
from specedit.engine.options import Verification
from specedit.models.bundled import ModelError
from specedit.models.load import ENGINES, LoadedModel, load, with_draft

Opened = TypeVar("Opened")  # what `_opened` opens: llama.cpp's own decoding, its server


class BenchError(Exception):
    """Bad bench arguments or tasks."""


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
    the methods that read nothing but tokens run, and the hybrid (its draft model is loaded on
    each engine)."""
    known = [*BASELINES, *LLAMA_CPP_METHODS, *PEERS, *METHODS, MERGE, *ABLATIONS]
    unknown = [m for m in methods if m not in known]
    if unknown:
        raise BenchError(f"unknown methods {', '.join(unknown)}: choose from {', '.join(known)}")
    needing = [m for m in methods if needs_draft_model(m)]
    if needing and lm.draft is None:
        raise BenchError(f"{', '.join(needing)} draft with a second model: add --draft-model")
    prompt_sets = ["" if d == "default" else d for d in prompt_sets or [""]]
    missing = [d for d in prompt_sets if d and not Path(d).is_dir()]
    if missing:
        raise BenchError(f"prompt sets must be folders of <kind>.toml files: {missing[0]}")
    regions = regions or [AUTO]
    selections = selections or ["1"]
    if bad := [s for s in selections if parse_selection(s) is None]:
        raise BenchError(f"unknown selection {bad[0]}: N, voteN, examplesN, confinedN or default")
    if unknown := [r for r in regions if r not in REGIONS]:
        raise BenchError(f"unknown region {unknown[0]}: choose from {', '.join(REGIONS)}")
    try:
        modes = [Verification(mode) for mode in verify or ["strict"]]
        tasks = load_tasks(tasks_file, task_ids, suite)
    except (TaskError, ValueError) as exc:
        raise BenchError(str(exc)) from None
    _warn_if_foreign(tasks_file, tasks)
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
            models[engine] = models.get(engine) or _on_engine(lm, engine)
        except ModelError as exc:
            raise BenchError(str(exc)) from None
        if engine == "llama.cpp":  # every edit starts cold (_cold), as every other setup does
            for loaded in (models[engine], models[engine].draft):
                if loaded is not None:
                    loaded.model.store = None  # no prompt heads from disk either
    llama = _opened(LlamaCpp, LLAMA_CPP_METHODS, methods, lm)
    peer = _opened(LlamaServer, PEERS, methods, lm)
    methods = list(dict.fromkeys(methods))
    # llama-cpp-python's own decoding runs once, and transformers' when torch is an engine; on
    # another engine, `ar` is that engine's plain decoding (the engine with no draft).
    external = [
        m
        for m in methods
        if m in LLAMA_CPP_METHODS or m in PEERS or ("torch" in engines and m in BASELINES)
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
    floors: dict[str, list[ContextCost]] = {}
    pass_costs: dict[str, PassCost] = {}  # what sized the drafts, kept for replays
    reach = reach_of(lm, tasks, max_new_tokens)  # one tokenizer: the engines run one model
    for engine in engines:
        asked = tuple(s.method for s in setups if s.engine == engine and s.method in METHODS)
        warm_up(models[engine], asked)
        floors[engine] = [floor_costs(models[engine], reach)]
        pass_costs[engine] = models[engine].pass_cost()
    rows: list[Row] = []
    timed: list[Setup] = []  # each row's setup
    for task in tasks:
        for setup in setups:
            request = EditRequest(
                task.input,
                task.instruction,
                prompt=setup.prompt_for(task),
                language=task.language,
                method=setup.method,
                max_new_tokens=max_new_tokens,
                verification=setup.verification,
            )
            row = min(
                (
                    _run_setup(models.get(setup.engine, lm), task, request, setup, llama, peer)
                    for _ in range(max(repeat, 1))
                ),
                key=lambda r: r.wall_seconds,
            )
            set_floors(row, setup, floors, pass_costs)
            rows.append(row)
            timed.append(setup)
            console.print(
                f"[dim]{task.id:32} {row.method:24} {row.new_tokens:5d} tok "
                f"{row.tokens_per_second:7.1f} tok/s  MAL {row.mean_accepted:5.2f}  "
                f"{verdict(row)}[/dim]",
                highlight=False,
            )
        compare_with_reference([r for r in rows if r.task == task.id])
        if json_file:  # after every task, so that a long run that is stopped still reports
            json_file.write_text(
                json.dumps(report(lm, rows, summarize(rows, labels), floors, pass_costs))
            )
    if llama:
        llama.close()
    if peer:
        peer.close()
    # Measured again once every row is timed: other work on the machine only adds time, so the
    # lower of the two floors is nearer the machine's own.
    for engine in engines:
        floors[engine].append(floor_costs(models[engine], reach))
    for row, setup in zip(rows, timed, strict=True):
        set_floors(row, setup, floors, pass_costs)
    summary = summarize(rows, labels)
    print_tables(console, rows, summary, labels)
    if json_file:
        json_file.write_text(json.dumps(report(lm, rows, summary, floors, pass_costs)) + "\n")
    return rows


def _opened(
    kind: Callable[[str, int], Opened], names: dict, methods: list[str], lm: LoadedModel
) -> Opened | None:
    """`kind` (llama.cpp's own decoding, its server) on `lm`'s model with the bench's threads
    (the llama.cpp engine's, where `lm` runs on it: its layout of the weights is kept per
    threads), where a method among `names` is asked for; None otherwise."""
    if not any(method in names for method in methods):
        return None
    try:
        return kind(lm.name, getattr(lm.model, "threads", None) or torch.get_num_threads())
    except (LlamaCppUnavailable, PeerUnavailable) as exc:
        raise BenchError(str(exc)) from None


def _warn_if_foreign(tasks_file: Path | None, tasks: list[Task]) -> None:
    """One line on stderr where tests that will run come from a tasks file other than the
    shipped suites: they run, after the model's answer, as Python with the user's rights."""
    if tasks_file is None or all(task.tests is None for task in tasks):
        return
    bench = Path(str(resources.files("specedit") / "bench"))
    if Path(tasks_file).resolve() not in {(bench / name).resolve() for name in SUITES.values()}:
        warning(
            f"{tasks_file}: its tests run unsandboxed, with your rights, beside code the model "
            "wrote; run only tasks files you trust"
        )


def _on_engine(lm: LoadedModel, engine: str) -> LoadedModel:
    """`lm`'s model, and its draft model if it has one, loaded on another engine."""
    other = load(lm.name, engine=engine, threads=torch.get_num_threads())
    return other if lm.draft is None else with_draft(other, lm.draft.name)


def _cold(lm: LoadedModel) -> None:
    """Start an edit cold: on llama.cpp, nothing of an earlier edit held (the torch engine
    keeps nothing between generations). Within the edit, its generations reuse each other's
    cache as the CLI's do."""
    for loaded in (lm, lm.draft):
        if loaded is not None and hasattr(loaded.model, "start_cold"):
            loaded.model.start_cold()


def _run_setup(
    lm: LoadedModel,
    task: Task,
    request: EditRequest,
    setup: Setup,
    llama: LlamaCpp | None,
    peer: LlamaServer | None,
) -> Row:
    """One task by one setup, timed from the request to the checked text. AUTO edits as the
    CLI does: the region it picks, then the whole text where the answer went on past it. A
    server edits the whole text: it knows no regions."""
    _cold(lm)
    start = time.perf_counter()
    if setup.method in PEERS:
        return _peer_row(lm, task, request, setup, peer, start)
    if setup.region == NAMED:
        return _edit_row(lm, task, *named_region(task, request), setup, llama, start)
    if setup.region == AUTO:
        narrowed, whole = located_region(request)
        row = _edit_row(lm, task, narrowed, whole, setup, llama, start)
        if narrowed is request or row.stop != "length":
            return row
    return _edit_row(lm, task, request, str, setup, llama, start)


def _edit_row(
    lm: LoadedModel,
    task: Task,
    request: EditRequest,
    whole: Callable[[str], str],
    setup: Setup,
    llama: LlamaCpp | None,
    start: float,
) -> Row:
    """`request` edited by `setup`, its row timed from `start`; `whole` turns an answer into
    the whole text."""
    if setup.method == MERGE:
        merged = snippets.merge(task.input, task.instruction, task.language)
        if merged is not None:
            row = Row(
                task.id,
                setup.label,
                0,
                0.0,
                0,
                group=task.group,
                stop="merged",
                wall_seconds=time.perf_counter() - start,
            )
            score_row(row, merged, task, check_task(task, merged))
            return row
        request = replace(request, method=method_for(lm))  # the model merges it
    if setup.selection != "1":
        return _run_samples(lm, task, request, setup, whole, start)
    if setup.attempts > 1 and task.checkable:
        editor = LocalEditor(lm)
        check = lambda text: check_task(task, whole(text))  # noqa: E731
        tries = attempt_edits(editor.edit, request, check, setup.attempts, editor.decode)
        wall = time.perf_counter() - start
        done = [t.result for t in tries if t.result]
        row = _candidates_row(task, setup, done, wall, len(tries))
        row.tries = [_outcome(t, whole, whole(request.text)) for t in tries]
        last = tries[-1]
        text = whole(last.result.text) if last.result else None
        score_row(row, text, task, last.check or check_task(task, None))
        return row
    prepared = prepare(lm, request)
    run = run_once(lm, prepared, request.method, llama)
    text = prompts.extract(lm.tokenizer, run.tokens, prepared.prompt, request.surroundings)
    if text is not None:
        text = None if run.stop == RUNAWAY else whole(prompts.framed(text, prepared.prompt))
    wall = time.perf_counter() - start
    row = Row(
        task.id,
        setup.label,
        len(run.tokens),
        run.seconds,
        run.passes,
        group=task.group,
        stop=run.stop,
        wall_seconds=wall,
        prompt_tokens=len(prepared.prompt.ids),
    )
    row.tokens, row.prompt_ids = run.tokens, prepared.prompt.ids
    row.input_span = [prepared.prompt.input_start, prepared.prompt.input_end]
    row.instruction_span = list(prepared.prompt.instruction or ())
    row.first_copy = first_copy(request, prepared.prompt)
    breaks = line_breaks(lm.tokenizer)  # the drafter's own, each token decoded already
    row.line_breaks = sorted(t for t in {*run.tokens, *prepared.prompt.ids} if breaks(t))
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
    score_row(row, text, task, check_task(task, text))
    return row


def _peer_row(
    lm: LoadedModel,
    task: Task,
    request: EditRequest,
    setup: Setup,
    peer: LlamaServer,
    start: float,
) -> Row:
    """`request` edited whole by a llama-server setup, its row timed from `start`."""
    prepared = prepare(lm, request)
    run = peer.run(setup.method, prepared.prompt, prepared.max_new_tokens)
    row = Row(
        task.id,
        setup.label,
        run.new_tokens,
        run.seconds,
        run.passes,
        group=task.group,
        stop=run.stop,
        wall_seconds=time.perf_counter() - start,
        prompt_tokens=len(prepared.prompt.ids),
    )
    if run.drafted:
        row.server = {"drafted": run.drafted, "accepted": run.accepted}
    score_row(row, run.text, task, check_task(task, run.text))
    return row


def _outcome(attempt: Attempt, whole: Callable[[str], str], original: str) -> str:
    """One --attempts try in a word (Row.tries); `whole` turns its answer into the text."""
    if attempt.result is None:
        return "error"
    if attempt.passed:
        return "passed"
    return "unchanged" if whole(attempt.result.text) == original else "failed"


def _candidates_row(
    task: Task,
    setup: Setup,
    results: list[EditResult],
    wall: float,
    attempts: int,
    delivered: EditResult | None = None,
) -> Row:
    """The row of an edit that made several candidates (--attempts, --samples): their tokens,
    seconds and passes summed; the stop reason of the delivered one (the last by default)."""
    delivered = delivered or (results[-1] if results else None)
    return Row(
        task.id,
        setup.label,
        sum(len(r.generation.tokens) for r in results),
        sum(r.generation.stats.total_seconds for r in results),
        sum(r.generation.stats.forward_passes for r in results),
        group=task.group,
        wall_seconds=wall,
        attempts=attempts,
        stop=delivered.generation.stop_reason if delivered else RUNAWAY,
        prompt_tokens=sum(r.generation.stats.prompt_tokens for r in results),
    )


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
        # The first candidate starts cold (_run_setup); the next ones keep the cache it left, as
        # the CLI's do: a redraw shares its prompt, and a branch its answer up to there.
        drawn.append(editor.edit(request))
        return drawn[-1]

    samples = parse_selection(setup.selection)
    with _examples(task, samples) as check:
        candidates = selection.draw_edits(run, request, whole, samples, editor.decode, check)
    chosen = candidates.chosen
    row = _candidates_row(task, setup, drawn, time.perf_counter() - start, len(drawn), chosen)
    row.problems = candidates.problems
    delivered = candidates.delivered
    row.afresh = delivered.afresh if delivered else None
    row.absent = list(delivered.verdict.absent) if delivered and delivered.verdict else []
    text = whole(chosen.text) if chosen else None
    known = delivered.verdict.checked if delivered and delivered.verdict else None
    score_row(row, text, task, check_task(task, text, known))
    if chosen and task.checkable:
        for name, before in chosen.before_passes.items():
            row.without_pass[name] = check_task(task, whole(before)).passed
    return row


@contextlib.contextmanager
def _examples(
    task: Task, samples: selection.Samples
) -> Iterator[Callable[[str], CheckResult] | None]:
    """The check of a candidate's examples (`>>>`, the calls its instruction states) as the
    selection runs them (confined, or as --examples does in a folder holding the task's input
    alone); None where they are not run or there are none."""
    mode = Mode.of_template(task.kind)
    run = judging(samples.examples, mode)
    if run is Examples.OFF:
        yield None
        return
    instruction = reported(task.instruction, mode)
    with tempfile.TemporaryDirectory(prefix="specedit-examples-") as folder:
        path = Path(folder) / "candidate.py"
        path.write_text(task.input, encoding="utf-8")
        with examples_check(path, task.input, task.language, run, instruction) as check:
            yield check
