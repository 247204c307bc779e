"""The commands around editing: bench, calibrate, serve, cache, and models (list, prepare,
info)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import typer

from specedit.bench.ablations import ABLATIONS, needs_draft_model
from specedit.cli.exits import Exit
from specedit.cli.options import (
    DeviceOption,
    DraftModelOption,
    DtypeOption,
    EngineOption,
    ModelOption,
    ThreadsOption,
    opt,
)
from specedit.cli.startup import (
    AUTO,
    choose_engine,
    has_gguf,
    interruptible,
    load_model,
    require_engine,
)
from specedit.console import error, say
from specedit.drafting.registry import METHODS
from specedit.models.bundled import DEFAULT_MODEL
from specedit.models.load import ENGINES

models_app = typer.Typer(help="List, prepare and inspect models.", no_args_is_help=False)


def bench(
    methods: Annotated[
        str,
        typer.Option(
            help="Comma-separated methods: hf-pld (transformers' prompt lookup), llama.cpp and "
            "llama.cpp-pld (on the model's GGUF file; the llamacpp extra), llama-server, "
            "llama-server-ngram-mod and llama-server-ngram-simple (llama.cpp's server, plain "
            "or with its n-gram speculation, editing the whole file; `make llama-server` "
            "builds it), "
            f"{', '.join(METHODS)}, merge (apply tasks: without the model where the snippet "
            "leaves no doubt, as `specedit apply` does), and ablations: "
            f"{', '.join(ABLATIONS)}; "
            f"{', '.join(m for m in (*METHODS, *ABLATIONS) if needs_draft_model(m))} need "
            "--draft-model."
        ),
    ] = "ar,hf-pld,pld,pldplus,adapld",
    tasks: Annotated[
        str | None, typer.Option(help="Comma-separated task ids [default: all].")
    ] = None,
    suite: Annotated[
        Literal["edit", "apply"],
        typer.Option(help="The shipped suite: edit (fixes, features, docs) or apply (snippets)."),
    ] = "edit",
    tasks_file: Annotated[
        Path | None, typer.Option("--tasks-file", help="Your own tasks, one JSON object a line.")
    ] = None,
    model: ModelOption = DEFAULT_MODEL,
    draft_model: DraftModelOption = None,
    dtype: DtypeOption = "auto",
    repeat: Annotated[int, typer.Option(help="Runs per task and method; the fastest counts.")] = 1,
    max_new_tokens: Annotated[int | None, typer.Option(help="Token limit per task.")] = None,
    json_file: Annotated[Path | None, typer.Option("--json", help="Write results as JSON.")] = None,
    threads: ThreadsOption = None,
    verify: Annotated[
        str, typer.Option(help="Comma-separated verification modes: strict, conditional, mixed.")
    ] = "strict",
    prompt_sets: Annotated[
        str | None,
        typer.Option(
            "--prompts",
            help="Comma-separated folders of <kind>.toml prompt templates to compare "
            "[default: the shipped prompts].",
        ),
    ] = None,
    bench_attempts: Annotated[  # not `attempts`: a settings file's `attempts` is for edits
        int,
        typer.Option(
            "--attempts", help="Tries per task with its tests as the check (the --test loop)."
        ),
    ] = 1,
    engines: Annotated[
        str,
        typer.Option(
            help="Comma-separated engines the methods run on: torch, llama.cpp (there: every "
            "method but pldplus-attn, adapld-trained-length and evospec-lora, evospec with the "
            "draft model on llama.cpp too; labelled method/llama.cpp)."
        ),
    ] = "torch",
    regions: Annotated[
        str,
        typer.Option(
            help="Comma-separated: auto (as the CLI edits: only the functions of a long Python "
            "file that the instruction is about), whole (the whole input; labelled method+whole), "
            "named (only the function or class the instruction names, as --lines NAME; labelled "
            "method+named)."
        ),
    ] = "auto",
    samples: Annotated[
        str,
        typer.Option(
            help="Comma-separated candidate selections: N (up to N candidates, another drawn "
            "while the answer is unchanged for a fix or an edit, or unsafe), voteN (N drawn, the "
            "one the others agree with kept), examplesN (as N, and while the answer fails the "
            "input's >>> examples, run unsandboxed: --examples), confinedN (the same, confined "
            "as the default runs them), default (as the CLI edits with no option); each may end "
            "in -unchanged (an unchanged answer sampled, not redrawn from its branch points) "
            "and -stop (a fix's first answer written to its end, not stopped once its change "
            "is made): the step's ablation; labelled method~sN."
        ),
    ] = "1",
    replay: Annotated[
        Path | None,
        typer.Option(
            help="Draft the answers a bench run recorded (its --json) again with each method "
            "that reads only tokens (ar, pld, adapld and their ablations), without the model: "
            "their passes at that run's measured costs, the same on every run.",
        ),
    ] = None,
) -> None:
    """Measure setups side by side on a task suite: edit quality (the tasks' tests pass, output
    unchanged, cut off, lines dropped), speed against plain greedy decoding and transformers'
    prompt lookup, mean accepted tokens per pass, exactness.

    \b
    Examples:
      specedit bench --json bench.json
      specedit bench --methods ar,hf-pld,adapld --tasks fix-bisect-offbyone
      specedit bench --methods adapld --verify strict,conditional --json quality.json
      specedit bench --methods adapld --attempts 3
      specedit bench --methods adapld --regions whole,named
      specedit bench --suite apply --methods ar,adapld
      specedit bench --methods ar,adapld,evospec --draft-model qwen2.5-coder-0.5b
      specedit bench --methods adapld,llama.cpp,llama.cpp-pld
      specedit bench --methods ar,pld,llama.cpp-pld --engines torch,llama.cpp
      specedit bench --tasks-file my_tasks.jsonl
      specedit bench --replay bench.json --methods pld,adapld
    """
    asked = [m.strip() for m in methods.split(",") if m.strip()]
    if replay is not None:
        _replay(replay, asked)
        return
    require_engine("torch", model)  # the bench measures with torch whatever the engines
    from specedit.bench.runner import BenchError, run_bench
    from specedit.drafting import DrafterUnavailable

    engine_list = [e.strip() for e in engines.split(",") if e.strip()] or ["torch"]
    if unknown := [e for e in engine_list if e not in ENGINES]:
        error(f"unknown engine {unknown[0]}: choose from {', '.join(ENGINES)}")
        raise typer.Exit(Exit.INPUT)
    lm, _ = load_model(model, dtype, threads, draft=draft_model, engine=engine_list[0])
    with interruptible():
        try:
            run_bench(
                lm,
                methods=asked,
                task_ids=tasks.split(",") if tasks else None,
                tasks_file=tasks_file,
                repeat=repeat,
                max_new_tokens=max_new_tokens,
                json_file=json_file,
                verify=[v.strip() for v in verify.split(",") if v.strip()],
                prompt_sets=[p.strip() for p in prompt_sets.split(",")] if prompt_sets else None,
                attempts=bench_attempts,
                suite=suite,
                engines=engine_list,
                regions=[r.strip() for r in regions.split(",") if r.strip()],
                selections=[s.strip() for s in samples.split(",") if s.strip()],
            )
        except (BenchError, DrafterUnavailable) as exc:
            error(str(exc))
            raise typer.Exit(Exit.INPUT) from None


def _replay(recording: Path, asked: list[str]) -> None:
    """`bench --replay`: the methods that read only tokens, on the answers `recording` holds."""
    from rich.console import Console

    from specedit.bench.replay import ReplayError, print_replay, replay_run, replayable

    methods = [m for m in asked if replayable(m)]
    if skipped := [m for m in asked if m not in methods]:
        say(f"not replayed (they read more than tokens): {', '.join(skipped)}")
    try:
        if not methods:
            raise ReplayError("no method to replay: ar, pld, adapld and their ablations can be")
        results = replay_run(recording, methods)
    except ReplayError as exc:
        error(str(exc))
        raise typer.Exit(Exit.INPUT) from None
    print_replay(Console(width=max(Console().width, 110)), results, methods)


def calibrate(
    model: ModelOption = DEFAULT_MODEL,
    dtype: DtypeOption = "auto",
    threads: ThreadsOption = None,
) -> None:
    """Find the model's induction heads for pldplus-attn (and train the pre-verifier) on the
    bench suite, and cache them; a few minutes, once per model.

    \b
    Example:
      specedit calibrate && specedit fix bug.py "..." --method pldplus-attn
    """
    require_engine("torch", model)  # heads and the pre-verifier are read on torch
    from specedit.calibrate import calibrate as run_calibration

    lm, _ = load_model(model, dtype, threads)
    with interruptible():
        run_calibration(lm)


def serve(
    model: ModelOption = DEFAULT_MODEL,
    draft_model: DraftModelOption = None,
    dtype: DtypeOption = "auto",
    threads: ThreadsOption = None,
    device: DeviceOption = "cpu",
    engine: EngineOption = AUTO,
    host: Annotated[str, opt("--host", help="Address to listen on.", env="HOST")] = "127.0.0.1",
    port: Annotated[int, opt("--port", help="Port to listen on.", env="PORT")] = 8000,
    api_key: Annotated[
        str | None,
        opt(
            "--api-key",
            help="Every request must carry it (Authorization: Bearer KEY); set it, through the "
            "environment rather than the command line, to serve beyond this machine.",
            env="API_KEY",
            show_default=False,
        ),
    ] = None,
    max_queue: Annotated[
        int,
        opt(
            "--max-queue",
            help="Generations that may wait behind the running one; more get a 429.",
            env="MAX_QUEUE",
            min=0,
        ),
    ] = 8,
    max_body_bytes: Annotated[
        int,
        opt(
            "--max-body-bytes",
            help="The largest request body read; a larger one gets a 413.",
            env="MAX_BODY_BYTES",
            min=1,
        ),
    ] = 8 * 1024 * 1024,
    body_timeout: Annotated[
        float,
        opt(
            "--body-timeout",
            help="Seconds to wait for the next piece of a request body; a slower client gets a "
            "408.",
            env="BODY_TIMEOUT",
            min=0.001,
        ),
    ] = 30.0,
    max_connections: Annotated[
        int,
        opt(
            "--max-connections",
            help="Connections open at once; a request beyond them gets a 503.",
            env="MAX_CONNECTIONS",
            min=1,
        ),
    ] = 32,
    allow_host: Annotated[
        list[str] | None,
        opt(
            "--allow-host",
            help="A host name requests may name besides 127.0.0.1, localhost and [::1] "
            "(repeatable); once given, only these and those are answered, whatever --host is.",
            env="ALLOW_HOST",
            show_default=False,
        ),
    ] = None,
    cache_ram: Annotated[
        int,
        opt(
            "--cache-ram",
            help="MiB of memory for the prompts of the files read last (llama.cpp engine): a "
            "request on one of them prefills only what differs from its last prompt; 0 keeps "
            "none.",
            env="CACHE_RAM",
            min=0,
        ),
    ] = 2048,
    allow_origin: Annotated[
        list[str] | None,
        opt(
            "--allow-origin",
            help="A web page's origin (scheme://host[:port]) whose requests are served "
            "(repeatable); other pages' requests get a 403.",
            env="ALLOW_ORIGIN",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the model, loaded once, over an OpenAI-compatible API that honours `prediction`
    (/v1/chat/completions, /v1/models), plus /v1/specedit/edit for `--server`.

    \b
    Examples:
      specedit serve --port 8000
      specedit fix bug.py "off-by-one" --server http://127.0.0.1:8000
      OPENAI_BASE_URL=http://127.0.0.1:8000/v1 your-editor-or-agent
      SPECEDIT_API_KEY=... specedit serve --host 0.0.0.0   # clients send the same variable
    """
    try:
        import uvicorn

        from specedit.server.app import create_app
        from specedit.server.guards import KEEP_ALIVE_S, host_name, needs_key_warning, origin
    except ImportError as exc:
        error(f"the server needs {exc.name}: pip install 'specedit[serve]'")
        raise typer.Exit(Exit.INPUT) from None
    if api_key is not None and not api_key.strip():
        error("--api-key is empty: give a key, or leave the option out")
        raise typer.Exit(Exit.INPUT)
    if needs_key_warning(host, api_key):
        from specedit.console import warning

        warning(
            f"serving on {host} without --api-key: anyone who can reach it can use the "
            "model; set SPECEDIT_API_KEY"
        )
    try:
        hosts = [host_name(h) for h in allow_host or ()]
        origins = [origin(o) for o in allow_origin or ()]
    except ValueError as exc:
        error(str(exc))
        raise typer.Exit(Exit.INPUT) from None
    engine = choose_engine(engine, model, draft_model, device, dtype)
    lm, _ = load_model(model, dtype, threads, device, draft_model, engine)
    if engine == "llama.cpp":
        from specedit.models.prefixes import RecentHeads

        lm.model.store = RecentHeads(cache_ram << 20) if cache_ram else None
    keyed = " with an API key" if api_key else ""
    say(f"serving {lm.name} on http://{host}:{port}/v1{keyed} (Ctrl-C stops)")
    app = create_app(
        lm,
        api_key,
        max_queue=max_queue,
        max_body_bytes=max_body_bytes,
        host=host,
        allow_hosts=hosts,
        allow_origins=origins,
        body_timeout_s=body_timeout,
    )
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level="warning",
        timeout_keep_alive=KEEP_ALIVE_S,
        limit_concurrency=max_connections,
    )


