"""The trained pre-verifier for the copy path's draft length, as it runs per edit (Pacer with a
learned estimator; `specedit.calibrate.preverifier` trains it).

The training-free pre-verifier in length.py knows one thing about a copy: how long its context
agrees with the current one. This one also reads what the model itself stored: the copied
source's hidden state at the rerank layer, the current context's hidden state, a Pacer-style
position embedding of the token's index in the draft, and scalars that cost nothing (agreement,
whether the source lies in the prompt or in the output, how far back it is, the rerank cosine and
recent acceptance on this document). A small MLP turns them into, for every token of the copy,
the chance that it is accepted given that the tokens before it were. Their running product is
the chance that a token survives, whose blockwise mean decides the length exactly as in length.py.
Weights are keyed by the model's weights, so a different model never reads another's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import torch
from torch import nn

from specedit.drafting import DrafterUnavailable
from specedit.drafting.artefacts import artefact_path
from specedit.drafting.copying.copy import rerank_layer, state_cosine
from specedit.drafting.copying.length import agreement, blockwise_length
from specedit.engine.memory import Memory

FORMAT = 2  # bump when the features or the net change, so stale weights are refused
FREQUENCIES = torch.tensor([64.0 ** (-k / 4) for k in range(4)])  # periods 2pi .. 2pi * 23
SCALARS = (
    "log_position",  # log(1 + index of the token in the draft)
    "in_output",  # the copied source lies in the output (1) or in the prompt (0)
    "source_cosine",  # cos(state before the source token, state before the current token)
    "log_distance",  # log(1 + how many tokens back the source lies)
    "log_agreement",  # log(1 + agreement length), as length.py buckets it; same for the copy
    "recent",  # decayed share of tested copy tokens accepted on this document; same
    "anchor_cosine",  # the rerank score of the anchor; same
)
EXTRA = 2 * len(FREQUENCIES) + len(SCALARS)  # columns after the two hidden states
# Feature groups a net may use (by column-name prefix); training picks them by cross-validation.
GROUPS = {
    "agreement": ("log_agreement",),
    "position": ("sin", "cos", "log_position"),
    "states": ("source", "query", "source_cosine", "anchor_cosine"),
    "context": ("in_output", "log_distance", "recent"),
}


# (groups, MLP width; 0 = logistic regression), simplest first: ties go to the simpler model.
def features(
    memory: Memory, layer: int, anchor: int, count: int, recent: float, last: int | None = None
) -> torch.Tensor:
    """Features of the first `count` tokens copied after `anchor`: a float32 tensor of shape
    (count, 2 * hidden_size + EXTRA) = [source state, query state, sin, cos, SCALARS].

    Token i (1-based) is copied from position s = anchor + i; its source state is row s - 1, the
    state that predicted it where it was copied from. The query is row last - 1, the newest
    stored state (the current token `last`, by default memory's last, has not been fed yet).
    """
    last = len(memory) - 1 if last is None else last
    if not 0 <= anchor < anchor + count <= last:
        raise ValueError(f"cannot copy {count} tokens after {anchor} when the current is {last}")
    hidden = memory.hidden(layer)
    source = hidden[anchor : anchor + count].float()
    query = hidden[last - 1].float()
    position = torch.arange(1, count + 1, dtype=torch.float32, device=source.device)
    angles = position[:, None] * FREQUENCIES.to(source.device)
    sources = position + anchor
    cosine = state_cosine(memory, layer, list(range(anchor, anchor + count)), last - 1)
    rerank = state_cosine(memory, layer, [max(anchor - 1, 0)], last - 1)[0]
    per_token = torch.stack(
        [
            position.log1p(),
            (sources >= memory.prompt_length).float(),
            cosine,
            (last - sources).log1p(),
        ],
        dim=1,
    )
    per_copy = torch.tensor(
        [math.log1p(agreement(memory.tokens, anchor, last)), recent, float(rerank)],
        device=source.device,
    ).expand(count, 3)
    states = [source, query.expand(count, -1)]
    return torch.cat([*states, angles.sin(), angles.cos(), per_token, per_copy], dim=1)


class RecentAcceptance:
    """Decayed share of tested copy tokens that were accepted: how copy-friendly the document is
    right now. Recording and inference update it the same way, so the feature means the same."""

    def __init__(self, decay: float = 0.8, prior: float = 0.9, weight: float = 2.0) -> None:
        self.decay, self.accepted, self.tested = decay, prior * weight, weight

    @property
    def value(self) -> float:
        return self.accepted / self.tested

    def update(self, drafted: int, accepted: int) -> None:
        if drafted <= 0:
            return
        self.accepted = self.decay * self.accepted + accepted
        self.tested = self.decay * self.tested + min(accepted + 1, drafted)


def _columns(rank: int) -> list[str]:
    """Names of the columns a net sees after projecting the two hidden states."""
    states = [f"{side}{k}" for side in ("source", "query") for k in range(rank)]
    waves = [f"{wave}{k}" for wave in ("sin", "cos") for k in range(len(FREQUENCIES))]
    return [*states, *waves, *SCALARS]


class PreVerifierNet(nn.Module):
    """Project each hidden state onto a fixed PCA basis of `rank` dims, standardise, keep the
    columns of the chosen feature groups, then a one-hidden-layer MLP (`width` 0: logistic
    regression) gives the logit of acceptance. Small on purpose: the suite holds a few dozen
    edits, and 64 estimates must cost next to nothing beside a verify pass."""

    def __init__(
        self,
        hidden_size: int,
        layer: int,
        rank: int = 16,
        width: int = 16,
        groups: Sequence[str] = tuple(GROUPS),
    ) -> None:
        super().__init__()
        rank = min(rank, hidden_size)
        self.hidden_size, self.layer, self.rank, self.width = hidden_size, layer, rank, width
        self.groups = tuple(groups)
        prefixes = {prefix for group in self.groups for prefix in GROUPS[group]}
        columns = _columns(rank)
        self.register_buffer("state_mean", torch.zeros(2, hidden_size))
        self.register_buffer("basis", torch.zeros(2, hidden_size, rank))
        self.register_buffer("mean", torch.zeros(len(columns)))
        self.register_buffer("scale", torch.ones(len(columns)))
        self.register_buffer(
            "mask", torch.tensor([float(c.rstrip("0123456789") in prefixes) for c in columns])
        )
        layers = [nn.Linear(len(columns), width), nn.ReLU()] if width else []
        self.head = nn.Sequential(*layers, nn.Linear(width or len(columns), 1))

    def reduce(self, x: torch.Tensor) -> torch.Tensor:
        """Features (n, 2 * hidden_size + EXTRA) -> unscaled net columns (n, 2 * rank + EXTRA)."""
        size = self.hidden_size
        if "states" not in self.groups:  # masked out anyway; the projections are most of the cost
            return torch.cat([x.new_zeros(len(x), 2 * self.rank), x[:, 2 * size :]], 1)
        source = (x[:, :size] - self.state_mean[0]) @ self.basis[0]
        query = (x[:, size : 2 * size] - self.state_mean[1]) @ self.basis[1]
        return torch.cat([source, query, x[:, 2 * size :]], 1)

    def standardized(self, z: torch.Tensor) -> torch.Tensor:
        return (z - self.mean) / self.scale * self.mask

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.standardized(self.reduce(x))).squeeze(-1)

    def probabilities(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return torch.sigmoid(self(x))

    def config(self) -> dict:
        return {
            "hidden_size": self.hidden_size,
            "layer": self.layer,
            "rank": self.rank,
            "width": self.width,
            "groups": list(self.groups),
        }


def weights_path(model) -> Path:
    """Where the pre-verifier for these weights lives."""
    return artefact_path("calibration", "preverifier", model.get_input_embeddings().weight, ".pt")


_NETS: dict[tuple[str, int], PreVerifierNet] = {}


def load_preverifier(model) -> PreVerifierNet:
    """The trained pre-verifier for `model`, loaded once per file version and process."""
    path = weights_path(model)
    if not path.exists():
        raise DrafterUnavailable(
            f"no trained pre-verifier for this model (looked for {path}); run `specedit calibrate`"
        )
    key = (str(path), path.stat().st_mtime_ns)
    if key in _NETS:
        return _NETS[key]
    saved = torch.load(path, weights_only=True, map_location="cpu")
    config = saved.get("config", {})
    layer = rerank_layer(model.config.num_hidden_layers)
    if (saved.get("format"), config.get("hidden_size"), config.get("layer")) != (
        FORMAT,
        model.config.hidden_size,
        layer,
    ):
        raise DrafterUnavailable(
            f"the pre-verifier at {path} was trained for other features; run `specedit calibrate`"
        )
    net = PreVerifierNet(**config)
    net.load_state_dict(saved["state"])
    _NETS[key] = net.to(model.device).eval()
    return net


class TrainedLength:
    """Blockwise pre-verification as in AdaptiveLength, with per-token estimates from the net.

    Token i survives with the product of the estimates of tokens 1..i; drafting stops after the
    first block whose mean survival falls under the threshold, which grows by `growth` per block.
    """

    def __init__(
        self,
        net: PreVerifierNet,
        block: int = 8,
        threshold: float = 0.35,
        growth: float = 1.05,
        max_length: int = 64,
    ) -> None:
        self.net, self.block, self.threshold = net, block, threshold
        self.growth, self.max_length = growth, max_length
        self.recent = RecentAcceptance()

    @classmethod
    def for_model(cls, model, **options) -> TrainedLength:
        return cls(load_preverifier(model), **options)

    def estimates(self, memory: Memory, anchor: int, count: int) -> torch.Tensor:
        """Chance that each of the first `count` copied tokens is accepted if the previous were."""
        x = features(memory, self.net.layer, anchor, count, self.recent.value)
        return self.net.probabilities(x)

    def length(self, memory: Memory, anchor: int, available: int) -> int:
        limit = min(available, self.max_length)
        if limit <= 0:
            return 0
        survival = torch.cumprod(self.estimates(memory, anchor, limit), 0).tolist()
        return blockwise_length(survival, self.block, self.threshold, self.growth)

    def observe(self, drafted: int, accepted: int) -> None:
        self.recent.update(drafted, accepted)
