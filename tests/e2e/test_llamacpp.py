"""llama.cpp in specedit: beside it in the bench, and under it as an engine (`--engine llama.cpp`).

With llama-cpp-python (the `llamacpp` extra, built from source, so not in CI) the bench's
llama.cpp setups and the engine run the bundled model's own GGUF file, and the engine's copy
drafts are exact against its own plain decoding there. (What every path says without it, and
what needs no model: engine/test_llamacpp.py.)"""

from __future__ import annotations

import json
import operator
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers import ROOT, TEST_MODEL, free_port, serving
from typer.testing import CliRunner

from specedit.cli import app
from specedit.editing import prompts
from specedit.engine.tree import DraftTree

# Long enough that the prompt spans more than one of llama.cpp's 512-token batches.
HELPERS = "".join(f"\n\ndef times_{n}(x):\n    return x * {n}\n" for n in range(4, 40))
# The engine's tests pin the instruction-first layout: there the test model answers TASK with
# the whole file (a long copy to check exactness on), and a second instruction differs inside
# the first prompt head (with the file first it shares the whole head, and the 0.5B answers
# with the changed function alone).
LAYOUT = str(ROOT / "tools/prompt-variants/instruction-first/fix.toml")
TASK = {
    "id": "doubled",
    "kind": "fix",
    "instruction": "double() returns the value tripled; it must return it doubled",
    "input": "def double(x):\n    return x * 3\n\n\ndef halve(x):\n    return x / 2\n" + HELPERS,
    "tests": "assert double(4) == 8 and halve(4) == 2 and times_39(1) == 39",
}


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_the_default_engine_is_llama_cpp_where_it_is_installed(
    bundled_model_dir, tmp_path, monkeypatch
):
    monkeypatch.delenv("SPECEDIT_ENGINE")
    path, stats = tmp_path / "note.txt", tmp_path / "stats.json"
    path.write_text("The quick brown fox jumsp over the lazy dog.\n")
    command = ["rewrite", str(path), "-m", "fix the spelling mistake", "--stats-file", str(stats)]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "The quick brown fox jumps over the lazy dog.\n"
    assert json.loads(stats.read_text())["engine"] == "llama.cpp"


# Runs the CLI in a fresh interpreter and says which heavy libraries the edit imported.
_IMPORTED = """
import contextlib
import sys
from specedit.cli import app
report, sys.argv = sys.argv[1], ["specedit", *sys.argv[2:]]
with contextlib.suppress(SystemExit):
    app(prog_name="specedit")
with open(report, "w") as out:
    out.write(" ".join(name for name in ("torch", "transformers") if name in sys.modules))
"""


@pytest.mark.e2e
@pytest.mark.llamacpp
@pytest.mark.parametrize(("method", "imported"), [("adapld", ""), ("pldplus", "torch")])
def test_an_edit_on_llama_cpp_imports_torch_only_for_a_drafter_that_reads_states(
    bundled_model_dir, tmp_path, method, imported
):
    """torch's import alone takes seconds of a cold edit: the default drafter reads tokens
    only, so an edit on llama.cpp runs without it."""
    path, report = tmp_path / "note.txt", tmp_path / "imported.txt"
    path.write_text("The quick brown fox jumsp over the lazy dog.\n")
    command = [sys.executable, "-c", _IMPORTED, str(report), "rewrite", str(path)]
    command += ["-m", "fix the spelling mistake", "--engine", "llama.cpp", "--method", method]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.stdout == "The quick brown fox jumps over the lazy dog.\n", result.stderr
    assert report.read_text() == imported


LIMIT = 160  # answer tokens: enough to prove exactness, short enough to decode one by one


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_llama_cpp_and_its_prompt_lookup_decode_the_same_tokens(bundled_model_dir):
    """Greedy prompt lookup on llama.cpp is exact against llama.cpp's own plain decoding, in fewer
    evaluations; each run starts from an empty cache (no prefix reused from the run before). The
    first LIMIT tokens of the answer prove it: the prompt alone spans two prefill batches."""
    from specedit.bench.llamacpp import LlamaCpp
    from specedit.editing.editor import EditRequest, prepare
    from specedit.models.load import load

    lm = load(TEST_MODEL, engine="llama.cpp")
    prepared = prepare(lm, EditRequest(TASK["input"], TASK["instruction"], prompt=LAYOUT))
    llama = LlamaCpp(TEST_MODEL, threads=2)
    runs = {}
    try:
        for method in ("llama.cpp", "llama.cpp-pld", "llama.cpp"):
            stop = prompts.FenceStop(lm.tokenizer, prepared.prompt)
            runs.setdefault(method, []).append(
                llama.run(method, prepared.prompt.ids, LIMIT, stop, lm.eos_token_ids)
            )
    finally:
        llama.close()
    plain, again, lookup = runs["llama.cpp"][0], runs["llama.cpp"][1], runs["llama.cpp-pld"][0]
    assert plain.stop == "length" and len(plain.tokens) == LIMIT  # the answer goes on
    assert plain.tokens == again.tokens == lookup.tokens
    assert plain.passes == again.passes == len(plain.tokens)  # the prompt's pass gives token 1
    assert lookup.passes < plain.passes
    assert len(prepared.prompt.ids) > 512


