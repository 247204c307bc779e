"""The command line: exit codes, errors on stderr, nothing on stdout unless the edit worked."""

from __future__ import annotations

import os
import runpy
import subprocess
import sys

import pytest
import typer
from typer.testing import CliRunner

from specedit import __version__
from specedit.cli import app, commands
from specedit.cli.exits import Exit

runner = CliRunner()


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "code.py"
    path.write_text("def add(a, b):\n    return a - b\n")
    return path


def _run(*args: str, stdin: str | None = None):
    return runner.invoke(app, list(args), input=stdin)


def test_version():
    result = _run("--version")
    assert result.exit_code == 0
    assert __version__ in result.stdout


@pytest.mark.parametrize(
    "make_path,message",
    [
        (lambda d: d / "missing.py", "no such file"),
        (lambda d: d, "is a directory"),
    ],
)
def test_unreadable_inputs_exit_2(tmp_path, make_path, message):
    result = _run("fix", str(make_path(tmp_path)), "fix it")
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""


def test_binary_and_non_utf8_inputs_exit_2_with_the_offset(tmp_path):
    binary = tmp_path / "image.bin"
    binary.write_bytes(b"\x89PNG\0\0\0")
    result = _run("edit", str(binary), "edit")
    assert result.exit_code == 2 and "looks binary" in result.stderr
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9 ok".encode("latin-1"))
    result = _run("edit", str(latin), "edit")
    assert result.exit_code == 2
    assert "not valid UTF-8: byte 0xe9 at offset 3" in result.stderr


def test_a_line_feed_in_a_file_s_name_cannot_forge_a_message(tmp_path):
    """A file's name is a clone's word: one holding a line feed stays on its message's line."""
    forged = tmp_path / "x.py\nspecedit: x.py: edited, and its tests pass"
    forged.write_text("")
    result = _run("fix", str(forged), "fix it")
    assert result.exit_code == 2
    (said,) = result.stderr.splitlines()
    assert said.endswith("x.py\\nspecedit: x.py: edited, and its tests pass is empty")


def test_empty_file_and_empty_instruction_exit_2(tmp_path, source):
    empty = tmp_path / "empty.py"
    empty.write_text("")
    assert "is empty" in _run("fix", str(empty), "fix").stderr
    result = _run("fix", str(source), "   ")
    assert result.exit_code == 2 and "instruction is empty" in result.stderr


def test_unknown_method_exits_2_and_unknown_model_exits_3(source):
    result = _run("fix", str(source), "fix", "--method", "magic")
    assert result.exit_code == 2 and "'magic' is not one of" in result.stderr
    result = _run("fix", str(source), "fix", "--method", "adapld-no-branch")  # bench-only ablation
    assert result.exit_code == 2 and "is not one of" in result.stderr
    result = _run("fix", str(source), "fix", "--model", "no-such-model")
    assert result.exit_code == 3 and "unknown model" in result.stderr
    assert result.stdout == ""


def test_cut_off_edit_writes_nothing_and_says_why(source, tiny_model_dir):
    result = _run(
        "fix",
        str(source),
        "fix",
        "--model",
        str(tiny_model_dir),
        "--max-new-tokens",
        "5",
        "--dtype",
        "fp32",
    )
    assert result.exit_code == 2
    assert "cut off at the token limit" in result.stderr
    assert result.stdout == ""


def test_a_region_answer_that_runs_to_its_limit_says_the_model_wrote_more_than_the_region(
    source, tiny_model_dir
):
    """A region's limit is sized by the region: reaching it means the model wrote past it (most
    often the whole file), so raising the limit is not the first advice."""
    before = source.read_text()
    result = _run(
        "fix",
        str(source),
        "fix",
        "--model",
        str(tiny_model_dir),
        "--max-new-tokens",
        "5",
        "--dtype",
        "fp32",
        "--lines",
        "add",
        "-i",
    )
    assert result.exit_code == 2 and source.read_text() == before
    assert "the answer for lines 1-2 ran to its token limit (5 new tokens)" in result.stderr
    assert "widen --lines or leave it out" in result.stderr


def test_input_longer_than_the_context_says_both_lengths(tmp_path, tiny_model_dir):
    long = tmp_path / "long.txt"
    long.write_text("word " * 1200 + "\n")  # the tiny model's context is 1024 positions
    result = _run("edit", str(long), "edit", "--model", str(tiny_model_dir), "--dtype", "fp32")
    assert result.exit_code == 2
    assert "too long for the model" in result.stderr and "holds 1024" in result.stderr


