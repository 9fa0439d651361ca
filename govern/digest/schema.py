"""Documents checked against govern's published JSON Schemas (govern/schemas/), by a small
checker of the keywords those schemas use.

A saved digest is read back by ``govern digest merge`` and ``compare``; one that is
damaged or made by hand must be refused with the path of the bad field, never reach the
code that trusts its shape. The checker is driven by the schema file users see (the
same file validates with any JSON Schema 2020-12 validator) and refuses a schema that
uses a keyword it does not know, so the two cannot drift. It is stricter than JSON
Schema in two ways JSON cannot express and govern relies on: an integer is written
without a decimal point (``2.0`` is not a count) and every number is finite (JSON has
no ``Infinity``; Python reads ``1e400`` as one).

Why not the ``jsonschema`` package: it would be govern's first dependency with compiled
parts (rpds-py) for one check, its messages name schema internals rather than what was
expected, and it accepts ``2.0`` as an integer and ``NaN`` as a number.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

#: Keywords the checker reads; others that only annotate are ignored.
_CHECKED = frozenset(
    {
        "$ref", "type", "enum", "const", "minimum", "maximum", "pattern", "properties",
        "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
        "allOf", "anyOf",
    }
)  # fmt: skip
_ANNOTATIONS = frozenset({"$schema", "$id", "$comment", "$defs", "title", "description"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TYPE_WORDS = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}

#: A place in a document: None for the root, else (parent, key or index).
Path = tuple["Path", str | int] | None


class TooLong:
    """An integer with more digits than Python reads from JSON (4,300): kept as a marker,
    so the checker can say where it is."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


@dataclass(frozen=True)
class Problem:
    """The first thing wrong in a document: where, and what."""

    path: Path
    message: str
    expected: str | None = None  # what the type check wanted (to join anyOf's branches)

    def __str__(self) -> str:
        return f"{json_path(self.path)}: {self.message}"


def json_path(path: Path, limit: int | None = None) -> str:
    """``$.classes[0].count`` (at most ``limit`` steps, then ``…``)."""
    steps: list[str] = []
    while path is not None:
        path, key = path
        if isinstance(key, int):
            steps.append(f"[{key}]")
        elif _IDENTIFIER.fullmatch(key):
            steps.append(f".{key}")
        else:
            steps.append(f"[{json.dumps(key, ensure_ascii=False)}]")
    steps.reverse()
    if limit is not None and len(steps) > limit:
        steps = [*steps[:limit], "…"]
    return "$" + "".join(steps)


def describe(value: Any) -> str:
    """A value as a message quotes it: short, typed."""
    if isinstance(value, TooLong):
        return f"an integer of {value.digits:,} digits"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        text = str(value)
        return text if len(text) <= 40 else f"an integer of {len(text):,} digits"
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else f"{value} (not a finite number)"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:39] + "…"
        return f"a string {json.dumps(shown, ensure_ascii=False)}"
    return "an object" if isinstance(value, dict) else "an array"


Check = Callable[[Any, Path], Problem | None]


