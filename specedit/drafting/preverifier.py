"""Trained pre-verifier for the copy path's draft length (Pacer with a learned estimator).

The training-free pre-verifier in length.py knows one thing about a copy: how long its context
agrees with the current one. This one also reads what the model itself stored: the copied
source's hidden state at the rerank layer, the current context's hidden state, a Pacer-style
position embedding of the token's index in the draft, and scalars that cost nothing (agreement,
whether the source lies in the prompt or in the output, how far back it is, the rerank cosine and
recent acceptance on this document). A small MLP turns them into, for every token of the copy,
the chance that it is accepted given that the tokens before it were. Their running product is
the chance that a token survives, whose blockwise mean decides the length exactly as in length.py.

Training data comes from the bench suite run with a fixed 64-token copy: a token is tested when
every token before it was accepted, and only tested tokens are labelled. Weights are saved under
the cache keyed by the model's weights, so a different model never reads another's pre-verifier.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import torch
from torch import nn

from specedit.drafting.base import Drafter
from specedit.drafting.length import AdaptiveLength, agreement
from specedit.drafting.memory import Memory
from specedit.drafting.pldplus import PldPlus
from specedit.drafting.semantic import _weights_key
from specedit.engine.tree import MAIN, DraftTree
from specedit.models import cache_dir

FORMAT = 1  # bump when the features change, so stale weights are refused
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


class CalibrationError(Exception):
    """The trained pre-verifier is missing or was trained for other weights or features."""


def rerank_layer(num_layers: int) -> int:
    """The layer AdaPLD and PLD+ rerank with; its states are in memory whenever they run."""
    return max(1, round(num_layers * PldPlus.layer_fraction))


def features(memory: Memory, layer: int, anchor: int, count: int, recent: float) -> torch.Tensor:
    """Features of the first `count` tokens copied after `anchor`: a float32 tensor of shape
    (count, 2 * hidden_size + EXTRA) = [source state, query state, sin, cos, SCALARS].

    Token i (1-based) is copied from position s = anchor + i; its source state is row s - 1, the
    state that predicted it where it was copied from. The query is row last - 1, the newest
    stored state (the last token itself has not been fed yet).
    """
    last = len(memory) - 1
    if not 0 <= anchor < anchor + count <= last:
        raise ValueError(f"cannot copy {count} tokens after {anchor} with {last} before the last")
    hidden = memory.hidden(layer)
    source = hidden[anchor : anchor + count].float()
    query = hidden[last - 1].float()
    position = torch.arange(1, count + 1, dtype=torch.float32)
    angles = position[:, None] * FREQUENCIES
    sources = position + anchor
    cosine = nn.functional.cosine_similarity(source, query[None], dim=-1)
    rerank = nn.functional.cosine_similarity(hidden[max(anchor - 1, 0)].float(), query, dim=0)
    per_token = torch.stack(
        [position.log1p(), (sources >= memory.prompt_length).float(), cosine,
         (last - sources).log1p()], dim=1,
    )  # fmt: skip
    per_copy = torch.tensor(
        [math.log1p(agreement(memory.tokens, anchor, last)), recent, float(rerank)]
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


class PreVerifierNet(nn.Module):
    """Standardise, project both hidden states to `rank` dims, then a one-hidden-layer MLP with
    the position embedding and scalars; outputs the logit of acceptance. Small on purpose: the
    suite gives a few thousand labelled tokens, and 64 estimates must cost well under 1 ms."""

    def __init__(self, hidden_size: int, layer: int, rank: int = 16, width: int = 32) -> None:
        super().__init__()
        self.hidden_size, self.layer, self.rank, self.width = hidden_size, layer, rank, width
        size = 2 * hidden_size + EXTRA
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("scale", torch.ones(size))
        self.project = nn.Linear(2 * hidden_size, rank)
        self.head = nn.Sequential(nn.Linear(rank + EXTRA, width), nn.ReLU(), nn.Linear(width, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x - self.mean) / self.scale
        states = 2 * self.hidden_size
        return self.head(torch.cat([self.project(x[:, :states]), x[:, states:]], 1)).squeeze(-1)

    def probabilities(self, x: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return torch.sigmoid(self(x))

    def config(self) -> dict[str, int]:
        return {"hidden_size": self.hidden_size, "layer": self.layer, "rank": self.rank,
                "width": self.width}  # fmt: skip


class Recorder(Drafter):
    """Wraps a drafter and logs features and labels of every tested token of its main copy.

    Token i of a copy of n is tested when tokens 1..i-1 were accepted; it is labelled 1 when it
    was accepted itself. Tokens after the first rejection were never put to the test: dropped.
    """

    def __init__(self, drafter: Drafter, layer: int) -> None:
        self.drafter, self.layer, self.name = drafter, layer, drafter.name
        self.hidden_layers = tuple(sorted({*drafter.hidden_layers, layer}))
        self.recent = RecentAcceptance()
        self.rows: list[torch.Tensor] = []
        self.labels: list[torch.Tensor] = []
        self._pending: torch.Tensor | None = None

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tree = self.drafter.propose(memory, budget)
        main = [node for node in range(1, len(tree)) if tree.kind(node) == MAIN]
        self._pending = None
        if main:
            anchor = tree.source(main[0]) - 1
            self._pending = features(memory, self.layer, anchor, len(main), self.recent.value)
        return tree

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        self.drafter.observe(tree, accepted)
        if self._pending is None:
            return
        drafted = len(self._pending)
        on_main = sum(1 for node in accepted if tree.kind(node) == MAIN)
        tested = min(on_main + 1, drafted)
        self.rows.append(self._pending[:tested].clone())  # frees the untested rows
        self.labels.append((torch.arange(tested) < on_main).float())
        self.recent.update(drafted, on_main)

    def report(self) -> dict[str, int]:
        return self.drafter.report()

    def dataset(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(features, labels) of every tested token so far; call it outside inference mode to
        get tensors that training may use."""
        if not self.rows:
            return torch.zeros(0, 0), torch.zeros(0)
        return torch.cat(self.rows), torch.cat(self.labels)


