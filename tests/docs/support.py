"""Validating govern's JSON documents against the schemas it ships (govern/schemas/).

The published schemas describe what a reader of a version may rely on: within a version fields
are only ever added, so they accept fields they do not list (a document from a later govern of
the same version stays valid). govern's own output is held to more: :func:`problems` validates
against *strict* copies, in which every object the schema describes refuses the fields it does
not list, so a field govern prints and no schema names fails the suite.
"""

from __future__ import annotations

import copy
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


def _uri(name: str, document: dict[str, Any]) -> str:
    return str(document.get("$id", f"https://govern.invalid/schemas/{name}{SUFFIX}"))


def _target(name: str, reference: str) -> tuple[str, str]:
    """(schema name, JSON pointer) a ``$ref`` of schema ``name`` points at."""
    file, _, pointer = reference.partition("#")
    return (file[: -len(SUFFIX)] if file else name), pointer


def _parts(schemas: dict[str, dict[str, Any]]) -> set[tuple[str, str]]:
    """Definitions used as a branch of an ``allOf``: one part of an object, not all of it."""
    found: set[tuple[str, str]] = set()

    def walk(name: str, node: Any) -> None:
        if isinstance(node, dict):
            for branch in node.get("allOf", ()):
                if "$ref" in branch:
                    found.add(_target(name, branch["$ref"]))
            for value in node.values():
                walk(name, value)
        elif isinstance(node, list):
            for value in node:
                walk(name, value)

    for name, document in schemas.items():
        walk(name, document)
    return found


def strict(schemas: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Copies in which every whole object (a node with ``properties`` or ``allOf`` that is not
    itself one part of an ``allOf``) refuses properties none of its parts name."""
    parts = _parts(schemas)

    def tighten(name: str, node: Any, pointer: str, part: bool) -> None:
        if isinstance(node, list):
            for index, value in enumerate(node):
                tighten(name, value, f"{pointer}/{index}", False)
            return
        if not isinstance(node, dict):
            return
        whole = ("properties" in node or "allOf" in node) and not part
        if whole and (name, pointer) not in parts and "additionalProperties" not in node:
            node["unevaluatedProperties"] = False
        for key, value in node.items():
            if key == "allOf":
                for index, branch in enumerate(value):
                    tighten(name, branch, f"{pointer}/allOf/{index}", True)
            elif key in ("properties", "$defs", "patternProperties"):
                for child, sub in value.items():
                    tighten(name, sub, f"{pointer}/{key}/{child}", False)
            else:
                tighten(name, value, f"{pointer}/{key}", False)

    tightened = copy.deepcopy(schemas)
    for name, document in tightened.items():
        tighten(name, document, "", False)
    return tightened


def _registry(schemas: dict[str, dict[str, Any]]) -> Registry:
    """Every schema under its URI, so one schema may reference another by file name."""
    return Registry().with_resources(
        (_uri(name, document), Resource.from_contents(document))
        for name, document in schemas.items()
    )


@cache
def validator(name: str, *, published: bool = False) -> Draft202012Validator:
    """The validator of the document ``name``: strict (govern's own output) or as published."""
    schemas = all_schemas() if published else strict(all_schemas())
    document = dict(schemas[name], **{"$id": _uri(name, schemas[name])})
    return Draft202012Validator(document, registry=_registry(schemas))


@cache
def sarif_validator() -> Any:
    """The OASIS SARIF 2.1.0 schema (draft 04), vendored in tests/data."""
    from jsonschema import Draft4Validator

    return Draft4Validator(json.loads(SARIF_SCHEMA.read_text(encoding="utf-8")))


def problems(document: Any, *, published: bool = False) -> list[str]:
    """Why ``document`` breaks its contract (one line each), or [] when it keeps it; strictly
    (every field named by the schema) unless ``published``."""
    if not isinstance(document, dict):
        return [f"not a JSON object but {type(document).__name__}"]
    if "sarif" in str(document.get("$schema", "")):
        checker = sarif_validator()
    else:
        name = document.get("schema")
        if name not in all_schemas():
            return [f"schema {name!r} has no govern/schemas/{name}.schema.json"]
        checker = validator(name, published=published)
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
