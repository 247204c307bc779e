"""What a generation reports: a Step per forward pass, Stats at the end. Plain data, so the
dashboard, a server's stream and a remote client share them without importing torch."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Step:
    """What one forward pass committed; `sources[i]` is the memory position token i was copied
    from (None for the model's own token), `kinds[i]` the draft path it came from."""

    tokens: list[int]
    sources: list[int | None]
    kinds: list[str | None]
    drafted: int  # drafted tokens verified in this pass
    relaxed: list[bool] = field(default_factory=list)  # accepted only by conditional verification
    # Tokens shown before that this step takes back first: a resumed answer goes on from one of
    # its earlier tokens (editing/resume.py).
    rewind: int = 0


@dataclass
class Stats:
    """Counters of one generation; speeds derive from them."""

    prompt_tokens: int = 0
    new_tokens: int = 0
    forward_passes: int = 0  # verify passes (each also yields one token); prefill excluded
    drafted_tokens: int = 0
    accepted_tokens: int = 0  # drafted tokens that were accepted
    relaxed_tokens: int = 0  # of those, accepted only by conditional verification (lossy)
    accepted_lengths: Counter = field(default_factory=Counter)  # drafts accepted per pass
    accepted_paths: Counter = field(default_factory=Counter)  # which draft path each pass took
    drafting: dict[str, float] = field(default_factory=dict)  # the drafter's own counters
    prefill_seconds: float = 0.0
    draft_seconds: float = 0.0
    verify_seconds: float = 0.0
    total_seconds: float = 0.0

    @property
    def mean_accepted(self) -> float:
        """Mean tokens committed per forward pass (MAL): accepted drafts + the model's own."""
        return self.new_tokens / max(self.forward_passes, 1)

    @property
    def tokens_per_second(self) -> float:
        return self.new_tokens / self.total_seconds if self.total_seconds else 0.0

    @property
    def other_seconds(self) -> float:
        return self.total_seconds - self.prefill_seconds - self.draft_seconds - self.verify_seconds

    def then(self, later: Stats) -> Stats:
        """These counters and those of a generation that went on from this one's answer (a
        resumed answer, editing/resume.py): the work of both, the first's prompt."""
        return Stats(
            prompt_tokens=self.prompt_tokens,
            new_tokens=self.new_tokens + later.new_tokens,
            forward_passes=self.forward_passes + later.forward_passes,
            drafted_tokens=self.drafted_tokens + later.drafted_tokens,
            accepted_tokens=self.accepted_tokens + later.accepted_tokens,
            relaxed_tokens=self.relaxed_tokens + later.relaxed_tokens,
            accepted_lengths=self.accepted_lengths + later.accepted_lengths,
            accepted_paths=self.accepted_paths + later.accepted_paths,
            drafting=later.drafting,  # a drafter reports gauges beside counts: the latest
            prefill_seconds=self.prefill_seconds + later.prefill_seconds,
            draft_seconds=self.draft_seconds + later.draft_seconds,
            verify_seconds=self.verify_seconds + later.verify_seconds,
            total_seconds=self.total_seconds + later.total_seconds,
        )

    @classmethod
    def from_dict(cls, data: dict) -> Stats:
        """Stats back from `as_dict` (as a server sends them); derived figures are recomputed."""
        seconds = data["seconds"]
        return cls(
            prompt_tokens=data["prompt_tokens"],
            new_tokens=data["new_tokens"],
            forward_passes=data["forward_passes"],
            drafted_tokens=data["drafted_tokens"],
            accepted_tokens=data["accepted_tokens"],
            relaxed_tokens=data["relaxed_tokens"],
            accepted_lengths=Counter({int(k): v for k, v in data["accepted_lengths"].items()}),
            accepted_paths=Counter(data["accepted_paths"]),
            drafting=dict(data["drafting"]),
            prefill_seconds=seconds["prefill"],
            draft_seconds=seconds["draft"],
            verify_seconds=seconds["verify"],
            total_seconds=seconds["total"],
        )

    def as_dict(self) -> dict:
        return {
            "prompt_tokens": self.prompt_tokens,
            "new_tokens": self.new_tokens,
            "forward_passes": self.forward_passes,
            "mean_accepted": round(self.mean_accepted, 3),
            "drafted_tokens": self.drafted_tokens,
            "accepted_tokens": self.accepted_tokens,
            "relaxed_tokens": self.relaxed_tokens,
            "accepted_lengths": dict(sorted(self.accepted_lengths.items())),
            "accepted_paths": dict(sorted(self.accepted_paths.items())),
            "drafted_per_accepted": round(self.drafted_tokens / max(self.accepted_tokens, 1), 3),
            "drafting": self.drafting,
            "tokens_per_second": round(self.tokens_per_second, 2),
            "seconds": {
                "prefill": round(self.prefill_seconds, 4),
                "draft": round(self.draft_seconds, 4),
                "verify": round(self.verify_seconds, 4),
                "other": round(self.other_seconds, 4),
                "total": round(self.total_seconds, 4),
            },
        }


@dataclass
class Generation:
    tokens: list[int]  # new tokens, including a final EOS if the model produced one
    stop_reason: str  # "eos", "length", or the caller's stop condition's reason ("stop" for True)
    stats: Stats
    # Per new token: the probability the model gave it, and its likeliest other token there.
    # Where an answer was least sure is where a redraw branches (editing/selection.py).
    probabilities: list[float] = field(default_factory=list)
    runners_up: list[int] = field(default_factory=list)


# Sees each committed token; a truthy result stops after it: a string names the reason.
StopCondition = Callable[[int], bool | str | None]