def record(
    model,
    prompt: list[int],
    *,
    max_new_tokens: int,
    eos_token_ids: set[int] = frozenset(),
    stop: Callable[[int], bool] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generate with AdaPLD's lexical copy at a fixed maximum length and return the tested
    tokens' (features, labels); a fixed long copy tests as many positions as possible."""
    from specedit.drafting.adapld import AdaPLD  # here, not above: adapld may import this module
    from specedit.engine.session import generate

    layer = rerank_layer(model.config.num_hidden_layers)
    drafter = AdaPLD(model, adaptive=False, branch=False, semantic=False)
    recorder = Recorder(drafter, layer)
    generate(model, prompt, recorder, max_new_tokens=max_new_tokens,
             eos_token_ids=eos_token_ids, stop=stop)  # fmt: skip
    return recorder.dataset()


def fit(
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    hidden_size: int,
    layer: int,
    epochs: int = 300,
    lr: float = 3e-3,
    weight_decay: float = 1e-2,
    seed: int = 0,
) -> PreVerifierNet:
    """Full-batch AdamW on class-balanced BCE; then the final bias is shifted back by the
    weights' log ratio, so the probabilities are calibrated again (survival multiplies them)."""
    positives = float(y.sum())
    negatives = len(y) - positives
    if not positives or not negatives:
        raise ValueError("training needs both accepted and rejected tokens")
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        net = PreVerifierNet(hidden_size, layer)
    net.mean.copy_(x.mean(0))
    net.scale.copy_(x.std(0).clamp_min(1e-4))
    w_pos, w_neg = len(y) / (2 * positives), len(y) / (2 * negatives)
    weights = torch.where(y > 0.5, w_pos, w_neg)
    optimizer = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=weight_decay)
    with torch.enable_grad():
        for _ in range(epochs):
            optimizer.zero_grad()
            loss = nn.functional.binary_cross_entropy_with_logits(net(x), y, weight=weights)
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        net.head[-1].bias -= math.log(w_pos / w_neg)
    return net.eval()


