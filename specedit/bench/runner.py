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
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from rich.console import Console
from rich.table import Table
from transformers import StoppingCriteria, StoppingCriteriaList

from specedit import prompts
from specedit.bench.tasks import Task, TaskError, load_tasks
from specedit.drafting import METHODS, make_drafter
from specedit.edit import default_token_limit
from specedit.engine.session import generate
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


def _run_once(lm: LoadedModel, prompt: prompts.EditPrompt, method: str, limit: int):
    """Generate once; returns (tokens, seconds, forward passes that produced tokens)."""
    model, eos = lm.model, lm.eos_token_ids
    stop = prompts.FenceStop(lm.tokenizer, prompt.fence)
    counter = _ForwardCounter(model)
    try:
        start = time.perf_counter()
        if method in BASELINES:
            ids = torch.tensor([prompt.ids], device=model.device)
            out = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=limit,
                do_sample=False,
                prompt_lookup_num_tokens=BASELINES[method],
                stopping_criteria=StoppingCriteriaList([_FenceCriteria(stop, len(prompt.ids))]),
                pad_token_id=lm.tokenizer.pad_token_id or next(iter(eos)),
            )
            seconds = time.perf_counter() - start
            tokens = out[0, len(prompt.ids) :].tolist()
            passes = counter.calls  # the prefill pass yields the first token
            tokens = _cut(tokens, prompts.FenceStop(lm.tokenizer, prompt.fence), eos)
        else:
            drafter = make_drafter(method, model)
            result = generate(
                model, prompt.ids, drafter, max_new_tokens=limit, eos_token_ids=eos, stop=stop
            )
            seconds = time.perf_counter() - start
            tokens, passes = result.tokens, result.stats.forward_passes
    finally:
        counter.close()
    return tokens, seconds, passes


def _score(row: Row, text: str | None, task: Task) -> None:
    if task.expected is None or text is None:
        return
    row.exact_match = text == task.expected
    row.similarity = round(difflib.SequenceMatcher(None, text, task.expected).ratio(), 4)


def run_bench(
    lm: LoadedModel,
    methods: list[str],
    task_ids: list[str] | None = None,
    tasks_file: Path | None = None,
    repeat: int = 1,
    max_new_tokens: int | None = None,
    json_file: Path | None = None,
    console: Console | None = None,
) -> list[Row]:
    known = [*BASELINES, *METHODS]
    unknown = [m for m in methods if m not in known]
    if unknown:
        raise BenchError(f"unknown methods {', '.join(unknown)}: choose from {', '.join(known)}")
    if "ar" not in methods:
        methods = ["ar", *methods]  # the reference for speed and exactness
    try:
        tasks = load_tasks(tasks_file, task_ids)
    except TaskError as exc:
        raise BenchError(str(exc)) from None
    console = console or Console(width=max(Console().width, 110))
    _warm_up(lm)
    rows: list[Row] = []
    for task in tasks:
        template = prompts.load_template(task.kind)
        prompt = prompts.build(lm.tokenizer, template, task.input, task.instruction, task.language)
        limit = max_new_tokens or default_token_limit(prompt.input_end - prompt.input_start)
        reference: list[int] | None = None
        for method in methods:
            runs = [_run_once(lm, prompt, method, limit) for _ in range(max(repeat, 1))]
            tokens, seconds, passes = min(runs, key=lambda r: r[1])
            row = Row(task.id, method, len(tokens), seconds, passes)
            if method == "ar":
                reference = tokens
            row.identical = tokens == reference
            _score(row, prompts.extract(lm.tokenizer, tokens, prompt), task)
            rows.append(row)
            console.print(
                f"[dim]{task.id:32} {method:10} {row.new_tokens:5d} tok "
                f"{row.tokens_per_second:7.1f} tok/s  MAL {row.mean_accepted:5.2f}[/dim]",
                highlight=False,
            )
        base = next(r for r in rows if r.task == task.id and r.method == "ar")
        for row in rows:
            if row.task == task.id:
                row.speedup = row.tokens_per_second / base.tokens_per_second
    summary = _summary(rows, methods)
    _print(console, rows, summary, methods)
    if json_file:
        json_file.write_text(json.dumps(_report(lm, rows, summary), indent=2) + "\n")
    return rows


def _warm_up(lm: LoadedModel) -> None:
    ids = lm.tokenizer("def warm_up():\n    return 1\n", add_special_tokens=False)["input_ids"]
    generate(lm.model, ids, make_drafter("pld", lm.model),
             max_new_tokens=8)  # fmt: skip


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
    for column in ("method", "median speedup", "geomean", "vs hf-pld", "MAL", "= ar", "exact"):
        totals.add_column(column, justify="left" if column == "method" else "right")
    for method in methods:
        s = summary[method]
        totals.add_row(
            method, f"{s['median_speedup']:.2f}x", f"{s['geomean_speedup']:.2f}x",
            f"{s['median_over_hf_pld']:.2f}x" if "median_over_hf_pld" in s else "-",
            f"{s['mean_accepted']:.2f}", s["identical"], s["exact_match"],
        )  # fmt: skip
    console.print(totals)


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
