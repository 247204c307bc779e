"""The bench's report: the summary over tasks per setup, its tables, and its JSON."""

from __future__ import annotations

import math
import platform
import statistics
from collections import Counter
from dataclasses import asdict

import torch
from rich import box
from rich.console import Console
from rich.table import Table

from specedit.bench.llamacpp import LLAMA_CPP_METHODS
from specedit.bench.llamaserver import PEERS
from specedit.bench.score import FAILURES, Row, verdict
from specedit.editing.runaway import RUNAWAY
from specedit.engine.cost import ContextCost, PassCost
from specedit.models.load import LoadedModel


def summarize(rows: list[Row], methods: list[str]) -> dict[str, dict]:
    summary = {}
    for method in methods:
        mine = [r for r in rows if r.method == method]
        speedups = [r.speedup for r in mine if r.speedup]
        floors = [r.times_floor for r in mine if r.times_floor is not None]
        bounds = [r.times_copy_bound for r in mine if r.times_copy_bound is not None]
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
            "failures": {
                kind: count
                for kind in FAILURES
                if (count := sum(r.failure == kind for r in checked))
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
            "median_times_floor": round(statistics.median(floors), 3) if floors else None,
            "median_times_copy_bound": round(statistics.median(bounds), 3) if bounds else None,
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
            ratios = [
                r.tokens_per_second / by_task[r.task].tokens_per_second
                for r in rows
                if r.method == method
            ]
            summary[method]["median_over_hf_pld"] = round(statistics.median(ratios), 3)
    for reference in [*LLAMA_CPP_METHODS, *PEERS]:  # what users feel: the whole edit's wall time
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


def show(console: Console, table: Table) -> None:
    """On a terminal, the table as rich draws it; in a file or a CI log, as a Markdown table at
    full width, its title a line above it: rich would cut every column to fit 80 characters."""
    if console.is_terminal:
        console.print(table)
        return
    plain = Console(file=console.file, width=1_000_000, no_color=True, highlight=False)
    if table.title:
        plain.print(f"{table.title}\n", markup=False)
    table.title, table.box, table.show_edge = None, box.MARKDOWN, True
    plain.print(table)


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def print_tables(console: Console, rows: list[Row], summary: dict, methods: list[str]) -> None:
    table = Table(
        title="specedit bench (speedup = tokens/s over plain greedy `ar`; "
        "x floor = generation seconds over the least this machine allows; x copy = over the "
        "least a drafter copying from the input could take on this answer)"
    )
    for column in (
        "task",
        "setup",
        "check",
        "stop",
        "tokens",
        "tok/s",
        "speedup",
        "x floor",
        "x copy",
        "MAL",
        "passes",
        "wall s",
        "= ar",
        "unrequested",
        "dropped",
    ):
        table.add_column(column, justify="left" if column in ("task", "setup") else "right")
    for row in rows:
        table.add_row(
            row.task,
            row.method,
            verdict(row),
            row.stop,
            str(row.new_tokens),
            f"{row.tokens_per_second:.1f}",
            _x(row.speedup),
            _x(row.times_floor),
            _x(row.times_copy_bound),
            f"{row.mean_accepted:.2f}",
            str(row.forward_passes),
            f"{row.wall_seconds:.1f}",
            "-" if row.identical is None else ("yes" if row.identical else "NO"),
            "-" if row.unrequested is None else str(row.unrequested),
            "-" if row.dropped is None else str(row.dropped),
        )
    show(console, table)
    totals = Table(title="summary over tasks")
    for column in (
        "setup",
        "pass@1",
        "by group",
        "failed as",
        "unchanged",
        "cut off",
        "runaway",
        "unrequested",
        "dropped",
        "median tok/s",
        "median wall s",
        "median x floor",
        "median x copy",
        "speedup",
        "vs hf-pld",
        "MAL",
        "= ar",
    ):
        totals.add_column(column, justify="left" if column == "setup" else "right")
    for method in methods:
        s = summary[method]
        totals.add_row(
            method,
            s["pass"],
            " ".join(f"{g} {v}" for g, v in s["pass_by_group"].items()),
            ", ".join(f"{kind} {n}" for kind, n in s["failures"].items()) or "-",
            str(s["unchanged"]),
            str(s["cut_off"]),
            str(s["runaway"]),
            str(s["unrequested_lines"]),
            str(s["dropped_lines"]),
            f"{s['median_tokens_per_second']:.1f}",
            f"{s['median_wall_seconds']:.1f}",
            _x(s["median_times_floor"]),
            _x(s["median_times_copy_bound"]),
            _x(s["median_speedup"]),
            _x(s.get("median_over_hf_pld")),
            f"{s['mean_accepted']:.2f}",
            s["identical"],
        )
    show(console, totals)
    reuse = Table(title="reuse: where accepted tokens came from (passes by accepted path)")
    for column in (
        "method",
        "drafted/accepted",
        "draft/verify time",
        "accepted paths",
        "drafter counters",
    ):
        reuse.add_column(column)
    for method in methods:
        r = summary[method].get("reuse")
        if r:
            reuse.add_row(
                method,
                f"{r['drafted_per_accepted']:.2f}",
                f"{r['draft_share_of_verify']:.1%}",
                ", ".join(f"{k} {v}" for k, v in r["paths"].items()),
                ", ".join(f"{k.removeprefix('retrieval_')} {v:g}" for k, v in r["drafter"].items())
                or "-",
            )
    if reuse.rows:  # none when no setup ran the engine (merges, baselines)
        show(console, reuse)
    references = [
        m for m in [*LLAMA_CPP_METHODS, *PEERS] if f"wall_over_{m}" in summary[methods[0]]
    ]
    if references:
        versus = Table(title="against llama.cpp: how many times faster the whole edit is")
        versus.add_column("setup")
        for reference in references:
            versus.add_column(f"vs {reference} (median)", justify="right")
            versus.add_column("faster on", justify="right")
        for method in methods:
            cells = [summary[method][f"wall_over_{reference}"] for reference in references]
            versus.add_row(method, *[v for c in cells for v in (_x(c["median"]), c["faster"])])
        show(console, versus)


def report(
    lm: LoadedModel,
    rows: list[Row],
    summary: dict,
    floors: dict[str, list[ContextCost]] | None = None,
    pass_costs: dict[str, PassCost] | None = None,
) -> dict:
    """The run as JSON: the machine, every row (with its prompt's and answer's tokens, which a
    replay drafts again: bench/replay.py), the summary, and per engine the costs the rows'
    floors were made of, each time they were measured (seconds per token at position 0, and
    more per earlier token), and the pass-cost curve that sized the drafts. One line: the
    tokens would make an indented file long."""
    return {
        "model": lm.name,
        "engine": lm.engine,  # the first engine; setups on others name theirs in the label
        "dtype": "gguf" if lm.engine != "torch" else str(lm.model.dtype).removeprefix("torch."),
        "threads": torch.get_num_threads(),
        "machine": platform.machine(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "rows": [
            asdict(r)
            | {
                "tokens_per_second": round(r.tokens_per_second, 2),
                "mean_accepted": round(r.mean_accepted, 3),
                "times_floor": None if r.times_floor is None else round(r.times_floor, 3),
                "times_copy_bound": None
                if r.times_copy_bound is None
                else round(r.times_copy_bound, 3),
            }
            for r in rows
        ],
        "summary": summary,
        "floor_costs": {
            engine: [{"prefill": list(c.prefill), "verify": list(c.verify)} for c in costs]
            for engine, costs in (floors or {}).items()
        },
        "pass_costs": {
            engine: {
                "sizes": list(cost.sizes),
                "seconds": list(cost.seconds),
                "repack": cost.repack,
            }
            for engine, cost in (pass_costs or {}).items()
        },
    }
