"""llama.cpp in specedit without its model: an engine that is not installed says how to get
it, `--engine auto` chooses it wherever it runs what was asked, the drafters that need what it
does not give are refused, the token-only drafters it runs, the bench's labels for it, and a
load that fails in the background. (On the bundled model's own GGUF file: e2e/test_llamacpp.py.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specedit.cli import app


@pytest.mark.parametrize(
    "args",
    [["--methods", "ar,llama.cpp"], ["--methods", "ar,pld", "--engines", "torch,llama.cpp"]],
)
def test_bench_says_how_to_get_llama_cpp_when_it_is_missing(tiny_model_dir, monkeypatch, args):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` now fails
    result = CliRunner().invoke(app, ["bench", "--model", str(tiny_model_dir), *args])
    assert result.exit_code == 2
    assert "pip install 'specedit[llamacpp]'" in result.stderr


def test_the_llama_cpp_engine_says_how_to_get_it_when_it_is_missing(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    path = tmp_path / "code.py"
    path.write_text("def add(a, b):\n    return a - b\n")
    result = CliRunner().invoke(app, ["fix", str(path), "add", "--engine", "llama.cpp"])
    assert result.exit_code == 3  # the model cannot be loaded
    assert "pip install 'specedit[llamacpp]'" in result.stderr
    assert path.read_text() == "def add(a, b):\n    return a - b\n"


def test_the_llama_cpp_engine_refuses_what_it_cannot_run_before_loading(tmp_path):
    path = tmp_path / "code.py"
    path.write_text("x = 1\n")
    command = ["fix", str(path), "fix", "--engine", "llama.cpp", "--method", "pldplus-attn"]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 2
    assert "--method pldplus-attn ranks copies by the induction heads' attention" in result.stderr


@pytest.mark.parametrize(
    "model,asked,installed,engine",
    [
        ("qwen2.5-coder-1.5b", {}, True, "llama.cpp"),
        ("model.gguf", {"method": "adapld"}, True, "llama.cpp"),
        ("qwen2.5-coder-1.5b", {}, False, "torch"),  # llama-cpp-python is not installed
        ("a/model/folder", {}, True, "torch"),  # no GGUF file to run
        ("qwen2.5-coder-1.5b", {"draft_model": "qwen2.5-coder-0.5b"}, True, "llama.cpp"),
        ("qwen2.5-coder-1.5b", {"draft_model": "a/draft/folder"}, True, "torch"),  # no GGUF
        ("qwen2.5-coder-1.5b", {"device": "cuda"}, True, "torch"),
        ("qwen2.5-coder-1.5b", {"dtype": "fp32"}, True, "torch"),
        ("qwen2.5-coder-1.5b", {"method": "pldplus"}, True, "llama.cpp"),  # its final states
        ("qwen2.5-coder-1.5b", {"method": "pldplus-attn"}, True, "torch"),  # attention weights
    ],
)
def test_engine_auto_is_llama_cpp_wherever_it_runs_what_was_asked(
    monkeypatch, model, asked, installed, engine
):
    from specedit.cli import startup

    monkeypatch.setattr(startup, "llama_cpp_installed", lambda: installed)
    assert startup.choose_engine("auto", model, **asked) == engine
    assert startup.choose_engine("torch", model, **asked) == "torch"  # named: kept


def test_an_edit_reports_the_engine_it_ran_on(tmp_path, monkeypatch):
    """The fast tier's tiny model is a folder, not a GGUF file: auto runs it on torch, and the
    stats say so."""
    from dataclasses import replace

    from specedit.editing import editor

    def execute(lm, prepared, on_step=None, stop=None):  # a fixed answer after a short run
        generation = editor.generate_edit(lm, replace(prepared, max_new_tokens=4), on_step)
        return editor.EditResult("x = 2\n", generation, prepared.prompt)

    monkeypatch.setattr("specedit.editing.local.execute", execute)
    monkeypatch.delenv("SPECEDIT_ENGINE")
    monkeypatch.delenv("SPECEDIT_DTYPE")
    path, stats = tmp_path / "code.py", tmp_path / "stats.json"
    path.write_text("x = 1\n")
    result = CliRunner().invoke(app, ["edit", str(path), "make it 2", "--stats-file", str(stats)])
    assert result.exit_code == 0, result.stderr
    assert json.loads(stats.read_text())["engine"] == "torch"
    assert " on torch" in result.stderr


def test_on_llama_cpp_every_method_drafts_but_those_that_read_what_it_does_not_give():
    """The refusal matrix: llama.cpp returns the final hidden state and the GGUF file gives the
    vocabulary matrices, so every method and ablation runs there (the hidden-state ones at the
    final layer) but for attention weights, an early layer's states and training weights."""
    from types import SimpleNamespace

    from specedit.bench.ablations import ABLATIONS
    from specedit.drafting import DrafterUnavailable
    from specedit.drafting.copying.adapld import TokenAdaPLD
    from specedit.drafting.registry import METHODS, default_method, make_drafter, refusal
    from specedit.engine.llamacpp import GgufModel

    assert (default_method(False), default_method(True)) == ("adapld", "evospec")
    refused = {
        "pldplus-attn": "induction heads' attention weights",
        "adapld-trained-length": "early layer's hidden states",
        "evospec-lora": "trains the draft model's weights",
    }
    runs = {m for m in (*METHODS, *ABLATIONS) if refusal(m, "llama.cpp") is None}
    assert runs == {*METHODS, *ABLATIONS} - set(refused)
    for method, why in refused.items():
        assert why in refusal(method, "llama.cpp") and refusal(method, "torch") is None
    config = SimpleNamespace(num_hidden_layers=4)
    gguf = GgufModel(Path("model.gguf"), config=config, generation_config=None, threads=1)
    for method in ("ar", "pld", "pool", "pld-fixed"):
        assert make_drafter(method, gguf).hidden_layers == ()
    assert make_drafter("pld-fixed", gguf).confidence is None  # the bench's unsized ablation
    pldplus = make_drafter("pldplus", gguf)
    assert pldplus.hidden_layers == (4,)  # the final state: the only one llama.cpp returns
    adapld = make_drafter("adapld", gguf)  # its token-only parts there (adapld-states: all)
    assert isinstance(adapld, TokenAdaPLD) and adapld.hidden_layers == ()
    for method, why in refused.items():
        with pytest.raises(DrafterUnavailable, match=why):
            make_drafter(method, gguf)


