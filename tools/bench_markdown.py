"""Render `specedit bench --json` reports as the Markdown tables the README carries.

One report: its quality table and its speed table. Several reports (say, one per model): one
quality table with a row per report and setup, so models can be compared side by side.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def quality(reports: list[dict]) -> str:
    lines = [
        "| model | setup | pass@1 | bug | feature | doc | insertion | unchanged | cut off "
        "| runaway | unrequested lines | dropped lines | median tok/s | median s per edit "
        "| total s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for report in reports:
        for setup, s in report["summary"].items():
            groups = s.get("pass_by_group", {})
            lines.append(
                f"| {report['model']} | {setup} | {s['pass']} | {groups.get('bug', '-')} | "
                f"{groups.get('feature', '-')} | {groups.get('doc', '-')} | "
                f"{groups.get('insertion', '-')} | {s['unchanged']} | "
                f"{s['cut_off']} | {s['runaway']} | {s['unrequested_lines']} | "
                f"{s['dropped_lines']} | {s['median_tokens_per_second']:.1f} | "
                f"{s['median_wall_seconds']:.1f} | {s['total_wall_seconds']:.0f} |"
            )
    return "\n".join(lines) + "\n"


def speed(report: dict) -> str:
    lines = [
        f"Model {report['model']} ({report['dtype']}), {report['threads']} threads, "
        f"torch {report['torch']}, {report['machine']}.",
        "",
        "| method | median speedup vs `ar` | geomean | median vs `hf-pld` | MAL | = `ar` "
        "| exact | similarity | unrequested lines |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for method, s in report["summary"].items():
        similarity = "-" if s.get("mean_similarity") is None else f"{s['mean_similarity']:.3f}"
        lines.append(
            f"| {method} | {_x(s['median_speedup'])} | {_x(s['geomean_speedup'])} | "
            f"{_x(s.get('median_over_hf_pld'))} | {s['mean_accepted']:.1f} | "
            f"{s['identical']} | {s['exact_match']} | {similarity} | "
            f"{s.get('unrequested_lines', '-')} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("reports", type=Path, nargs="+")
    reports = [json.loads(path.read_text()) for path in parser.parse_args().reports]
    print(quality(reports))
    if len(reports) == 1:
        print(speed(reports[0]), end="")


if __name__ == "__main__":
    main()