# llama.cpp's batched and one-token kernels round differently (logits move by up to ~0.3 here),
# so a near-tie can flip between them, as in bf16; llama.cpp's own speculative decoding is no
# different. A difference is only allowed where plain decoding's top two are this close.
NEAR_TIE = 1.0


def _first_difference(a: list[int], b: list[int]) -> int | None:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)


def _margin(lm, tokens: list[int]) -> float:
    """Plain decoding's top-two logit gap after `tokens`, in a one-token step, from a cold cache."""
    from specedit.engine.tree import DraftTree

    lm.model.reuse_prefix = False
    try:
        target = lm.model.open_target(len(tokens) + 1)
    finally:
        lm.model.reuse_prefix = True
    target.prefill(tokens[:-1], hidden=False)
    top = np.sort(target.forward(DraftTree(tokens[-1]), len(tokens) - 1, False).logits[0])[-2:]
    return float(top[1] - top[0])


def _assert_plain_up_to_a_near_tie(lm, ids: list[int], plain: list[int], tokens: list[int]):
    """`tokens` are plain decoding's `plain` after `ids`, or part from them at a near-tie."""
    differs = _first_difference(plain, tokens)
    if differs is not None:
        assert _margin(lm, ids + plain[:differs]) < NEAR_TIE
    else:
        assert tokens == plain


def _runs_after(lm, ids: list[int], limit: int):
    """Runs a drafter's generation after `ids`: the first one prefills them into an empty
    cache, each one after it goes on from the same K/V (kept, not computed again), so every
    run, plain decoding's too, starts from the same state."""
    from specedit.engine.session import generate

    lm.model.start_cold()

    def run(drafter):
        eos = lm.eos_token_ids
        return generate(lm.model, ids, drafter, max_new_tokens=limit, eos_token_ids=eos)

    return run


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_the_engine_on_llama_cpp_is_exact_against_its_own_plain_decoding(bundled_model_dir):
    """Copy drafts verified in llama.cpp batches give the tokens of the engine's plain decoding
    on llama.cpp (up to a near-tie, see NEAR_TIE): across several prefill batches, through an EOS
    that a draft carried, and with the token limit inside a draft."""
    from specedit.drafting.registry import make_drafter
    from specedit.editing.editor import EditRequest, prepare
    from specedit.engine.session import generate
    from specedit.models.load import load

    lm = load(TEST_MODEL, engine="llama.cpp")
    prompt = prepare(lm, EditRequest(TASK["input"], TASK["instruction"], prompt=LAYOUT)).prompt

    def run(method: str, limit: int, steps: list | None = None):
        drafter = make_drafter(method, lm.model)
        return generate(
            lm.model,
            prompt.ids,
            drafter,
            max_new_tokens=limit,
            eos_token_ids=lm.eos_token_ids,
            on_step=None if steps is None else steps.append,
        )

    plain = run("ar", 1200)
    steps: list = []
    copied = run("pld", 1200, steps)
    assert len(prompt.ids) > 512  # the prefill spans batches
    assert copied.stats.forward_passes < len(plain.tokens) / 8
    differs = _first_difference(plain.tokens, copied.tokens)
    if differs is not None:
        assert _margin(lm, prompt.ids + plain.tokens[:differs]) < NEAR_TIE
    else:
        assert plain.stop_reason == copied.stop_reason == "eos"
        assert copied.tokens == plain.tokens
        assert steps[-1].sources[-1] is not None  # the EOS was a drafted token, accepted
        text = prompts.extract(lm.tokenizer, copied.tokens, prompt)
        assert text.count("\n") == TASK["input"].count("\n")
    for limit in (1, 37, 130):
        cut = run("pld", limit)
        assert len(cut.tokens) == limit and cut.stop_reason == "length"
        assert cut.tokens == copied.tokens[:limit]  # the same batches up to the limit


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_conditional_verification_on_llama_cpp_relaxes_only_what_it_reports(bundled_model_dir):
    """CASD on llama.cpp's logits. The draft is plain decoding's answer with one digit changed
    (the `3` of `x * 3` made a `2`): with a low threshold that plausible token is accepted
    though the model would have written the `3`, reported as relaxed, and the tokens before it
    are plain decoding's; a threshold no token can pass, or mixed mode's top-1, keeps the `3`."""
    from specedit.editing.editor import EditRequest, prepare
    from specedit.engine.drafter import Drafter
    from specedit.engine.options import STRICT, Verification
    from specedit.engine.session import generate
    from specedit.engine.tree import DraftTree
    from specedit.models.load import load

    lm = load(TEST_MODEL, engine="llama.cpp")
    prompt = prepare(lm, EditRequest(TASK["input"], TASK["instruction"], prompt=LAYOUT)).prompt

    class Scripted(Drafter):
        """Drafts the next tokens of `script`, wherever the answer has got to."""

        def __init__(self, script: list[int]) -> None:
            self.script = script

        def propose(self, memory, budget: int) -> DraftTree:
            done = len(memory.tokens) - len(prompt.ids)
            tree = DraftTree(root=memory.tokens[-1])
            tree.add_chain(self.script[done : done + min(budget, 16)])
            return tree

    def run(drafter: Drafter, verification: Verification = STRICT, steps=None):
        return generate(
            lm.model,
            prompt.ids,
            drafter,
            max_new_tokens=40,
            eos_token_ids=lm.eos_token_ids,
            verification=verification,
            on_step=None if steps is None else steps.append,
        )

    plain = run(Drafter())
    three, two = (lm.tokenizer.encode(digit, add_special_tokens=False) for digit in "32")
    changed = plain.tokens.index(three[0])  # the `3` of `return x * 3`, copied as it was
    script = plain.tokens[:changed] + two + plain.tokens[changed + 1 :]
    steps: list = []
    loose = run(Scripted(script), Verification("conditional", delta=1e-4), steps)
    flags = [flag for step in steps for flag in step.relaxed]
    assert len(flags) == len(loose.tokens) and sum(flags) == loose.stats.relaxed_tokens
    assert flags.index(True) == changed and loose.tokens[changed] == two[0]
    assert loose.tokens[:changed] == plain.tokens[:changed]
    for strict_enough in (Verification("conditional", delta=1.0), Verification("mixed", top_k=1)):
        kept = run(Scripted(script), strict_enough)
        assert kept.stats.relaxed_tokens == 0 and kept.tokens[changed] == three[0]


