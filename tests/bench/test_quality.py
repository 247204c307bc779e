"""The bench's quality side: the shipped suite's tests judge edits, and the counts add up,
each row's time against its floor included."""

from __future__ import annotations

import json
from dataclasses import replace
from types import SimpleNamespace

import pytest

from specedit.bench.report import summarize
from specedit.bench.runner import BenchError, run_bench
from specedit.bench.score import Row, check_task, score_row
from specedit.bench.setups import MERGE
from specedit.bench.tasks import SUITES, Task, TaskError, load_tasks

SUITE = load_tasks()


def reference_answer(task: Task) -> str:
    """The answer kept beside a task that ships without `expected` (wording varies, e.g. new
    docstrings): its tests must pass on it."""
    (reference,) = (SUITES["edit"] / task.id).glob("reference.*")
    return reference.read_bytes().decode("utf-8")


def test_the_suite_is_large_and_mixed():
    names = ("bug", "feature", "doc", "insertion")
    groups = {group: [t for t in SUITE if t.group == group] for group in names}
    assert len(SUITE) == sum(map(len, groups.values())) >= 48
    assert len(groups["bug"]) >= 20 and len(groups["feature"]) >= 8 and len(groups["doc"]) >= 8
    assert all(t.tests for t in groups["bug"] + groups["feature"] + groups["insertion"])
    assert all(t.expected is not None for t in groups["bug"] + groups["feature"] + groups["doc"])
    insertion = groups["insertion"]
    assert len(insertion) >= 8 and all(t.kind == "edit" for t in insertion)
    assert all(25 <= t.input.count("\n") <= 90 for t in insertion)
    lines = [t.input.count("\n") for t in SUITE]
    assert max(lines) <= 400 and sum(n >= 150 for n in lines) >= 8
    assert len({t.id for t in SUITE}) == len(SUITE)


@pytest.mark.parametrize("task", [t for t in SUITE if t.tests], ids=lambda t: t.id)
def test_each_tasks_tests_fail_on_the_input_and_pass_on_the_answer(task):
    answer = task.expected if task.expected is not None else reference_answer(task)
    assert check_task(task, answer).passed
    assert not check_task(task, task.input).passed


def test_a_doc_task_passes_only_on_the_expected_text():
    task = next(t for t in SUITE if t.group == "doc")
    assert check_task(task, task.expected).passed
    assert not check_task(task, task.input).passed
    assert not check_task(task, None).passed  # cut off: nothing to check
    free = Task("x", "edit", "do it", "a\n")
    assert check_task(free, "b\n") is None


def test_an_answer_the_cli_would_refuse_to_write_does_not_pass():
    """The tests pass on it, but it drops most of the file unasked: without --force the CLI
    writes nothing, so the bench counts it as failed and says why."""
    text = "".join(f"def f{i}():\n    return {i}\n\n\n" for i in range(6))
    task = Task("t", "edit", "make f0 return 7", text, tests="assert f0() == 7")
    kept = text.replace("return 0", "return 7", 1)
    assert check_task(task, kept).passed
    lazy = "def f0():\n    return 7\n"
    result = check_task(task, lazy)
    assert not result.passed and "refused: the edit drops" in result.summary()


def test_tasks_file_reads_tests_and_group(tmp_path):
    path = tmp_path / "tasks.jsonl"
    task = {
        "id": "t",
        "kind": "fix",
        "instruction": "i",
        "input": "x = 1\n",
        "group": "bug",
        "tests": "assert x == 2",
    }
    path.write_text(json.dumps(task) + "\n" + json.dumps({"id": "u"}) + "\n")
    with pytest.raises(TaskError, match=":2: not a task"):
        load_tasks(path)
    path.write_text(json.dumps(task) + "\n")
    (loaded,) = load_tasks(path)
    assert (loaded.group, loaded.tests) == ("bug", "assert x == 2")
    assert check_task(loaded, "x = 2\n").passed and not check_task(loaded, "x = 1\n").passed


