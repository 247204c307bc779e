"""Exactness of the engine: tree passes, cache compaction, greedy equality with `generate`."""

from __future__ import annotations

import pytest
import torch
from helpers import (
    INPUT_THEN_MORE,
    ChainsOnly,
    OracleDrafter,
    draft_sources,
    greedy_reference,
    main_copy_after,
    repeating_prompt,
    tiny_model,
)
from transformers import DynamicCache

from specedit.bench.ablations import ABLATIONS, needs_draft_model
from specedit.calibrate.preverifier import save
from specedit.drafting.copying.copy import add_copy, rerank_layer
from specedit.drafting.copying.preverifier import PreVerifierNet
from specedit.drafting.registry import METHODS, VARIANTS, make_drafter
from specedit.engine.cache import keep_path
from specedit.engine.memory import Memory
from specedit.engine.session import generate
from specedit.engine.target import TransformersTarget
from specedit.engine.tree import DraftTree


def _run_pass(model, prefix: list[int], tree: DraftTree):
    cache = DynamicCache(config=model.config)
    model(input_ids=torch.tensor([prefix]), cache=cache, use_cache=True)
    ids, positions, mask = tree.inputs(len(prefix), model.dtype)
    out = model(input_ids=ids, position_ids=positions, attention_mask=mask, cache=cache)
    return out.logits[0], cache


def _branchy_tree(root: int) -> DraftTree:
    tree = DraftTree(root=root)
    a = tree.add(5, 0)
    tree.add_chain([6, 7, 8], a)
    b = tree.add(9, 0)
    tree.add(10, b)
    tree.add(11, a)
    return tree


def _path(tree: DraftTree, node: int) -> list[int]:
    path = []
    while node >= 0:
        path.append(node)
        node = tree.parent(node)
    return path[::-1]


@pytest.mark.parametrize("kind,attn", [("qwen2", "sdpa"), ("llama", "eager")])
def test_tree_pass_matches_each_path_run_alone(kind, attn):
    model = tiny_model(kind, attn=attn)
    prefix = repeating_prompt(1)[:10]
    tree = _branchy_tree(root=3)
    logits, _ = _run_pass(model, prefix, tree)
    for node in range(len(tree)):
        alone = [tree.token(n) for n in _path(tree, node)]
        expected = model(input_ids=torch.tensor([prefix + alone])).logits[0, -1]
        torch.testing.assert_close(logits[node], expected, atol=1e-4, rtol=1e-4)