@pytest.mark.e2e
@pytest.mark.llamacpp
@pytest.mark.llamacpp_server
def test_the_cli_edits_through_llama_cpp_s_openai_compatible_server(bundled_model_dir, tmp_path):
    """The README's llama.cpp recipe, as far as it runs here: `--server` on llama-cpp-python's
    server (what llama-server speaks) gets the edit back with every CLI guarantee."""
    from specedit.models.bundled import gguf_file

    port = free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(gguf_file(TEST_MODEL)),
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        "2",
    ]
    path = tmp_path / "calc.py"
    original = "def double(x):\n    return x * 3\n"
    path.write_text(original)
    with serving(command, port) as url:
        runner = CliRunner()
        instruction = "double() returns x * 3; it must return x * 2"
        result = runner.invoke(
            app, ["fix", str(path), instruction, "--server", url, "--stats", "json"]
        )
        assert result.exit_code == 0, result.stderr
        edited = result.stdout
        assert edited.startswith("def double(x):")  # the answer's code block, nothing else
        stats = json.loads(result.stderr.strip().splitlines()[-1])
        assert stats["new_tokens"] > 0
        result = runner.invoke(app, ["fix", str(path), instruction, "--server", url, "-i"])
        assert result.exit_code == 0, result.stderr
        assert result.stdout == "" and path.read_text() == edited  # greedy: the same answer


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_a_warm_llama_cpp_model_reuses_the_prompt_prefix_it_holds(bundled_model_dir):
    """A second prompt prefills only what it does not share with the cache, and decodes as a cold
    run does (up to a near-tie)."""
    from specedit.models.load import load

    lm = load(TEST_MODEL, engine="llama.cpp")
    first, second = _two_prompts(lm)
    shared = _first_difference(first, second)
    assert 0 < shared < len(first)
    cold = _decode(lm.model, second, reuse=False)
    _decode(lm.model, first)
    target = lm.model.open_target(len(second) + 100)
    target.prefill(first[:-1], hidden=False)
    assert target.reused == len(first) - 1  # all of it was there
    _assert_alike_up_to_a_near_tie(lm, second, cold, _decode(lm.model, second))


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_a_cold_start_holds_nothing_and_what_follows_it_reuses_its_cache(bundled_model_dir):
    """The bench starts each edit cold: the next generation prefills its whole prompt, and the
    generations after it (a statement's, then the file's) reuse what it left."""
    from specedit.models.load import load

    lm = load(TEST_MODEL, engine="llama.cpp")
    first, second = _two_prompts(lm)
    store, lm.model.store = lm.model.store, None  # as the bench runs: no heads from disk
    try:
        _decode(lm.model, first)
        lm.model.start_cold()
        target = lm.model.open_target(len(second) + 100)
        target.prefill(second[:-1], hidden=False)
        assert target.reused == 0
        target = lm.model.open_target(len(second) + 100)
        target.prefill(first[:-1], hidden=False)
        assert target.reused == _first_difference(first, second)
    finally:
        lm.model.store = store


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_a_warm_model_gets_back_the_prompt_of_a_file_it_read_before_another(bundled_model_dir):
    """As a server with files in memory: a second instruction on a file, after an edit of
    another file, prefills only what differs from the first instruction's prompt."""
    from specedit.editing.editor import EditRequest, prepare
    from specedit.models.load import load
    from specedit.models.prefixes import RecentHeads

    lm = load(TEST_MODEL, engine="llama.cpp")
    other = HELPERS.replace("times_", "plus_").replace("x *", "x +")
    a1, b, a2 = (
        prepare(lm, EditRequest(text, instruction)).prompt.ids
        for text, instruction in (
            (TASK["input"], TASK["instruction"]),
            (other, "plus_4 must add 5"),
            (TASK["input"], "halve() must return x / 2 exactly"),
        )
    )
    store, lm.model.store = lm.model.store, RecentHeads(1 << 30)
    try:
        lm.model.start_cold()
        reused = []
        for prompt in (a1, b, a2):
            target = lm.model.open_target(len(prompt) + 100)
            target.prefill(prompt[:-1], hidden=False)
            reused.append(target.reused)
        kept = len(lm.model.store)
    finally:
        lm.model.store = store
    assert reused[:2] == [0, _first_difference(a1, b)]  # a new file: the system prompt alone
    assert reused[2] == _first_difference(a1, a2) > len(a2) // 2  # the file, from memory
    assert kept == 2  # the two files' first prompts; the second instruction added little


