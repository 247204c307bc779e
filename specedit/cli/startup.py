"""Starting a command that needs the model: loading it once, and Ctrl-C ending with one line."""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import typer

from specedit.cli.exits import Exit
from specedit.console import error

STARTED = time.perf_counter()  # the CLI's start, for the stats' start-up seconds
AUTO = "auto"  # --engine's default: the fast engine wherever it can run what was asked


def has_gguf(model: str) -> bool:
    """Whether `model` names a GGUF file, which the llama.cpp engine runs as it is: a bundled
    model (they ship as GGUF files) or a `.gguf` path."""
    from specedit.models.bundled import BUNDLED

    return model in BUNDLED or Path(model).suffix == ".gguf"


def llama_cpp_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def require_engine(engine: str, model: str) -> None:
    """Exit with code 3 and one line naming the install command where the packages `engine`
    runs on are missing (the light install has neither engine's), before anything is loaded."""
    from specedit.models.load import LLAMA_CPP_INSTALL, TORCH_EXTRA, TORCH_INSTALL

    if engine == "llama.cpp" and not llama_cpp_installed():
        error(f"the llama.cpp engine needs llama-cpp-python: {LLAMA_CPP_INSTALL}")
    elif engine == "torch" and (
        missing := [name for name in TORCH_EXTRA if importlib.util.find_spec(name) is None]
    ):
        if llama_cpp_installed() or not has_gguf(model):
            error(f"the torch engine needs {', '.join(missing)}: {TORCH_INSTALL}")
        else:
            error(
                f"no engine is installed: {LLAMA_CPP_INSTALL}, the default on a CPU; "
                f"or {TORCH_INSTALL}"
            )
    else:
        return
    raise typer.Exit(Exit.MODEL)


def choose_engine(
    engine: str,
    model: str,
    draft_model: str | None = None,
    device: str = "cpu",
    dtype: str = "auto",
    method: str | None = None,
) -> str:
    """The engine `--engine auto` stands for: llama.cpp wherever llama-cpp-python is installed
    and can run the edit as asked (the model and any draft model are GGUF files, on the CPU,
    with no --dtype and a method that runs there), since its quantized kernels are the faster
    ones on a CPU; torch otherwise. An engine named outright is kept."""
    if engine != AUTO:
        return engine
    from specedit.drafting.registry import refusal

    fits = (
        has_gguf(model)
        and (draft_model is None or has_gguf(draft_model))
        and device == "cpu"
        and dtype == "auto"
        and not (method and refusal(method, "llama.cpp"))
    )
    return "llama.cpp" if fits and llama_cpp_installed() else "torch"


def load_model(
    model: str,
    dtype: str,
    threads: int | None,
    device: str = "cpu",
    draft: str | None = None,
    engine: str = "torch",
    context: int = 0,
):
    """Pin the CPU threads and load the model (and its draft model) once; a model error, or an
    engine that is not installed, exits with code 3. On llama.cpp the weights start loading on
    a thread, in a context sized for `context` tokens (an estimate of what the first edit
    needs), and neither torch nor transformers is imported: nothing on the default's path
    there needs them.

    Returns the model and the start-up seconds: imports (from the CLI's start to torch and
    transformers imported; on llama.cpp, to the weights' load begun, the tokenizer and config
    read) and the model's load after them."""
    require_engine(engine, model)
    from specedit.models.bundled import ModelError
    from specedit.models.load import load, with_draft

    threads = threads or os.cpu_count() or 1
    with interruptible():
        try:
            if engine == "torch":
                import torch
                import transformers  # noqa: F401  (timed here, so the load below is the load alone)

                torch.set_num_threads(threads)
                imported = time.perf_counter()
                lm = load(model, dtype, device, engine)
            else:  # the weights load on a thread from here on
                lm = load(model, dtype, device, engine, threads, context)
                imported = time.perf_counter()
            if draft:  # on llama.cpp its weights load while the model's still do
                lm = with_draft(lm, draft, dtype, device, context)
            lm.ready()
        except ModelError as exc:
            error(str(exc))
            raise typer.Exit(Exit.MODEL) from None
    startup = {"imports": imported - STARTED, "model_load": time.perf_counter() - imported}
    return lm, startup


@contextmanager
def interruptible(written: list[str] | None = None) -> Iterator[None]:
    """Ctrl-C ends with one line and code 130, no traceback; writes are atomic, so nothing
    half-written is left behind. The line names the files in `written` (those a batch wrote
    before it was stopped)."""
    try:
        yield
    except KeyboardInterrupt:
        if written:
            error(f"interrupted; already written: {', '.join(written)}; nothing else was written")
        else:
            error("interrupted; nothing was written")
        raise typer.Exit(Exit.INTERRUPTED) from None
