"""Settings come from the user's config and the project root; a project file sets anything but
how an edit is decoded and shown only once the user trusted it (`specedit trust`), since
`git clone` makes every file the user's."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess

import pytest
import typer
from typer.testing import CliRunner

from specedit.cli import app, commands
from specedit.cli.settings import (
    FREE,
    Settings,
    SettingsError,
    find_settings,
    project_root,
    trust_store,
)

runner = CliRunner()
HOSTILE = (
    'test = "touch RAN"\nserver = "http://collector.invalid"\nforce = true\n'
    'stats-file = "/tmp/overwritten"\nmodel = "someone/else"\napi-key = "theirs"\n'
    "examples = true\n"  # runs the file's docstring examples: code the clone wrote
)
HELD = ["test", "server", "force", "stats-file", "model", "api-key", "examples"]


@pytest.fixture(autouse=True)
def config_home(tmp_path, monkeypatch):
    """The user's config folder, empty: what the user trusted is recorded there."""
    folder = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder))
    return folder


@pytest.fixture
def project(tmp_path):
    """A project folder under a parent with settings of its own."""
    (tmp_path / ".specedit.toml").write_text('method = "parent"\ntest = "touch RAN"\n')
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


@pytest.fixture
def clone(tmp_path):
    """A real `git clone` of a repository whose settings run a command and send code away."""
    origin = tmp_path / "origin"
    origin.mkdir()
    (origin / ".specedit.toml").write_text(HOSTILE + 'method = "pld"\n')
    (origin / "bug.py").write_text("def add(a, b):\n    return a - b\n")
    git = ["git", "-c", "user.name=x", "-c", "user.email=x@x", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(origin)], check=True)
    subprocess.run([*git, "-C", str(origin), "add", "."], check=True)
    subprocess.run([*git, "-C", str(origin), "commit", "-qm", "init"], check=True)
    subprocess.run(["git", "clone", "-q", str(origin), str(tmp_path / "clone")], check=True)
    return tmp_path / "clone"


def options_of_a_fix(folder, monkeypatch, *args: str) -> tuple[dict, str]:
    """The options `specedit fix bug.py ...` run with from `folder`, and its stderr: the
    edit itself is replaced by a recorder, so that nothing a setting says can run."""
    seen = []
    monkeypatch.delenv("SPECEDIT_MODEL", raising=False)  # the fast tier's: it would win
    monkeypatch.setattr(commands, "_run_edits", lambda *a: seen.append(a[3]))
    monkeypatch.chdir(folder)
    result = runner.invoke(app, ["fix", "bug.py", "fix it", *args])
    assert result.exit_code == 0, result.output
    (options,) = seen
    return dataclasses.asdict(options), result.stderr


def test_a_parent_folders_settings_stop_at_the_project_root(project):
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')  # no [tool.specedit]
    (project / "src").mkdir()
    assert project_root(project / "src") == project
    settings = find_settings(project / "src")
    assert settings == Settings()


def test_a_git_folder_marks_the_root_too(project):
    (project / ".git").mkdir()
    assert find_settings(project).values == {}


def test_no_project_root_means_no_settings(tmp_path):
    if project_root(tmp_path) is not None:
        pytest.skip("a folder above the test's temporary folder holds a project marker")
    assert find_settings(tmp_path) == Settings()


def test_the_projects_own_settings_apply_and_specedit_toml_wins(project):
    (project / "pyproject.toml").write_text('[tool.specedit]\nmethod = "from-pyproject"\n')
    assert find_settings(project).values == {"method": "from-pyproject"}
    (project / ".specedit.toml").write_text('max-new-tokens = 64\nmethod = "pld"\n')
    settings = find_settings(project)
    assert settings.warnings == []
    assert settings.values == {"max_new_tokens": 64, "method": "pld"}
    assert settings.origins == dict.fromkeys(settings.values, project / ".specedit.toml")