def _two_prompts(lm) -> tuple[list[int], list[int]]:
    """The task's file under two instructions: prompts that share their head."""
    from specedit.editing.editor import EditRequest, prepare

    return tuple(
        prepare(lm, EditRequest(TASK["input"], instruction, prompt=LAYOUT)).prompt.ids
        for instruction in (TASK["instruction"], "halve() must return x / 2 exactly")
    )


def _decode(model, prompt: list[int], reuse: bool = True) -> list[int]:
    """60 tokens of `pld`; without `reuse`, from an empty cache."""
    from specedit.drafting.registry import make_drafter
    from specedit.engine.session import generate

    model.reuse_prefix = reuse
    try:
        return generate(model, prompt, make_drafter("pld", model), max_new_tokens=60).tokens
    finally:
        model.reuse_prefix = True


def _assert_alike_up_to_a_near_tie(lm, prompt: list[int], cold: list[int], warm: list[int]):
    differs = _first_difference(cold, warm)
    assert differs is None or _margin(lm, prompt + cold[:differs]) < NEAR_TIE


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_the_context_opens_in_the_background_and_is_the_one_used(bundled_model_dir):
    """`load(..., context=N)` starts llama.cpp's load on a thread; the first generation that
    fits uses that context, a longer one opens a larger one."""
    from specedit.models.load import load

    interval = sys.getswitchinterval()
    lm = load(TEST_MODEL, engine="llama.cpp", threads=2, context=5000)
    try:
        assert lm.model._opening is not None  # begun, not yet waited for
        opened = lm.model.open_target(6000).llm
        assert sys.getswitchinterval() == interval  # shortened during the load only
        assert opened.n_ctx() == 8192  # 5000 tokens, in steps of 4096
        assert lm.model.open_target(8000).llm is opened  # fits: no second load
        larger = lm.model.open_target(9000).llm
        assert larger is not opened and larger.n_ctx() == 12288
    finally:
        lm.model.close()


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_a_fresh_context_starts_from_the_prompt_head_kept_on_disk(bundled_model_dir, tmp_path):
    """As cold processes would: a prompt leaves itself as a head, a later prompt gets back the
    head it shares most with, prefills only the rest, and decodes as a cold run does (up to a
    near-tie)."""
    from specedit.engine.llamacpp import GgufModel
    from specedit.models.load import load
    from specedit.models.prefixes import PrefixStore

    lm = load(TEST_MODEL, engine="llama.cpp")
    first, second = _two_prompts(lm)
    shared = _first_difference(first, second)
    assert len(first) > 512  # longer than a prefill batch

    def fresh(store: PrefixStore) -> GgufModel:
        model = lm.model
        return GgufModel(
            model.path, model.config, model.generation_config, model.threads, store, model.repack
        )

    def reused(store: PrefixStore, prompt: list[int]) -> int:
        model = fresh(store)
        try:
            target = model.open_target(len(prompt) + 100)
            target.prefill(prompt[:-1], hidden=False)
            return target.reused
        finally:
            model.close()

    store = PrefixStore(tmp_path / "heads")

    def heads() -> int:
        return len(list(store.folder.glob("*.head")))

    assert reused(store, first) == 0 and heads() == 1
    assert reused(store, second) == shared and heads() == 2  # its own head differs: kept
    assert reused(store, first) == len(first) - 1 and heads() == 2  # all of it: nothing new
    only_first = PrefixStore(tmp_path / "first")
    reused(only_first, first)
    model = fresh(only_first)
    try:
        warm = _decode(model, second)  # from the first prompt's head, cut where they differ
    finally:
        model.close()
    _assert_alike_up_to_a_near_tie(lm, second, _decode(lm.model, second, reuse=False), warm)


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_a_cold_edit_on_llama_cpp_never_imports_transformers(bundled_model_dir, tmp_path):
    """Its import is a second of a cold start: the tokenizer is read without it once exported
    (the first load on a machine may export it)."""
    path = tmp_path / "add.py"
    path.write_text("def add(a, b):\n    return a - b\n")
    args = [
        "fix",
        str(path),
        "add must return the sum",
        "--engine",
        "llama.cpp",
        "--model",
        TEST_MODEL,
        "-q",
    ]
    code = (
        "import sys\n"
        "from specedit.cli import app\n"
        f"try:\n    app({args!r})\n"
        "except SystemExit as done:\n    assert done.code == 0, done.code\n"
        "print('transformers' in sys.modules, file=sys.stderr)\n"
    )
    for _ in range(2):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == "False"
    assert result.stdout.startswith("def add(a, b):")


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_measuring_the_pass_cost_keeps_no_prompt_head(bundled_model_dir, tmp_path, monkeypatch):
    """The probe's tokens are no prompt: measuring neither reads nor records a head, and the
    cache it leaves counts as cold, so the next prompt still starts from a stored head. (What
    is measured is the engine tests' business: the probe's timed prefill is cut short here.)"""
    from specedit.editing.editor import EditRequest, prepare
    from specedit.engine import cost
    from specedit.engine.llamacpp import GgufModel
    from specedit.models.load import load
    from specedit.models.prefixes import PrefixStore

    monkeypatch.setattr(cost, "PROBE_PROMPT", 16)
    lm = load(TEST_MODEL, engine="llama.cpp")
    first = prepare(lm, EditRequest("def double(x):\n    return x * 3\n", "double it")).prompt.ids
    model = lm.model

    def fresh(store: PrefixStore) -> GgufModel:
        return GgufModel(
            model.path, model.config, model.generation_config, model.threads, store, model.repack
        )

    def prefilled(gguf: GgufModel) -> int:
        target = gguf.open_target(len(first) + 100)
        target.prefill(first[:-1], hidden=False)
        return target.reused

    probed = fresh(PrefixStore(tmp_path / "none"))
    try:
        cost.measure(probed, sizes=(1, 2))
        cost.measure(probed, sizes=(1, 2))
        assert not (tmp_path / "none").exists()
    finally:
        probed.close()
    store = PrefixStore(tmp_path / "heads")
    # The first leaves its prompt as a head; the second, after a probe, reads all of it back.
    for reused in (0, len(first) - 1):
        gguf = fresh(store)
        try:
            cost.measure(gguf, sizes=(1, 2))
            assert prefilled(gguf) == reused
        finally:
            gguf.close()


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_the_floor_probe_leaves_the_cache_as_one_prefill_of_its_tokens(bundled_model_dir):
    """The floor's probe feeds batches after passes whose roots it keeps, and drops a batch to
    feed it again: the cache then holds exactly those tokens, and scores what follows them as a
    plain prefill of the same tokens does."""
    from specedit.engine import cost
    from specedit.models.load import load

    lm = load(TEST_MODEL, engine="llama.cpp")
    targets = []
    opened = lm.model.open_target

    def keeping(capacity, reuse=True):
        targets.append(opened(capacity, reuse))
        return targets[-1]

    lm.model.open_target = keeping
    try:
        measured = cost.measure_context(lm.model, 256, widest=16)
    finally:
        del lm.model.open_target
    assert measured.prefill[0] > 0 and measured.verify[0] > 0
    probe = targets[0]
    held = list(probe.held)
    assert len(held) == 4 * (64 + cost.PROBE_SAMPLES)
    chain = DraftTree(7)
    chain.add_chain([8, 9])
    after_probe = probe.forward(chain, len(held), False).logits
    plain = lm.model.open_target(len(held) + 8, reuse=False)
    plain.prefill(held, False)
    fed = plain.forward(chain, len(held), False).logits
    assert float(np.abs(after_probe - fed).max()) < NEAR_TIE  # the batched kernels' rounding