@dataclass(frozen=True)
class Metrics:
    tokens: int
    acceptance: float  # share of tested tokens accepted (the base rate)
    accuracy: float  # calibrated probabilities cut at 0.5
    balanced_accuracy: float
    auc: float
    log_loss: float
    base_log_loss: float  # of always predicting the base rate: what the features must beat


def evaluate(net: PreVerifierNet, x: torch.Tensor, y: torch.Tensor) -> Metrics:
    p = net.probabilities(x).clamp(1e-6, 1 - 1e-6)
    predicted, positive = p > 0.5, y > 0.5
    rate = float(positive.float().mean())
    recall = [float((predicted == want)[positive == want].float().mean()) for want in (True, False)]
    scores_pos, scores_neg = p[positive], p[~positive].sort().values
    below = torch.searchsorted(scores_neg, scores_pos).float()
    not_above = torch.searchsorted(scores_neg, scores_pos, right=True).float()
    auc = float(((below + not_above) / 2).mean() / max(len(scores_neg), 1))
    log_loss = float(nn.functional.binary_cross_entropy(p, y))
    base = -(rate * math.log(max(rate, 1e-6)) + (1 - rate) * math.log(max(1 - rate, 1e-6)))
    return Metrics(len(y), round(rate, 4), round(float((predicted == positive).float().mean()), 4),
                   round(sum(recall) / 2, 4), round(auc, 4), round(log_loss, 4),
                   round(base, 4))  # fmt: skip


def weights_path(model) -> Path:
    """Where the pre-verifier for these weights lives."""
    key = _weights_key(model.get_input_embeddings().weight)
    return cache_dir() / "calibration" / f"preverifier-{key}.pt"


