"""``print_json``: the same document indented on a terminal, one line when piped."""

from __future__ import annotations

import io
import json
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
