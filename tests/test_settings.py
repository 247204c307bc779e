"""Settings come from the project root only, and keys that run commands, send code elsewhere or
override safety come only from a file that nobody but the user can change."""

from __future__ import annotations

import os

import pytest
import typer
from typer.testing import CliRunner

from specedit.cli import app
from specedit.cli.settings import GUARDED, Settings, SettingsError, find_settings, project_root

runner = CliRunner()
TRUSTED_ONLY = 'test = "touch RAN"\nserver = "http://example.invalid"\nforce = true\n'


@pytest.fixture
def project(tmp_path):
    """A project folder only its owner can write, under a parent with settings of its own."""
    (tmp_path / ".specedit.toml").write_text('method = "parent"\ntest = "touch RAN"\n')
    folder = tmp_path / "project"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    return folder


def test_a_parent_folders_settings_stop_at_the_project_root(project):
    (project / "pyproject.toml").write_text('[project]\nname = "p"\n')  # no [tool.specedit]
    (project / "src").mkdir()
    assert project_root(project / "src") == project
    settings = find_settings(project / "src")
    assert settings.values == {} and settings.source is None and settings.warnings == []


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
    (project / ".specedit.toml").write_text(TRUSTED_ONLY + 'max-new-tokens = 64\nmethod = "pld"\n')
    settings = find_settings(project)
    assert settings.source == project / ".specedit.toml" and settings.warnings == []
    assert settings.values == {
        "test": "touch RAN",
        "server": "http://example.invalid",
        "force": True,
        "max_new_tokens": 64,
        "method": "pld",
    }


@pytest.mark.parametrize("writable", ["folder", "sticky folder", "file"])
def test_guarded_keys_from_a_file_others_can_write_are_refused(project, writable):
    path = project / ".specedit.toml"
    path.write_text(TRUSTED_ONLY + 'method = "pld"\n')
    path.chmod(0o644)
    if writable == "file":
        path.chmod(0o666)
    else:
        project.chmod(0o1777 if writable == "sticky folder" else 0o777)
    settings = find_settings(project)
    assert settings.values == {"method": "pld"}  # the rest still apply
    assert len(settings.warnings) == 3
    for key, message in zip(["test", "server", "force"], settings.warnings, strict=True):
        assert message.startswith(f"ignoring `{key}` in {path} (")
        assert "others can write" in message and "\n" not in message


@pytest.mark.skipif(not hasattr(os, "chown") or os.geteuid() != 0, reason="needs root to chown")
def test_guarded_keys_from_another_users_file_are_refused(project):
    path = project / ".specedit.toml"
    path.write_text(TRUSTED_ONLY + "max-new-tokens = 64\n")
    os.chown(path, 12345, -1)
    settings = find_settings(project)
    assert settings.values == {"max_new_tokens": 64}
    assert [w.split("`")[1] for w in settings.warnings] == ["test", "server", "force"]
    assert all("belongs to another user (uid 12345)" in w for w in settings.warnings)
    os.chown(path, os.getuid(), -1)
    os.chown(project, 12345, -1)  # a folder someone else owns: they could swap the file
    assert "its folder belongs to another user" in find_settings(project).warnings[0]


def test_every_guarded_key_is_an_option():
    command = typer.main.get_command(app)
    options = {p.name for c in command.commands.values() for p in c.params}
    assert set(GUARDED) <= options


def test_an_unreadable_settings_file_is_an_error(project):
    (project / ".specedit.toml").write_text("method = \n")
    with pytest.raises(SettingsError, match="cannot read settings from"):
        find_settings(project)


def test_the_cli_warns_on_stderr_and_applies_the_other_keys(project, monkeypatch, tmp_path):
    monkeypatch.chdir(project)
    project.chmod(0o777)
    (project / ".specedit.toml").write_text('test = "touch RAN"\nmethod = "nonexistent"\n')
    note = project / "note.txt"
    note.write_text("Teh cat.\n")
    result = runner.invoke(app, ["fix", str(note), "fix"])
    assert result.exit_code == 2 and "'nonexistent' is not one of" in result.stderr  # applied
    assert (
        f"specedit: warning: ignoring `test` in {project / '.specedit.toml'} (runs a shell "
        "command): others can write its folder" in result.stderr
    )
    assert not list(tmp_path.rglob("RAN"))
