"""Benchmark tasks: the shipped suites or a user's own JSONL file. The edit suite (tasks.jsonl,
built by tools/make_bench_tasks.py from standard-library code and package documentation) holds
fixes, features and doc edits; the apply suite (apply.jsonl, tools/make_apply_tasks.py) holds
lazy edit snippets to merge into standard-library modules.

A line is a JSON object: id, kind (a prompt name), instruction, input, and optionally language,
expected (the right answer), group, and tests (Python code that must pass after the output).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path


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


SUITES = {"edit": "tasks.jsonl", "apply": "apply.jsonl"}


def load_tasks(
    path: Path | None = None, ids: list[str] | None = None, suite: str = "edit"
) -> list[Task]:
    """Tasks from `path` (default: the shipped `suite`), optionally only those in `ids`."""
    if path is None:
        if suite not in SUITES:
            raise TaskError(f"unknown suite {suite!r}: choose one of {', '.join(SUITES)}")
        file = resources.files("specedit") / "bench" / SUITES[suite]
        source, name = file.read_text(), f"{suite} suite"
    else:
        try:
            source, name = Path(path).read_text(encoding="utf-8"), str(path)
        except OSError as exc:
            raise TaskError(f"cannot read {path}: {exc.strerror}") from None
    tasks = []
    for number, line in enumerate(source.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            tasks.append(
                Task(
                    id=str(data["id"]),
                    kind=str(data["kind"]),
                    instruction=str(data["instruction"]),
                    input=str(data["input"]),
                    language=str(data.get("language") or ""),
                    expected=data.get("expected"),
                    group=str(data.get("group") or data["kind"]),
                    tests=data.get("tests"),
                )
            )
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise TaskError(
                f"{name}:{number}: not a task ({exc!r}); need id, kind, instruction, input"
            ) from None
    if ids:
        unknown = set(ids) - {t.id for t in tasks}
        if unknown:
            raise TaskError(f"unknown task ids: {', '.join(sorted(unknown))}")
        tasks = [t for t in tasks if t.id in ids]
    return tasks
