"""``print_json``: the same document indented on a terminal, one line when piped."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from govern.output import print_json


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


DOCUMENTS: list[Any] = [
    {},
    [],
    5,
    {"schema": "x", "classes": []},
    {"classes": [1, {"b": [2, "é"]}], "none": None, "nested": {"list": [1, 2]}},
]


@pytest.mark.parametrize("document", DOCUMENTS)
def test_one_line_when_piped_indented_on_a_terminal(document: Any) -> None:
    piped, terminal = io.StringIO(), Terminal()
    print_json(document, piped)
    print_json(document, terminal)
    assert json.loads(piped.getvalue()) == document == json.loads(terminal.getvalue())
    assert piped.getvalue().count("\n") == 1 and piped.getvalue().endswith("\n")
    if document and isinstance(document, dict):
        assert terminal.getvalue().count("\n") > 1
    if "é" in json.dumps(document, ensure_ascii=False):  # UTF-8 text, not \u escapes
        assert "é" in piped.getvalue() and "é" in terminal.getvalue()


# --- off a terminal, lines are never cut (cron, pipes, grep) --------------------------------
def _piped(*args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """A govern command as cron or a pipe runs it: no terminal, COLUMNS unset."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run(
        [sys.executable, "-m", "govern", *args], capture_output=True, text=True, env=env, **kwargs
    )


def test_piped_history_keeps_whole_ids_names_and_dates(tmp_path: Path) -> None:
    from govern.state import StateStore
    from govern.wrappers import journal

    name = "nightly-load-of-the-purchases-summary-for-every-shop-" + "x" * 60
    with StateStore.open(tmp_path / "state.db") as store:
        journal.save(
            store,
            journal.RunRecord(
                id="0123456789ab", name=name, command=["./load.sh"], host="h", pid=1,
                mode="session", state="finished", started_at="2026-11-25T01:30:00+00:00",
                ended_at="2026-11-25T01:31:10+00:00", exit_code=0, outcome="unchanged",
            ),
        )  # fmt: skip
    done = _piped("history", "--state", str(tmp_path / "state.db"))
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "0123456789ab" in line]
    assert name in line and "2026-11-25 01:30:00" in line and "1m10s" in line


def test_piped_rules_print_one_line_per_rule() -> None:
    listed = json.loads(_piped("rules", "--format", "json").stdout)["rules"]
    text = _piped("rules").stdout
    for rule in listed:
        (line,) = [line for line in text.splitlines() if f" {rule['id']} " in line]
        assert rule["summary"] in line


@pytest.mark.server
def test_piped_doctor_keeps_each_fix_on_one_line(server: Any) -> None:
    done = _piped("doctor", "--defaults-file", str(server.defaults_file("govern_app")))
    assert done.returncode == 1, done.stderr
    fixes = [line for line in done.stdout.splitlines() if "fix: GRANT" in line]
    assert len(fixes) >= 3
    assert all(line.rstrip(" │").endswith("'127.0.0.1';") for line in fixes), fixes
