"""The rule API: one class per rule, declaring what it needs and checking one subject.

A rule receives a :class:`~govern.rules.sql.statement.Statement` (from a file, or a
digest class's sample with its statistics) and a :class:`Context` (target server,
the file around the statement), and yields findings. Its docstring carries
``Anti-pattern`` and ``Best practice`` SQL that the tests run. docs/design/rules.md
explains the API with an example.
"""

from __future__ import annotations

import dataclasses
import re
import textwrap
import tomllib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from govern.rules.model import Finding, Location, Need, Severity
from govern.rules.sql.statement import Statement

if TYPE_CHECKING:
    from govern.rules.evidence import DigestEvidence
    from govern.rules.screen import Screen
    from govern.server import ServerInfo


@dataclasses.dataclass(frozen=True)
class Option:
    """A setting a rule reads from ``[tool.govern.rules.ID]``."""

    name: str
    default: Any
    help: str

    def check(self, value: Any, where: str) -> Any:
        """``value`` if it has the default's type, else a ConfigError naming ``where``."""
        from govern.errors import ConfigError

        expected = type(self.default)
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if isinstance(value, bool) != isinstance(self.default, bool) or not isinstance(
            value, expected
        ):
            raise ConfigError(
                f"{where} {self.name} must be {expected.__name__}, not {type(value).__name__}"
            )
        if isinstance(value, list) and not all(isinstance(item, str) for item in value):
            raise ConfigError(f"{where} {self.name} must be a list of strings")
        return value


@dataclasses.dataclass
class Context:
    """What a rule knows besides the statement: the target server and the file so far."""

    #: The target server's capabilities (``govern.server.ServerInfo``), or None if unknown.
    target: ServerInfo | None = None
    #: The target as named by the user (``mariadb-10.11``) or detected (``… (live)``).
    target_name: str | None = None
    #: Names (lower case) of temporary tables and stored functions created earlier in the file.
    temporary_tables: set[str] = dataclasses.field(default_factory=set)
    stored_functions: set[str] = dataclasses.field(default_factory=set)
    #: Digest-wide facts (tables' write traffic, overhead fits, log completeness) when
    #: the subjects are a digest's classes; None for files.
    digest: DigestEvidence | None = None
    #: The file is a batch job (``[[lint.paths]] batch-job = true``): BATCH010/011 check it.
    batch_job: bool = False

    @property
    def target_label(self) -> str:
        """How messages name the target: as the user did, else ``mariadb-10.11``."""
        if self.target_name:
            return self.target_name
        return self.target.target if self.target is not None else "the target"

    def observe(self, statement: Statement) -> None:
        """Remember what a statement creates, for the statements after it."""
        kind = statement.creates
        if kind == "TEMPORARY TABLE" and statement.created_name:
            self.temporary_tables.add(statement.created_name)
        elif kind == "FUNCTION" and statement.created_name:
            self.stored_functions.add(statement.created_name)


class ScriptChecker(Protocol):
    """Per-file state of a rule that looks at statements in order (``Need.SCRIPT``)."""

    def feed(self, statement: Statement) -> Iterable[Finding]: ...

    def finish(self) -> Iterable[Finding]: ...


