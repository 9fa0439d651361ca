"""A pytest plugin: collect every JSON document govern prints during the session.

Loaded by tests/conftest.py. Every ``govern`` process the tests start (as ``python -m
govern`` or the ``govern`` script) copies its stdout into a session directory
(capture/sitecustomize.py), and every ``CliRunner.invoke`` of a govern command keeps its
stdout there too. tests/docs/test_json_contracts.py::test_every_json_document_of_the_session,
moved to the end of the run by this plugin, validates them all against govern/schemas/.

GOVERN_TEST_JSON_DIR, when already set, names a directory to use and keep (to look at the
documents after a run); otherwise a temporary one is made and removed.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CAPTURE = Path(__file__).resolve().parent / "capture"
ENV = "GOVERN_TEST_JSON_DIR"
LAST = "runs_last"

_made_here: list[Path] = []


@dataclass
class Printed:
    """One whole stdout of a govern command that parsed as a JSON object."""

    document: dict[str, Any]
    command: str


def capture_dir() -> Path:
    return Path(os.environ[ENV])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", f"{LAST}: run after every other test of the session")
    if not os.environ.get(ENV):
        directory = Path(tempfile.mkdtemp(prefix="govern-json-"))
        _made_here.append(directory)
        os.environ[ENV] = str(directory)
    paths = [str(CAPTURE), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    _keep_cli_runner_output()


def pytest_unconfigure(config: pytest.Config) -> None:
    for directory in _made_here:
        shutil.rmtree(directory, ignore_errors=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``runs_last`` go to the end, in their own order."""
    last = [item for item in items if item.get_closest_marker(LAST)]
    items[:] = [item for item in items if not item.get_closest_marker(LAST)] + last


def _keep_cli_runner_output() -> None:
    """Wrap ``CliRunner.invoke`` so in-process commands are collected like processes."""
    from click.testing import CliRunner

    invoke = CliRunner.invoke
    if getattr(invoke, "keeps_json", False):
        return

    def keeping(self: CliRunner, cli: Any, args: Any = None, *more: Any, **kwargs: Any) -> Any:
        result = invoke(self, cli, args, *more, **kwargs)
        try:
            stdout = result.stdout
        except ValueError:  # stdout not captured separately
            return result
        if stdout.lstrip().startswith("{"):
            name = f"runner-{os.getpid()}-{next(_counter)}"
            directory = capture_dir()
            (directory / f"{name}.out").write_text(stdout, encoding="utf-8")
            words = args.split() if isinstance(args, str) else list(args or ())
            (directory / f"{name}.argv").write_text(
                "\n".join(["CliRunner", getattr(cli, "name", "") or "", *map(str, words)]),
                encoding="utf-8",
            )
            (directory / f"{name}.done").touch()
        return result

    keeping.keeps_json = True  # type: ignore[attr-defined]
    CliRunner.invoke = keeping  # type: ignore[method-assign]


_counter = itertools.count(1)


def printed_documents() -> tuple[list[Printed], list[str]]:
    """The JSON objects govern printed so far, and the outputs that looked like JSON and
    were not (``command: reason``). Outputs of processes that did not exit normally (killed
    by a test) are not judged."""
    found: list[Printed] = []
    broken: list[str] = []
    for done in sorted(capture_dir().glob("*.done")):
        stem = done.with_suffix("")
        command = " ".join(stem.with_suffix(".argv").read_text(encoding="utf-8").split("\n"))
        text = stem.with_suffix(".out").read_text(encoding="utf-8", errors="replace")
        if not text.lstrip().startswith("{"):
            continue
        try:
            document = json.loads(text)
        except ValueError as exc:
            broken.append(f"{command}: not one JSON document ({exc})")
            continue
        if isinstance(document, dict):
            found.append(Printed(document, command))
    return found, broken