def _tree_path(tree, node: int) -> list[int]:
    path = []
    while node >= 0:
        path.append(node)
        node = tree.parent(node)
    return path[::-1]


def _empty_target(model, capacity: int):
    """A target on `model` with an empty cache (no head reused or kept)."""
    model.reuse_prefix = False
    try:
        return model.open_target(capacity)
    finally:
        model.reuse_prefix = True


def _fresh_target(model, prefix: list[int]):
    """A target on `model` with only `prefix` prefilled (no head reused or kept)."""
    target = _empty_target(model, len(prefix) + 100)
    target.prefill(prefix, hidden=False)
    return target


CODE = "def double(x):\n    return x * 2\n\n\ndef triple(x):\n    return x * 3\n\n\ndef"


def _code_tree(encode) -> tuple[list[int], DraftTree]:
    """CODE's tokens but the last, and a branching tree after them: the main chain ` quadruple
    (x):\n    return`, a second child deep in it (`(` after ` quad`), and other children of the
    root, one with a child of its own."""
    prompt = encode(CODE)
    tree = DraftTree(prompt[-1])
    quad = tree.add(encode(" quad")[0], 0)
    tree.add_chain(encode("ruple(x):\n    return"), quad)
    branch = tree.add(encode(" double")[0], 0)
    tree.add(encode("_")[0], branch)
    tree.add(encode("(")[0], quad)
    tree.add(encode(" half")[0], 0)
    return prompt[:-1], tree


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_a_tree_pass_on_llama_cpp_gives_each_path_its_own_logits(bundled_model_dir):
    """One batch over a branching tree (shared nodes in several sequences) scores each node as a
    chain pass over its path does, up to the batched kernels' rounding (an argmax may flip only
    at a near-tie); keeping a path that is not the main chain leaves the cache as if the path
    alone had been fed."""
    from specedit.engine.llamacpp import _sequences
    from specedit.engine.tree import DraftTree
    from specedit.models.load import load

    lm = load(TEST_MODEL, engine="llama.cpp", threads=1)  # quicker on shared cores
    encode = lm.tokenizer.encode
    prefix, tree = _code_tree(encode)
    quad = tree.children()[0][0]
    side = tree.children()[quad][-1]  # a second child deep in the tree
    sequences = _sequences(tree)
    assert sequences[0] == [0, 1, 2, 3] and sequences[quad] == [0, 1] and sequences[side] == [1]

    target = _fresh_target(lm.model, prefix)
    assert target.trees  # the installed llama-cpp-python opens unified multi-sequence caches
    logits = target.forward(tree, len(prefix), False).logits
    assert logits.shape[0] == len(tree)
    for node in range(len(tree)):
        path = [tree.token(n) for n in _tree_path(tree, node)]
        chain = DraftTree(path[0])
        chain.add_chain(path[1:])
        alone = _fresh_target(lm.model, prefix).forward(chain, len(prefix), False).logits[-1]
        assert float(np.abs(logits[node] - alone).max()) < NEAR_TIE
        if int(logits[node].argmax()) != int(alone.argmax()):
            top = np.sort(alone)[-2:]
            assert float(top[1] - top[0]) < NEAR_TIE

    kept = _tree_path(tree, side)  # root, " quad", "(": sequence 1, not 0
    target = _fresh_target(lm.model, prefix)
    target.forward(tree, len(prefix), False)
    target.keep(len(prefix), kept)
    accepted = prefix + [tree.token(n) for n in kept]
    assert target.held == accepted
    following = DraftTree(encode("x")[0])
    following.add_chain(encode("):\n"))
    after = target.forward(following, len(accepted), False).logits
    fed = _fresh_target(lm.model, accepted).forward(following, len(accepted), False).logits
    assert float(np.abs(after - fed).max()) < NEAR_TIE
    assert after.argmax(-1).tolist() == fed.argmax(-1).tolist()


