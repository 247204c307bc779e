"""Benchmark tasks: the shipped suites or a user's own tasks. The suites are data of the source
checkout (bench/ beside the package, bench/README.md), not of the installed package: the edit
suite (bench/edit: fixes, features, doc edits on standard-library code and package
documentation) and the apply suite (bench/apply: lazy edit snippets to merge into
standard-library modules).

A suite is a folder: suite.toml lists its tasks in the order they run, each a folder named by
its id that holds task.toml (kind, a prompt name; instruction; optionally group and language)
and its texts, one file each, named by field with any extension: input, and optionally
expected (the right answer) and tests (Python code that must pass after the output). A tasks
file is JSONL, one object a line with the same fields and an id.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class TaskError(ValueError):
    """A task file is missing or malformed."""


@dataclass(frozen=True)
class Task:
    id: str
    kind: str  # a prompt name: fix, edit, rewrite, ...
    instruction: str
    input: str
    language: str = ""
    expected: str | None = None
    group: str = ""  # bug, feature, doc or insertion: what the quality table is split by
    # Python run after the edited text (program = output + "\n" + tests); passing = exit 0.
    tests: str | None = None

    @property
    def checkable(self) -> bool:
        """Whether pass/fail is known: by the tests, else by the expected text."""
        return self.tests is not None or self.expected is not None


# Beside the package in a source checkout (editable install included); a wheel has no suites.
DATA = Path(__file__).resolve().parents[2] / "bench"
SUITES = {"edit": DATA / "edit", "apply": DATA / "apply"}
TEXTS = ("input", "expected", "tests")  # a task folder's files, by name without extension


def load_tasks(
    path: Path | None = None, ids: list[str] | None = None, suite: str = "edit"
) -> list[Task]:
    """Tasks from `path` (a suite folder or a JSONL file; default: the shipped `suite`),
    optionally only those in `ids`."""
    if path is None:
        if suite not in SUITES:
            raise TaskError(f"unknown suite {suite!r}: choose one of {', '.join(SUITES)}")
        path = SUITES[suite]
        if not path.is_dir():
            raise TaskError(
                f"the {suite} suite is in a source checkout (bench/{suite}), not in the "
                "installed package: run from a checkout or pass --tasks-file FILE.jsonl"
            )
    path = Path(path)
    tasks = _read_suite(path) if path.is_dir() else _read_jsonl(path)
    if ids:
        unknown = set(ids) - {t.id for t in tasks}
        if unknown:
            raise TaskError(f"unknown task ids: {', '.join(sorted(unknown))}")
        tasks = [t for t in tasks if t.id in ids]
    return tasks


def _task(data: Mapping[str, Any]) -> Task:
    """A task from its fields, as a JSONL line or a task folder gives them."""
    return Task(
        id=str(data["id"]),
        kind=str(data["kind"]),
        instruction=str(data["instruction"]),
        input=str(data["input"]),
        language=str(data.get("language") or ""),
        expected=data.get("expected"),
        group=str(data.get("group") or data["kind"]),
        tests=data.get("tests"),
    )


def _read_jsonl(path: Path) -> list[Task]:
    try:
        source = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TaskError(f"cannot read {path}: {exc.strerror}") from None
    tasks = []
    for number, line in enumerate(source.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            tasks.append(_task(json.loads(line)))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise TaskError(
                f"{path}:{number}: not a task ({exc!r}); need id, kind, instruction, input"
            ) from None
    return tasks


def _read_suite(folder: Path) -> list[Task]:
    """The tasks suite.toml lists; a task folder it leaves out is an error, not a task
    silently skipped."""
    index = folder / "suite.toml"
    try:
        ids = [str(i) for i in tomllib.loads(index.read_text(encoding="utf-8"))["tasks"]]
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise TaskError(f"{index}: not a suite ({exc!r}); need tasks = [task folders]") from None
    if unlisted := sorted({p.name for p in folder.iterdir() if p.is_dir()} - set(ids)):
        raise TaskError(f"{index}: does not list {', '.join(unlisted)}")
    return [_read_task(folder / task_id) for task_id in ids]


def _read_task(folder: Path) -> Task:
    """A task folder; its texts are read as bytes so that they come back exactly as stored
    (line endings included). Files other than task.toml and the texts are not the task's."""
    try:
        fields = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
        for file in sorted(folder.iterdir()):
            if file.stem in TEXTS:
                if file.stem in fields:
                    raise TaskError(f"{file.stem} given twice")
                fields[file.stem] = file.read_bytes().decode("utf-8")
        return _task(fields | {"id": folder.name})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TaskError) as exc:
        raise TaskError(
            f"{folder}: not a task ({exc!r}); need task.toml with kind and instruction, and input"
        ) from None
