"""Train the copy pre-verifier that `specedit.drafting.copying.preverifier` runs.

Training data comes from greedy runs of the bench suite: since greedy output does not depend on
the drafter, the finished output labels in hindsight the copy AdaPLD would draft at every output
position (a token is tested when every token before it was accepted; only tested tokens are
labelled). Which feature groups the MLP may use is chosen by cross-validation over whole
documents: a suite holds few edits, and richer features memorise them instead of generalising.
"""

from __future__ import annotations

import copy
import math
import time
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from specedit.drafting.artefacts import save_artefact
from specedit.drafting.copying.adapld import AdaPLD, AdaPLDOptions
from specedit.drafting.copying.copy import rerank_layer
from specedit.drafting.copying.preverifier import (
    FORMAT,
    GROUPS,
    PreVerifierNet,
    RecentAcceptance,
    features,
    weights_path,
)
from specedit.drafting.kinds import MAIN
from specedit.engine.drafter import Drafter
from specedit.engine.memory import Memory
from specedit.engine.session import generate
from specedit.engine.tree import DraftTree

CANDIDATES: tuple[tuple[tuple[str, ...], int], ...] = (
    (("agreement", "position"), 0),
    (("agreement", "position"), 16),
    (("agreement", "position", "context"), 16),
    (("agreement", "position", "states"), 16),
    (tuple(GROUPS), 16),
)


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


@dataclass
class Recording:
    """One greedy generation recorded for calibration: the tokens (for the induction heads) and
    the hindsight labels of the copies made along it (for the pre-verifier)."""

    tokens: list[int]  # prompt + output
    output_start: int
    dataset: tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # features, labels, weights


def record(
    model,
    prompt: list[int],
    *,
    max_new_tokens: int,
    eos_token_ids: set[int] = frozenset(),
    stop: Callable[[int], bool] | None = None,
    keep: float = 0.1,
) -> Recording:
    """Generate greedily with AdaPLD's lexical copy at a fixed maximum length, recording the
    hindsight (features, labels, weights) of its copies (see Recorder)."""
    layer = rerank_layer(model.config.num_hidden_layers)
    drafter = AdaPLD(model, AdaPLDOptions(branch=False, semantic=False))
    recorder = Recorder(drafter, layer, keep)
    generation = generate(
        model,
        prompt,
        recorder,
        max_new_tokens=max_new_tokens,
        eos_token_ids=eos_token_ids,
        stop=stop,
    )
    return Recording([*prompt, *generation.tokens], len(prompt), recorder.dataset())


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
    return Metrics(
        len(y),
        round(float(w.sum())),
        round(rate, 4),
        round(mean(predicted == positive, everywhere), 4),
        round(recall, 4),
        round(auc, 4),
        round(log_loss(p, y, w), 4),
        round(base, 4),
    )


def save(net: PreVerifierNet, model, metrics: dict | None = None) -> Path:
    """Save the net for `model`'s weights, atomically: a crash never leaves a file that loads."""
    saved = {
        "format": FORMAT,
        "config": net.config(),
        "state": net.state_dict(),
        "metrics": metrics or {},
    }
    return save_artefact(weights_path(model), lambda tmp: torch.save(saved, tmp))


@dataclass
class TrainingReport:
    path: Path
    train_tasks: list[str]
    held_out_tasks: list[str]
    groups: tuple[str, ...]  # the feature groups cross-validation chose
    width: int  # 0 = logistic regression
    cross_validation: dict[str, float]  # out-of-fold log loss of every candidate
    train_seconds: float
    train: Metrics
    held_out: Metrics | None


def train_preverifier(
    lm,
    data: dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]],
    held_out: Sequence[str] | None = None,
    folds: int = 4,
) -> TrainingReport:
    """Pick features by cross-validation over the training tasks' recorded copies, fit, score on
    the held-out tasks and save. `data` maps task ids to their recordings' datasets.

    `held_out` names the task ids kept out of training (default: every fourth task, which
    spreads them over the suite's kinds), so the reported metrics are on text never fitted.
    """
    ids = list(data)
    held = set(held_out if held_out is not None else ids[3::4])

    def join(chosen: list[str]) -> tuple[torch.Tensor, ...] | None:
        """(features, labels, weights, task index) of the tasks that drafted copies."""
        parts = [(*data[i], torch.full_like(data[i][1], n)) for n, i in enumerate(chosen)]
        parts = [part for part in parts if len(part[1])]
        return tuple(torch.cat(column) for column in zip(*parts)) if parts else None

    train_ids = [i for i in ids if i not in held]
    held_ids = [i for i in ids if i in held]
    train, test = join(train_ids), join(held_ids)
    if train is None:
        raise ValueError("the training tasks drafted no copies to learn from")
    x, y, w, task = train
    config = lm.model.config
    options = {"hidden_size": config.hidden_size, "layer": rerank_layer(config.num_hidden_layers)}
    started = time.perf_counter()
    groups, width, scores = select(x, y, w, task % folds, **options)
    net = fit(x, y, w, groups=groups, width=width, **options)
    report = TrainingReport(
        path=weights_path(lm.model),
        train_tasks=train_ids,
        held_out_tasks=held_ids,
        groups=groups,
        width=width,
        cross_validation={k: round(v, 5) for k, v in scores.items()},
        train_seconds=round(time.perf_counter() - started, 2),
        train=evaluate(net, x, y, w),
        held_out=evaluate(net, *test[:3]) if test else None,
    )
    save(
        net,
        lm.model,
        {"train": asdict(report.train), "held_out": report.held_out and asdict(report.held_out)},
    )
    return report