def cache(
    clear: Annotated[bool, typer.Option("--clear", help="Remove them.")] = False,
) -> None:
    """Show the prompts kept on disk for the llama.cpp engine, by model: a cold edit gets back
    the K/V of the kept prompt it shares the most with (the template; the whole file, for a
    second instruction on it) and prefills only the rest. The newest 8 within 1 GiB are kept
    per model, readable by you alone."""
    import shutil

    from specedit.models.bundled import cache_dir

    root = cache_dir() / "prefix"
    typer.echo(str(root))
    for folder in sorted(p for p in root.glob("*") if p.is_dir()) if root.is_dir() else []:
        heads = list(folder.glob("*.head"))
        size = sum(f.stat().st_size for f in folder.iterdir() if f.is_file())
        typer.echo(f"{folder.name}  {len(heads)} prompts  {size / 2**20:.1f} MiB")
        if clear:
            shutil.rmtree(folder)
            typer.echo(f"{folder.name}  removed")


@models_app.callback(invoke_without_command=True)
def models_list(ctx: typer.Context) -> None:
    """List the bundled models, and the converted ones in the cache, with the engines each is
    prepared for."""
    if ctx.invoked_subcommand:
        return
    from specedit.models.bundled import BUNDLED, cache_dir
    from specedit.models.prepare import prepared_for

    for name, bundled in BUNDLED.items():
        engines = prepared_for(name)
        state = f"prepared ({', '.join(engines)})" if engines else "not prepared"
        typer.echo(f"{name:22} {state:29} {bundled.description}")
    converted = cache_dir() / "models"
    for name in sorted(p.name for p in converted.glob("*") if p.name not in BUNDLED):
        typer.echo(f"{name:22} {'prepared (torch)':29} converted from a .gguf file")