def test_models_lists_bundled_models_and_reports_unknown_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))  # nothing prepared yet
    result = _run("models")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert any(line.split()[:3] == ["qwen2.5-coder-0.5b", "not", "prepared"] for line in lines)
    assert any(line.startswith("smollm2-135m ") for line in lines)
    assert _run("models", "prepare", "no-such-model").exit_code == 3
    assert _run("models", "info", "no-such-model").exit_code == 3


def test_models_info_describes_a_model_folder(tiny_model_dir, tokenizer):
    info = _run("models", "info", str(tiny_model_dir))
    assert info.exit_code == 0, info.stderr
    fields = dict(line.split(None, 1) for line in info.stdout.splitlines())
    assert fields["source"] == str(tiny_model_dir)
    assert (fields["model_type"], fields["num_hidden_layers"], fields["hidden_size"]) == (
        "qwen2",
        "2",
        "64",
    )
    assert fields["vocab_size"] == str(len(tokenizer))
    assert fields["max_position_embeddings"] == "1024"


@pytest.mark.e2e
def test_models_lists_a_prepared_bundled_model_and_describes_it(bundled_model_dir):
    result = _run("models")
    assert result.exit_code == 0
    assert any(
        line.split()[:2] == ["qwen2.5-coder-0.5b", "prepared"]
        for line in result.stdout.splitlines()
    )
    info = _run("models", "info", "qwen2.5-coder-0.5b")
    assert info.exit_code == 0 and "num_hidden_layers" in info.stdout and "24" in info.stdout


def test_bench_rejects_unknown_methods_and_tasks(tiny_model_dir):
    args = ("bench", "--model", str(tiny_model_dir), "--dtype", "fp32")
    result = _run(*args, "--methods", "warp-drive")
    assert result.exit_code == 2 and "unknown methods warp-drive" in result.stderr
    result = _run(*args, "--tasks", "no-such-task")
    assert result.exit_code == 2 and "unknown task ids: no-such-task" in result.stderr
    result = _run(*args, "--verify", "loose")
    assert result.exit_code == 2 and "unknown verification" in result.stderr


def test_unreadable_files_are_reported_before_any_model_is_loaded(tmp_path, source):
    """A missing file with an unknown model exits 2 for the file: the model is never looked up
    when there is nothing to edit, and a batch reports every bad file."""
    missing = tmp_path / "missing.py"
    result = _run("fix", str(missing), "fix", "--model", "no-such-model")
    assert result.exit_code == 2 and "no such file" in result.stderr
    assert "unknown model" not in result.stderr
    binary = tmp_path / "blob.py"
    binary.write_bytes(b"\0\1\2")
    result = _run("rewrite", str(missing), str(binary), "-m", "fix", "--check", "--model", "nope")
    assert result.exit_code == 2
    assert "no such file" in result.stderr and "looks binary" in result.stderr


def test_draft_model_methods_need_a_draft_model_with_the_same_tokenizer(
    source, tiny_model_dir, tmp_path
):
    from helpers import tiny_model, train_tokenizer

    result = _run("edit", str(source), "add hints", "--method", "evospec")
    assert result.exit_code == 2 and "add --draft-model" in result.stderr
    result = _run("bench", "--model", str(tiny_model_dir), "--methods", "ar,evospec")
    assert result.exit_code == 2 and "evospec draft with a second model" in result.stderr
    other = tmp_path / "other-tokenizer"
    trained = train_tokenizer(vocab_size=600)
    tiny_model("qwen2", vocab=len(trained)).save_pretrained(other)
    trained.save_pretrained(other)
    result = _run(
        "edit", str(source), "add hints", "--method", "evospec", "--draft-model", str(other)
    )
    assert result.exit_code == 3 and "another tokenizer" in result.stderr
    assert result.stdout == ""


