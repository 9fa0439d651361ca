"""``govern lint`` as a library: find SQL files, run the catalog, gather one report.

::

    from govern.rules.lint import LintOptions, lint_paths
    report = lint_paths(["migrations/"], LintOptions(target="mariadb-10.11"))
    for finding in report.findings:
        print(finding.location, finding.rule_id, finding.message)
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import io
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from govern.errors import UsageError
from govern.rules.base import Context
from govern.rules.baseline import load_baseline, split_new, write_baseline
from govern.rules.config import ConfigFinder, RulesConfig
from govern.rules.engine import RuleSet, build_ruleset, check_source
from govern.rules.model import Finding, Location, Severity
from govern.rules.sqlfile import SqlFile
from govern.rules.target import parse_target

if TYPE_CHECKING:
    from govern.progress import Progress
    from govern.server import ServerInfo

SCHEMA = "govern.lint"
SCHEMA_VERSION = 1
#: Findings below it are counted, not shown, and do not fail the run: ``info`` is what a
#: build must not fail on, such as a statement govern's grammar could not analyse.
DEFAULT_THRESHOLD = Severity.WARNING
_GLOB_CHARS = set("*?[")
_SKIPPED_DIRS = {".git", ".hg", ".svn", ".venv", "venv", "node_modules", "__pycache__", ".tox"}


@dataclasses.dataclass
class LintOptions:
    """Command-line choices; each overrides the config file's value when given."""

    select: list[str] | None = None
    ignore: list[str] = dataclasses.field(default_factory=list)
    severity: Severity | None = None
    target: str | None = None
    #: A target read from a live server: (capabilities, label).
    live_target: tuple[ServerInfo, str] | None = None
    #: ``--config FILE`` (or a RulesConfig object) for every file instead of the nearest one.
    config: Path | RulesConfig | None = None
    baseline: Path | None = None
    write_baseline: bool = False
    progress: bool | None = None  # None: a bar only on a terminal


@dataclasses.dataclass
class FileResult:
    path: str
    statements: int
    findings: list[Finding]
    suppressed: int
    target: str | None = None


@dataclasses.dataclass
class LintReport:
    files: list[FileResult]
    findings: list[Finding]
    statements: int
    suppressed: int
    baselined: int
    below_threshold: int
    threshold: Severity
    targets: list[str]
    skipped_rules: dict[str, str]
    rules_run: list[str]
    elapsed: float
    baseline: str | None = None
    baseline_written: int | None = None
    #: Files found but not linted: ``exclude`` or ``skip = true`` in ``[[lint.paths]]``.
    skipped_files: int = 0

    @property
    def exit_code(self) -> int:
        return 1 if self.findings else 0

    def counts(self) -> dict[str, int]:
        return {s.value: sum(1 for f in self.findings if f.severity is s) for s in Severity}

    def to_json(self) -> dict[str, Any]:
        from govern import __version__

        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "tool": {"name": "govern", "version": __version__},
            "targets": self.targets,
            "threshold": self.threshold.value,
            "files": len(self.files),
            "statements": self.statements,
            "findings": [f.to_json() for f in self.findings],
            "summary": {
                "findings": len(self.findings),
                "by_severity": self.counts(),
                "suppressed": self.suppressed,
                "skipped_files": self.skipped_files,
                "baselined": self.baselined,
                "below_threshold": self.below_threshold,
            },
            "rules_run": self.rules_run,
            "rules_skipped": [
                {"rule": k, "reason": v} for k, v in sorted(self.skipped_rules.items())
            ],
            "baseline": self.baseline,
            "elapsed_seconds": round(self.elapsed, 3),
        }


# --- discovery -----------------------------------------------------------------------------


