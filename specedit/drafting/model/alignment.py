"""Online alignment of the draft model with the target (EvoSpec's test-time adaptation, §3.4).

The draft model gets LoRA adapters on its query and value projections (rank 32, alpha 32) and
learns from what the target commits. Each committed token enters a replay buffer with the
target's top tokens and their logits; a full buffer (32 tokens) makes one AdamW step on the KL
divergence from the target's distribution to the draft's, both restricted to those tokens
(temperature 1). A curriculum weights the token committed k tokens after the start of its
verification step by exp(-beta * k * L1), L1 being the draft's cross-entropy on that step's first
token: an unsure draft model learns next-token prediction first, a sure one a longer horizon. A
buffer the draft model already predicts entirely right is dropped unlearnt (no mismatch, nothing
to correct).

The target's logits cost no target pass: its stored final-layer state before a token gives its
top tokens (the LM head's HNSW index) and their exact logits (those rows of the head).

The loaded draft model is cached per process and other methods draft with it plain, so the
adapters go on a copy of it whose weights are frozen aliases of the original's (no weight is
copied); each alignment makes its own copy with the same seeded adapters, so every edit starts
from the plain draft model and runs the same. The draft model's KV cache is not recomputed after
an update: earlier positions keep keys and values from the previous adapters, an accepted
approximation, since drafts are only proposals and verification keeps the output exact.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass

import torch
from peft import LoraConfig, inject_adapter_in_model
from peft.tuners.tuners_utils import cast_adapter_dtype

from specedit.engine.memory import Memory

RANK = ALPHA = 32  # the paper's LoRA rank and alpha
TOP_K = 10  # target tokens per position that the distillation keeps (plus the verified one)
BUFFER = 32  # verified tokens per update
CONTEXT = 64  # tokens before the buffered ones that an update's forward pass reads
BETA = 0.3  # the curriculum's decay
LEARNING_RATE = 1e-4
ADAPTER = "default"
ADAPTER_SEED = 0  # LoRA A's initialisation (B starts at zero, so the copy starts plain)


@dataclass(frozen=True)
class Sample:
    """A committed token and the target's view of it."""

    position: int  # where the token lies in memory
    step: int  # tokens committed before it in its verification step (the curriculum's k)
    support: torch.Tensor  # the target's top tokens, the committed one among them
    logits: torch.Tensor  # the target's logits on `support`


def adapted_copy(model) -> torch.nn.Module:
    """`model` with fresh LoRA adapters on q/v, sharing its weights frozen (the original's
    parameters and their `requires_grad` flags are untouched)."""
    with torch.inference_mode(False):  # trainable adapters cannot be inference tensors
        frozen = {
            id(p): torch.nn.Parameter(p.detach(), requires_grad=False) for p in model.parameters()
        }
        adapted = copy.deepcopy(model, frozen)  # modules copied, parameters replaced by aliases
        config = LoraConfig(
            r=RANK, lora_alpha=ALPHA, lora_dropout=0.0, target_modules=["q_proj", "v_proj"]
        )
        with torch.random.fork_rng(devices=[]):  # seeded, and the global generator untouched
            torch.manual_seed(ADAPTER_SEED)
            adapted = inject_adapter_in_model(config, adapted, adapter_name=ADAPTER)
        cast_adapter_dtype(adapted, ADAPTER)  # fp32 adapters: bf16 would lose AdamW's steps
    return adapted.eval()


