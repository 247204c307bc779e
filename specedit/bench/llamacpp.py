"""llama.cpp beside specedit in the bench: what local users run, on the same weights and prompt.

`llama.cpp` is llama.cpp's plain greedy decoding and `llama.cpp-pld` its prompt lookup
(llama-cpp-python's `LlamaPromptLookupDecoding`). Both run the model's GGUF file as it is
(quantized), with the bench's thread count, on the prompt's token ids as the engine renders them,
and stop at the same closing fence. Loading and warming up are not timed, as for every setup.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specedit.models.bundled import ModelError, gguf_file
from specedit.models.load import repacked, require_llama_cpp

# Draft length of llama.cpp's prompt lookup: the length that did best on copy-heavy edits when
# llama.cpp was first measured on this kind of machine (not re-tuned since; docs/benchmarks.md,
# "Against llama.cpp").
PLD_TOKENS = 64
LLAMA_CPP_METHODS = {"llama.cpp": None, "llama.cpp-pld": PLD_TOKENS}  # method -> draft length


class LlamaCppUnavailable(Exception):
    """llama-cpp-python is not installed, or the model has no GGUF file."""


@dataclass
class LlamaCppRun:
    tokens: list[int]
    seconds: float
    passes: int  # evaluations: the prompt's (which yields the first token) and one per step
    stop: str  # stop (the fence), eos or length


class LlamaCpp:
    """One llama.cpp context per draft length, grown when a task needs a longer context."""

    def __init__(self, model: str, threads: int) -> None:
        try:
            require_llama_cpp("llama.cpp methods need")
            self.gguf: Path = gguf_file(model)
        except ModelError as exc:
            raise LlamaCppUnavailable(str(exc)) from None
        self.model, self.threads = model, threads
        self._contexts: dict[str, Any] = {}

    def _context(self, method: str, n_ctx: int) -> Any:
        """A warm llama.cpp context of at least `n_ctx` tokens for `method`."""
        from llama_cpp import Llama
        from llama_cpp.llama_speculative import LlamaPromptLookupDecoding

        from specedit.engine.llama_params import weights_layout

        llm = self._contexts.get(method)
        if llm is not None and llm.n_ctx() >= n_ctx:
            return llm
        if llm is not None:
            llm.close()
        draft = LLAMA_CPP_METHODS[method]
        with weights_layout(repacked(self.model, self.threads)):  # as the engine's
            llm = Llama(
                model_path=str(self.gguf),
                n_ctx=-(-n_ctx // 1024) * 1024,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                draft_model=LlamaPromptLookupDecoding(num_pred_tokens=draft) if draft else None,
                logits_all=bool(draft),  # sizes the logits buffer for the whole context
                verbose=False,
            )
        for _ in llm.generate(llm.tokenize(b"def warm_up():"), temp=0.0):  # pages in the weights
            break
        self._contexts[method] = llm
        return llm

    def run(
        self,
        method: str,
        prompt: list[int],
        max_new_tokens: int,
        stop: Callable[[int], bool],
        eos: set[int],
    ) -> LlamaCppRun:
        """Greedy decoding of `prompt` until EOS, the fence or the token limit."""
        llm = self._context(method, len(prompt) + max_new_tokens + 1)
        llm.reset()  # no prefix reused from an earlier run
        batches: list[int] = []  # each evaluation's tokens
        evaluate, drafts = llm.eval, llm._logits_all

        def counted(tokens: list[int]) -> None:
            # With a draft model llama-cpp-python keeps logits for every token it evaluates,
            # the prompt's too; llama.cpp's own speculative decoding needs only the prompt's
            # last, and that LM-head product over the whole prompt would cost seconds here.
            llm._logits_all = drafts and bool(batches)
            batches.append(len(tokens))
            evaluate(tokens)

        llm.eval = counted
        tokens: list[int] = []
        reason = "length"
        start = time.perf_counter()
        try:
            for token in llm.generate(prompt, temp=0.0, repeat_penalty=1.0, reset=True):
                tokens.append(token)
                if token in eos:
                    reason = "eos"
                elif stop(token):
                    reason = "stop"
                if reason != "length" or len(tokens) >= max_new_tokens:
                    break
        finally:
            seconds = time.perf_counter() - start
            del llm.eval
            llm._logits_all = drafts
        return LlamaCppRun(tokens, seconds, len(batches), reason)

    def close(self) -> None:
        for llm in self._contexts.values():
            llm.close()
        self._contexts.clear()
