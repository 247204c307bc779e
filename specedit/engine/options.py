"""How a generation chooses and checks tokens: plain data, light enough for the CLI and a
remote client to import without torch."""

from __future__ import annotations

from dataclasses import dataclass

MAX_DRAFT = 64  # the most tokens a draft may hold beyond its root

# "strict" is exact; "conditional" and "mixed" also accept plausible drafts (lossy on purpose).
VERIFY_MODES = ("strict", "conditional", "mixed")


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen; temperature 0 means greedy."""

    temperature: float = 0.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None

    def __post_init__(self) -> None:
        if self.temperature < 0 or self.top_k < 0 or not 0 < self.top_p <= 1:
            raise ValueError("need temperature >= 0, top_k >= 0 and 0 < top_p <= 1")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


GREEDY = Sampling()


@dataclass(frozen=True)
class Verification:
    """How strictly drafted tokens are checked; only "strict" is exact."""

    mode: str = "strict"
    delta: float = 0.1
    top_k: int = 5

    def __post_init__(self) -> None:
        if self.mode not in VERIFY_MODES:
            raise ValueError(
                f"unknown verification {self.mode!r}: choose {', '.join(VERIFY_MODES)}"
            )
        if not 0 <= self.delta <= 1 or self.top_k < 1:
            raise ValueError("need 0 <= delta <= 1 and a verification top-k of at least 1")


STRICT = Verification()