def test_a_cloned_repositorys_settings_run_nothing_and_send_nothing(clone, monkeypatch):
    options, stderr = options_of_a_fix(clone, monkeypatch)
    assert options["method"] == "pld"  # how to decode: a project may choose it
    assert options["test"] is None and options["server"] is None and not options["force"]
    assert not options["examples"]
    assert options["stats_file"] is None and options["api_key"] is None
    assert options["model"] != "someone/else"
    path = clone.resolve() / ".specedit.toml"
    (line,) = stderr.splitlines()  # one line, naming every key held back and the command
    assert line.startswith(f"specedit: warning: ignoring {', '.join(HELD)} in {path}: ")
    assert line.endswith(f"run `specedit trust {path}`")


def test_the_users_trust_lets_the_file_set_every_key_until_it_changes(
    clone, monkeypatch, config_home
):
    monkeypatch.chdir(clone)
    trusted = runner.invoke(app, ["trust"])
    assert trusted.exit_code == 0, trusted.output
    assert f"trusted {clone.resolve() / '.specedit.toml'}" in trusted.stderr
    assert '  test = "touch RAN"' in trusted.stderr  # what it now runs, shown once more
    assert (trust_store().stat().st_mode & 0o777) == 0o600
    assert (config_home / "specedit").stat().st_mode & 0o077 == 0
    options, stderr = options_of_a_fix(clone, monkeypatch)
    assert options["test"] == "touch RAN" and options["server"] == "http://collector.invalid"
    assert options["model"] == "someone/else" and stderr == ""
    # a pull that changes the file needs the user's word again
    with (clone / ".specedit.toml").open("a") as settings:
        settings.write('attribution = "/tmp/overwritten"\n')
    options, stderr = options_of_a_fix(clone, monkeypatch)
    assert options["test"] is None and options["attribution"] is None
    assert "ignoring test, server" in stderr


def test_trust_is_for_one_path_not_for_the_same_bytes_elsewhere(clone, tmp_path, monkeypatch):
    monkeypatch.chdir(clone)
    assert runner.invoke(app, ["trust", ".specedit.toml"]).exit_code == 0
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", str(clone), str(other)], check=True)
    options, _ = options_of_a_fix(other, monkeypatch)
    assert options["test"] is None


def test_trust_list_and_forget(clone, monkeypatch):
    monkeypatch.chdir(clone)
    path = clone.resolve() / ".specedit.toml"
    assert runner.invoke(app, ["trust"]).exit_code == 0
    assert runner.invoke(app, ["trust", "--list"]).stdout == f"ok\t{path}\n"
    path.write_text('method = "pld"\n')
    assert runner.invoke(app, ["trust", "--list"]).stdout == f"changed\t{path}\n"
    assert runner.invoke(app, ["trust", "--forget"]).exit_code == 0
    assert json.loads(trust_store().read_text()) == {}
    refused = runner.invoke(app, ["trust", "--forget"])
    assert refused.exit_code == 2 and "was not trusted" in refused.stderr


def test_trust_list_writes_each_file_on_a_line_of_its_own(tmp_path, monkeypatch):
    """A folder's name may hold a line feed: listed as it is, the rest would read as a
    trusted file of its own."""
    folder = tmp_path / "p\nok\tforged"
    folder.mkdir()
    (folder / ".specedit.toml").write_text('method = "pld"\n')
    monkeypatch.chdir(folder)
    assert runner.invoke(app, ["trust"]).exit_code == 0
    listed = runner.invoke(app, ["trust", "--list"]).stdout
    assert listed.splitlines() == [f"ok\t{tmp_path.resolve()}/p\\nok\tforged/.specedit.toml"]


def test_a_pyprojects_table_is_trusted_as_a_file_too(project, monkeypatch):
    (project / "pyproject.toml").write_text('[tool.specedit]\ntest = "pytest -q"\n')
    (project / "bug.py").write_text("x = 1\n")
    options, stderr = options_of_a_fix(project, monkeypatch)
    assert options["test"] is None and "ignoring test in" in stderr
    assert runner.invoke(app, ["trust", "pyproject.toml"]).exit_code == 0
    assert options_of_a_fix(project, monkeypatch)[0]["test"] == "pytest -q"


