"""Validating govern's JSON documents against the schemas it ships (govern/schemas/)."""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from tests.paths import DATA, REPO

JSON_MD = REPO / "docs" / "json.md"
SCHEMAS = REPO / "govern" / "schemas"
SUFFIX = ".schema.json"
SARIF_SCHEMA = DATA / "sarif-schema-2.1.0.json"

#: ``## `govern.doctor` version 1 (…)``: a contract's section in docs/json.md.
_SECTION = re.compile(r"^## `(govern\.[a-z.-]+)` version (\d+)", re.MULTILINE)


def names() -> list[str]:
    """Every published schema's document name: ``govern.digest``, ``govern.doctor`` …"""
    return sorted(path.name[: -len(SUFFIX)] for path in SCHEMAS.glob(f"*{SUFFIX}"))


@cache
def all_schemas() -> dict[str, dict[str, Any]]:
    return {
        name: json.loads((SCHEMAS / f"{name}{SUFFIX}").read_text(encoding="utf-8"))
        for name in names()
    }


def schema(name: str) -> dict[str, Any]:
    return all_schemas()[name]


@cache
def _registry() -> Registry:
    """Every schema under its ``$id``, so one schema may reference another by file name."""
    return Registry().with_resources(
        (document["$id"], Resource.from_contents(document))
        for document in all_schemas().values()
        if "$id" in document
    )


@cache
def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(all_schemas()[name], registry=_registry())


@cache
def sarif_validator() -> Any:
    """The OASIS SARIF 2.1.0 schema (draft 04), vendored in tests/data."""
    from jsonschema import Draft4Validator

    return Draft4Validator(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))


def problems(document: Any) -> list[str]:
    """Why ``document`` breaks its contract (one line each), or [] when it keeps it."""
    if not isinstance(document, dict):
        return [f"not a JSON object but {type(document).__name__}"]
    if "sarif" in str(document.get("$schema", "")):
        checker = sarif_validator()
    else:
        name = document.get("schema")
        if name not in all_schemas():
            return [f"schema {name!r} has no govern/schemas/{name}.schema.json"]
        checker = validator(name)
    return [
        f"{error.json_path}: {error.message[:300]}"
        for error in sorted(checker.iter_errors(document), key=lambda e: list(e.path))
    ]


def documented_contracts() -> dict[str, str]:
    """docs/json.md's sections by contract name: ``{"govern.doctor": "<section text>"}``."""
    text = JSON_MD.read_text(encoding="utf-8")
    found = list(_SECTION.finditer(text))
    sections = {}
    for match, following in zip(found, [*found[1:], None], strict=True):
        end = following.start() if following else text.find("\n## ", match.end())
        sections[match.group(1)] = text[match.start() : end if end != -1 else len(text)]
    return sections


def first_table_fields(section: str) -> set[str]:
    """The top-level field names the first table of a docs/json.md section lists:
    every backticked name in its first column, ``[]`` dropped, nested ones (``a[].b``) left
    out."""
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    table: list[str] = []
    for line in section.splitlines()[section.splitlines().index(rows[0]) :]:
        if not line.startswith("|"):
            break
        table.append(line)
    names = set()
    for row in table:
        first_cell = row.split("|")[1]
        for name in re.findall(r"`([^`]+)`", first_cell):
            name = name.replace("[]", "")
            if "." not in name:
                names.add(name)
    return names
