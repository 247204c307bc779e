"""`specedit bench`: methods side by side, in one process, on the same prompts.

Baselines come from transformers itself: `ar` is plain greedy `generate`, the reference for
speed and for exactness, and `hf-pld` is `generate(prompt_lookup_num_tokens=10)`. Every other
method is a specedit drafter run through the engine. All stop at the same closing fence.
"""

from __future__ import annotations

import difflib
import json
import math
import platform
import statistics
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table
from transformers import StoppingCriteria, StoppingCriteriaList

from specedit import prompts
from specedit.bench.tasks import Task, TaskError, load_tasks
from specedit.drafting import METHODS, make_drafter
from specedit.edit import EditRequest, PreparedEdit, generate_edit, prepare
from specedit.engine.session import Stats, generate
from specedit.engine.verify import STRICT, Verification
from specedit.models import LoadedModel

BASELINES = {"ar": None, "hf-pld": 10}  # method -> transformers' prompt_lookup_num_tokens


class BenchError(Exception):
    """Bad bench arguments or tasks."""


@dataclass
class Row:
    """One task run by one method (the fastest of --repeat runs)."""

    task: str
    method: str
    new_tokens: int
    seconds: float
    forward_passes: int
    identical: bool | None = None  # same tokens as `ar`
    speedup: float | None = None  # tokens/s over `ar`
    exact_match: bool | None = None  # edited text == ground truth
    similarity: float | None = None
    unrequested: int | None = None  # input lines changed outside the planted edit
    relaxed: int = 0  # tokens accepted only by conditional verification
    reuse: dict | None = None  # the engine's reuse counters (drafted, accepted, paths, ...)

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


def _cut(tokens: list[int], stop: Callable[[int], bool], eos: set[int]) -> list[int]:
    """Tokens up to and including the first stop: what the engine would have committed."""
    for i, token in enumerate(tokens):
        if token in eos or stop(token):
            return tokens[: i + 1]
    return tokens


@dataclass
class _Run:
    tokens: list[int]
    seconds: float
    passes: int  # forward passes that produced tokens
    stats: Stats | None = None  # the engine's counters (None for transformers' baselines)


def _run_once(lm: LoadedModel, prepared: PreparedEdit, method: str) -> _Run:
    model, eos, prompt = lm.model, lm.eos_token_ids, prepared.prompt
    start = time.perf_counter()
    if method not in BASELINES:
        generation = generate_edit(lm, prepared)
        seconds = time.perf_counter() - start
        return _Run(generation.tokens, seconds, generation.stats.forward_passes, generation.stats)
    counter = _ForwardCounter(model)
    try:
        ids = torch.tensor([prompt.ids], device=model.device)
        stop = prompts.FenceStop(lm.tokenizer, prompt.fence)
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
    tokens = _cut(tokens, prompts.FenceStop(lm.tokenizer, prompt.fence), eos)
    return _Run(tokens, seconds, counter.calls)  # the prefill pass yields the first token


def _changed_lines(before: str, after: str) -> set[int]:
    """Indices of `before`'s lines that a line diff replaces, deletes or inserts at."""
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines())
    changed: set[int] = set()
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            changed.update(range(i1, max(i2, i1 + 1)))
    return changed


def _score(row: Row, text: str | None, task: Task) -> None:
    """Edit quality against the ground truth; unrequested = input lines changed that the
    planted edit did not touch."""
    if task.expected is None or text is None:
        return
    row.exact_match = text == task.expected
    row.similarity = round(difflib.SequenceMatcher(None, text, task.expected).ratio(), 4)
    requested = _changed_lines(task.input, task.expected)
    row.unrequested = len(_changed_lines(task.input, text) - requested)


def run_bench(
    lm: LoadedModel,
    methods: list[str],
    task_ids: list[str] | None = None,
    tasks_file: Path | None = None,
    repeat: int = 1,
    max_new_tokens: int | None = None,
    json_file: Path | None = None,
    verify: list[str] | None = None,
    console: Console | None = None,
) -> list[Row]:
    """Run every (method, verification) on every task; a label is the method, with
    `~mode` appended for a lossy verification mode (transformers' baselines are strict only)."""
    known = [*BASELINES, *METHODS]
    unknown = [m for m in methods if m not in known]
    if unknown:
        raise BenchError(f"unknown methods {', '.join(unknown)}: choose from {', '.join(known)}")
    try:
        modes = [Verification(mode) for mode in verify or ["strict"]]
        tasks = load_tasks(tasks_file, task_ids)
    except (TaskError, ValueError) as exc:
        raise BenchError(str(exc)) from None
    runs = [("ar", STRICT)] + [
        (method, mode)
        for method in methods
        for mode in modes
        if method != "ar" and (mode.mode == "strict" or method not in BASELINES)
    ]
    labels = [m if v.mode == "strict" else f"{m}~{v.mode}" for m, v in runs]
    console = console or Console(width=max(Console().width, 110))
    _warm_up(lm)
    rows: list[Row] = []
    for task in tasks:
        request = EditRequest(task.input, task.instruction, prompt=task.kind,
                              language=task.language, max_new_tokens=max_new_tokens)  # fmt: skip
        prepared = prepare(lm, request)
        reference: list[int] = []
        for label, (method, mode) in zip(labels, runs, strict=True):
            job = replace(prepared, request=replace(request, method=method, verification=mode))
            run = min(
                (_run_once(lm, job, method) for _ in range(max(repeat, 1))),
                key=lambda r: r.seconds,
            )
            tokens = run.tokens
            row = Row(task.id, label, len(tokens), run.seconds, run.passes)
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
            reference = reference or tokens  # "ar" runs first
            row.identical = tokens == reference
            _score(row, prompts.extract(lm.tokenizer, tokens, prepared.prompt), task)
            rows.append(row)
            console.print(
                f"[dim]{task.id:32} {label:20} {row.new_tokens:5d} tok "
                f"{row.tokens_per_second:7.1f} tok/s  MAL {row.mean_accepted:5.2f}[/dim]",
                highlight=False,
            )
        base = next(r for r in rows if r.task == task.id and r.method == "ar")
        for row in rows:
            if row.task == task.id:
                row.speedup = row.tokens_per_second / base.tokens_per_second
    summary = _summary(rows, labels)
    _print(console, rows, summary, labels)
    if json_file:
        json_file.write_text(json.dumps(_report(lm, rows, summary), indent=2) + "\n")
    return rows