def test_token_only_adapld_anchors_by_the_tokens_before_and_branches_to_other_followers():
    """Without hidden states the main copy follows the occurrence whose preceding tokens match
    (here `2 5`), and the branch is what followed the other occurrences (6, twice), with what
    followed it there."""
    from specedit.drafting.copying.adapld import TokenAdaPLD
    from specedit.drafting.kinds import BRANCH, MAIN, SUCCESSOR
    from specedit.engine.memory import Memory

    drafter = TokenAdaPLD()
    assert drafter.hidden_layers == ()
    tree = drafter.propose(Memory([1, 5, 6, 7, 8, 2, 5, 9, 10, 3, 5, 6, 7, 11, 2, 5]), 64)
    main = tree.main_chain()
    assert main.tokens == [9, 10, 3, 5, 6, 7, 11, 2, 5] and set(main.kinds) == {MAIN}
    assert main.sources[0] == 7
    branch = next(n for n in range(1, len(tree)) if tree.kind(n) == BRANCH)
    assert (tree.parent(branch), tree.token(branch), tree.source(branch)) == (0, 6, 11)
    successor = tree.children()[branch]
    assert [(tree.token(n), tree.source(n), tree.kind(n)) for n in successor] == [
        (7, 12, SUCCESSOR)
    ]
    assert drafter.report() == {"retrieval_lexical": 1}