# A token's final state from a batch and from a one-token step differ as their logits do, by the
# kernels' rounding: on the bundled 0.5B by up to 1.35 in an element (elements reach 120; 2-3% of
# a state's norm, cosine above 0.9996), while consecutive tokens' states differ by 17 or more in
# some element. The tolerance lies between: 3x the one, a quarter of the other.
STATE_TOLERANCE = 4.0


def _plain_states(path: Path, prefix: list[int], tree: DraftTree):
    """Each token's final state as llama-cpp-python's own decoding of the file gives it, one
    token a step with embeddings on: the prefix's, then each node's of `tree` after it (each
    leaf's path decoded after the prefix)."""
    import llama_cpp
    import numpy as np
    import torch

    llm = llama_cpp.Llama(model_path=str(path), n_ctx=512, n_threads=1, verbose=False)
    llama_cpp.llama_set_embeddings(llm._ctx.ctx, True)

    def feed(tokens: list[int], start: int) -> list:
        rows = []
        for position, token in enumerate(tokens, start):
            llm._batch.set_batch([token], n_past=position, logits_all=True)
            llm._ctx.decode(llm._batch)
            state = llama_cpp.llama_get_embeddings_ith(llm._ctx.ctx, 0)  # reused by the next
            rows.append(torch.tensor(np.ctypeslib.as_array(state, shape=(llm.n_embd(),))))
        return rows

    try:
        before = torch.stack(feed(prefix, 0))
        nodes = [None] * len(tree)
        children = tree.children()
        for leaf in (node for node in range(len(tree)) if not children[node]):
            llama_cpp.llama_memory_seq_rm(llm._ctx.memory, 0, len(prefix), -1)
            path = _tree_path(tree, leaf)
            for node, row in zip(path, feed([tree.token(n) for n in path], len(prefix))):
                nodes[node] = row
        return before, torch.stack(nodes)
    finally:
        llm.close()


