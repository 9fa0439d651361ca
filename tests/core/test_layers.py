"""Strict layers: core <- features <- reports <- commands (docs/design/layout.md, "Layers").

A module imports its own layer and the layers below, never above. A feature imports another
feature, and a report a feature, only through the short ALLOWED list: reports render the plain
data or the model they are handed, and features share what they need through core. Modules do
not import each other in a cycle.

The check reads every import statement with ``ast``, those inside functions and
``TYPE_CHECKING`` blocks too (a lazy import is still a dependency). It needs no dependency and
walks the linked folders (govern/rules -> ../rules) as the package does; import-linter's graph
library would have to be taught both.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.paths import REPO

LAYERS = ("core", "features", "reports", "commands")

#: govern.<name>: the feature packages, and doctor (the library of `govern doctor`).
FEATURES = frozenset(
    {
        "digest",
        "batch",
        "wrappers",
        "schedulers",
        "rules",
        "doctor",
        "collect",
        "throttle",
        "history",
    }
)
REPORTS = frozenset({"reports", "html", "charts"})
COMMANDS = frozenset({"cli", "cli_options", "commands", "__main__"})

#: Imports into a feature from another feature or from a report: (importer, imported) -> why.
#: Each side is a unit (a feature, or "reports" for govern/reports) or one dotted module.
ALLOWED = {
    ("rules", "govern.digest.classes"): "the digest rules read classes through its protocol",
    ("rules", "govern.digest.columns"): "the digest rules' screens read every class at once "
    "in the columns the digest's classes give",
    ("rules", "govern.digest.tables"): "the digest evidence reads tables from fingerprints as "
    "the class documents do (govern.digest.tables), the screens its write verbs",
    ("reports", "digest"): "renderers read the report model; digest_run drives the digest",
    ("govern.reports.digest_run", "rules"): "digest -> rules -> render applies the digest rules",
    ("govern.reports.digest_run", "history"): "govern digest --store reads the history store",
    ("collect", "history"): "govern collect --store writes closed buckets into the history store",
    ("govern.reports.digest_run", "wrappers"): "the run feature hands its blind windows and holds",
    ("govern.reports.digest_run", "schedulers"): "the scheduler hands its nights, drawn on the "
    "store's trends",
    ("govern.reports.trends_html", "history"): "draws the history store's trends (its model)",
    ("govern.reports.regressions", "history"): "renders govern regressions' findings (its model)",
    ("collect", "digest"): "the collector feeds the digest engines and writes digest documents",
    ("history", "digest"): "the history store merges and reports digest aggregates",
    ("doctor", "govern.collect.readiness"): "doctor says whether collect's sources are readable",
    ("throttle", "govern.rules.sql.split"): "a query check is proven one read-only SELECT by the "
    "rules' SQL splitter (so the throttle is a feature, not core)",
    ("govern.batch.chunk_sql", "rules"): "govern chunk takes its statement apart on the tokens "
    "of the rules' SQL lexer, never regenerating the user's text",
    ("batch", "throttle"): "the writer, load and chunked writes wait their turn on the throttle",
    ("schedulers", "throttle"): "the lag guard and [throttle] are the throttle's checks and holds",
    ("wrappers", "throttle"): "govern run --throttle hands the job its checks; history its holds",
}


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    where: str  # file:line

    def __str__(self) -> str:
        return f"{self.where}: {self.importer} imports {self.imported}"


def layer_of(module: str) -> tuple[str, str]:
    """(layer, unit) of a module under ``govern``; the unit names a feature, folder or file."""
    parts = module.split(".")
    unit = parts[1] if len(parts) > 1 else ""
    if unit in COMMANDS or parts[-1] == "cli":
        return "commands", unit
    if unit in REPORTS:
        return "reports", unit
    if unit in FEATURES:
        return "features", unit
    return "core", unit


def modules(package: Path) -> dict[str, Path]:
    """Every module of the package by dotted name, through linked folders too."""
    found = {}
    for folder, _, files in os.walk(package, followlinks=True):
        for name in files:
            if name.endswith(".py"):
                path = Path(folder, name)
                parts = list(path.relative_to(package.parent).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                found[".".join(parts)] = path
    return found


def imports(package: Path) -> list[Edge]:
    """Every import of one module of the package by another."""
    known = modules(package)
    edges = []
    for module, path in sorted(known.items()):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from govern import units` imports the module govern.units
                dotted = (f"{node.module}.{alias.name}" for alias in node.names)
                targets = [name if name in known else node.module for name in dotted]
            else:
                continue
            where = f"{path.relative_to(package.parent)}:{node.lineno}"
            edges += [
                Edge(module, target, where)
                for target in dict.fromkeys(targets)
                if target in known and target != module
            ]
    return edges


def allowed_by(edge: Edge) -> list[tuple[str, str]]:
    """The ALLOWED entries that let ``edge`` cross into another feature."""
    importers = {edge.importer, layer_of(edge.importer)[1]}
    imported = {edge.imported, layer_of(edge.imported)[1]}
    return [entry for entry in ALLOWED if entry[0] in importers and entry[1] in imported]


def back_edges(edges: Iterable[Edge]) -> list[Edge]:
    """The imports that break the layers."""
    wrong = []
    for edge in edges:
        (low, unit), (high, other) = layer_of(edge.imported), layer_of(edge.importer)
        crosses_into_a_feature = low == "features" and high in ("features", "reports")
        if LAYERS.index(low) > LAYERS.index(high) or (
            crosses_into_a_feature and unit != other and not allowed_by(edge)
        ):
            wrong.append(edge)
    return wrong


def cycles(edges: Iterable[Edge]) -> list[tuple[str, ...]]:
    """Groups of modules that import each other, directly or around a loop (Tarjan).

    Importing ``a.b.c`` first runs the packages ``a`` and ``a.b``: an import from outside a
    package also depends on that package's ``__init__``."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        parts = edge.imported.split(".")
        for end in range(2, len(parts) + 1):
            target = ".".join(parts[:end])
            if target != edge.importer and not edge.importer.startswith(target + "."):
                graph.setdefault(edge.importer, set()).add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = stack[stack.index(node) :]
                    del stack[stack.index(node) :]
                    if len(group) > 1:
                        found.append(tuple(sorted(group)))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                work.append((child, iter(sorted(graph.get(child, ())))))
            elif child in stack:
                low[node] = min(low[node], index[child])
    return sorted(found)