class OnlineAlignment:
    """A LoRA-adapted copy of the draft model (`model`) that learns from committed tokens."""

    def __init__(
        self,
        draft_model,
        vocabulary,
        final: int,
        *,
        buffer_size: int = BUFFER,
        learning_rate: float = LEARNING_RATE,
    ) -> None:
        self.model = adapted_copy(draft_model)
        self.decoder = self.model.get_decoder()
        self.head = self.model.get_output_embeddings().weight
        self.vocabulary = vocabulary  # the target's VocabularyIndex
        self.final = final  # the memory layer holding the target's final normed states
        self.buffer_size = buffer_size
        adapters = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(adapters, lr=learning_rate)
        self.buffer: list[Sample] = []
        self.updates = self.skipped = 0
        self.seconds = 0.0
        self.last_loss: float | None = None

    def learn(self, memory: Memory, fresh: range) -> None:
        """Buffer the tokens committed at `fresh` (one verification step's); update when full."""
        started = time.perf_counter()
        for position in fresh:
            self.buffer.append(self._sample(memory, position, position - fresh.start))
            if len(self.buffer) == self.buffer_size:
                self._update(memory.tokens)
                self.buffer.clear()
        self.seconds += time.perf_counter() - started

    def _sample(self, memory: Memory, position: int, step: int) -> Sample:
        """The target's top tokens before `position`, with the committed token forced in."""
        hidden = memory.hidden(self.final)[position - 1]
        token = memory.tokens[position]
        support = self.vocabulary.top_tokens(hidden, TOP_K + 1)
        if token not in support:
            support[-1] = token
        ids = torch.tensor(support, device=hidden.device)
        logits = self.vocabulary.head[ids] @ hidden.to(self.vocabulary.head.dtype)
        return Sample(position, step, ids, logits.float())

    def _update(self, tokens: list[int]) -> None:
        """One optimizer step on the buffer, unless the draft model already gets it all right.

        The buffered positions are contiguous, so one forward pass over them and the context
        before their first step's start gives every state the loss and the curriculum need.
        """
        first = self.buffer[0].position - self.buffer[0].step
        begin = max(0, first - 1 - CONTEXT)
        end = self.buffer[-1].position  # inputs tokens[begin:end] predict begin + 1 .. end
        device = self.head.device
        with torch.inference_mode(False), torch.enable_grad():
            ids = torch.tensor([tokens[begin:end]], device=device)
            states = self.decoder(input_ids=ids, use_cache=False).last_hidden_state[0]
            rows = torch.tensor([s.position - 1 - begin for s in self.buffer], device=device)
            with torch.no_grad():
                log_probs, at_start = self._full_head(states, rows, begin)
            verified = torch.tensor([tokens[s.position] for s in self.buffer], device=device)
            if not (log_probs.argmax(-1) != verified).any():
                self.skipped += 1
                return
            loss = (self._curriculum(at_start, tokens) * self._divergence(states[rows])).mean()
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        self.updates += 1
        self.last_loss = loss.item()

    def _full_head(
        self, states: torch.Tensor, rows: torch.Tensor, begin: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The draft's full-vocabulary log-probabilities at each buffered token and at the first
        token of its verification step, from one product with the head over the distinct rows
        (buffered tokens of one step share their start)."""
        starts = torch.tensor(
            [s.position - s.step - 1 - begin for s in self.buffer], device=rows.device
        )
        needed, where = torch.unique(torch.cat([rows, starts]), return_inverse=True)
        log_probs = torch.log_softmax((states[needed] @ self.head.T).float(), dim=-1)
        return log_probs[where[: len(rows)]], log_probs[where[len(rows) :]]

    def _curriculum(self, at_start: torch.Tensor, tokens: list[int]) -> torch.Tensor:
        """exp(-beta * k * L1) per buffered token, L1 the draft's cross-entropy on the first
        token of its verification step (`at_start`: the log-probabilities before it)."""
        first = torch.tensor(
            [tokens[s.position - s.step] for s in self.buffer], device=at_start.device
        )
        first_loss = -at_start.gather(1, first[:, None])[:, 0]
        steps = torch.tensor([s.step for s in self.buffer], device=at_start.device)
        return torch.exp(-BETA * steps * first_loss)

    def _divergence(self, states: torch.Tensor) -> torch.Tensor:
        """KL(target || draft) per buffered token, both softmaxes over the target's support.

        The samples were stored under inference mode; stacking them makes ordinary tensors
        that autograd may save.
        """
        support = torch.stack([s.support for s in self.buffer]).to(states.device)
        target = torch.log_softmax(torch.stack([s.logits for s in self.buffer]), dim=-1)
        target = target.to(states.device)
        draft = torch.einsum("nkd,nd->nk", self.head[support].float(), states.float())
        draft = torch.log_softmax(draft, dim=-1)
        return (target.exp() * (target - draft)).sum(-1)

    def report(self) -> dict[str, float]:
        report: dict[str, float] = {
            "lora_updates": self.updates,
            "lora_skipped": self.skipped,
            "lora_seconds": round(self.seconds, 3),
        }
        if self.last_loss is not None:  # none before the first update (JSON has no NaN)
            report["lora_last_loss"] = round(self.last_loss, 4)
        return report