def _alike_states(states, plain) -> bool:
    import torch

    return torch.allclose(states, plain, rtol=0, atol=STATE_TOLERANCE)


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_llama_cpp_gives_each_token_s_final_state_as_its_plain_decoding_does(bundled_model_dir):
    """Asked for hidden states, a prefill, a chain pass and a tree pass give each token's final
    normed state, under the final layer's index, as plain one-token decoding gives it (up to
    the kernels' rounding, STATE_TOLERANCE; another token's state is farther), and the same
    logits as without states: bit for bit on a chain; on a tree, up to the rounding of other
    batch shapes (NEAR_TIE), since with states on llama.cpp may split a batch of several
    sequences otherwise (seen on an AVX2-only CPU: up to 0.64, every row in place)."""

    from specedit.models.load import load

    lm = load(TEST_MODEL, engine="llama.cpp", threads=1)  # quicker on shared cores
    final = lm.model.config.num_hidden_layers
    assert lm.model.state_layers == (final,)
    prefix, tree = _code_tree(lm.tokenizer.encode)
    for drafted in (tree.main_chain(), tree):
        plain_prefix, plain = _plain_states(lm.model.path, prefix, drafted)
        passed = _fresh_target(lm.model, prefix).forward(drafted, len(prefix), True)
        without = _fresh_target(lm.model, prefix).forward(drafted, len(prefix), False)
        assert without.hidden_states is None
        if drafted.is_chain():
            assert np.array_equal(passed.logits, without.logits)
        else:
            assert float(np.abs(passed.logits - without.logits).max()) < NEAR_TIE
        assert set(passed.hidden_states) == {final}
        assert _alike_states(passed.hidden_states[final][0], plain)
    target = _empty_target(lm.model, len(prefix) + 100)
    assert target.state_layers == (final,)
    states = target.prefill(prefix, hidden=True)[final][0]
    assert _alike_states(states, plain_prefix)
    assert not _alike_states(states[1:], plain_prefix[:-1])  # another token's state is not


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_held_tokens_are_reused_for_states_only_with_their_states(bundled_model_dir, tmp_path):
    """A prefill asked for states reuses held K/V only where the held tokens' states were kept
    with them: in a warm context after a prefill that computed them, and from a prompt head
    kept on disk with its states; not after a prefill without states, nor from a head kept
    without. Reused rows are the states computed before, bit for bit."""
    import torch

    from specedit.engine.llamacpp import GgufModel
    from specedit.models.load import load
    from specedit.models.prefixes import PrefixStore

    lm = load(TEST_MODEL, engine="llama.cpp", threads=1)
    final = lm.model.config.num_hidden_layers
    first, second = (lm.tokenizer.encode(CODE + end) for end in (" quadruple(x):", " half(x):"))
    shared = _first_difference(first, second)
    assert shared >= PrefixStore.MIN_TOKENS

    def fresh(store: PrefixStore | None = None) -> GgufModel:
        model = lm.model
        return GgufModel(model.path, model.config, model.generation_config, 1, store, model.repack)

    def prefill(model: GgufModel, prompt: list[int], hidden: bool):
        target = model.open_target(100)
        states = target.prefill(prompt, hidden)
        return target.reused, states[final][0] if hidden else None

    warm = fresh()
    try:
        assert prefill(warm, first, hidden=False)[0] == 0
        reused, computed = prefill(warm, second, hidden=True)
        assert reused == 0  # first's states were not computed: all of it again
        reused, states = prefill(warm, first, hidden=True)
        assert reused == shared and torch.equal(states[:shared], computed[:shared])
    finally:
        warm.close()
    store = PrefixStore(tmp_path / "heads")
    for prompt, hidden, reused in ((first, False, 0), (second, True, 0), (first, True, shared)):
        cold = fresh(store)
        try:
            got = prefill(cold, prompt, hidden)
        finally:
            cold.close()
        assert got[0] == reused  # first's head was kept without states, second's with them
    assert torch.equal(got[1], states)  # as in the warm context: the same batches


@pytest.mark.e2e
def test_the_gguf_file_s_vocabulary_is_the_torch_engine_s_and_so_are_its_indexes(
    bundled_model_dir,
):
    """The token embeddings and LM head read from the bundled GGUF file (which has both: not
    tied) are the torch engine's matrices of the same file, equal, and keyed alike: the
    vocabulary indexes either engine builds are the other's."""
    import torch

    from specedit.drafting.artefacts import weights_key
    from specedit.models.bundled import gguf_file
    from specedit.models.gguf_weights import gguf_vocabulary
    from specedit.models.load import load

    model = load(TEST_MODEL, "fp32").model
    read = gguf_vocabulary(gguf_file(TEST_MODEL))
    held = (model.get_input_embeddings().weight, model.get_output_embeddings().weight)
    assert read[0] is not read[1]
    for matrix, weights in zip(read, held, strict=True):
        assert torch.equal(matrix[:], weights)
        assert weights_key(matrix) == weights_key(weights)
        bf16 = weights.to(torch.bfloat16)
        assert weights_key(matrix.held_as(torch.bfloat16)) == weights_key(bf16)


