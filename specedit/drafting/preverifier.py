"""Trained pre-verifier for the copy path's draft length (Pacer with a learned estimator).

The training-free pre-verifier in length.py knows one thing about a copy: how long its context
agrees with the current one. This one also reads what the model itself stored: the copied
source's hidden state at the rerank layer, the current context's hidden state, a Pacer-style
position embedding of the token's index in the draft, and scalars that cost nothing (agreement,
whether the source lies in the prompt or in the output, how far back it is, the rerank cosine and
recent acceptance on this document). A small MLP turns them into, for every token of the copy,
the chance that it is accepted given that the tokens before it were. Their running product is
the chance that a token survives, whose blockwise mean decides the length exactly as in length.py.
Which feature groups the MLP may use is chosen by cross-validation over whole documents: a suite
holds few edits, and richer features memorise them instead of generalising.

Training data comes from greedy runs of the bench suite: since greedy output does not depend on
the drafter, the finished output labels in hindsight the copy AdaPLD would draft at every output
position (a token is tested when every token before it was accepted; only tested tokens are
labelled). Weights are saved under the cache keyed by the model's weights, so a different model
never reads another's pre-verifier.
"""

from __future__ import annotations

import copy
import math
import time
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol

import torch
from torch import nn

from specedit.drafting.base import Drafter
from specedit.drafting.length import AdaptiveLength, agreement, blockwise_length
from specedit.drafting.memory import Memory
from specedit.drafting.pldplus import PldPlus
from specedit.drafting.semantic import _weights_key
from specedit.engine.tree import MAIN, DraftTree
from specedit.models import cache_dir

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
CANDIDATES: tuple[tuple[tuple[str, ...], int], ...] = (
    (("agreement", "position"), 0),
    (("agreement", "position"), 16),
    (("agreement", "position", "context"), 16),
    (("agreement", "position", "states"), 16),
    (tuple(GROUPS), 16),
)


class CalibrationError(Exception):
    """The trained pre-verifier is missing or was trained for other weights or features."""


def rerank_layer(num_layers: int) -> int:
    """The layer AdaPLD and PLD+ rerank with; its states are in memory whenever they run."""
    return max(1, round(num_layers * PldPlus.layer_fraction))


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


def _columns(rank: int) -> list[str]:
    """Names of the columns a net sees after projecting the two hidden states."""
    states = [f"{side}{k}" for side in ("source", "query") for k in range(rank)]
    waves = [f"{wave}{k}" for wave in ("sin", "cos") for k in range(len(FREQUENCIES))]
    return [*states, *waves, *SCALARS]


class PreVerifierNet(nn.Module):
    """Project each hidden state onto a fixed PCA basis of `rank` dims, standardise, keep the
    columns of the chosen feature groups, then a one-hidden-layer MLP (`width` 0: logistic
    regression) gives the logit of acceptance. Small on purpose: the suite holds a few dozen
    edits, and 64 estimates must cost well under 1 ms."""

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
        return {"hidden_size": self.hidden_size, "layer": self.layer, "rank": self.rank,
                "width": self.width, "groups": list(self.groups)}  # fmt: skip


def as_of(memory: Memory, last: int) -> Memory:
    """Memory as it stood when `last` was its newest token: a shallow copy sharing the token
    index and the stored states, which drafters only read before the newest token."""
    view = copy.copy(memory)
    view.tokens = memory.tokens[: last + 1]
    view._filled = last
    return view


@dataclass(frozen=True)
class Pass:
    """One verify pass of a recorded generation, as the copy pre-verifier saw it."""

    start: int  # position of the newest token when the pass was drafted
    recent: float  # RecentAcceptance.value before the pass
    drafted: int  # main-copy tokens drafted
    accepted: int  # of those accepted