def save(net: PreVerifierNet, model, metrics: dict | None = None) -> Path:
    """Write atomically, so a crash never leaves a truncated file that loads."""
    path = weights_path(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    torch.save({"format": FORMAT, "config": net.config(), "state": net.state_dict(),
                "metrics": metrics or {}}, tmp)  # fmt: skip
    tmp.replace(path)
    _NETS.pop(str(path), None)
    return path


_NETS: dict[str, PreVerifierNet] = {}


def load_preverifier(model) -> PreVerifierNet:
    """The trained pre-verifier for `model`, loaded once per path and process."""
    path = weights_path(model)
    if str(path) in _NETS:
        return _NETS[str(path)]
    if not path.exists():
        raise CalibrationError(
            f"no trained pre-verifier for this model (looked for {path}); run `specedit calibrate`"
        )
    saved = torch.load(path, weights_only=True)
    config = saved.get("config", {})
    layer = rerank_layer(model.config.num_hidden_layers)
    if (saved.get("format"), config.get("hidden_size"), config.get("layer")) != (
        FORMAT, model.config.hidden_size, layer
    ):  # fmt: skip
        raise CalibrationError(
            f"the pre-verifier at {path} was trained for other features; run `specedit calibrate`"
        )
    net = PreVerifierNet(**config)
    net.load_state_dict(saved["state"])
    _NETS[str(path)] = net.eval()
    return net


class CopyLength(Protocol):
    """What AdaPLD asks a pre-verifier: how much of the copy after `anchor` to draft (memory's
    last token is the current position), then how many of the drafted tokens were accepted."""

    def length(self, memory: Memory, anchor: int, available: int) -> int: ...

    def observe(self, drafted: int, accepted: int) -> None: ...


class AgreementLength:
    """length.py's training-free AdaptiveLength behind the CopyLength protocol."""

    def __init__(self, inner: AdaptiveLength) -> None:
        self.inner = inner
        self._agreement = 0

    def length(self, memory: Memory, anchor: int, available: int) -> int:
        self._agreement = agreement(memory.tokens, anchor, len(memory) - 1)
        return self.inner.length(self._agreement, available)

    def observe(self, drafted: int, accepted: int) -> None:
        self.inner.observe(self._agreement, drafted, accepted)


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
        length, threshold = 0, self.threshold
        while length < limit:
            start, length = length, min(length + self.block, limit)
            if sum(survival[start:length]) / (length - start) < threshold:
                break
            threshold *= self.growth
        return length

    def observe(self, drafted: int, accepted: int) -> None:
        self.recent.update(drafted, accepted)


PRE_VERIFIERS = ("free", "trained")


def copy_length(kind: str, model, max_length: int = 64) -> CopyLength:
    """The copy-length pre-verifier AdaPLD uses: "free" (length.py) or "trained" (this file)."""
    if kind == "free":
        return AgreementLength(AdaptiveLength(max_length=max_length))
    if kind == "trained":
        return TrainedLength.for_model(model, max_length=max_length)
    raise ValueError(f"unknown pre-verifier {kind!r}: choose one of {', '.join(PRE_VERIFIERS)}")


@dataclass
class TrainingReport:
    path: Path
    train_tasks: list[str]
    held_out_tasks: list[str]
    collect_seconds: float
    train_seconds: float
    train: Metrics
    held_out: Metrics | None


def train_preverifier(
    lm,
    tasks: Sequence,
    held_out: Sequence[str] | None = None,
    log: Callable[[str], None] | None = None,
) -> TrainingReport:
    """Record every task, fit on the training tasks, score on the held-out ones and save.

    `held_out` names the task ids kept out of training (default: every fourth task, which
    spreads them over the suite's kinds), so the reported metrics are on text never fitted.
    """
    from specedit import prompts  # here, not above: specedit.edit imports the drafting package
    from specedit.edit import EditRequest, prepare

    held = set(held_out if held_out is not None else [t.id for t in tasks[3::4]])
    data: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    started = time.perf_counter()
    for task in tasks:
        request = EditRequest(task.input, task.instruction, prompt=task.kind,
                              language=task.language)  # fmt: skip
        prepared = prepare(lm, request)
        data[task.id] = record(
            lm.model,
            prepared.prompt.ids,
            max_new_tokens=prepared.max_new_tokens,
            eos_token_ids=lm.eos_token_ids,
            stop=prompts.FenceStop(lm.tokenizer, prepared.prompt.fence),
        )
        if log:
            labels = data[task.id][1]
            log(f"{task.id}: {len(labels)} tested tokens, {int(labels.sum())} accepted")
    collect_seconds = time.perf_counter() - started

    def join(ids: list[str]) -> tuple[torch.Tensor, torch.Tensor] | None:
        parts = [data[i] for i in ids if len(data[i][1])]
        if not parts:
            return None
        return torch.cat([x for x, _ in parts]), torch.cat([y for _, y in parts])

    train_ids = [t.id for t in tasks if t.id not in held]
    held_ids = [t.id for t in tasks if t.id in held]
    train, test = join(train_ids), join(held_ids)
    if train is None:
        raise CalibrationError("the training tasks drafted no copies to learn from")
    x, y = train
    started = time.perf_counter()
    config = lm.model.config
    net = fit(x, y, hidden_size=config.hidden_size, layer=rerank_layer(config.num_hidden_layers))
    train_seconds = time.perf_counter() - started
    report = TrainingReport(
        path=weights_path(lm.model),
        train_tasks=train_ids,
        held_out_tasks=held_ids,
        collect_seconds=round(collect_seconds, 1),
        train_seconds=round(train_seconds, 2),
        train=evaluate(net, x, y),
        held_out=evaluate(net, *test) if test else None,
    )
    save(net, lm.model, {"train": asdict(report.train),
                         "held_out": report.held_out and asdict(report.held_out)})  # fmt: skip
    return report