def test_a_suite_folder_gives_its_texts_byte_for_byte_in_its_listed_order(tmp_path):
    """A task's texts are files: what they hold is what the model gets and the answer is
    judged against, CRLF, tabs, non-ASCII and a missing final newline included."""
    (tmp_path / "suite.toml").write_text('tasks = ["b", "a"]\n')
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "task.toml").write_text("kind = 'rewrite'\ninstruction = '''\nfix\n'''")
    text = "caf\u00e9\r\n\tx = 1"
    (tmp_path / "a" / "input.md").write_bytes(text.encode())
    (tmp_path / "a" / "expected.md").write_bytes(b"")
    (tmp_path / "a" / "reference.md").write_text("not the task's")
    (tmp_path / "b" / "input.py").write_text("x = 1\n")
    (tmp_path / "b" / "tests.py").write_text("assert x == 2\n")
    b, a = load_tasks(tmp_path)
    assert a == Task("a", "rewrite", "fix\n", text, expected="", group="rewrite")
    assert (b.id, b.input, b.expected, b.tests) == ("b", "x = 1\n", None, "assert x == 2\n")
    (tmp_path / "c").mkdir()
    with pytest.raises(TaskError, match="does not list c"):  # not silently left out
        load_tasks(tmp_path)
    (tmp_path / "suite.toml").write_text('tasks = ["a", "b", "c"]\n')
    with pytest.raises(TaskError, match="c: not a task"):
        load_tasks(tmp_path)


def test_without_a_checkout_the_bench_asks_for_a_tasks_file_in_one_line(tmp_path, monkeypatch):
    """An installed wheel holds no task data, the suites are a checkout's bench/ folder: the
    bench says so (a BenchError: the CLI prints it and exits 2)."""
    monkeypatch.setitem(SUITES, "apply", tmp_path / "bench" / "apply")
    lm = SimpleNamespace(engine="torch", draft=None, name="m")
    with pytest.raises(BenchError, match="source checkout") as raised:
        run_bench(lm, [MERGE], suite="apply")
    assert "--tasks-file" in str(raised.value) and "\n" not in str(raised.value)


def test_summary_counts_passes_by_group_and_failures_by_kind():
    rows = [
        Row("a", "m", 10, 1.0, 2, group="bug", stop="stop", passed=True, unchanged=False),
        Row("b", "m", 10, 1.0, 2, group="bug", stop="length", passed=False),
        Row("c", "m", 10, 1.0, 2, group="doc", stop="runaway", passed=False),
        Row("d", "m", 10, 2.0, 2, group="doc", stop="eos", passed=False, unchanged=True, dropped=4),
    ]
    s = summarize(rows, ["m"])["m"]
    assert s["pass"] == "1/4" and s["pass_by_group"] == {"bug": "1/2", "doc": "0/2"}
    assert (s["cut_off"], s["runaway"], s["unchanged"], s["dropped_lines"]) == (1, 1, 1, 4)
    assert s["median_speedup"] is None  # no `ar` ran
    assert [r.cut_off for r in rows] == [False, True, True, False]


def test_each_failed_edit_is_told_why_unchanged_broken_wrong_line_or_wrong_logic():
    """Where the remaining points go: the planted edit's lines left alone, changed wrongly, a
    file that cannot run, or the input given back (blank lines aside)."""
    source = "def f(x):\n    y = x - 1\n    return y\n\n\ndef g():\n    return 0\n"
    expected = source.replace("x - 1", "x + 1")
    task = Task("t", "fix", "fix f", source, expected=expected, tests="assert f(1) == 2")
    answers = {
        "right": expected,
        "unchanged": "\n" + source,
        "broken": source.replace("x - 1", "z + 1"),
        "wrong line": source.replace("return 0", "return 1"),
        "wrong logic": source.replace("x - 1", "x * 1"),
    }
    failures = {}
    for name, text in answers.items():
        row = Row("t", "m", 10, 1.0, 2, stop="stop")
        score_row(row, text, task, check_task(task, text))
        failures[name] = (row.failure, row.touched)
    assert failures == {
        "right": (None, 1),
        "unchanged": ("unchanged", 0),
        "broken": ("broken", 1),
        "wrong line": ("wrong line", 0),
        "wrong logic": ("wrong logic", 1),
    }
    cut = Row("t", "m", 10, 1.0, 2, stop="length")
    score_row(cut, None, task, check_task(task, None))
    free = Row("t", "m", 10, 1.0, 2, stop="stop")
    untold = replace(task, expected=None)
    score_row(free, answers["wrong logic"], untold, check_task(untold, answers["wrong logic"]))
    assert (cut.failure, free.failure) == ("cut off", "failed")
    rows = [Row("t", "m", 10, 1.0, 2, passed=k is None, failure=k) for k, _ in failures.values()]
    assert summarize(rows, ["m"])["m"]["failures"] == {
        "unchanged": 1,
        "broken": 1,
        "wrong line": 1,
        "wrong logic": 1,
    }