def _warm_up(lm: LoadedModel) -> None:
    ids = lm.tokenizer("def warm_up():\n    return 1\n", add_special_tokens=False)["input_ids"]
    generate(lm.model, ids, make_drafter("pld", lm.model), max_new_tokens=8)


def _summary(rows: list[Row], methods: list[str]) -> dict[str, dict]:
    summary = {}
    for method in methods:
        mine = [r for r in rows if r.method == method]
        speedups = [r.speedup for r in mine]
        scored = [r for r in mine if r.exact_match is not None]
        summary[method] = {
            "median_speedup": round(statistics.median(speedups), 3),
            "geomean_speedup": round(math.exp(statistics.fmean(map(math.log, speedups))), 3),
            "mean_accepted": round(statistics.fmean(r.mean_accepted for r in mine), 3),
            "identical": f"{sum(bool(r.identical) for r in mine)}/{len(mine)}",
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
        retrieval: Counter[str] = Counter()
        for reuse in engine_rows:
            paths.update(reuse["paths"])
            retrieval.update(reuse["drafting"])
        drafted = sum(r["drafted"] for r in engine_rows)
        accepted = sum(r["accepted"] for r in engine_rows)
        summary[method]["reuse"] = {
            "drafted_per_accepted": round(drafted / max(accepted, 1), 3),
            "paths": dict(paths.most_common()),
            "retrieval": dict(retrieval.most_common()),
            "draft_share_of_verify": round(
                sum(r["draft_seconds"] for r in engine_rows)
                / max(sum(r["verify_seconds"] for r in engine_rows), 1e-9),
                4,
            ),
        }
    if "hf-pld" in summary:
        for method in methods:
            by_task = {r.task: r for r in rows if r.method == "hf-pld"}
            ratios = [r.tokens_per_second / by_task[r.task].tokens_per_second
                      for r in rows if r.method == method]  # fmt: skip
            summary[method]["median_over_hf_pld"] = round(statistics.median(ratios), 3)
    return summary


def _print(console: Console, rows: list[Row], summary: dict, methods: list[str]) -> None:
    table = Table(title="specedit bench (speedup = tokens/s over plain greedy `ar`)")
    for column in (
        "task",
        "method",
        "tokens",
        "tok/s",
        "speedup",
        "MAL",
        "passes",
        "= ar",
        "exact",
    ):
        table.add_column(column, justify="left" if column in ("task", "method") else "right")
    for row in rows:
        table.add_row(
            row.task, row.method, str(row.new_tokens), f"{row.tokens_per_second:.1f}",
            f"{row.speedup:.2f}x", f"{row.mean_accepted:.2f}", str(row.forward_passes),
            "yes" if row.identical else "NO",
            "-" if row.exact_match is None else ("yes" if row.exact_match else "no"),
        )  # fmt: skip
    console.print(table)
    totals = Table(title="summary over tasks")
    for column in ("method", "median speedup", "geomean", "vs hf-pld", "MAL", "= ar", "exact",
                   "similar", "unrequested"):  # fmt: skip
        totals.add_column(column, justify="left" if column == "method" else "right")
    for method in methods:
        s = summary[method]
        totals.add_row(
            method, f"{s['median_speedup']:.2f}x", f"{s['geomean_speedup']:.2f}x",
            f"{s['median_over_hf_pld']:.2f}x" if "median_over_hf_pld" in s else "-",
            f"{s['mean_accepted']:.2f}", s["identical"], s["exact_match"],
            "-" if s["mean_similarity"] is None else f"{s['mean_similarity']:.3f}",
            str(s["unrequested_lines"]),
        )  # fmt: skip
    console.print(totals)
    reuse = Table(title="reuse: where accepted tokens came from (passes by accepted path)")
    for column in ("method", "drafted/accepted", "draft/verify time", "accepted paths",
                   "retrieval"):  # fmt: skip
        reuse.add_column(column)
    for method in methods:
        r = summary[method].get("reuse")
        if r:
            reuse.add_row(
                method, f"{r['drafted_per_accepted']:.2f}", f"{r['draft_share_of_verify']:.1%}",
                ", ".join(f"{k} {v}" for k, v in r["paths"].items()),
                ", ".join(f"{k[10:]} {v}" for k, v in r["retrieval"].items()) or "-",
            )  # fmt: skip
    console.print(reuse)


def _report(lm: LoadedModel, rows: list[Row], summary: dict) -> dict:
    return {
        "model": lm.name,
        "dtype": str(lm.model.dtype).removeprefix("torch."),
        "threads": torch.get_num_threads(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "rows": [asdict(r) | {"tokens_per_second": round(r.tokens_per_second, 2),
                              "mean_accepted": round(r.mean_accepted, 3)} for r in rows],
        "summary": summary,
    }  # fmt: skip
