"""The bench's llama-server peer (bench/llamaserver.py), against a stand-in that speaks the
server's protocol (tests/data/peer/llama-server): how it is started, what it is sent, and what
is read back. Its speed is the bench's business (docs/benchmarks.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specedit.bench import llamaserver
from specedit.editing.prompts import EditPrompt

STAND_IN = Path(__file__).parent.parent / "data" / "peer" / "llama-server"


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A LlamaServer on the stand-in, and the log of what it was started with and sent."""
    log = tmp_path / "log.jsonl"
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setenv(llamaserver.BINARY_VARIABLE, str(STAND_IN))
    monkeypatch.setenv("FAKE_SERVER_LOG", str(log))
    monkeypatch.setenv("FAKE_SERVER_ANSWER", "def f():\n    return 2\n```\nThat is all.")
    peer = llamaserver.LlamaServer(str(model), threads=2)
    yield peer, lambda: [json.loads(line) for line in log.read_text().splitlines()]
    peer.close()


def test_a_server_edit_sends_the_prompt_s_tokens_greedy_and_cold(served):
    peer, logged = served
    prompt = EditPrompt([5, 6, 7], "```", "def f():\n    return 1\n", 0, 1)
    run = peer.run("llama-server-ngram-mod", prompt, 100)
    assert run.text == "def f():\n    return 2\n"  # up to the closing fence
    assert (run.stop, run.new_tokens, run.drafted, run.accepted) == ("stop", 14, 12, 9)
    assert run.seconds == pytest.approx(0.25)
    assert run.passes == 1 + 14 - 1 - 9  # the prompt's, and one a step
    started, warm_up, asked = logged()
    argv = started["argv"]
    assert argv[argv.index("--spec-type") + 1] == "ngram-mod"
    assert argv[argv.index("--threads") + 1] == "2"
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert int(argv[argv.index("--ctx-size") + 1]) >= 3 + 100
    assert warm_up["request"]["n_predict"] == 1
    assert asked["request"] == {
        "prompt": [5, 6, 7],
        "n_predict": 100,
        "temperature": 0.0,
        "stop": ["\n```"],
        "cache_prompt": False,
    }


def test_each_method_has_its_server_and_a_longer_context_restarts_it(served):
    peer, logged = served
    prompt = EditPrompt([5], "```", "x\n", 0, 1)
    peer.run("llama-server", prompt, 10)
    peer.run("llama-server", prompt, 10)  # the same server
    peer.run("llama-server", prompt, 2000)  # a context past 1,024 tokens: another
    peer.run("llama-server-ngram-simple", prompt, 10)
    starts = [entry["argv"] for entry in logged() if "argv" in entry]
    spec = [argv[argv.index("--spec-type") + 1] for argv in starts]
    contexts = [argv[argv.index("--ctx-size") + 1] for argv in starts]
    assert spec == ["none", "none", "ngram-simple"]
    assert contexts == ["1024", "2048", "1024"]


def test_without_a_binary_the_bench_says_how_to_build_one(tmp_path, monkeypatch):
    monkeypatch.setenv(llamaserver.BINARY_VARIABLE, str(tmp_path / "missing"))
    with pytest.raises(llamaserver.PeerUnavailable, match="make llama-server"):
        llamaserver.find_binary()
    monkeypatch.delenv(llamaserver.BINARY_VARIABLE)
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    with pytest.raises(llamaserver.PeerUnavailable, match=str(tmp_path / "llama-server")):
        llamaserver.find_binary()


def test_a_server_row_edits_the_whole_file_and_is_scored_as_any_other(
    served, tiny_model_dir, monkeypatch
):
    from specedit.bench.runner import _run_setup
    from specedit.bench.setups import Setup
    from specedit.bench.tasks import Task
    from specedit.editing.editor import EditRequest
    from specedit.models.load import load

    peer, logged = served
    source = "".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(10))
    expected = source.replace("return 7\n", "return 70\n")
    task = Task("t", "fix", "f7() must return 70", source, expected=expected)
    monkeypatch.setenv("FAKE_SERVER_ANSWER", expected + "```\n")
    lm = load(str(tiny_model_dir), dtype="fp32")
    request = EditRequest(source, task.instruction, prompt="fix", language="python")
    row = _run_setup(lm, task, request, Setup("llama-server-ngram-mod"), None, peer)
    assert (row.method, row.passed, row.stop) == ("llama-server-ngram-mod", True, "stop")
    assert row.server == {"drafted": 12, "accepted": 9}
    sent = logged()[-1]["request"]["prompt"]
    assert lm.tokenizer.decode(sent).count("def f") == 10  # the whole file


def test_a_server_loads_the_weights_as_the_engine_does(served, tmp_path):
    """Unrepacked where the engine measured that cheaper here (models/load.py `repacked`), so
    that both sides time the same kernels; llama.cpp's default otherwise."""
    from specedit.engine.cost import PassCost
    from specedit.models.load import cost_path

    peer, logged = served
    prompt = EditPrompt([5], "```", "x\n", 0, 1)
    peer.run("llama-server", prompt, 10)
    path = cost_path(str(tmp_path / "model.gguf"), "llama.cpp", "gguf", 2)
    path.parent.mkdir(parents=True, exist_ok=True)
    PassCost((1, 64), (0.04, 0.57), 0.0055, repack=False).save(path)
    peer.run("llama-server-ngram-mod", prompt, 10)
    starts = [entry["argv"] for entry in logged() if "argv" in entry]
    assert ["--no-repack" in argv for argv in starts] == [False, True]