def test_bench_runs_methods_side_by_side_with_plain_decoding_s_tokens(tiny_model_dir, tmp_path):
    """In fp32 every strict method, transformers' prompt lookup too, gives plain greedy
    decoding's tokens, token for token (bf16 may round a batched pass differently)."""
    import json

    source = "def add(a, b):\n    return a + b\n" * 6
    task = {"id": "t", "kind": "edit", "instruction": "add hints", "input": source}
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    report = tmp_path / "report.json"
    result = _run(
        *("bench", "--model", str(tiny_model_dir), "--dtype", "fp32"),
        *("--methods", "ar,hf-pld,pld,pldplus", "--tasks-file", str(tasks)),
        *("--max-new-tokens", "40", "--json", str(report)),
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(report.read_text())
    rows = data["rows"]
    assert [row["method"] for row in rows] == ["ar", "hf-pld", "pld", "pldplus"]
    assert data["dtype"] == "float32"
    assert [row["identical"] for row in rows] == [True] * 4
    assert len({row["new_tokens"] for row in rows}) == 1


def test_bench_runs_the_hybrid_beside_plain_decoding_with_the_same_tokens(tiny_model_dir, tmp_path):
    import json

    source = "def add(a, b):\n    return a + b\n"
    task = {
        "id": "t",
        "kind": "edit",
        "instruction": "add a docstring",
        "input": source,
        "tests": "assert add(1, 2) == 3",
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    report = tmp_path / "report.json"
    result = _run(
        "bench",
        "--model",
        str(tiny_model_dir),
        "--draft-model",
        str(tiny_model_dir),
        "--methods",
        "ar,evospec,draft-model",
        "--tasks-file",
        str(tasks),
        "--max-new-tokens",
        "40",
        "--json",
        str(report),
    )
    assert result.exit_code == 0, result.stderr
    rows = {row["method"]: row for row in json.loads(report.read_text())["rows"]}
    assert rows["evospec"]["identical"] and rows["draft-model"]["identical"]
    assert rows["draft-model"]["mean_accepted"] > 1  # the draft is the target: chains hold


def test_the_script_exits_with_the_command_s_code_and_flushes_its_output(tmp_path):
    """`specedit` ends with os._exit, skipping the interpreter's teardown: its exit code and
    everything it printed (a long merge through a pipe here) still arrive."""
    script = [sys.executable, "-m", "specedit"]
    missing = subprocess.run(
        [*script, "fix", str(tmp_path / "gone.py"), "fix it"], capture_output=True, text=True
    )
    assert missing.returncode == 2 and "no such file" in missing.stderr
    assert missing.stdout == ""
    version = subprocess.run([*script, "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout == f"specedit {__version__}\n"
    source = tmp_path / "many.py"
    source.write_text("".join(f"def f{n}():\n    return {n}\n\n\n" for n in range(4000)))
    snippet = tmp_path / "change.py"
    snippet.write_text("def f3999():\n    return -1\n")
    merged = subprocess.run(
        [*script, "apply", str(source), str(snippet), "-q"], capture_output=True, text=True
    )
    assert merged.returncode == 0, merged.stderr
    assert len(merged.stdout) > 100_000  # more than a pipe holds at once
    assert merged.stdout == source.read_text().replace("return 3999\n", "return -1\n")


def test_a_file_named_twice_is_edited_once(tmp_path, monkeypatch):
    """`a.py ./a.py`, or a link and its target, name one file: a second edit would be refused
    as changed on disk by the first, after a whole model run."""
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "link.py").symlink_to(tmp_path / "a.py")
    read = []

    def read_inputs(files):
        read.append(files)
        raise typer.Exit(Exit.INPUT)  # no model is loaded

    monkeypatch.setattr(commands, "_read_inputs", read_inputs)
    monkeypatch.chdir(tmp_path)
    result = _run("rewrite", "a.py", "./a.py", "link.py", "-m", "fix the typos", "--check")
    assert read == [["a.py"]], result.stderr
    assert "./a.py names a file given before; it is edited once" in result.stderr
    assert "link.py names a file given before" in result.stderr


def test_output_to_a_dash_is_stdout_as_pipes_tools_spell_it(
    source, tiny_model_dir, tmp_path, monkeypatch
):
    """`-o -` prints the edited text, as without -o, and writes no file named `-`; it is a
    place to write like the others, so it does not go with -i."""
    from dataclasses import replace

    from specedit.editing import editor, local

    fixed = "def add(a, b):\n    return a + b\n"

    def execute(lm, prepared, on_step=None, stop=None):
        generation = editor.generate_edit(lm, replace(prepared, max_new_tokens=2), on_step)
        return editor.EditResult(fixed, generation, prepared.prompt)

    monkeypatch.setattr(local, "execute", execute)
    monkeypatch.chdir(tmp_path)
    tiny = ("--model", str(tiny_model_dir), "--dtype", "fp32", "--method", "pld", "-q")
    result = _run("fix", str(source), "add subtracts", "-o", "-", *tiny)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == fixed and not (tmp_path / "-").exists()
    both = _run("fix", str(source), "add subtracts", "-o", "-", "-i", *tiny)
    assert both.exit_code == Exit.INPUT and "choose one of" in both.stderr


def test_python_m_specedit_imports_nothing_from_the_current_folder(tmp_path):
    """`python -m` puts the current folder first on the module path: a cloned repository's
    `typer.py` would run in place of the library."""
    (tmp_path / "typer.py").write_text("open('RAN', 'w').close()\n")
    version = subprocess.run(
        [sys.executable, "-m", "specedit", "--version"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert version.returncode == 0 and version.stdout == f"specedit {__version__}\n"
    assert not (tmp_path / "RAN").exists()


def test_a_file_named_like_an_option_is_never_read_as_one(tmp_path, monkeypatch):
    """A shell's `*.md`, or pre-commit's list of files, puts a cloned repository's file named
    `--test=...` among the options: the script refuses to run, naming it, and runs nothing;
    after `--` the same names are files."""
    (tmp_path / "README.md").write_text("Teh notes.\n")
    hostile = "--test=touch RAN #.md"
    (tmp_path / hostile).write_text("More notes.\n")
    names = sorted(path.name for path in tmp_path.glob("*.md"))  # what the shell's *.md gives
    script = [sys.executable, "-m", "specedit", "rewrite"]
    flags = ["-m", "fix the typos", "--check", "--server", "http://127.0.0.1:9"]
    globbed = subprocess.run(
        [*script, *names, *flags], cwd=tmp_path, capture_output=True, text=True
    )
    assert globbed.returncode == Exit.INPUT
    assert repr(hostile) in globbed.stderr and "after --" in globbed.stderr
    assert not (tmp_path / "RAN").exists()
    quoted = subprocess.run(
        [*script, *flags, "--", *names], cwd=tmp_path, capture_output=True, text=True
    )
    assert quoted.returncode == Exit.MODEL, quoted.stderr  # both read; no server at port 9
    assert not (tmp_path / "RAN").exists()
    monkeypatch.chdir(tmp_path)
    assert commands.files_read_as_options([hostile, "-", "--quiet", "--", hostile]) == [hostile]


# Runs the CLI in a fresh interpreter (default warning filters, transformers' own logging) with
# real forward passes of the tiny model; the answer is then replaced by a fixed one, since a
# random model's own answer would not be a clean edit.
CLEAN_EDIT_DRIVER = """
import sys
from dataclasses import replace

from specedit.editing import editor, local
from specedit.cli import run

ANSWER = sys.argv.pop()  # the last argument is the edit's answer


def execute(lm, prepared, on_step=None, stop=None):
    generation = editor.generate_edit(lm, replace(prepared, max_new_tokens=8), on_step)
    return editor.EditResult(ANSWER, generation, prepared.prompt)


local.execute = execute
sys.argv[0] = "specedit"
run()
"""


def test_a_clean_edit_prints_only_the_stats_line_on_stderr(
    source, tmp_path, tiny_model_dir, monkeypatch, capfd
):
    """No library warnings (deprecations, transformers' logging) reach the user's terminal: in a
    fresh process, after a first run (which may say it builds the model's index or statistics
    once), stderr holds the stats line alone; with -q, nothing. The first and the quiet runs go
    in this process, where a library's warning is an error (pyproject's filterwarnings)."""
    from specedit.editing import local

    driver = tmp_path / "driver.py"
    driver.write_text(CLEAN_EDIT_DRIVER)
    fixed = "def add(a, b):\n    return a + b\n"
    draft = ["--draft-model", str(tiny_model_dir)]  # the target's and the draft's passes run
    arguments = ["fix", str(source), "add, not subtract", *draft]
    monkeypatch.setattr(local, "execute", local.execute)  # the driver replaces it: put back
    monkeypatch.setattr(os, "_exit", sys.exit)  # the script ends its process at once

    def here(*extra: str) -> tuple[str, str]:
        monkeypatch.setattr(sys, "argv", [str(driver), *arguments, *extra, fixed])
        with pytest.raises(SystemExit) as done:
            runpy.run_path(str(driver), run_name="__main__")
        assert done.value.code in (0, None)
        return capfd.readouterr()

    assert here()[0] == fixed
    command = [sys.executable, str(driver), *arguments, fixed]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == fixed
    said = result.stderr.splitlines()
    assert said[0].startswith(f"specedit: {source}: 8 tokens in ") and len(said) == 1, said
    assert here("-q") == (fixed, "")