class Rule:
    """Base class. Subclasses set the class attributes and override ``check`` (one
    statement or digest class) and/or ``script_checker`` (statements of a file in order)."""

    id: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    needs: ClassVar[frozenset[Need]] = frozenset({Need.SQL})
    options: ClassVar[tuple[Option, ...]] = ()

    def __init__(
        self, settings: Mapping[str, Any] | None = None, severity: Severity | None = None
    ) -> None:
        self.settings: dict[str, Any] = {o.name: o.default for o in self.options}
        self.settings.update(settings or {})
        self.level = severity or self.severity

    # --- to override ---------------------------------------------------------------
    def check(self, statement: Statement, ctx: Context) -> Iterable[Finding]:
        return ()

    def script_checker(self, ctx: Context) -> ScriptChecker | None:
        """A fresh checker for one file that is fed its top-level statements in order."""
        return None

    def digest_screen(self, screen: Screen, ctx: Context) -> set[int] | None:
        """The classes of a digest ``check`` can fire on (positions), from ``screen``'s
        tests over every class at once; None: any class. A necessary condition: a class
        left out must never have a finding of this rule (govern/rules/screen.py)."""
        return None

    # --- helpers -------------------------------------------------------------------
    def finding(
        self,
        statement: Statement,
        message: str,
        *,
        at: int = 0,
        evidence: Mapping[str, Any] | None = None,
        severity: Severity | None = None,
    ) -> Finding:
        """A finding located at token ``at`` of ``statement`` (its start by default)."""
        tokens = statement.tokens
        source = statement.source
        if tokens:
            token = tokens[min(at, len(tokens) - 1)]
            line, column = source.position(token.start)
            end_line, end_column = source.position(token.end)
        else:
            line = column = end_line = end_column = 1
        location = Location(
            path=source.path if statement.class_id is None else None,
            line=line,
            column=column,
            end_line=end_line,
            end_column=end_column,
            class_id=statement.class_id,
        )
        return Finding(
            rule_id=self.id,
            rule_name=self.name,
            severity=severity or self.level,
            message=message,
            location=location,
            evidence=dict(evidence or {}),
            statement_lines=statement.lines if tokens else (line, line),
            context=statement.text,
        )

    # --- documentation ----------------------------------------------------------------
    @classmethod
    def summary(cls) -> str:
        return (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""

    @classmethod
    def documentation(cls) -> str:
        return textwrap.dedent("\n".join((cls.__doc__ or "").splitlines()[1:])).strip()

    @classmethod
    def examples(cls) -> dict[str, list[Example]]:
        """The SQL under ``Anti-pattern`` and ``Best practice`` in the docstring."""
        return parse_examples(cls.documentation())


@dataclasses.dataclass(frozen=True)
class Example:
    """A docstring example: SQL, and the target and options its comment lines set."""

    sql: str
    target: str | None = None
    config: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    #: ``-- batch-job``: lint it as a file the config marks as a batch job.
    batch_job: bool = False


_SECTION = re.compile(r"^\*\*(Anti-pattern|Best practice)\*\*\s*$")


def parse_examples(doc: str) -> dict[str, list[Example]]:
    """Indented blocks after ``**Anti-pattern**`` / ``**Best practice**`` headings.

    In a block, ``-- target: mysql-8.0`` sets the target, ``-- config: {…}`` (a
    TOML inline table) the rule's options, as ``[tool.govern.rules.ID]`` would, and
    ``-- batch-job`` lints it as a file marked ``batch-job = true``.
    """
    found: dict[str, list[Example]] = {"Anti-pattern": [], "Best practice": []}
    section: str | None = None
    block: list[str] = []

    def close() -> None:
        if section and block:
            found[section].append(_example("\n".join(block)))
        block.clear()

    for line in doc.splitlines():
        heading = _SECTION.match(line.strip())
        if heading:
            close()
            section = heading.group(1)
        elif line.startswith("    ") and section:
            block.append(line[4:])
        elif not line.strip():
            close()
        else:
            close()
            if not line.startswith(" "):
                section = None if line.startswith("**") else section
    close()
    return found


def _example(sql: str) -> Example:
    target = None
    config: dict[str, Any] = {}
    batch_job = False
    for line in sql.splitlines():
        stripped = line.strip()
        if stripped == "-- batch-job":
            batch_job = True
        elif stripped.startswith("-- target:"):
            target = stripped.split(":", 1)[1].strip()
        elif stripped.startswith("-- config:"):
            config = tomllib.loads("x = " + stripped.split(":", 1)[1].strip())["x"]
    return Example(sql, target, config, batch_job)