def discover(
    paths: Sequence[str], finder: ConfigFinder, skipped: list[Path] | None = None
) -> list[Path | None]:
    """Files to lint, in order, without duplicates; ``None`` stands for stdin.

    Directories are searched for ``*.sql`` (hidden and tool directories skipped);
    patterns are expanded (``**`` recursive); ``exclude`` and ``skip = true`` path entries
    of the nearest config apply to everything found, and what they leave out is appended
    to ``skipped`` (reports count it).
    """
    skipped = [] if skipped is None else skipped
    found: list[Path | None] = []
    seen: set[Path] = set()

    def add(path: Path) -> None:
        resolved = path.resolve()
        if resolved in seen:
            return
        seen.add(resolved)
        if finder.for_path(path).excluded(path):
            skipped.append(path)
        else:
            found.append(path)

    for text in paths:
        if text == "-":
            found.append(None)
            continue
        path = Path(text)
        if path.is_dir():
            for candidate in sorted(path.rglob("*.sql")):
                parts = candidate.relative_to(path).parts[:-1]
                if candidate.is_file() and not any(
                    p in _SKIPPED_DIRS or p.startswith(".") for p in parts
                ):
                    add(candidate)
        elif path.is_file():
            add(path)
        elif set(text) & _GLOB_CHARS:
            matches = sorted(glob.glob(text, recursive=True))
            files = [Path(m) for m in matches if Path(m).is_file()]
            if not files:
                raise UsageError(f"{text}: no files match")
            for file in files:
                add(file)
        else:
            raise UsageError(f"{text}: no such file or directory")
    return found


@contextlib.contextmanager
def _opened(path: Path | None, label: str) -> Iterator[tuple[BinaryIO, int]]:
    """A file (or stdin) opened for reading in binary, and its size in bytes (0: unknown)."""
    if path is None:
        yield sys.stdin.buffer, 0
        return
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise UsageError(f"{label}: {exc.strerror or exc}") from None
    with handle:
        yield handle, path.stat().st_size


def _file_finding(
    path: str, line: int, message: str, severity: Severity = Severity.ERROR
) -> Finding:
    return Finding(
        rule_id="META001",
        rule_name="parse-error",
        severity=severity,
        message=message,
        location=Location(path, line, 1),
        statement_lines=(line, line),
        context=message,
    )


# --- the run -------------------------------------------------------------------------------


class _Runner:
    """Per-run caches: a rule set per (config, path ignores), a target per config."""

    def __init__(self, options: LintOptions, finder: ConfigFinder) -> None:
        self.options = options
        self.finder = finder
        self._rulesets: dict[tuple[int, bool], RuleSet] = {}
        self._targets: dict[str | None, tuple[ServerInfo | None, str | None]] = {}

    def target(
        self, config: RulesConfig, path: Path | None = None
    ) -> tuple[ServerInfo | None, str | None]:
        """The command line's target, else the config's for this path (``[[lint.paths]]``)."""
        if self.options.live_target is not None:
            return self.options.live_target
        name = self.options.target or config.target_for(path)
        if name not in self._targets:
            where = "--target" if self.options.target else f"{config.label}: target"
            self._targets[name] = (parse_target(name, where), name) if name else (None, None)
        return self._targets[name]

    def ruleset(self, config: RulesConfig, path: Path | None) -> RuleSet:
        has_target = self.target(config, path)[0] is not None
        key = (id(config), has_target)
        if key not in self._rulesets:
            self._rulesets[key] = build_ruleset(
                config,
                has_target=has_target,
                select_ids=self.options.select,
                ignore_ids=self.options.ignore,
            )
        return self._rulesets[key]

    def lint_text(
        self,
        read: Callable[[int], str],
        path: Path | None,
        label: str,
        size: int = 0,
        bar: Progress | None = None,
    ) -> tuple[FileResult, RuleSet]:
        """Lint one file's text, given by ``read`` in pieces; ``size`` (characters or bytes,
        0 if unknown) scales the progress bar."""
        config = self.finder.for_path(path)
        ruleset = self.ruleset(config, path)
        target, target_name = self.target(config, path)
        ctx = Context(target, target_name, batch_job=config.batch_job(path))
        done = 0.0

        def advance(offset: int) -> None:  # a file is one unit of the bar, advanced by offset
            nonlocal done
            now = min(offset / size, 1.0) if size else 0.0
            if bar is not None:
                bar.advance(now - done)
            done = now

        result = check_source(read, label, ruleset, ctx, config, advance)
        advance(size or 1)
        # per-path-ignores drop findings after the run, so they are counted as suppressed
        ignored = [i.upper() for i in config.ignored_for(path)] if path is not None else []
        kept = [f for f in result.findings if not any(f.rule_id.startswith(i) for i in ignored)]
        suppressed = result.suppressed + len(result.findings) - len(kept)
        return FileResult(label, result.statements, kept, suppressed, target_name), ruleset