class Recorder(Drafter):
    """Wraps a copy drafter during a greedy generation and labels its copies in hindsight.

    Greedy decoding is deterministic, so the finished output says what any draft at any position
    would have had accepted: the copy the drafter makes at position t is accepted up to its first
    token that differs from the output after t. Labelling the copy at every output position, not
    only where a pass happened to start, turns the suite's few rejections per document (edits
    are rare) into thousands of tested tokens. Token i is tested when tokens 1..i-1 were
    accepted; only tested tokens are labelled. `keep` subsamples the many accepted tokens, with
    weights 1 / keep that undo it. The drafter must choose its copy from memory alone.
    """

    def __init__(self, drafter: Drafter, layer: int, keep: float = 0.1, seed: int = 0) -> None:
        self.drafter, self.layer, self.name = drafter, layer, drafter.name
        self.hidden_layers = tuple(sorted({*drafter.hidden_layers, layer}))
        self.keep, self.seed = keep, seed
        self.recent = RecentAcceptance()
        self.passes: list[Pass] = []
        self.memory: Memory | None = None
        self._pass: tuple[int, float, int] | None = None

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tree = self.drafter.propose(memory, budget)
        self.memory = memory
        drafted = sum(1 for node in range(1, len(tree)) if tree.kind(node) == MAIN)
        self._pass = (len(memory) - 1, self.recent.value, drafted)
        return tree

    def observe(self, tree: DraftTree, accepted: list[int]) -> None:
        self.drafter.observe(tree, accepted)
        start, recent, drafted = self._pass
        on_main = sum(1 for node in accepted if tree.kind(node) == MAIN)
        self.passes.append(Pass(start, recent, drafted, on_main))
        self.recent.update(drafted, on_main)

    def copy_at(self, last: int, max_length: int = 64) -> tuple[int, list[int]] | None:
        """(anchor, tokens) of the main copy the drafter makes when `last` is the newest token."""
        tree = self.drafter.propose(as_of(self.memory, last), max_length)
        main = [node for node in range(1, len(tree)) if tree.kind(node) == MAIN]
        if not main:
            return None
        return tree.source(main[0]) - 1, [tree.token(node) for node in main]

    def dataset(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(features, labels, weights) of the tested tokens of the copy at every output position.

        The recent-acceptance feature at position t is the one of the pass that covered t, as it
        stood before that pass: what inference would have known there, and nothing later.
        """
        memory, rows, labels, weights = self.memory, [], [], []
        if memory is None:
            return torch.zeros(0, 0), torch.zeros(0), torch.zeros(0)
        tokens, end = memory.tokens, len(memory)
        starts = [p.start for p in self.passes]
        generator = torch.Generator().manual_seed(self.seed)
        for last in range(memory.prompt_length - 1, end - 1):
            copied = self.copy_at(last)
            if copied is None:
                continue
            anchor, draft = copied
            known = min(len(draft), end - 1 - last)  # the output ends; what follows is unknown
            truth = tokens[last + 1 : last + 1 + known]
            accepted = next((i for i, (a, b) in enumerate(zip(draft, truth)) if a != b), known)
            tested = min(accepted + 1, known)
            label = torch.arange(tested) < accepted
            kept = ~label | (torch.rand(tested, generator=generator) < self.keep)
            recent = self.passes[bisect_right(starts, last) - 1].recent
            x = features(memory, self.layer, anchor, tested, recent, last)
            rows.append(x[kept])
            labels.append(label[kept].float())
            weights.append(torch.where(label[kept], 1 / self.keep, 1.0))
        if not rows:
            return torch.zeros(0, 0), torch.zeros(0), torch.zeros(0)
        return torch.cat(rows), torch.cat(labels), torch.cat(weights)


def record(
    model,
    prompt: list[int],
    *,
    max_new_tokens: int,
    eos_token_ids: set[int] = frozenset(),
    stop: Callable[[int], bool] | None = None,
    keep: float = 0.1,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Generate greedily with AdaPLD's lexical copy at a fixed maximum length, then return the
    hindsight (features, labels, weights) of its copies (see Recorder)."""
    from specedit.drafting.adapld import AdaPLD  # here, not above: adapld may import this module
    from specedit.engine.session import generate

    layer = rerank_layer(model.config.num_hidden_layers)
    drafter = AdaPLD(model, adaptive=False, branch=False, semantic=False)
    recorder = Recorder(drafter, layer, keep)
    generate(model, prompt, recorder, max_new_tokens=max_new_tokens,
             eos_token_ids=eos_token_ids, stop=stop)  # fmt: skip
    return recorder.dataset()


def fit(
    x: torch.Tensor,
    y: torch.Tensor,
    weights: torch.Tensor | None = None,
    *,
    hidden_size: int,
    layer: int,
    groups: Sequence[str] = tuple(GROUPS),
    width: int = 16,
    rank: int = 16,
    epochs: int = 300,
    lr: float = 1e-2,
    weight_decay: float = 1e-2,
    seed: int = 0,
) -> PreVerifierNet:
    """PCA bases from the data, then full-batch AdamW on class-balanced BCE (on top of the
    samples' own weights); then the final bias is shifted back by the balance's log ratio, so
    the probabilities are calibrated again, which they must be since survival multiplies them."""
    weights = torch.ones_like(y) if weights is None else weights
    positives, negatives = float(weights[y > 0.5].sum()), float(weights[y <= 0.5].sum())
    if not positives or not negatives:
        raise ValueError("training needs both accepted and rejected tokens")
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        net = PreVerifierNet(hidden_size, layer, rank, width, groups)
        states = x[:, : 2 * hidden_size].reshape(len(x), 2, hidden_size)
        net.state_mean.copy_(states.mean(0))
        if "states" in net.groups:  # otherwise masked out: skip the PCA
            q = min(net.rank, len(x))
            for side in range(2):
                centred = states[:, side] - net.state_mean[side]
                net.basis[side, :, :q] = torch.pca_lowrank(centred, q=q, center=False)[2]
    z = net.reduce(x)
    net.mean.copy_(z.mean(0))
    net.scale.copy_(z.std(0).clamp_min(1e-4))
    inputs = net.standardized(z)
    total = positives + negatives
    w_pos, w_neg = total / (2 * positives), total / (2 * negatives)
    balanced = weights * torch.where(y > 0.5, w_pos, w_neg)
    balanced = balanced / balanced.mean()
    optimizer = torch.optim.AdamW(net.head.parameters(), lr=lr, weight_decay=weight_decay)
    with torch.enable_grad():
        for _ in range(epochs):
            optimizer.zero_grad()
            logits = net.head(inputs).squeeze(-1)
            nn.functional.binary_cross_entropy_with_logits(logits, y, weight=balanced).backward()
            optimizer.step()
    with torch.no_grad():
        net.head[-1].bias -= math.log(w_pos / w_neg)
    return net.eval()


def log_loss(p: torch.Tensor, y: torch.Tensor, weights: torch.Tensor) -> float:
    p = p.clamp(1e-6, 1 - 1e-6)
    return float((-(y * p.log() + (1 - y) * (1 - p).log()) * weights).sum() / weights.sum())


def select(
    x: torch.Tensor, y: torch.Tensor, weights: torch.Tensor, folds: torch.Tensor, **options
) -> tuple[tuple[str, ...], int, dict[str, float]]:
    """The CANDIDATES entry with the lowest out-of-fold log loss, folds being groups of whole
    documents: edits are few and a document's rejections are alike, so only scores on other
    documents tell features that generalise from features that memorise.

    Returns (groups, width, {candidate: log loss}); options go to `fit`.
    """
    scores: dict[str, float] = {}
    for groups, width in CANDIDATES:
        p, scored = torch.zeros(len(y)), torch.zeros(len(y), dtype=torch.bool)
        for fold in folds.unique().tolist():
            test = folds == fold
            train = ~test
            if (y[train] > 0.5).all() or (y[train] <= 0.5).all():
                continue
            net = fit(x[train], y[train], weights[train], groups=groups, width=width, **options)
            p[test], scored[test] = net.probabilities(x[test]), True
        scores[f"{'+'.join(groups)}/{width or 'linear'}"] = log_loss(
            p[scored], y[scored], weights[scored]
        )
    best = min(range(len(CANDIDATES)), key=lambda i: list(scores.values())[i])
    return *CANDIDATES[best], scores


@dataclass(frozen=True)
class Metrics:
    """Quality on labelled tokens; weighted, so subsampled accepted tokens count as often as
    they occurred."""

    rows: int  # rows scored
    tested: int  # tested tokens they stand for
    acceptance: float  # share of tested tokens accepted (the base rate)
    accuracy: float  # calibrated probabilities cut at 0.5
    balanced_accuracy: float
    auc: float  # within-class subsampling is uniform, so AUC needs no weights
    log_loss: float
    base_log_loss: float  # of always predicting the base rate: what the features must beat


def evaluate(
    net: PreVerifierNet, x: torch.Tensor, y: torch.Tensor, weights: torch.Tensor | None = None
) -> Metrics:
    w = torch.ones_like(y) if weights is None else weights
    p = net.probabilities(x)
    predicted, positive = p > 0.5, y > 0.5

    def mean(values: torch.Tensor, where: torch.Tensor) -> float:
        return float((values.float() * w)[where].sum() / w[where].sum().clamp_min(1e-12))

    everywhere = torch.ones_like(positive)
    rate = mean(positive, everywhere)
    recall = (mean(predicted, positive) + mean(~predicted, ~positive)) / 2
    scores_pos, scores_neg = p[positive], p[~positive].sort().values
    below = torch.searchsorted(scores_neg, scores_pos).float()
    not_above = torch.searchsorted(scores_neg, scores_pos, right=True).float()
    auc = float(((below + not_above) / 2).mean() / max(len(scores_neg), 1))
    base = log_loss(torch.full_like(p, rate), y, w)
    return Metrics(len(y), round(float(w.sum())), round(rate, 4),
                   round(mean(predicted == positive, everywhere), 4), round(recall, 4),
                   round(auc, 4), round(log_loss(p, y, w), 4), round(base, 4))  # fmt: skip


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
        return blockwise_length(survival, self.block, self.threshold, self.growth)

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
    groups: tuple[str, ...]  # the feature groups cross-validation chose
    width: int  # 0 = logistic regression
    cross_validation: dict[str, float]  # out-of-fold log loss of every candidate
    collect_seconds: float
    train_seconds: float
    train: Metrics
    held_out: Metrics | None


def train_preverifier(
    lm,
    tasks: Sequence,
    held_out: Sequence[str] | None = None,
    folds: int = 4,
    log: Callable[[str], None] | None = None,
) -> TrainingReport:
    """Record every task, pick features by cross-validation over the training tasks, fit,
    score on the held-out tasks and save.

    `held_out` names the task ids kept out of training (default: every fourth task, which
    spreads them over the suite's kinds), so the reported metrics are on text never fitted.
    """
    from specedit import prompts  # here, not above: specedit.edit imports the drafting package
    from specedit.edit import EditRequest, prepare

    held = set(held_out if held_out is not None else [t.id for t in tasks[3::4]])
    data: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = {}
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
            stop=prompts.FenceStop(lm.tokenizer, prepared.prompt),
        )
        if log:
            _, labels, weights = data[task.id]
            log(f"{task.id}: {float(weights.sum()):.0f} tested tokens, "
                f"{int((labels == 0).sum())} rejected")  # fmt: skip
    collect_seconds = time.perf_counter() - started

    def join(ids: list[str]) -> tuple[torch.Tensor, ...] | None:
        """(features, labels, weights, task index) of the tasks that drafted copies."""
        parts = [(*data[i], torch.full_like(data[i][1], n)) for n, i in enumerate(ids)]
        parts = [part for part in parts if len(part[1])]
        return tuple(torch.cat(column) for column in zip(*parts)) if parts else None

    train_ids = [t.id for t in tasks if t.id not in held]
    held_ids = [t.id for t in tasks if t.id in held]
    train, test = join(train_ids), join(held_ids)
    if train is None:
        raise CalibrationError("the training tasks drafted no copies to learn from")
    x, y, w, task = train
    config = lm.model.config
    options = {"hidden_size": config.hidden_size, "layer": rerank_layer(config.num_hidden_layers)}
    started = time.perf_counter()
    groups, width, scores = select(x, y, w, task % folds, **options)
    net = fit(x, y, w, groups=groups, width=width, **options)
    train_seconds = time.perf_counter() - started
    report = TrainingReport(
        path=weights_path(lm.model),
        train_tasks=train_ids,
        held_out_tasks=held_ids,
        groups=groups,
        width=width,
        cross_validation={k: round(v, 5) for k, v in scores.items()},
        collect_seconds=round(collect_seconds, 1),
        train_seconds=round(train_seconds, 2),
        train=evaluate(net, x, y, w),
        held_out=evaluate(net, *test[:3]) if test else None,
    )
    save(net, lm.model, {"train": asdict(report.train),
                         "held_out": report.held_out and asdict(report.held_out)})  # fmt: skip
    return report