def test_trust_refuses_what_is_not_a_settings_file(project, monkeypatch):
    monkeypatch.chdir(project)
    (project / "notes.toml").write_text('test = "x"\n')
    refused = runner.invoke(app, ["trust", "notes.toml"])
    assert refused.exit_code == 2 and "is not a settings file" in refused.stderr
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')
    refused = runner.invoke(app, ["trust", "pyproject.toml"])
    assert refused.exit_code == 2 and "has no [tool.specedit] table" in refused.stderr
    assert not trust_store().exists()


def test_the_users_own_config_applies_under_the_project(project, monkeypatch, config_home):
    (config_home / "specedit").mkdir(parents=True)
    (config_home / "specedit" / "config.toml").write_text('test = "make check"\nseed = 1\n')
    (project / ".specedit.toml").write_text("seed = 2\n")
    (project / "bug.py").write_text("x = 1\n")
    options, stderr = options_of_a_fix(project, monkeypatch)
    assert options["test"] == "make check" and options["seed"] == 2 and stderr == ""
    assert options_of_a_fix(project, monkeypatch, "--seed", "3")[0]["seed"] == 3


@pytest.mark.parametrize("writable", ["file", "folder"])
def test_a_user_config_or_trust_store_others_can_write_is_not_read(
    project, monkeypatch, config_home, writable
):
    folder = config_home / "specedit"
    folder.mkdir(parents=True)
    for name, text in [("config.toml", "seed = 1\n"), ("trusted.json", "{}\n")]:
        path = folder / name
        path.write_text(text)
        (path if writable == "file" else folder).chmod(0o666 if writable == "file" else 0o777)
        with pytest.raises(SettingsError, match=f"not reading {path}: others can write"):
            find_settings(project)
        path.unlink()
        folder.chmod(0o700)


def test_the_trust_store_is_read_only_when_it_is_a_table(project, config_home):
    (config_home / "specedit").mkdir(parents=True)
    trust_store().write_text("[1, 2]\n")
    (project / ".specedit.toml").write_text('test = "x"\n')
    with pytest.raises(SettingsError, match="not a table of paths"):
        find_settings(project)


def test_every_free_key_is_an_option():
    command = typer.main.get_command(app)
    options = {p.name for c in command.commands.values() for p in c.params}
    assert set(FREE) <= options


def test_an_unreadable_settings_file_is_an_error(project):
    (project / ".specedit.toml").write_text("method = \n")
    with pytest.raises(SettingsError, match="cannot read settings from"):
        find_settings(project)


def test_an_unknown_setting_names_the_file_that_set_it(project, monkeypatch, config_home):
    (config_home / "specedit").mkdir(parents=True)
    (config_home / "specedit" / "config.toml").write_text("colour = 1\n")
    monkeypatch.chdir(project)
    result = runner.invoke(app, ["fix", "x.py", "y"])
    assert result.exit_code == 2
    assert f"{config_home / 'specedit' / 'config.toml'}: unknown setting(s) colour" in (
        result.stderr
    )


def test_the_cli_warns_on_stderr_and_applies_the_other_keys(project, monkeypatch, tmp_path):
    monkeypatch.chdir(project)
    os.chmod(project, 0o755)
    (project / ".specedit.toml").write_text('test = "touch RAN"\nmethod = "nonexistent"\n')
    note = project / "note.txt"
    note.write_text("Teh cat.\n")
    result = runner.invoke(app, ["fix", str(note), "fix"])
    assert result.exit_code == 2 and "'nonexistent' is not one of" in result.stderr  # applied
    assert f"specedit: warning: ignoring test in {project / '.specedit.toml'}" in result.stderr
    assert not list(tmp_path.rglob("RAN"))