def test_each_setup_s_whole_edit_is_set_against_llama_cpp_and_its_server():
    """What users feel: the wall time of each edit over llama.cpp's (plain, or its server with
    n-gram drafts), task by task, in the summary and in a table of its own, on a terminal as
    in a log."""
    import io

    from rich.console import Console

    from specedit.bench.report import print_tables

    methods = ["adapld", "llama.cpp", "llama-server-ngram-mod"]
    walls = {"adapld": (2.0, 6.0), "llama.cpp": (4.0, 3.0), "llama-server-ngram-mod": (8.0, 12.0)}
    rows = [
        Row(task, method, 10, 1.0, 2, wall_seconds=wall)
        for method in methods
        for task, wall in zip("ab", walls[method], strict=True)
    ]
    summary = summarize(rows, methods)
    assert summary["adapld"]["wall_over_llama.cpp"] == {"median": 1.25, "faster": "1/2"}
    assert summary["adapld"]["wall_over_llama-server-ngram-mod"] == {"median": 3.0, "faster": "2/2"}
    for terminal in (False, True):
        out = io.StringIO()
        print_tables(Console(file=out, width=200, force_terminal=terminal), rows, summary, methods)
        assert "against llama.cpp: how many times faster" in out.getvalue()


def test_the_tables_are_markdown_at_full_width_when_stdout_is_not_a_terminal():
    """Piped or in a CI log, each row whole, in a table Markdown and `column -t` can read;
    rich would cut every column to fit 80 characters (`ada…`)."""
    import io

    from rich.console import Console

    from specedit.bench.report import print_tables

    label = "adapld-tokens~conditional@tools/prompt-variants/instruction-first"
    rows = [Row("fix-posixpath-commonpath-var", label, 10, 1.0, 2, group="bug", passed=True)]
    out = io.StringIO()
    print_tables(Console(file=out, width=80), rows, summarize(rows, [label]), [label])
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("specedit bench (speedup = ")
    row = next(line for line in lines if "fix-posixpath-commonpath-var" in line)
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[:3] == ["fix-posixpath-commonpath-var", label, "pass"]
    assert "summary over tasks" in lines and "…" not in out.getvalue()


def test_the_named_region_is_the_first_definition_the_instruction_names():
    """As a user who names the misbehaving function would pass it to --lines; a name that the
    input does not define (a value, another module's function) is passed over."""
    from specedit.bench.setups import named_region
    from specedit.editing.editor import EditRequest

    text = "import os\n\n\ndef helper(x):\n    return x\n\n\n"
    text += "def mean(v):\n    return sum(v) * len(v)\n"
    task = Task("t", "fix", "`os.sep` is fine but `mean([1, 2])` returns 6", text, tests="")
    request, whole = named_region(task, EditRequest(text, task.instruction, prompt="fix"))
    assert request.text == "def mean(v):\n    return sum(v) * len(v)\n"
    assert (request.surroundings.first, request.surroundings.last) == (8, 9)
    assert whole("def mean(v):\n    return sum(v) / len(v)\n") == text.replace("*", "/")
    nameless = replace(task, instruction="the average is wrong")
    request, whole = named_region(nameless, EditRequest(text, nameless.instruction, prompt="fix"))
    assert request.text == text and request.surroundings is None and whole("x") == "x"


def test_a_named_setup_is_compared_with_plain_decoding_of_the_same_region():
    """Its answer is the region, not the file: speed and token identity against `ar` on the
    whole file would compare different texts."""
    from specedit.bench.setups import reference

    assert reference("pld+named/llama.cpp") == "ar+named/llama.cpp"
    assert reference("adapld@state+named") == "ar+named"
    assert reference("pld/llama.cpp") == "ar/llama.cpp" and reference("adapld") == "ar"
    assert reference("adapld+whole/llama.cpp") == "ar+whole/llama.cpp"


def test_the_bench_edits_a_long_file_as_the_cli_does_and_the_whole_file_where_asked():
    """AUTO (the default) narrows a long file's edit to the function the instruction is
    about, as the CLI does; WHOLE does not; a short file is edited whole by both."""
    from specedit.bench.setups import Setup, located_region
    from specedit.editing.editor import EditRequest

    functions = "".join(
        f"def f{i}(x):\n" + "    x += 1\n" * 8 + "    return x\n\n\n" for i in range(20)
    )
    long = EditRequest(functions, "f7() adds one too many", prompt="fix", language="python")
    narrowed, whole = located_region(long)
    assert narrowed.text.startswith("def f7(x):") and narrowed.surroundings.first == 85
    assert whole(narrowed.text) == functions
    short = replace(long, text=functions[:300])
    assert located_region(short) == (short, str)
    assert [Setup("adapld").label, Setup("adapld", region="whole").label] == [
        "adapld",
        "adapld+whole",
    ]


