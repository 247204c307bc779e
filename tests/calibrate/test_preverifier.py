"""The trained pre-verifier: features, labels, training, weights on disk, and draft lengths."""

from __future__ import annotations

import pytest
import torch

from specedit.calibrate.preverifier import CANDIDATES, Recorder, as_of, evaluate, fit, save, select
from specedit.drafting import DrafterUnavailable
from specedit.drafting.copying.adapld import AdaPLD, AdaPLDOptions, copy_length
from specedit.drafting.copying.copy import CopyDrafter, HiddenStateRanker, rerank_layer
from specedit.drafting.copying.length import AdaptiveLength, AgreementLength, agreement
from specedit.drafting.copying.preverifier import (
    EXTRA,
    SCALARS,
    PreVerifierNet,
    TrainedLength,
    features,
    load_preverifier,
)
from specedit.engine.memory import Memory
from specedit.engine.session import generate

HIDDEN = 8


@pytest.fixture(autouse=True)
def one_thread():
    """Training here is thousands of tiny ops, which a second thread only slows down (badly so
    when other jobs share the cores)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _memory(prompt_length: int = 40, output: int = 30, seed: int = 0) -> Memory:
    """Random tokens with random stored states at layers 0..2, as the engine would leave them."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, 50, (prompt_length + output,), generator=g).tolist()
    memory = Memory(tokens[:prompt_length], hidden_layers=(1,))
    memory.extend(tokens[prompt_length:])
    fed = len(memory) - 1
    memory.store_hidden(
        tuple(torch.randn(1, fed, HIDDEN, generator=g) for _ in range(3)), list(range(fed))
    )
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


def _copy_memory(keep: float) -> tuple[Memory, Recorder]:
    """A prompt of 30 distinct tokens; the output copies 10 of them, makes one edit, copies 4
    more. A recorder around PLD+ saw the first pass; the generation then went on to the end."""
    g = torch.Generator().manual_seed(0)
    prompt = torch.randperm(50, generator=g)[:30].tolist()
    output = prompt[5:15] + [60] + prompt[16:20]
    memory = Memory(prompt, hidden_layers=(1,))
    memory.extend(output)
    fed = len(memory) - 1
    memory.store_hidden(
        tuple(torch.randn(1, fed, HIDDEN, generator=g) for _ in range(3)), list(range(fed))
    )
    recorder = Recorder(CopyDrafter("pldplus", HiddenStateRanker(2, layer=1)), layer=1, keep=keep)
    tree = recorder.propose(as_of(memory, len(prompt) - 1), budget=64)
    recorder.observe(tree, [])
    recorder.memory = memory
    return memory, recorder


def test_hindsight_labels_every_output_position():
    memory, recorder = _copy_memory(keep=1.0)
    x, y, w = recorder.dataset()
    # positions 30..39 copy into the edit: 10 + 9 + ... + 1 tested tokens, each run ends in a
    # rejection; 40 (the edit) has no earlier occurrence; then 3 + 2 + 1 accepted, then unknown
    expected: list[float] = []
    for accepted in range(9, -1, -1):
        expected += [1.0] * accepted + [0.0]
    expected += [1.0] * 6
    assert y.tolist() == expected and torch.all(w == 1)
    assert x.shape == (len(expected), 2 * HIDDEN + EXTRA)
    assert torch.equal(x[0, :HIDDEN], memory.hidden(1)[5])  # first copy: anchor 5, row 5
    assert torch.equal(x[0, HIDDEN : 2 * HIDDEN], memory.hidden(1)[29])  # query row: last - 1
    assert recorder.passes[0].start == 29 and recorder.passes[0].drafted == 0


def test_hindsight_subsamples_accepted_tokens_with_weights():
    _, recorder = _copy_memory(keep=0.3)
    _, y, w = recorder.dataset()
    assert int((y == 0).sum()) == 10 and torch.all(w[y == 0] == 1)  # every rejection kept
    assert 0 < int((y == 1).sum()) < 51 and torch.allclose(w[y == 1], torch.tensor(1 / 0.3))


def test_hindsight_agrees_with_the_passes_on_a_tiny_model(qwen_tiny):
    g = torch.Generator().manual_seed(2)
    base = torch.randint(0, 96, (24,), generator=g).tolist()
    drafter = AdaPLD(qwen_tiny, AdaPLDOptions(branch=False, semantic=False))
    recorder = Recorder(drafter, rerank_layer(qwen_tiny.config.num_hidden_layers), keep=1.0)
    generate(qwen_tiny, base + base[:12] + base, recorder, max_new_tokens=40)
    tokens = recorder.memory.tokens
    checked = [p for p in recorder.passes if p.drafted]  # the budget keeps drafts in the output
    assert any(p.accepted for p in checked)
    for p in checked:
        _, draft = recorder.copy_at(p.start)
        truth = tokens[p.start + 1 : p.start + 1 + p.drafted]
        accepted = next((i for i, (a, b) in enumerate(zip(draft, truth)) if a != b), p.drafted)
        assert accepted == p.accepted
    x, y, _ = recorder.dataset()
    assert x.shape == (len(y), 2 * qwen_tiny.config.hidden_size + EXTRA) and len(y) > 0
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
    net = fit(x, y, hidden_size=HIDDEN, layer=1, epochs=150)
    metrics = evaluate(net, *_separable(1000, seed=2))
    assert 0.7 < metrics.acceptance < 0.9
    assert metrics.accuracy > 0.93 and metrics.balanced_accuracy > 0.9 and metrics.auc > 0.97
    assert metrics.log_loss < metrics.base_log_loss / 2  # calibrated, not just well ranked


def test_cross_validation_keeps_the_features_that_carry_the_signal():
    x, y = _separable(600, seed=3)
    folds = torch.arange(len(y)) % 3
    groups, width, scores = select(
        x, y, torch.ones_like(y), folds, hidden_size=HIDDEN, layer=1, epochs=80
    )
    assert (groups, width) in CANDIDATES and "states" in groups
    assert len(scores) == len(CANDIDATES) and min(scores.values()) < 0.2


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
    with pytest.raises(DrafterUnavailable, match="run `specedit calibrate`"):
        load_preverifier(qwen_tiny)
    with pytest.raises(DrafterUnavailable, match="run `specedit calibrate`"):
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