def lint_paths(paths: Sequence[str], options: LintOptions | None = None) -> LintReport:
    """Lint files, directories, globs or ``-`` (stdin) and return one report."""
    from govern.progress import progress

    options = options or LintOptions()
    started = time.perf_counter()
    finder = ConfigFinder(options.config)
    skipped: list[Path] = []
    files = discover(paths, finder, skipped)
    runner = _Runner(options, finder)
    results: list[tuple[FileResult, RuleSet | None, RulesConfig]] = []
    with progress("govern lint", len(files), force=options.progress) as bar:
        for path in files:
            label = "<stdin>" if path is None else str(path)
            config = finder.for_path(path)
            with _opened(path, label) as (handle, size):
                file = SqlFile(handle)
                if file.binary:
                    problem = _file_finding(label, 1, "binary file (NUL bytes): not linted")
                    results.append((FileResult(label, 0, [problem], 0), None, config))
                    bar.advance()
                    continue
                result, ruleset = runner.lint_text(file.read, path, label, size, bar)
            if file.problem is not None:
                line, message = file.problem
                result.findings.insert(0, _file_finding(label, line, message, Severity.INFO))
            results.append((result, ruleset, config))
    report = _report(results, runner, options, started)
    report.skipped_files = len(skipped)
    return report


def lint_text(text: str, options: LintOptions | None = None, path: str = "<stdin>") -> LintReport:
    """Lint SQL given as a string (tests, editors, the docstring examples)."""
    options = options or LintOptions()
    started = time.perf_counter()
    finder = ConfigFinder(options.config)
    runner = _Runner(options, finder)
    file = None if path == "<stdin>" else Path(path)  # for the config's per-path entries
    result, ruleset = runner.lint_text(io.StringIO(text).read, file, path, len(text))
    return _report([(result, ruleset, finder.for_path(file))], runner, options, started)


def _report(
    results: list[tuple[FileResult, RuleSet | None, RulesConfig]],
    runner: _Runner,
    options: LintOptions,
    started: float,
) -> LintReport:
    shown: list[Finding] = []
    below = 0
    thresholds = set()
    skipped: dict[str, str] = {}
    ran: set[str] = set()
    targets: set[str] = set()
    for result, ruleset, config in results:
        threshold = options.severity or config.severity or DEFAULT_THRESHOLD
        thresholds.add(threshold)
        if ruleset is not None:
            skipped.update(ruleset.skipped)
            ran.update(ruleset.ids)
            if result.target:
                targets.add(result.target)
        for finding in result.findings:
            if finding.severity.rank >= threshold.rank:
                shown.append(finding)
            else:
                below += 1
    baseline_path = options.baseline or runner.finder.for_path(None).baseline
    baselined = 0
    written = None
    if baseline_path is not None and options.write_baseline:
        written = write_baseline(baseline_path, shown)
        baselined, shown = len(shown), []
    elif baseline_path is not None:
        shown, baselined = split_new(shown, load_baseline(baseline_path), baseline_path.parent)
    elif options.write_baseline:
        raise UsageError("--write-baseline needs --baseline FILE (or baseline in the config)")
    return LintReport(
        files=[r for r, _, _ in results],
        findings=shown,
        statements=sum(r.statements for r, _, _ in results),
        suppressed=sum(r.suppressed for r, _, _ in results),
        baselined=baselined,
        below_threshold=below,
        threshold=min(thresholds, key=lambda s: s.rank) if thresholds else DEFAULT_THRESHOLD,
        targets=sorted(targets),
        skipped_rules={k: v for k, v in skipped.items() if k not in ran},
        rules_run=sorted(ran),
        elapsed=time.perf_counter() - started,
        baseline=str(baseline_path) if baseline_path else None,
        baseline_written=written,
    )
