"""The copy-length priors (drafting/length.py's PRIOR), measured on recorded answers.

A copied token's chance of being accepted is learned on each document from a prior per
agreement bucket (how many tokens before the copy's anchor match those before the current
position). A short answer never outgrows its prior, so the priors size most of a short fix's
drafts. Replaying recorded answers (bench/replay.py) says how often a copied token was accepted
in each bucket, and how long the answers take with other priors:

    python tools/copy_priors.py RUN.json [RUN.json ...]

prints the acceptance by bucket over every answer, then the replayed seconds of `pld` and
`adapld` (both size copies with these chances) with the shipped priors, with the measured ones,
and each answer's worst ratio.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from specedit.bench.replay import replay_run
from specedit.drafting.copying import length

METHODS = ["pld", "adapld"]
Prior = tuple[tuple[float, int], ...]


@contextmanager
def priors(prior: Prior, counts: dict[str, list[float]] | None = None) -> Iterator[None]:
    """Copies sized with `prior` for a while; with `counts`, every tested copied token counted
    by bucket ("tested", "accepted"): what AdaptiveLength's own counts gain as it learns."""
    shipped, observe = length.PRIOR, length.AdaptiveLength.observe

    def counting(self, agreement_length: int, drafted: int, accepted: int) -> None:
        tested, held = list(self.tested), list(self.accepted)
        observe(self, agreement_length, drafted, accepted)
        for bucket, (before, after) in enumerate(zip(tested, self.tested, strict=True)):
            counts["tested"][bucket] += after - before
        for bucket, (before, after) in enumerate(zip(held, self.accepted, strict=True)):
            counts["accepted"][bucket] += after - before

    length.PRIOR = prior
    if counts is not None:
        length.AdaptiveLength.observe = counting
    try:
        yield
    finally:
        length.PRIOR, length.AdaptiveLength.observe = shipped, observe


def replayed(recordings: list[Path], prior: Prior, counts=None) -> dict[tuple[str, str], float]:
    """Seconds of each (task, method) replayed with `prior`."""
    with priors(prior, counts):
        return {
            (r.task, r.method): r.seconds
            for recording in recordings
            for r in replay_run(recording, METHODS)
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("recordings", nargs="+", type=Path, help="bench runs' --json files")
    recordings = parser.parse_args().recordings
    buckets = len(length.PRIOR)
    counts = {"tested": [0.0] * buckets, "accepted": [0.0] * buckets}
    shipped = replayed(recordings, length.PRIOR, counts)
    measured = tuple(
        (round(a / n, 3) if n else mean, weight)
        for a, n, (mean, weight) in zip(
            counts["accepted"], counts["tested"], length.PRIOR, strict=True
        )
    )
    print("agreement buckets: 0, 1, 2-3, 4-7, 8-15, 16+")
    print("tested copied tokens:", [int(n) for n in counts["tested"]])
    print("accepted (measured): ", [mean for mean, _ in measured])
    print("shipped prior:       ", [mean for mean, _ in length.PRIOR])
    other = replayed(recordings, measured)
    for method in METHODS:
        before = sum(s for (_, m), s in shipped.items() if m == method)
        after = sum(s for (_, m), s in other.items() if m == method)
        worst = min(shipped[k] / other[k] for k in other if k[1] == method)
        print(
            f"{method}: {before:.1f} s shipped, {after:.1f} s measured priors "
            f"({before / after:.3f}x; worst answer {worst:.3f}x)"
        )


if __name__ == "__main__":
    main()
