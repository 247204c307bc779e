"""What a model's passes cost on llama.cpp here, for other weight types, and what a draft model
could win at best: the numbers behind docs/engines.md ("Weight types" and "The most a draft
model could win here").

Each model (a bundled name or a `.gguf` path) is loaded in this process and measured as the
engine measures it (`engine.cost.measure`: the fastest of three passes of each width, and a
512-token prefill), after the time its context took to open. `--types` also writes the first
model's weights in other llama.cpp types (`llama_model_quantize`, from its Q4_K_M: a test of
speed, not of quality) and measures those. With `--draft`, the draft model's one-token step d
is set against the target's curve T: a chain of h drafted tokens, every one accepted, yields
h + 1 tokens for h steps and one pass of h + 1, where one-token passes would take (h + 1) T(1);
the best ratio over h is the most that chains could speed up new text, at perfect acceptance.

    python tools/pass_costs.py qwen2.5-coder-1.5b --types q8_0,bf16,pure-q4_k
    python tools/pass_costs.py qwen2.5-coder-1.5b --draft qwen2.5-coder-0.5b
"""

from __future__ import annotations

import argparse
import ctypes
import os
import tempfile
import time
from pathlib import Path

from specedit.engine.cost import PassCost, measure
from specedit.engine.llamacpp import GgufModel
from specedit.models.load import load

SIZES = (1, 2, 4, 8, 16, 32, 64)
# Other weight types, as llama.cpp's file type and whether every tensor takes it (`pure`).
TYPES = {
    "q8_0": ("LLAMA_FTYPE_MOSTLY_Q8_0", False),
    "bf16": ("LLAMA_FTYPE_MOSTLY_BF16", False),
    "pure-q4_k": ("LLAMA_FTYPE_MOSTLY_Q4_K_M", True),  # every tensor Q4_K, none Q6_K
}


def gguf_model(name: str, threads: int) -> GgufModel:
    return load(name, engine="llama.cpp", threads=threads).model


def curve(name: str, model: GgufModel, threads: int) -> PassCost:
    started = time.perf_counter()
    model.open_target(1024, reuse=False)
    seconds = time.perf_counter() - started
    cost = measure(model, SIZES, threads=threads)
    widths = " ".join(f"{w}: {s * 1000:.0f}" for w, s in zip(cost.sizes, cost.seconds, strict=True))
    print(
        f"{name}: context opened in {seconds:.2f} s; prefill {cost.prefill_per_token * 1000:.1f} "
        f"ms a token; passes (ms) {widths}{'  (contended)' if cost.contended else ''}"
    )
    return cost


def requantized(source: Path, kind: str, folder: Path) -> Path:
    import llama_cpp

    ftype, pure = TYPES[kind]
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype, params.allow_requantize, params.pure = getattr(llama_cpp, ftype), True, pure
    target = folder / f"{source.stem}-{kind}.gguf"
    written = llama_cpp.llama_model_quantize(
        str(source).encode(), str(target).encode(), ctypes.byref(params)
    )
    if written != 0:
        raise SystemExit(f"llama.cpp could not write {kind}")
    return target


def best_chain(target: PassCost, step: float) -> tuple[int, float]:
    """The chain length whose tokens, all accepted, save the most over one-token passes."""
    gains = {h: (h + 1) * target(1) / (target(h + 1) + h * step) for h in range(1, SIZES[-1])}
    best = max(gains, key=gains.__getitem__)
    return best, gains[best]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--types", default="", help=f"comma-separated: {', '.join(TYPES)}")
    parser.add_argument("--draft", help="a draft model to set against the target's curve")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    model = gguf_model(args.model, args.threads)
    target = curve(args.model, model, args.threads)
    if args.types:
        with tempfile.TemporaryDirectory() as folder:
            for kind in args.types.split(","):
                path = requantized(model.path, kind, Path(folder))
                same = GgufModel(path, model.config, model.generation_config, args.threads)
                curve(kind, same, args.threads)
                same.close()
    if args.draft:
        step = curve(args.draft, gguf_model(args.draft, args.threads), args.threads)(1)
        length, gain = best_chain(target, step)
        print(
            f"draft step {step * 1000:.0f} ms against a {target(1) * 1000:.0f} ms pass: at best "
            f"{gain:.2f}x one-token passes, with chains of {length} all accepted"
        )
    os._exit(0)  # llama.cpp's contexts need no teardown


if __name__ == "__main__":
    main()