def test_no_module_imports_a_layer_above_its_own() -> None:
    wrong = [str(edge) for edge in back_edges(imports(REPO / "govern"))]
    assert not wrong, "back edges (docs/design/layout.md, Layers):\n" + "\n".join(wrong)


def test_no_modules_import_each_other_in_a_cycle() -> None:
    found = cycles(imports(REPO / "govern"))
    assert not found, f"import cycles: {sorted(found)}"


def test_every_allowed_edge_is_used() -> None:
    used = {entry for edge in imports(REPO / "govern") for entry in allowed_by(edge)}
    assert set(ALLOWED) <= used, f"unused, remove: {sorted(set(ALLOWED) - used)}"


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("govern", ("core", "")),
        ("govern.connection", ("core", "connection")),
        ("govern.units", ("core", "units")),
        ("govern.schedulers.catalog.model", ("features", "schedulers")),
        ("govern.doctor", ("features", "doctor")),
        ("govern.throttle.throttler", ("features", "throttle")),
        ("govern.throttle.cli", ("commands", "throttle")),
        ("govern.charts.gantt", ("reports", "charts")),
        ("govern.rules.cli", ("commands", "rules")),
        ("govern.commands.digest", ("commands", "commands")),
    ],
)
def test_the_layer_of_each_folder(module: str, layer: tuple[str, str]) -> None:
    assert layer_of(module) == layer


def test_every_folder_is_named_in_a_layer() -> None:
    """Core is govern's own modules; a new folder (a new feature) must say its layer here,
    or its imports would be judged as core's."""
    folders = {
        path.name for path in (REPO / "govern").iterdir() if (path / "__init__.py").is_file()
    }
    assert folders - FEATURES - REPORTS - COMMANDS == set()


# --- the checks fail on a back edge: a throwaway package that grows one ------------------
GOOD = {
    "__init__.py": "",
    "errors.py": "",
    "state.py": "from govern import errors\n",
    "cli.py": "from govern.reports import text\n",
    "wrappers/__init__.py": "",
    "wrappers/journal.py": "from govern.state import x\n",
    "wrappers/status.py": "",
    "schedulers/__init__.py": "",
    "schedulers/plan.py": "",
    "rules/__init__.py": "",
    "rules/digest.py": "from govern.digest.classes import Class\n",
    "digest/__init__.py": "",
    "digest/classes.py": "",
    "digest/model.py": "",
    "reports/__init__.py": "",
    "reports/text.py": "from govern.charts import svg\n",
    "reports/digest_run.py": "from govern.wrappers import status\n",  # ALLOWED
    "charts/__init__.py": "",
    "charts/svg.py": "",
}


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / "govern" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "govern"


@pytest.mark.parametrize(
    ("importer", "text", "imported"),
    [
        # core reaching up to a feature, a feature to a report, a report to a command
        ("state.py", "from govern.wrappers import journal\n", "govern.wrappers.journal"),
        ("wrappers/journal.py", "import govern.reports.text\n", "govern.reports.text"),
        ("charts/svg.py", "def f():\n    from govern.cli import COMMANDS\n", "govern.cli"),
        # a feature into another feature, a report into a feature, outside ALLOWED
        ("schedulers/plan.py", "from govern.wrappers import journal\n", "govern.wrappers.journal"),
        ("reports/text.py", "from govern.wrappers.journal import Run\n", "govern.wrappers.journal"),
        ("rules/digest.py", "from govern.digest.model import Class\n", "govern.digest.model"),
    ],
)
def test_a_back_edge_is_reported(tmp_path: Path, importer: str, text: str, imported: str) -> None:
    package = _package(tmp_path, GOOD)
    assert back_edges(imports(package)) == [] and cycles(imports(package)) == []
    (package / importer).write_text(text)
    (edge,) = back_edges(imports(package))
    assert (edge.importer, edge.imported) == ("govern." + importer[:-3].replace("/", "."), imported)
    assert str(edge).startswith(f"govern/{importer}:")


def test_a_cycle_is_reported_through_a_package_init(tmp_path: Path) -> None:
    package = _package(
        tmp_path,
        GOOD
        | {
            # importing digest.classes from outside runs digest/__init__, which imports the rules
            "digest/__init__.py": "from govern.digest.report import render\n",
            "digest/report.py": "from govern.rules.digest import check\n",
        },
    )
    assert cycles(imports(package)) == [
        ("govern.digest", "govern.digest.report", "govern.rules.digest")
    ]