class _DecoyFirst:
    """pld's copy drafted as the second child of the root, under a wrong first child with a
    chain of its own, and with a wrong leaf beside the copy's second token: every accepted
    copy is a path of a sequence other than 0, through nodes shared with another sequence."""

    name = "decoy-first"
    hidden_layers = ()

    def __init__(self, model, vocabulary: int) -> None:
        from specedit.drafting.registry import make_drafter

        self.copy, self.vocabulary = make_drafter("pld", model), vocabulary

    def propose(self, memory, budget):
        from specedit.engine.tree import DraftTree

        chain = self.copy.propose(memory, max(budget - 4, 0))
        tree = DraftTree(chain.root)
        if budget < 5 or len(chain) == 1:
            return tree
        wrong = (chain.tokens[0] + 1) % self.vocabulary
        tree.add_chain([wrong, wrong], 0, kind="decoy")
        node = tree.add(chain.tokens[0], 0, chain.sources[0], kind="copy")
        for offset, token in enumerate(chain.tokens[1:], start=1):
            node = tree.add(token, node, chain.sources[offset], kind="copy")
            if offset == 1:
                tree.add((token + 1) % self.vocabulary, tree.parent(node), kind="decoy")
        return tree

    def observe(self, tree, accepted):
        pass

    def report(self):
        return {}


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_tree_drafts_on_llama_cpp_are_exact_against_its_own_plain_decoding(bundled_model_dir):
    """Trees verified in one llama.cpp batch, their accepted branch kept as sequence 0, give the
    tokens of plain decoding on llama.cpp (up to a near-tie, see NEAR_TIE): a drafter whose
    copies are never the first child, the draft pool's own trees, AdaPLD's with every part
    (adapld-states: its rerank on llama.cpp's final states, its branch tokens from the GGUF
    file's LM head) and with its token-only parts (adapld there); and pldplus's chains,
    reranked on the final states."""
    import specedit.bench.ablations  # noqa: F401  (adapld-states is an ablation)
    from specedit.drafting.copying.adapld import TokenAdaPLD
    from specedit.drafting.kinds import BRANCH
    from specedit.drafting.registry import DraftSources, make_drafter
    from specedit.editing.editor import EditRequest, prepare
    from specedit.models.load import load

    lm = load(TEST_MODEL, engine="llama.cpp")
    final = lm.model.config.num_hidden_layers
    prepared = prepare(lm, EditRequest(TASK["input"], TASK["instruction"], prompt=LAYOUT))
    prompt = prepared.prompt
    run = _runs_after(lm, prompt.ids, 200)
    plain = run(make_drafter("ar", lm.model))
    start, end = prompt.input_start, prompt.input_end
    pool = run(make_drafter("pool", lm.model, DraftSources(start, prompt.ids[start:end])))
    decoy = run(_DecoyFirst(lm.model, lm.model.config.vocab_size))
    adapld, trees, memories = make_drafter("adapld-states", lm.model), [], []
    propose = adapld.propose

    def propose_and_keep(memory, budget):
        memories.append(memory)
        trees.append(propose(memory, budget))
        return trees[-1]

    adapld.propose = propose_and_keep
    assert adapld.hidden_layers == (final,) and adapld.vocabulary is not None
    full = run(adapld)
    default = make_drafter("adapld", lm.model)
    assert isinstance(default, TokenAdaPLD) and not default.hidden_layers
    token_only = run(default)
    pldplus = run(make_drafter("pldplus", lm.model))
    assert decoy.stats.accepted_paths["copy"] > 3  # copies taken through sequences 1 and up
    assert any(tree.kind(n) == BRANCH for tree in trees for n in range(len(tree)))
    # The branches' LM head (the GGUF file's, through its HNSW index) on llama.cpp's final
    # states ranks first what llama.cpp chose after nearly every output position. Whether a
    # branch is then taken depends on where the copies break off, which a CPU's rounding
    # moves, so that is not asked.
    memory = memories[-1]
    states, start = memory.hidden(final), memory.prompt_length - 1
    chosen = memory.tokens[start + 1 : len(states) + 1]
    ranked = [adapld.vocabulary.top_tokens(state, 1)[0] for state in states[start:]]
    assert len(chosen) > 100 and sum(map(operator.eq, ranked, chosen)) >= 0.95 * len(chosen)
    for run_ in (decoy, pool, full, token_only, pldplus):
        assert run_.stats.forward_passes < len(plain.tokens) / 4
        _assert_plain_up_to_a_near_tie(lm, prompt.ids, plain.tokens, run_.tokens)


# An edit that writes new text, where copies fail and the draft model's chains are what drafts.
DOCSTRINGS = {
    "instruction": "add a one-line docstring to each function",
    "input": "def double(x):\n    return x * 2\n\n\ndef halve(x):\n    return x / 2\n",
}


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_the_hybrid_with_a_llama_cpp_draft_model_is_exact_against_plain_decoding(
    bundled_model_dir,
):
    """evospec on llama.cpp, its draft model the same GGUF file in a context of its own, its
    dynamic vocabulary applied to its logits: the draft model is asked, its tokens are
    accepted, and the tokens are plain decoding's on llama.cpp (up to a near-tie, see
    NEAR_TIE)."""
    from specedit.drafting.registry import DraftSources, make_drafter
    from specedit.editing.editor import EditRequest, prepare
    from specedit.models.load import load, with_draft

    lm = with_draft(load(TEST_MODEL, engine="llama.cpp", threads=1), TEST_MODEL)
    lm.ready()
    assert lm.draft.model is not lm.model  # a context of its own
    prompt = prepare(lm, EditRequest(DOCSTRINGS["input"], DOCSTRINGS["instruction"])).prompt
    run = _runs_after(lm, prompt.ids, 120)
    plain = run(make_drafter("ar", lm.model))
    start, end = prompt.input_start, prompt.input_end
    sources = DraftSources(start, prompt.ids[start:end], draft=lm.draft)
    hybrid = run(make_drafter("evospec", lm.model, sources))
    report = hybrid.stats.drafting
    assert report["draft_model_steps"] > 0 and report["model_tokens_accepted"] > 0
    assert hybrid.stats.forward_passes < len(plain.tokens) / 2
    _assert_plain_up_to_a_near_tie(lm, prompt.ids, plain.tokens, hybrid.tokens)


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_the_cli_edits_on_llama_cpp_with_a_draft_model(bundled_model_dir, tmp_path):
    """`--engine llama.cpp --draft-model` loads both GGUF files and edits with the hybrid,
    which is the default method there with a draft model."""
    path, stats = tmp_path / "code.py", tmp_path / "stats.json"
    path.write_text(DOCSTRINGS["input"])
    command = [
        *("edit", str(path), DOCSTRINGS["instruction"], "--engine", "llama.cpp"),
        *("--model", TEST_MODEL, "--draft-model", TEST_MODEL, "--threads", "1"),
        *("--max-new-tokens", "200", "--stats-file", str(stats)),
    ]
    result = CliRunner().invoke(app, command)
    assert result.exit_code == 0, result.stderr
    assert "def double(x):" in result.stdout and '"""' in result.stdout
    recorded = json.loads(stats.read_text())
    assert recorded["engine"] == "llama.cpp" and recorded["method"] == "evospec"
    assert "draft_model_steps" in recorded["drafting"]
