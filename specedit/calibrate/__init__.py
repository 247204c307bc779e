"""Offline work, once per model: find the induction heads (pldplus-attn) and train the copy
pre-verifier (adapld-trained-length), both from one greedy pass over the bench suite.

Greedy output does not depend on the drafter, so one recorded generation per task serves both:
its tokens show where the output copied from (heads), and its copies labelled in hindsight teach
the pre-verifier. What runs per edit reads the results from the cache (`specedit.drafting`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from specedit.bench.tasks import Task, load_tasks
from specedit.calibrate.heads import RankedHead, calibrate_heads, copy_targets, save_heads
from specedit.calibrate.preverifier import Recording, TrainingReport, record, train_preverifier
from specedit.console import progress, say
from specedit.editing import prompts
from specedit.editing.editor import EditRequest, prepare
from specedit.models.load import LoadedModel


@dataclass
class Calibration:
    heads: list[RankedHead]
    heads_path: Path
    preverifier: TrainingReport


def record_tasks(lm: LoadedModel, tasks: Sequence[Task]) -> dict[str, Recording]:
    """One recorded greedy generation per task, on the task's own prompt."""
    recordings = {}
    with progress("generating the suite's answers", len(tasks), "tasks") as done:
        for number, task in enumerate(tasks, start=1):
            request = EditRequest(
                task.input, task.instruction, prompt=task.kind, language=task.language
            )
            prepared = prepare(lm, request)
            recordings[task.id] = record(
                lm.model,
                prepared.prompt.ids,
                max_new_tokens=prepared.max_new_tokens,
                eos_token_ids=lm.eos_token_ids,
                stop=prompts.FenceStop(lm.tokenizer, prepared.prompt),
            )
            done(number)
    return recordings


def calibrate_heads_from(
    lm: LoadedModel, recordings: dict[str, Recording], top: int | None = None
) -> tuple[list[RankedHead], Path]:
    """Rank and cache `lm`'s induction heads from recorded generations."""
    sequences = [(r.tokens, r.output_start) for r in recordings.values()]
    with progress("counting induction-head hits", len(sequences), "sequences") as done:
        heads = calibrate_heads(lm.model, sequences, top, progress=done)
    events = sum(len(copy_targets(tokens, start)) for tokens, start in sequences)
    info = {"model": lm.name, "sequences": len(sequences), "events": events}
    path = save_heads(lm.model, heads, info)
    say(f"kept {len(heads)} heads from {events} copy events in {len(sequences)} sequences: {path}")
    return heads, path


def calibrate(lm: LoadedModel, tasks: Sequence[Task] | None = None) -> Calibration:
    """What `specedit calibrate` runs: record the suite once, then heads and pre-verifier."""
    recordings = record_tasks(lm, load_tasks() if tasks is None else tasks)
    heads, path = calibrate_heads_from(lm, recordings)
    report = train_preverifier(lm, {i: r.dataset for i, r in recordings.items()})
    held = report.held_out
    say(
        f"pre-verifier ({'+'.join(report.groups)}, width {report.width}): "
        f"held-out AUC {held.auc if held else '-'}; saved to {report.path}"
    )
    return Calibration(heads, path, report)