def test_named_regions_and_unknown_regions_are_refused_where_they_mean_nothing():
    from types import SimpleNamespace

    from specedit.bench.runner import BenchError, run_bench

    lm = SimpleNamespace(engine="torch", draft=None, name="m")
    with pytest.raises(BenchError, match="a snippet to apply names no region"):
        run_bench(lm, ["pld"], suite="apply", regions=["named"])
    with pytest.raises(BenchError, match="unknown region lines"):
        run_bench(lm, ["pld"], regions=["lines"])


def test_each_row_is_set_against_the_floor_of_the_model_its_passes_ran_on():
    """llama-cpp-python's own decoding runs the GGUF file as the llama.cpp engine does: that
    engine's cost, or none where it was not loaded; a merge made without the model has none.
    A row of one generation is also set against the copy bound of its answer, never below its
    floor."""

    from specedit.bench.floors import set_floors
    from specedit.bench.setups import Setup
    from specedit.engine.cost import PROBE_SIZES, ContextCost, PassCost

    on_torch = [ContextCost(prefill=(0.01, 0.0), verify=(0.02, 0.0))]
    # measured twice, the second time beside other work: the lower floor counts
    on_gguf = [
        ContextCost(prefill=(0.005, 0.0), verify=(0.01, 0.0)),
        ContextCost(prefill=(0.006, 0.0), verify=(0.012, 0.0)),
    ]
    floors = {"torch": on_torch, "llama.cpp": on_gguf}
    passes = PassCost(PROBE_SIZES, tuple(0.05 + 0.01 * w for w in PROBE_SIZES), 0.01)
    curves = {"torch": passes, "llama.cpp": passes}

    def floor_of(row: Row, setup: Setup, given=floors) -> float | None:
        row = replace(row, floor_seconds=None, copy_bound_seconds=None)
        set_floors(row, setup, given, curves)
        return row.floor_seconds

    row = Row("t", "m", 100, 4.0, 5, prompt_tokens=200)
    assert floor_of(row, Setup("ar")) == pytest.approx(200 * 0.01 + 100 * 0.02)
    assert floor_of(row, Setup("pld", engine="llama.cpp")) == pytest.approx(2.0)
    assert floor_of(row, Setup("llama.cpp-pld")) == pytest.approx(2.0)
    assert floor_of(row, Setup("llama.cpp"), {"torch": on_torch}) is None
    assert floor_of(replace(row, prompt_tokens=0, new_tokens=0), Setup("merge")) is None
    row.floor_seconds = 2.0
    assert row.times_floor == pytest.approx(2.0)  # generation seconds, not the wall's
    others = [replace(row, task="u", seconds=3.0), replace(row, task="v", floor_seconds=None)]
    assert summarize([row, *others], ["m"])["m"]["median_times_floor"] == 1.75
    assert row.copy_bound_seconds is None  # no prompt ids: a row of several candidates

    # one generation: its answer's pairs are the prompt's, so one pass drafts 4 and yields 2
    single = Row("t", "m", 2, 1.0, 1, prompt_tokens=3, tokens=[4, 2], prompt_ids=[2, 4, 2])
    set_floors(single, Setup("pld"), floors, curves)
    bound = on_torch[0].copy_bound([2, 4, 2], [4, 2], passes)
    assert single.copy_bound_seconds == pytest.approx(bound)
    assert bound > single.floor_seconds
    assert bound == pytest.approx(0.03 + passes(2))
    assert single.times_copy_bound == pytest.approx(1.0 / bound)
    # a bound under the floor (costs measured apart) is the floor
    set_floors(single, Setup("pld"), {"torch": [ContextCost((0.01, 0.0), (1.0, 0.0))]}, curves)
    assert single.copy_bound_seconds == single.floor_seconds == pytest.approx(2.03)


