"""Render a `specedit bench --json` report as the Markdown tables the README carries."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def render(report: dict) -> str:
    summary = report["summary"]
    lines = [
        f"Model {report['model']} ({report['dtype']}), {report['threads']} threads, "
        f"torch {report['torch']}, {report['machine']}.",
        "",
        "| method | median speedup vs `ar` | geomean | median vs `hf-pld` | MAL | = `ar` "
        "| exact | similarity | unrequested lines |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for method, s in summary.items():
        similarity = "-" if s.get("mean_similarity") is None else f"{s['mean_similarity']:.3f}"
        lines.append(
            f"| {method} | {s['median_speedup']:.2f}x | {s['geomean_speedup']:.2f}x | "
            f"{s.get('median_over_hf_pld', float('nan')):.2f}x | {s['mean_accepted']:.1f} | "
            f"{s['identical']} | {s['exact_match']} | {similarity} | "
            f"{s.get('unrequested_lines', '-')} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("report", type=Path)
    print(render(json.loads(parser.parse_args().report.read_text())), end="")


if __name__ == "__main__":
    main()