class Schema:
    """A JSON Schema compiled into checks (:meth:`problem` finds the first one failing)."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self._root = document
        self._compiled: dict[str, Check] = {}
        self._check = self._compile(document, "#")

    def problem(self, instance: Any) -> Problem | None:
        """The first problem in document order, or None when ``instance`` is valid."""
        return self._check(instance, None)

    # -- compiling -------------------------------------------------------------------------
    def _compile(self, node: Mapping[str, Any], where: str) -> Check:
        unknown = set(node) - _CHECKED - _ANNOTATIONS
        if unknown:
            raise ValueError(f"schema {where}: keywords this checker does not know: {unknown}")
        checks: list[Check] = []
        if "$ref" in node:
            checks.append(self._reference(node["$ref"]))
        if "type" in node:
            checks.append(_type_check(node["type"]))
        if "enum" in node:
            checks.append(_enum_check(list(node["enum"])))
        if "const" in node:
            checks.append(_enum_check([node["const"]]))
        if "minimum" in node or "maximum" in node:
            checks.append(_range_check(node.get("minimum"), node.get("maximum")))
        if "pattern" in node:
            checks.append(_pattern_check(node["pattern"]))
        if {"properties", "required", "additionalProperties"} & node.keys():
            checks.append(self._object_check(node, where))
        if {"items", "prefixItems", "minItems", "maxItems"} & node.keys():
            checks.append(self._array_check(node, where))
        for index, branch in enumerate(node.get("allOf", ())):
            checks.append(self._compile(branch, f"{where}/allOf/{index}"))
        if "anyOf" in node:
            checks.append(
                _any_of(
                    [
                        self._compile(branch, f"{where}/anyOf/{index}")
                        for index, branch in enumerate(node["anyOf"])
                    ]
                )
            )
        full = _all(checks)
        valid = _fast_predicate(node)
        if valid is None:
            return full

        def check(value: Any, path: Path) -> Problem | None:
            return None if valid(value) else full(value, path)

        return check

    def _reference(self, reference: str) -> Check:
        """A ``#/$defs/…`` reference, compiled once and shared by every place using it (so a
        definition may not refer to itself: govern's documents are not recursive)."""
        if not reference.startswith("#/"):
            raise ValueError(f"schema: only local references are read, not {reference}")
        found = self._compiled.get(reference)
        if found is None:
            node: Any = self._root
            for step in reference[2:].split("/"):
                node = node[step]
            found = self._compiled[reference] = self._compile(node, reference)
        return found

    def _object_check(self, node: Mapping[str, Any], where: str) -> Check:
        properties = {
            name: self._compile(sub, f"{where}/properties/{name}")
            for name, sub in node.get("properties", {}).items()
        }
        required = list(node.get("required", ()))
        extra = node.get("additionalProperties", True)
        others: Check | None = None
        if extra is False:
            others = _refuse_extra
        elif isinstance(extra, Mapping):
            others = self._compile(extra, f"{where}/additionalProperties")

        def check(value: Any, path: Path) -> Problem | None:
            if not isinstance(value, dict):
                return None
            for name in required:
                if name not in value:
                    return Problem((path, name), "missing")
            for name, item in value.items():
                sub = properties.get(name, others)
                if sub is not None:
                    found = sub(item, (path, name))
                    if found is not None:
                        return found
            return None

        return check

    def _array_check(self, node: Mapping[str, Any], where: str) -> Check:
        first = [
            self._compile(sub, f"{where}/prefixItems/{index}")
            for index, sub in enumerate(node.get("prefixItems", ()))
        ]
        rest = node.get("items", True)
        items: Check | None = None
        if isinstance(rest, Mapping):
            items = self._compile(rest, f"{where}/items")
        fewest = node.get("minItems", 0)
        most = node.get("maxItems", len(first) if rest is False else None)

        def check(value: Any, path: Path) -> Problem | None:
            if not isinstance(value, list):
                return None
            size = len(value)
            if size < fewest or (most is not None and size > most):
                if fewest == most:
                    wanted = f"{fewest} items"
                elif size < fewest:
                    wanted = f"at least {fewest} items"
                else:
                    wanted = f"at most {most} items"
                return Problem(path, f"expected {wanted}, got {size}")
            for index, item in enumerate(value):
                sub = first[index] if index < len(first) else items
                if sub is not None:
                    found = sub(item, (path, index))
                    if found is not None:
                        return found
            return None

        return check


