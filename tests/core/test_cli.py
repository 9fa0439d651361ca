"""The CLI shell: version, help on every command, one-line errors with documented exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from govern import __version__
from govern.cli import COMMANDS, cli


def test_version() -> None:
    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0 and __version__ in result.output


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_on_every_command(command: str) -> None:
    result = CliRunner().invoke(cli, [command, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage: " in result.output


def test_unknown_command_and_bad_option_exit_2() -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["no-such-command"]).exit_code == 2
    assert runner.invoke(cli, ["doctor", "--no-such-option"]).exit_code == 2


def test_config_error_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.cnf"
    bad.write_text("[client\n")
    proc = subprocess.run(
        [sys.executable, "-m", "govern", "doctor", "--defaults-file", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"govern: error: {bad}:1: malformed group header '[client'"


def test_password_in_dsn_refused_exit_2() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "govern", "doctor", "--dsn", "mysql://u:secret@h/db"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "secret" not in proc.stderr and "process list" in proc.stderr


def test_shell_completion_script() -> None:
    proc = subprocess.run(
        ["govern"],
        env={"_GOVERN_COMPLETE": "bash_source", "PATH": str(Path(sys.executable).parent)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert "_govern_completion" in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("doctor", "--no-such-option"), "No such option '--no-such-option'"),
        (("run",), "Missing argument 'COMMAND...'"),
        (("schedule", "run"), "Missing argument 'CATALOG'"),
        (("history", "--limit", "zero"), "Invalid value for '--limit'"),
        (("no-such-command",), "No such command 'no-such-command'"),
    ],
)
def test_click_usage_errors_are_one_line_exit_2(args: tuple[str, ...], message: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "govern", *args], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    (line,) = proc.stderr.splitlines()
    assert line.startswith("govern: error: ") and message in line, line
    assert line.endswith("--help')"), line  # where to read on