def test_token_only_followers_carry_chances_learned_by_rank():
    """Followers say how likely they are, by rank, from a prior the document then moves, so
    the engine verifies them only where they pay for the width they add: dropped on a steep
    curve while unsure, kept once they keep being accepted."""
    from specedit.drafting.copying.adapld import TokenAdaPLD
    from specedit.drafting.kinds import BRANCH
    from specedit.engine.cost import PassCost, size
    from specedit.engine.memory import Memory

    drafter = TokenAdaPLD()
    memory = Memory([1, 5, 6, 7, 8, 2, 5, 9, 10, 3, 5, 6, 7, 11, 2, 5])
    steep = PassCost((1, 2, 4, 64), (0.08, 0.12, 0.17, 2.0), 0.02)

    def propose():
        tree = drafter.propose(memory, 64)
        branch = next(n for n in range(1, len(tree)) if tree.kind(n) == BRANCH)
        return tree, branch, tree.children()[branch][0]

    tree, branch, successor = propose()
    assert tree.confidences[branch - 1] == pytest.approx(0.2)  # rank 0's prior
    assert tree.confidences[successor - 1] == pytest.approx(0.5)
    assert BRANCH not in size(tree, steep).kinds  # a one-in-five guess does not pay there
    for _ in range(20):  # the branch and its successor held, pass after pass
        tree, branch, successor = propose()
        drafter.observe(tree, [branch, successor])
    tree, branch, successor = propose()
    assert tree.confidences[branch - 1] > 0.8 and tree.confidences[successor - 1] > 0.8
    assert BRANCH in size(tree, steep).kinds


def test_bench_setups_on_llama_cpp_are_labelled_and_compared_with_its_plain_decoding():
    from specedit.bench.setups import Setup, reference

    assert Setup("pld", engine="llama.cpp").label == "pld/llama.cpp"
    assert reference("pld/llama.cpp") == "ar/llama.cpp"
    assert reference("adapld~conditional") == "ar"


@pytest.mark.llamacpp
def test_a_load_that_fails_in_the_background_is_a_model_error(tmp_path):
    from specedit.engine.llamacpp import GgufModel
    from specedit.models.bundled import ModelError
    from specedit.models.load import LoadedModel

    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF but nothing else")
    interval = sys.getswitchinterval()
    lm = LoadedModel("broken", GgufModel(broken, None, None, threads=1), tokenizer=None)
    lm.model.open_in_background(4096)
    with pytest.raises(ModelError, match="cannot load model 'broken'"):
        lm.ready()
    assert sys.getswitchinterval() == interval
    lm.model.close()  # nothing to free, and no error


@pytest.mark.parametrize("repack", [True, False])
def test_the_weights_are_repacked_or_not_as_the_model_is_laid_out(monkeypatch, repack):
    """What `Llama` reads while one is made: the model parameters `GgufModel.relayout` chose
    (`use_extra_bufts`), llama-cpp-python's own defaults again after."""
    low = pytest.importorskip("llama_cpp.llama_cpp")
    from specedit.engine.llama_params import weights_layout
    from specedit.engine.llamacpp import GgufModel

    default = low.llama_model_default_params().use_extra_bufts
    with weights_layout(repack):
        assert low.llama_model_default_params().use_extra_bufts is repack
    assert low.llama_model_default_params().use_extra_bufts == default
    model = GgufModel(Path("unread.gguf"), None, None, threads=1)
    model._llm = opened = type("Opened", (), {"close": lambda self: closed.append(self)})()
    closed: list = []
    model.relayout(True)  # as loaded: the context stays
    assert model._llm is opened and not closed
    model.relayout(False)  # the next context loads the weights otherwise
    assert model._llm is None and closed == [opened] and model.repack is False


def test_the_bench_s_llama_cpp_decodes_on_the_layout_the_engine_chose(tmp_path, monkeypatch):
    """llama.cpp's own decoding in the bench loads the weights as the engine measured them
    cheaper on this machine (models/load.py `repacked`), so that both time the same kernels."""
    pytest.importorskip("llama_cpp")
    import llama_cpp
    import llama_cpp.llama_cpp as low

    from specedit.bench import llamacpp as bench_llamacpp
    from specedit.engine.cost import PassCost
    from specedit.models.load import cost_path

    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    seen: list[bool] = []

    class Loaded(Exception):
        pass

    def made(**kwargs):
        seen.append(low.llama_model_default_params().use_extra_bufts)
        raise Loaded

    monkeypatch.setattr(llama_cpp, "Llama", made)
    peer = bench_llamacpp.LlamaCpp(str(gguf), threads=2)
    with pytest.raises(Loaded):
        peer._context("llama.cpp", 100)  # no layout measured yet: llama.cpp's default
    path = cost_path(str(gguf), "llama.cpp", "gguf", 2)
    path.parent.mkdir(parents=True, exist_ok=True)
    PassCost((1, 64), (0.04, 0.57), 0.0055, repack=False).save(path)
    with pytest.raises(Loaded):
        peer._context("llama.cpp", 100)
    assert seen == [True, False]