def test_a_bench_run_reports_each_row_against_its_floor(tiny_model_dir, tmp_path):
    """transformers' `ar` and an engine setup are fed the same prompt: both rows carry its
    length and the floor of the costs measured in the warm-up, in the JSON and the tables."""
    import io

    from rich.console import Console

    from specedit.bench.runner import run_bench
    from specedit.engine.cost import ContextCost
    from specedit.models.load import load

    task = {
        "id": "add",
        "kind": "fix",
        "instruction": "add subtracts",
        "input": "def add(a, b):\n    return a - b\n",
        "language": "python",
        "tests": "assert add(2, 3) == 5",
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    report = tmp_path / "report.json"
    lm = load(str(tiny_model_dir), dtype="fp32")
    out = io.StringIO()
    console = Console(file=out, width=200)
    run_bench(
        lm, ["ar", "pld"], tasks_file=tasks, max_new_tokens=16, json_file=report, console=console
    )
    data = json.loads(report.read_text())
    rows = {row["method"]: row for row in data["rows"]}
    assert rows["ar"]["prompt_tokens"] == rows["pld"]["prompt_tokens"] > 0  # the same prompt
    # measured before the first row and after the last; each row's floor is the lower
    measured = data["floor_costs"]["torch"]
    costs = [ContextCost(tuple(m["prefill"]), tuple(m["verify"])) for m in measured]
    assert len(costs) == 2 and all(c.floor(10, 10) > 0 for c in costs)
    for method, row in rows.items():
        floor = min(c.floor(row["prompt_tokens"], row["new_tokens"]) for c in costs)
        assert row["new_tokens"] > 0 and floor > 0 and row["floor_seconds"] == pytest.approx(floor)
        assert row["times_floor"] == pytest.approx(row["seconds"] / floor, abs=1e-3)
        assert data["summary"][method]["median_times_floor"] == row["times_floor"]
        # one generation each: set against the copy bound of its answer too
        assert row["copy_bound_seconds"] >= row["floor_seconds"]
        assert row["times_copy_bound"] == pytest.approx(
            row["seconds"] / row["copy_bound_seconds"], abs=1e-3
        )
    assert "median x floor" in out.getvalue()  # the summary table's column
    assert "median x copy" in out.getvalue()
    # it keeps what a replay needs: the answers and the curve that sized the drafts
    from specedit.bench.replay import replay_run

    assert rows["pld"]["prompt_ids"] and rows["pld"]["tokens"]
    assert rows["pld"]["first_copy"] == rows["pld"]["input_span"][0]  # it starts with its text
    assert data["pass_costs"]["torch"]["sizes"] == list(lm.pass_cost().sizes)
    assert data["pass_costs"]["torch"]["repack"] is None  # llama.cpp's weights' layout alone
    (replayed,) = replay_run(report, ["pld"])
    assert replayed.task == "add" and replayed.seconds >= replayed.copy_bound > 0


def test_the_floor_probe_reaches_as_far_as_the_tasks_do(monkeypatch):
    """The floor's costs are measured over the positions the tasks' prompts and answers reach,
    in whole prefill batches: a bench of short tasks does not prefill 2,048 tokens twice, and a
    long one is measured as far as the probe goes."""
    from specedit.bench import floors
    from specedit.engine.cost import CONTEXT_PROBE, PROBE_PROMPT

    lengths = []
    monkeypatch.setattr(floors, "measure_context", lambda model, length: lengths.append(length))

    def words(text: str, add_special_tokens: bool) -> dict[str, list[str]]:
        return {"input_ids": text.split()}

    lm = SimpleNamespace(tokenizer=words, model=None, context_length=32768)

    def task(words: int) -> SimpleNamespace:
        return SimpleNamespace(input="w " * words, instruction="fix it")

    for tasks, max_new_tokens in [
        ([task(10)], None),
        ([task(10), task(400)], None),
        ([task(400)], 16),
        ([task(5000)], None),
    ]:
        floors.floor_costs(lm, floors.reach_of(lm, tasks, max_new_tokens))
    assert lengths == [PROBE_PROMPT, 3 * PROBE_PROMPT, 2 * PROBE_PROMPT, CONTEXT_PROBE]
    floors.floor_costs(SimpleNamespace(model=None, context_length=2048), 4000)
    assert lengths[-1] == 1024  # half the model's context at most


def test_an_examples_selection_checks_candidates_on_the_task_s_own_examples():
    """`--samples examplesN` runs the input's `>>>` lines on a candidate, in a folder of its
    own; a task without examples, or a plain selection, gets no check."""
    from specedit.bench.runner import _examples
    from specedit.editing.selection import Samples

    source = 'def add(a, b):\n    """\n    >>> add(2, 3)\n    5\n    """\n    return a - b\n'
    task = Task("t", "fix", "add subtracts", source, language="python")
    with _examples(task, Samples(3, examples=True)) as check:
        assert check(source.replace("a - b", "a + b")).passed
        failed = check(source)
        assert not failed.passed and "Failed example" in failed.output
    for plain in (replace(task, input="def f():\n    pass\n"), replace(task, language="")):
        with _examples(plain, Samples(3, examples=True)) as check:
            assert check is None
    with _examples(task, Samples(3)) as check:
        assert check is None
