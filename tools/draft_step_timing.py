"""Where a draft model's step goes, and what the target's passes cost: the numbers behind the
hybrid drafter's design (README, "Draft model").

For the draft model: one cached decoder step, then its LM head over the full vocabulary, over the
static core and over a typical active vocabulary (core + a document's tokens + the dynamic
budget). For the target: one pass of 1, 7, 23 and 65 tokens after the same context (a draft of 6
model tokens is 7 nodes; 6 + a 16-token copy is 23; a 64-token copy is 65).

Usage::

    python tools/draft_step_timing.py [--draft qwen2.5-coder-0.5b] [--target qwen2.5-coder-1.5b]
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import textwrap
import time

import torch
from transformers import DynamicCache

from specedit.drafting.model.cooccurrence import token_statistics
from specedit.models.load import load


def _median_seconds(run, repeats: int) -> float:
    run()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _context(tokenizer, tokens: int) -> list[int]:
    """A real code context of about `tokens` tokens (textwrap's source)."""
    ids = tokenizer(inspect.getsource(textwrap), add_special_tokens=False)["input_ids"]
    return ids[:tokens]


@torch.inference_mode()
def draft_step(name: str, context: int, core: int, budget: int, repeats: int) -> None:
    lm = load(name)
    model, head = lm.model, lm.model.get_output_embeddings().weight
    ids = _context(lm.tokenizer, context)
    cache = DynamicCache(config=model.config)
    out = model.get_decoder()(input_ids=torch.tensor([ids]), cache=cache)
    hidden = out.last_hidden_state[0, -1]

    def step() -> None:
        model.get_decoder()(input_ids=torch.tensor([[ids[-1]]]), cache=cache)
        cache.crop(-1)

    stats = token_statistics(lm.tokenizer, head)
    core_ids = torch.from_numpy(stats.most_frequent(core))
    active_ids = torch.unique(torch.cat([core_ids, torch.tensor(ids), torch.arange(budget)]))
    core_head, active_head = head[core_ids].contiguous(), head[active_ids].contiguous()
    decoder = _median_seconds(step, repeats)
    full = _median_seconds(lambda: head @ hidden, repeats)
    print(f"draft model {name} ({lm.model.dtype}), context {len(ids)} tokens")
    print(f"  decoder step          {decoder * 1e3:7.1f} ms")
    print(
        f"  LM head, full {head.shape[0]:6d}  {full * 1e3:7.1f} ms "
        f"({full / (decoder + full):.0%} of a full step)"
    )
    for label, matrix in (("static core", core_head), ("active", active_head)):
        seconds = _median_seconds(lambda m=matrix: m @ hidden, repeats)
        print(
            f"  LM head, {label:6} {matrix.shape[0]:6d}  {seconds * 1e3:7.1f} ms "
            f"(step {(decoder + seconds) / (decoder + full):.0%} of full)"
        )


@torch.inference_mode()
def target_passes(name: str, context: int, repeats: int) -> None:
    lm = load(name)
    ids = _context(lm.tokenizer, context)
    cache = DynamicCache(config=lm.model.config)
    lm.model(input_ids=torch.tensor([ids]), cache=cache, logits_to_keep=1)
    print(f"target {name} ({lm.model.dtype}), context {len(ids)} tokens")
    for width in (1, 7, 23, 65):

        def run(width: int = width) -> None:
            lm.model(input_ids=torch.tensor([ids[:width]]), cache=cache)
            cache.crop(-width)

        print(f"  pass of {width:2d} tokens  {_median_seconds(run, repeats) * 1e3:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draft", default="qwen2.5-coder-0.5b")
    parser.add_argument("--target", default="qwen2.5-coder-1.5b")
    parser.add_argument("--context", type=int, default=400)
    parser.add_argument("--core", type=int, default=32768)
    parser.add_argument("--budget", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    draft_step(args.draft, args.context, args.core, args.budget, args.repeats)
    target_passes(args.target, args.context, max(args.repeats // 4, 3))


if __name__ == "__main__":
    main()
