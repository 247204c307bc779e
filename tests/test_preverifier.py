"""The trained pre-verifier: features, labels, training, weights on disk, and draft lengths."""

from __future__ import annotations

import pytest
import torch

from specedit.drafting.base import Drafter
from specedit.drafting.length import AdaptiveLength, agreement
from specedit.drafting.memory import Memory
from specedit.drafting.preverifier import (
    EXTRA,
    SCALARS,
    AgreementLength,
    CalibrationError,
    PreVerifierNet,
    Recorder,
    TrainedLength,
    copy_length,
    evaluate,
    features,
    fit,
    load_preverifier,
    record,
    rerank_layer,
    save,
)
from specedit.engine.tree import DraftTree

HIDDEN = 8


def _memory(prompt_length: int = 40, output: int = 30, seed: int = 0) -> Memory:
    """Random tokens with random stored states at layers 0..2, as the engine would leave them."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 50, (prompt_length + output,), generator=g).tolist()
    memory = Memory(tokens[:prompt_length], hidden_layers=(1,))
    memory.extend(tokens[prompt_length:])
    fed = len(memory) - 1
    memory.store_hidden(tuple(torch.randn(1, fed, HIDDEN, generator=g) for _ in range(3)),
                        list(range(fed)))  # fmt: skip
    return memory


def _constant_net(logit: float, hidden_size: int = HIDDEN, layer: int = 1) -> PreVerifierNet:
    """A net that estimates sigmoid(logit) for every token."""
    net = PreVerifierNet(hidden_size, layer)
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.zero_()
        net.head[-1].bias.fill_(logit)
    return net.eval()


def test_features_have_the_documented_shape_and_columns():
    memory = _memory(prompt_length=40, output=30)
    anchor, count = 35, 12  # sources 36..47 cross from the prompt into the output at 40
    x = features(memory, 1, anchor, count, recent=0.5)
    assert x.shape == (count, 2 * HIDDEN + EXTRA) and x.dtype == torch.float32
    assert torch.equal(x[:, :HIDDEN], memory.hidden(1)[anchor : anchor + count])
    assert torch.equal(x[:, HIDDEN : 2 * HIDDEN], memory.hidden(1)[-1].expand(count, -1))
    scalars = x[:, -len(SCALARS) :]
    column = {name: scalars[:, i] for i, name in enumerate(SCALARS)}
    assert column["in_output"].tolist() == [0.0] * 4 + [1.0] * 8
    assert torch.allclose(column["log_position"], torch.arange(1, count + 1).float().log1p())
    assert torch.all(column["recent"] == 0.5)
    with pytest.raises(ValueError):
        features(memory, 1, anchor=60, count=20, recent=0.5)  # past the last token


class _Copy(Drafter):
    """Copies `length` tokens after a fixed anchor."""

    hidden_layers = (1,)

    def __init__(self, anchor: int, length: int) -> None:
        self.anchor, self.length = anchor, length

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tree = DraftTree(root=memory.tokens[-1])
        start = self.anchor + 1
        tree.add_chain(memory.tokens[start : start + self.length], first_source=start)
        return tree


@pytest.mark.parametrize(("accepted", "labels"), [(3, [1, 1, 1, 0]), (8, [1] * 8), (0, [0])])
def test_recorder_labels_only_tested_tokens(accepted, labels):
    memory = _memory()
    recorder = Recorder(_Copy(anchor=20, length=8), layer=1)
    tree = recorder.propose(memory, budget=64)
    recorder.observe(tree, list(range(1, accepted + 1)))
    x, y = recorder.dataset()
    assert y.tolist() == labels and x.shape == (len(labels), 2 * HIDDEN + EXTRA)


def test_record_on_a_tiny_model(qwen_tiny):
    g = torch.Generator().manual_seed(3)
    base = torch.randint(0, 96, (24,), generator=g).tolist()
    x, y = record(qwen_tiny, base + base[:12] + base, max_new_tokens=30)
    assert rerank_layer(qwen_tiny.config.num_hidden_layers) == 1
    assert x.shape == (len(y), 2 * qwen_tiny.config.hidden_size + EXTRA) and len(y) > 0
    assert set(y.tolist()) <= {0.0, 1.0}
    assert not x.is_inference()  # fit can train on it


def _separable(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mostly accepted, like real copies; the label hangs on one source-state column and the
    position, so a working trainer separates it and a broken one does not."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 2 * HIDDEN + EXTRA, generator=g)
    y = (x[:, 2] + 0.5 * x[:, -len(SCALARS)] > -0.9).float()
    return x, y


def test_training_separates_a_separable_dataset():
    x, y = _separable(1500, seed=1)
    net = fit(x, y, hidden_size=HIDDEN, layer=1, epochs=150, lr=1e-2)
    metrics = evaluate(net, *_separable(1000, seed=2))
    assert 0.7 < metrics.acceptance < 0.9
    assert metrics.accuracy > 0.93 and metrics.balanced_accuracy > 0.9 and metrics.auc > 0.97
    assert metrics.log_loss < metrics.base_log_loss / 2  # calibrated, not just well ranked


def test_weights_round_trip_under_the_cache(qwen_tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    size = qwen_tiny.config.hidden_size
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 2 * size + EXTRA, generator=g)
    net = fit(x, (x[:, 0] > 0).float(), hidden_size=size, layer=1, epochs=5)
    path = save(net, qwen_tiny, {"note": "test"})
    assert path.parent == tmp_path / "calibration" and path.name.startswith("preverifier-")
    assert not list(path.parent.glob("*.tmp"))
    loaded = load_preverifier(qwen_tiny)
    assert loaded is not net and torch.equal(loaded.probabilities(x), net.probabilities(x))
    assert isinstance(copy_length("trained", qwen_tiny), TrainedLength)


def test_missing_weights_say_how_to_make_them(qwen_tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    with pytest.raises(CalibrationError, match="run `specedit calibrate`"):
        load_preverifier(qwen_tiny)
    with pytest.raises(CalibrationError, match="run `specedit calibrate`"):
        copy_length("trained", qwen_tiny)


def test_trained_length_follows_the_estimates():
    memory = _memory(prompt_length=100, output=40)  # last = 139
    anchor = 30

    def length(logit: float, available: int = 100) -> int:
        return TrainedLength(_constant_net(logit)).length(memory, anchor, available)

    lengths = [length(logit) for logit in (-4.0, 2.0, 3.0, 4.0, 8.0)]
    assert lengths == sorted(lengths) and lengths[0] == 8 and lengths[-1] == 64
    assert len(set(lengths)) > 2
    assert all(n % 8 == 0 for n in lengths)  # whole blocks
    assert length(8.0, available=20) == 20 and length(-4.0, available=5) == 5  # capped
    assert length(8.0, available=0) == 0


def test_observe_moves_recent_acceptance():
    trained = TrainedLength(_constant_net(0.0))
    before = trained.recent.value
    trained.observe(drafted=16, accepted=0)
    assert trained.recent.value < before


def test_agreement_length_is_adaptive_length():
    memory = _memory()
    anchor, last = 20, len(memory) - 1
    free, reference = AgreementLength(AdaptiveLength()), AdaptiveLength()
    agree = agreement(memory.tokens, anchor, last)
    assert free.length(memory, anchor, 40) == reference.length(agree, 40)
    free.observe(16, 3)
    reference.observe(agree, 16, 3)
    assert free.inner.accepted == reference.accepted and free.inner.tested == reference.tested
    with pytest.raises(ValueError, match="unknown pre-verifier"):
        copy_length("oracle", None)