def _fast_predicate(node: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """For a leaf (a type, a range, a pattern): a quick test that passes what is valid.
    What fails it is checked again in full, for the message."""
    if not node.keys() - _ANNOTATIONS <= {"type", "minimum", "maximum", "pattern"}:
        return None
    names = node.get("type")
    if names is None:
        return None
    wanted = [names] if isinstance(names, str) else list(names)
    low, high, pattern = node.get("minimum"), node.get("maximum"), node.get("pattern")
    exact = {_EXACT[name] for name in wanted if name in _EXACT}
    if pattern is not None:
        if wanted != ["string"]:
            return None
        search = re.compile(pattern).search
        return lambda v: type(v) is str and search(v) is not None
    if low is None and high is None:
        if "number" in wanted:
            return lambda v: type(v) in exact or type(v) is int or (type(v) is float and v - v == 0)
        return lambda v: type(v) in exact
    if wanted[0] != "integer" or not set(wanted) <= {"integer", "null"}:
        return None
    lowest = -math.inf if low is None else low
    highest = math.inf if high is None else high
    nullable = "null" in wanted
    return lambda v: (type(v) is int and lowest <= v <= highest) or (nullable and v is None)


#: JSON types whose Python type is exact (``number`` takes int and finite float).
_EXACT: dict[str, type] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
    "boolean": bool,
    "null": type(None),
}


def _all(checks: list[Check]) -> Check:
    if len(checks) == 1:
        return checks[0]

    def check(value: Any, path: Path) -> Problem | None:
        for one in checks:
            found = one(value, path)
            if found is not None:
                return found
        return None

    return check


def _any_of(branches: list[Check]) -> Check:
    def check(value: Any, path: Path) -> Problem | None:
        problems = []
        for branch in branches:
            found = branch(value, path)
            if found is None:
                return None
            problems.append(found)
        wanted = [p.expected for p in problems if p.path == path and p.expected]
        if len(wanted) == len(problems):  # each branch wants another type: name them all
            expected = " or ".join(wanted)
            return Problem(path, f"expected {expected}, got {describe(value)}", expected)
        return max(problems, key=lambda p: len(json_path(p.path)))  # the one that got furthest

    return check


def _type_check(names: str | list[str]) -> Check:
    wanted = [names] if isinstance(names, str) else list(names)
    expected = " or ".join(_TYPE_WORDS[name] for name in wanted)
    accepts = [_ACCEPTS[name] for name in wanted]

    def check(value: Any, path: Path) -> Problem | None:
        if isinstance(value, TooLong):
            return Problem(path, f"{describe(value)}: too long to read")
        for accept in accepts:
            if accept(value):
                if isinstance(value, float) and not math.isfinite(value):
                    return Problem(path, f"expected a finite number, got {value}")
                return None
        return Problem(path, f"expected {expected}, got {describe(value)}", expected)

    return check


_ACCEPTS: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _enum_check(allowed: list[Any]) -> Check:
    typed = [(type(a), a) for a in allowed]  # 1 is not true, 1.0 is not 1 (as JSON means)
    shown = ", ".join(json.dumps(a) for a in allowed)
    expected = f"one of {shown}" if len(allowed) > 1 else shown

    def check(value: Any, path: Path) -> Problem | None:
        if (type(value), value) in typed:
            return None
        return Problem(path, f"expected {expected}, got {describe(value)}")

    return check


def _range_check(low: float | None, high: float | None) -> Check:
    def check(value: Any, path: Path) -> Problem | None:
        if isinstance(value, TooLong):
            return Problem(path, f"{describe(value)}: too long to read")
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        if low is not None and value < low:
            return Problem(path, f"expected at least {low}, got {describe(value)}")
        if high is not None and value > high:
            return Problem(path, f"expected at most {high}, got {describe(value)}")
        return None

    return check


def _pattern_check(pattern: str) -> Check:
    search = re.compile(pattern).search

    def check(value: Any, path: Path) -> Problem | None:
        if not isinstance(value, str) or search(value):
            return None
        return Problem(path, f"expected a string matching {pattern}, got {describe(value)}")

    return check


def _refuse_extra(value: Any, path: Path) -> Problem | None:
    return Problem(path, "not expected here")


@cache
def published(name: str) -> Schema:
    """The published schema of the document ``name`` (``govern.digest``), compiled."""
    text = (resources.files("govern") / "schemas" / f"{name}.schema.json").read_text("utf-8")
    return Schema(json.loads(text))