@models_app.command("prepare")
def models_prepare(
    name: Annotated[str, typer.Argument(help="Bundled name, model folder or .gguf file.")],
    engine: EngineOption = AUTO,
    dtype: DtypeOption = "auto",
    threads: ThreadsOption = None,
    device: DeviceOption = "cpu",
) -> None:
    """Prepare a model ahead of time for the engine its edits run on (--engine; auto chooses as
    an edit does), so that a first edit builds nothing: on llama.cpp the joined and checked GGUF
    file, its tokenizer and config, and the pass-cost curve; on torch the converted folder, the
    default method's vocabulary indexes and the pass-cost curve (for these --dtype, --threads
    and --device). Prints what the engine runs: the GGUF file, or the model folder."""
    from specedit.drafting.registry import build_artefacts
    from specedit.models.bundled import ModelError, gguf_file
    from specedit.models.prepare import resolve

    engine = choose_engine(engine, name, device=device, dtype=dtype)
    require_engine(engine, name)
    try:
        typer.echo(str(gguf_file(name) if engine == "llama.cpp" else resolve(name)))
    except ModelError as exc:
        error(str(exc))
        raise typer.Exit(Exit.MODEL) from None
    lm, _ = load_model(name, dtype, threads, device, engine=engine)
    say(f"building what an edit needs on the {engine} engine (once per model and machine)")
    with interruptible():
        build_artefacts(lm)


@models_app.command("info")
def models_info(
    name: Annotated[str, typer.Argument(help="Model name, folder or .gguf file.")],
) -> None:
    """Show a model's architecture, size and context length; a bundled model or a .gguf file is
    read from its GGUF file, without converting it."""
    import json

    from specedit.models.bundled import ModelError, gguf_file
    from specedit.models.prepare import gguf_metadata, resolve

    try:
        if has_gguf(name):
            source = gguf_file(name)
            folder = gguf_metadata(name, source)
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        else:
            from transformers import AutoConfig

            source = resolve(name)
            config = AutoConfig.from_pretrained(source).to_dict()
    except (ModelError, OSError) as exc:
        error(str(exc))
        raise typer.Exit(Exit.MODEL) from None
    typer.echo(f"source         {source}")
    for key in (
        "model_type",
        "num_hidden_layers",
        "hidden_size",
        "vocab_size",
        "max_position_embeddings",
    ):
        typer.echo(f"{key:14} {config.get(key, '?')}")
