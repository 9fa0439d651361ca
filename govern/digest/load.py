"""A saved digest read back: the one loader of ``govern digest merge`` and ``compare``.

A saved digest is the JSON of ``govern digest --format json`` (checked against its
published schema, govern/schemas/govern.digest.schema.json) or of ``pt-query-digest
--output json``. Whatever else a file holds is refused with one line that names the file
and, within it, the field (``a.json: $.classes[3].count: expected an integer, got a
string "many"``): a damaged or hand-made document never reaches the code that trusts its
shape.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from govern.digest.document import SCHEMA, SCHEMA_VERSION
from govern.digest.pt_json import is_pt_document, report_of_pt
from govern.digest.report import Report
from govern.digest.schema import Path as JsonPath
from govern.digest.schema import Problem, TooLong, describe, json_path, published
from govern.errors import UsageError
from govern.fingerprint import query_id

#: A document nested deeper than this is shown where it passes it (a govern digest nests
#: 9 levels; Python reads about 1,000).
DEEP = 64
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{},:]')
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
EXPECTED = "govern digest --format json or pt-query-digest --output json"


def load_report(name: str) -> Report:
    """The saved digest in the file ``name`` (``-``: stdin) as the reports read it."""
    return read_report(parse(name, read_text(name)), name)


def read_text(name: str) -> str:
    try:
        if name == "-":
            return sys.stdin.read()
        return Path(name).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{name}: no such file") from None
    except IsADirectoryError:
        raise UsageError(f"{name}: is a directory") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{name}: cannot read it ({exc})") from None


def parse(name: str, text: str) -> Any:
    """JSON, or a one-line error saying where it is not."""
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{name}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    except RecursionError:
        raise UsageError(f"{name}: {json_path(_deep(text), 12)}: nested too deep to read") from None
    except ValueError:  # an integer of more digits than Python reads: find it
        document = json.loads(text, parse_int=_integer)
    if _SURROGATE_ESCAPE.search(text):
        where = _unencodable(document)
        if where is not None:
            raise UsageError(f"{name}: {where}: text that is not Unicode (a lone surrogate)")
    return document


def read_report(document: Any, name: str) -> Report:
    """A parsed saved digest (either producer's), checked, as the reports read it."""
    if is_pt_document(document):
        return report_of_pt(document, name)
    if not isinstance(document, dict) or "schema" not in document:
        raise UsageError(f"{name}: not a saved digest (expected {EXPECTED})")
    if document["schema"] != SCHEMA:
        raise UsageError(
            f"{name}: not a saved digest: its schema is {describe(document['schema'])}"
            f" (expected {EXPECTED})"
        )
    version = document.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        raise UsageError(
            f"{name}: $.schema_version: {SCHEMA} version {describe(version)}; "
            f"this govern reads version {SCHEMA_VERSION}"
        )
    problem = published(SCHEMA).problem(document) or _inconsistent(document)
    if problem is not None:
        raise UsageError(f"{name}: {problem}")
    return Report.of_document(document, name)


def _inconsistent(document: Mapping[str, Any]) -> Problem | None:
    """What the schema cannot say: a class's ID is its fingerprint's, a sample has a time."""
    classes: JsonPath = (None, "classes")
    for index, item in enumerate(document["classes"]):
        state = item["state"]
        raw = state.get("fingerprint_hex")
        fingerprint = bytes.fromhex(raw) if raw else item["fingerprint"]
        if query_id(fingerprint) != item["id"]:
            return Problem(((classes, index), "id"), "is not the query ID of its fingerprint")
        if item["sample"] is not None and state["sample_query_time"] is None:
            where = (((classes, index), "state"), "sample_query_time")
            return Problem(where, "null while the class has a sample")
    return None


def _integer(text: str) -> int | TooLong:
    return TooLong(len(text.lstrip("-"))) if len(text) > 4000 else int(text)


def _deep(text: str) -> JsonPath:
    """Where a document nests deeper than :data:`DEEP` levels (found by its tokens: the
    json module gives up without saying where)."""
    steps: list[list[Any]] = []  # per open container: [kind, key or index of the child]
    last = ""
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            if len(steps) == DEEP:
                break
            steps.append([token, 0 if token == "[" else ""])
        elif token in "]}":
            if steps:
                steps.pop()
        elif token == ",":
            if steps and steps[-1][0] == "[":
                steps[-1][1] += 1
        elif token == ":":
            if steps:
                steps[-1][1] = json.loads(last)
        else:
            last = token
    path: JsonPath = None
    for _, step in steps:
        path = (path, step)
    return path


def _unencodable(document: Any) -> str | None:
    """The path of a text (or key) that cannot be written as UTF-8, if any."""
    pending: list[tuple[JsonPath, Any]] = [(None, document)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return json_path(path)
        elif isinstance(value, dict):
            for key, item in value.items():
                pending += [((path, key), key), ((path, key), item)]
        elif isinstance(value, list):
            pending += [((path, index), item) for index, item in enumerate(value)]
    return None