def test_compacted_cache_equals_cache_of_accepted_sequence(qwen_tiny):
    prefix = repeating_prompt(2)[:10]
    tree = _branchy_tree(root=3)
    _, cache = _run_pass(qwen_tiny, prefix, tree)
    accepted = [0, 3, 4]  # root, then node 3 (token 7 under 6 under 5)? no: follow real parents
    accepted = _path(tree, 4)  # root -> 5 -> 6 -> 7
    keep_path(cache, len(prefix), accepted)
    direct = DynamicCache(config=qwen_tiny.config)
    sequence = prefix + [tree.token(n) for n in accepted]
    qwen_tiny(input_ids=torch.tensor([sequence]), cache=direct, use_cache=True)
    assert cache.get_seq_length() == len(sequence)
    for mine, theirs in zip(cache.layers, direct.layers, strict=True):
        torch.testing.assert_close(mine.keys, theirs.keys, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(mine.values, theirs.values, atol=1e-5, rtol=1e-5)


def test_compaction_of_a_non_prefix_path_moves_entries(qwen_tiny):
    """Accepting the second branch needs a real gather, not just a crop."""
    prefix = repeating_prompt(3)[:8]
    tree = _branchy_tree(root=3)
    _, cache = _run_pass(qwen_tiny, prefix, tree)
    accepted = _path(tree, 6)  # root -> 9 -> 10: nodes 0, 5, 6
    assert accepted != list(range(len(accepted)))
    keep_path(cache, len(prefix), accepted)
    direct = DynamicCache(config=qwen_tiny.config)
    sequence = prefix + [tree.token(n) for n in accepted]
    qwen_tiny(input_ids=torch.tensor([sequence]), cache=direct, use_cache=True)
    for mine, theirs in zip(cache.layers, direct.layers, strict=True):
        torch.testing.assert_close(mine.keys, theirs.keys, atol=1e-5, rtol=1e-5)


def test_the_ablations_vary_methods_and_are_made_by_name_but_chosen_by_none():
    """The bench's ablations each vary a product method; the registry makes them by name once
    the bench has added them, but no `--method` offers them."""
    assert all(ablation.method in METHODS for ablation in ABLATIONS.values())
    assert set(ABLATIONS) <= set(VARIANTS) and not set(ABLATIONS) & set(METHODS)


# pldplus-attn needs calibrated heads (calibrate/test_heads.py checks it with explicit ones),
# the draft model methods a second model (drafting/test_hybrid.py).
@pytest.mark.parametrize(
    "method",
    sorted(m for m in {*METHODS, *ABLATIONS} if m != "pldplus-attn" and not needs_draft_model(m)),
)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_lookup_drafters_equal_generate(qwen_tiny, method, seed, tmp_path, monkeypatch):
    if "trained" in method:  # any pre-verifier will do: exactness must not depend on it
        monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
        layer = rerank_layer(qwen_tiny.config.num_hidden_layers)
        save(PreVerifierNet(qwen_tiny.config.hidden_size, layer), qwen_tiny)
    prompt = repeating_prompt(seed)
    reference = greedy_reference(qwen_tiny, prompt, 48)
    result = generate(qwen_tiny, prompt, make_drafter(method, qwen_tiny), max_new_tokens=48)
    assert result.tokens == reference
    assert result.stop_reason == "length"
    assert result.stats.new_tokens == 48


@pytest.mark.parametrize("model_name", ["qwen_tiny", "llama_tiny_eager"])
@pytest.mark.parametrize("seed", [0, 4])
def test_greedy_tree_drafts_equal_generate_and_accept_long_paths(request, model_name, seed):
    model = request.getfixturevalue(model_name)
    prompt = repeating_prompt(seed)
    reference = greedy_reference(model, prompt, 80)
    drafter = OracleDrafter(reference, len(prompt))
    result = generate(model, prompt, drafter, max_new_tokens=80)
    assert result.tokens == reference
    assert max(result.stats.accepted_lengths) >= 10  # long drafts really were accepted
    assert result.stats.forward_passes < 40


def test_eos_inside_an_accepted_draft_stops_there(qwen_tiny):
    prompt = repeating_prompt(5)
    free_run = greedy_reference(qwen_tiny, prompt, 60)
    eos = free_run[21]  # a token the model emits mid-draft
    first = free_run.index(eos)
    reference = greedy_reference(qwen_tiny, prompt, 60, eos=eos)
    assert reference == free_run[: first + 1]
    drafter = OracleDrafter(free_run, len(prompt), length=30)  # drafts run past the EOS
    result = generate(qwen_tiny, prompt, drafter, max_new_tokens=60, eos_token_ids={eos})
    assert result.tokens == reference
    assert result.stop_reason == "eos"


@pytest.mark.parametrize("limit", [1, 2, 17, 37])
def test_token_limit_inside_a_draft_is_never_exceeded(qwen_tiny, limit):
    prompt = repeating_prompt(6)
    reference = greedy_reference(qwen_tiny, prompt, limit)
    drafter = OracleDrafter(greedy_reference(qwen_tiny, prompt, 80), len(prompt), length=16)
    result = generate(qwen_tiny, prompt, drafter, max_new_tokens=limit)
    assert result.tokens == reference
    assert len(result.tokens) == limit
    assert result.stop_reason == "length"


def test_stop_condition_cuts_the_step_and_events_match_output(qwen_tiny):
    prompt = repeating_prompt(7)
    reference = greedy_reference(qwen_tiny, prompt, 60)
    target = reference[25]
    steps = []
    result = generate(
        qwen_tiny,
        prompt,
        OracleDrafter(reference, len(prompt), length=20),
        max_new_tokens=60,
        stop=lambda token: token == target,
        on_step=steps.append,
    )
    assert result.tokens == reference[: reference.index(target) + 1]
    assert result.stop_reason == "stop"
    assert [t for s in steps for t in s.tokens] == result.tokens
    copied = [(t, src) for s in steps for t, src in zip(s.tokens, s.sources) if src is not None]
    assert all(0 <= src < len(prompt) + len(reference) for _, src in copied)


def test_lookup_sources_point_at_the_copied_tokens(qwen_tiny):
    prompt = repeating_prompt(8)
    steps = []
    generate(
        qwen_tiny, prompt, make_drafter("pld", qwen_tiny), max_new_tokens=40, on_step=steps.append
    )
    memory = prompt + [t for s in steps for t in s.tokens]
    pairs = [(t, src) for s in steps for t, src in zip(s.tokens, s.sources) if src is not None]
    assert all(memory[src] == token for token, src in pairs)


def test_a_target_that_verifies_chains_gets_the_main_chain_and_stays_exact(qwen_tiny):
    passes: list[DraftTree] = []

    class Recording(ChainsOnly):
        def open_target(self, capacity: int, reuse: bool = True) -> TransformersTarget:
            target = super().open_target(capacity, reuse)
            forward = target.forward
            target.forward = lambda tree, *args: passes.append(tree) or forward(tree, *args)
            return target

    prompt = repeating_prompt(4)
    reference = greedy_reference(qwen_tiny, prompt, 48)
    drafter = make_drafter("adapld", qwen_tiny)  # drafts branches where its copy is unsure
    proposed: list[DraftTree] = []
    propose = drafter.propose
    drafter.propose = lambda *args: proposed.append(propose(*args)) or proposed[-1]
    result = generate(Recording(qwen_tiny), prompt, drafter, max_new_tokens=48)
    assert result.tokens == reference
    assert any(not tree.is_chain() for tree in proposed)  # trees were drafted ...
    assert passes and all(tree.is_chain() for tree in passes)  # ... and chains verified
    assert not {"branch", "successor"} & set("+".join(result.stats.accepted_paths).split("+"))


def test_main_chain_follows_first_children():
    tree = _branchy_tree(root=1)
    chain = tree.main_chain()
    assert chain.is_chain() and chain.root == 1
    assert chain.tokens == [5, 6, 7, 8]
    assert DraftTree(root=3).main_chain().tokens == []


def test_a_drafter_that_reads_hidden_states_is_refused_by_a_target_without_them(qwen_tiny):
    class NoStates(ChainsOnly):
        def open_target(self, capacity: int, reuse: bool = True) -> TransformersTarget:
            target = super().open_target(capacity, reuse)
            target.state_layers = ()
            return target

    with pytest.raises(ValueError, match="hidden states"):
        generate(
            NoStates(qwen_tiny),
            repeating_prompt(0),
            make_drafter("adapld", qwen_tiny),
            max_new_tokens=4,
        )


def test_a_copy_from_the_prompt_stops_at_the_prompt_end():
    """Past the prompt lies the answer, which does not continue the prompt: not worth drafting."""
    memory = Memory([1, 2, 3, 4])
    memory.extend([7, 8, 9])
    assert add_copy(DraftTree(9), memory, anchor=1, length=10) == [3, 4]
    assert add_copy(DraftTree(9), memory, anchor=4, length=10) == [8, 9]  # within the answer


def test_a_copy_from_the_prompt_stops_at_a_cut():
    """The prompt goes on after the input with a closing fence (tokenized otherwise than an
    answer closes its own) and the instruction, and after the instruction with the template's
    words: a copy through the input's end was rejected there, at the cost of a wide pass at
    the end of every answer, and one through the instruction's end where the answer had
    quoted it."""
    # the input is 1, 2, 3; then the fence 11, the instruction 12, 13 and the template's 14
    memory = Memory([10, 1, 2, 3, 11, 12, 13, 14])
    memory.extend([1, 2])
    assert add_copy(DraftTree(2), memory, anchor=2, length=10) == [3, 11, 12, 13, 14]
    assert add_copy(DraftTree(2), memory, anchor=2, length=10, cuts=(4,)) == [3]
    assert add_copy(DraftTree(2), memory, anchor=0, length=10, cuts=(4,)) == [1, 2, 3]
    cuts = (4, 5, 7)  # the input's end, the instruction's start and end
    assert add_copy(DraftTree(2), memory, anchor=2, length=10, cuts=cuts) == [3]
    assert add_copy(DraftTree(2), memory, anchor=4, length=10, cuts=cuts) == []
    assert add_copy(DraftTree(2), memory, anchor=5, length=10, cuts=cuts) == [13]
    # after the last cut and in the answer, copies go on as before
    assert add_copy(DraftTree(2), memory, anchor=7, length=10, cuts=cuts) == []
    assert add_copy(DraftTree(2), memory, anchor=6, length=10, cuts=(4,)) == [14]
    assert add_copy(DraftTree(2), memory, anchor=8, length=10, cuts=cuts) == [2]


def test_the_draft_sources_cut_at_the_input_s_end_and_the_instruction_s_ends():
    from specedit.drafting.registry import DraftSources

    assert DraftSources().cuts == ()
    assert DraftSources(2, [5, 6, 7]).cuts == (5,)
    assert DraftSources(2, [5, 6, 7], instruction=(9, 14)).cuts == (5, 9, 14)
    assert DraftSources(instruction=(9, 14)).cuts == (9, 14)


@pytest.mark.parametrize("method", ["pld", "adapld-tokens", "pldplus", "adapld"])
def test_copy_drafters_told_where_the_input_ends_copy_no_further(qwen_tiny, method):
    from specedit.drafting.registry import DraftSources

    prompt = INPUT_THEN_MORE
    told = make_drafter(method, qwen_tiny, DraftSources(input_start=0, input_tokens=prompt[:5]))
    untold = make_drafter(method, qwen_tiny)
    assert main_copy_after(told, qwen_tiny, prompt, [6, 7]) == [8, 9]
    assert main_copy_after(untold, qwen_tiny, prompt, [6, 7]) == [8, 9, 50, 51, 52]


@pytest.mark.parametrize("method", ["ar", "pld", "pool"])
def test_each_new_token_comes_with_its_probability_and_the_runner_up(qwen_tiny, method):
    """What a redraw branches on (editing/selection.py): for every token, from whichever node
    of a chain or tree pass it came, the model's probability of it and its likeliest other
    token, as one plain forward over the answer gives them; cut where the limit cuts."""
    prompt = repeating_prompt(5)
    sources = draft_sources(None, prompt)
    drafter = make_drafter(method, qwen_tiny, sources)
    generation = generate(qwen_tiny, prompt, drafter, max_new_tokens=37, choices=True)
    tokens = generation.tokens
    assert len(tokens) == len(generation.probabilities) == len(generation.runners_up) == 37
    with torch.no_grad():
        logits = qwen_tiny(torch.tensor([prompt + tokens])).logits[0, len(prompt) - 1 : -1]
    probabilities = logits.float().softmax(-1)
    chosen = probabilities.gather(1, torch.tensor(tokens)[:, None])[:, 0]
    assert torch.allclose(torch.tensor(generation.probabilities), chosen, atol=1e-4)
    assert generation.runners_up == probabilities.topk(2).indices[:, 1].tolist()  # greedy
    unasked = generate(
        qwen_tiny, prompt, make_drafter(method, qwen_tiny, sources), max_new_tokens=9
    )
    assert unasked.probabilities == unasked.runners_up == []  # a pass over the vocabulary each


def test_a_transformers_target_records_no_gradients_whoever_calls_it(qwen_tiny):
    """A cost probe or a score calls the target outside a generation; with autograd on, its
    cache would hold every pass's activations for as long as it lives (gigabytes over the
    bench's probe of the bundled model)."""
    assert torch.is_grad_enabled() and not torch.is_inference_mode_enabled()
    prompt = repeating_prompt(3)
    target = TransformersTarget(qwen_tiny)
    target.prefill(prompt[:20], False)
    tree = DraftTree(prompt[20])
    tree.add_chain(prompt[21:25])
    result = target.forward(tree, 20, True)
    target.keep(20, [0, 1])
    assert not result.logits.requires_grad
    assert not any(state.requires_grad for state in result.hidden_states)
    assert target.cache.get_seq_length() == 22
    assert not any(layer.keys.requires_grad for layer in target.cache.layers)
