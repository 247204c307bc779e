"""llama.cpp beside specedit in the bench: a clear error without llama-cpp-python; with it (the
`llamacpp` extra, built from source, so not in CI), both llama.cpp setups run on the bundled
model's own GGUF file and stop at the engine's fence."""

from __future__ import annotations

import importlib.util
import json
import sys

import pytest
from conftest import TEST_MODEL
from typer.testing import CliRunner

from specedit import prompts
from specedit.cli import app

HAS_LLAMA_CPP = importlib.util.find_spec("llama_cpp") is not None
# Long enough that the prompt spans more than one of llama.cpp's 512-token batches.
HELPERS = "".join(f"\n\ndef times_{n}(x):\n    return x * {n}\n" for n in range(4, 40))
TASK = {
    "id": "doubled",
    "kind": "fix",
    "instruction": "double() returns the value tripled; it must return it doubled",
    "input": "def double(x):\n    return x * 3\n\n\ndef halve(x):\n    return x / 2\n" + HELPERS,
    "tests": "assert double(4) == 8 and halve(4) == 2 and times_39(1) == 39",
}


def test_bench_says_how_to_get_llama_cpp_when_it_is_missing(tiny_model_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # `import llama_cpp` now fails
    result = CliRunner().invoke(
        app, ["bench", "--model", str(tiny_model_dir), "--methods", "ar,llama.cpp"]
    )
    assert result.exit_code == 2
    assert "pip install 'specedit[llamacpp]'" in result.stderr


@pytest.mark.e2e
@pytest.mark.llamacpp
@pytest.mark.skipif(not HAS_LLAMA_CPP, reason="needs llama-cpp-python (the llamacpp extra)")
def test_llama_cpp_and_its_prompt_lookup_decode_the_same_tokens(bundled_model_dir, tmp_path):
    """Greedy prompt lookup on llama.cpp is exact against llama.cpp's own plain decoding, in fewer
    evaluations; each run starts from an empty cache (no prefix reused from the run before)."""
    from specedit.bench.llamacpp import LlamaCpp
    from specedit.edit import EditRequest, prepare
    from specedit.models import load

    lm = load(TEST_MODEL, "fp32")
    prepared = prepare(lm, EditRequest(TASK["input"], TASK["instruction"], prompt="fix"))
    llama = LlamaCpp(TEST_MODEL, threads=2)
    runs = {}
    try:
        for method in ("llama.cpp", "llama.cpp-pld", "llama.cpp"):
            stop = prompts.FenceStop(lm.tokenizer, prepared.prompt)
            runs.setdefault(method, []).append(
                llama.run(method, prepared.prompt.ids, 1000, stop, lm.eos_token_ids)
            )
    finally:
        llama.close()
    plain, again, lookup = runs["llama.cpp"][0], runs["llama.cpp"][1], runs["llama.cpp-pld"][0]
    assert plain.stop in ("stop", "eos")  # the closing fence, or EOS right after it
    assert plain.tokens == again.tokens == lookup.tokens
    assert plain.passes == again.passes == len(plain.tokens)  # the prompt's pass gives token 1
    assert lookup.passes < plain.passes
    text = prompts.extract(lm.tokenizer, plain.tokens, prepared.prompt)
    assert len(prepared.prompt.ids) > 512 and text.count("\n") == TASK["input"].count("\n")

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(TASK) + "\n")
    report = tmp_path / "report.json"
    result = CliRunner().invoke(app, [
        "bench", "--model", TEST_MODEL, "--dtype", "fp32", "--tasks-file", str(tasks),
        "--methods", "adapld,llama.cpp,llama.cpp-pld", "--json", str(report),
    ])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    report = json.loads(report.read_text())
    rows = {row["method"]: row for row in report["rows"]}
    assert (
        rows["llama.cpp"]["new_tokens"] == rows["llama.cpp-pld"]["new_tokens"] == len(plain.tokens)
    )
    assert rows["llama.cpp-pld"]["forward_passes"] == lookup.passes
    assert set(report["summary"]["adapld"]) >= {"wall_over_llama.cpp", "wall_over_llama.cpp-pld"}
    assert "against llama.cpp" in result.stdout
