"""The documentation's shape: a short README that reaches every command's manual, manuals that
name every option, links that resolve, a rule catalog generated from the rules, no issue
numbers anywhere (CONTRIBUTING.md, "Documentation")."""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from govern.cli import COMMANDS, cli
from govern.cli_options import connection_options
from tests.paths import REPO

README = REPO / "README.md"
#: Subcommands a command dispatches itself, outside Click's groups (``govern digest merge``).
DISPATCHED = {"digest": ("merge", "compare")}
DOCS = REPO / "docs"
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _markdown_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.md"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    return [REPO / name for name in listed if (REPO / name).exists()]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = heading.strip().lower()
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in ("L", "N"))
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for line in text.splitlines():
        if line.startswith("#"):
            base = slug(line.lstrip("#"))
            name, n = base, 0
            while name in found:
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    return found


def links(path: Path) -> Iterator[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    outside = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for number, line in enumerate(outside.splitlines(), start=1):
        for match in _LINK.finditer(line):
            yield number, match.group(1)


# --- the README ---------------------------------------------------------------------------------


def test_the_readme_is_a_landing_page_under_250_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 250, f"README.md has {len(lines)} lines: move the detail to a manual"


def test_the_readmes_first_lines_give_the_two_commands_and_ci_runs_the_second() -> None:
    head = "\n".join(README.read_text(encoding="utf-8").splitlines()[:12])
    block = head.split("```sh\n", 1)[1].split("```", 1)[0]
    assert block.splitlines() == ["bash scripts/demo", "bash scripts/test"]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "exec bash scripts/test" in ci


def _readme_manuals() -> dict[Path, str]:
    manuals = {}
    for _, target in links(README):
        path = (REPO / target.split("#")[0]).resolve()
        if path.suffix == ".md" and path.parent == DOCS:
            manuals[path] = path.read_text(encoding="utf-8")
    return manuals


def _manual_of(name: str, manuals: dict[Path, str]) -> Path | None:
    """The manual linked from the README whose title names ``govern NAME`` (or ``NAME`` among
    the commands a title lists)."""
    for path, text in manuals.items():
        title = text.splitlines()[0]
        if f"`govern {name}`" in title or re.search(rf"`{re.escape(name)}`", title):
            return path
    return None


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_is_one_click_from_the_readme(name: str) -> None:
    assert _manual_of(name, _readme_manuals()) is not None, (
        f"no manual linked from README.md has `govern {name}` in its title"
    )


def _connection_opts() -> set[tuple[str, ...]]:
    """The option strings of the shared connection options (their manual is connecting.md)."""
    probe = click.command()(connection_options(lambda settings: None))
    return {tuple(param.opts) for param in probe.params}


def _options(command: click.Command, path: str) -> Iterator[tuple[str, str, bool]]:
    """(command path, long option, is a connection option) of a command and its subcommands."""
    shared = _connection_opts()
    for param in command.params:
        if isinstance(param, click.Option) and param.name not in ("help", "version"):
            longs = [o for o in [*param.opts, *param.secondary_opts] if o.startswith("--")]
            for option in longs:
                yield path, option, tuple(param.opts) in shared
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for sub in command.list_commands(ctx):
            found = command.get_command(ctx, sub)
            assert found is not None
            yield from _options(found, f"{path} {sub}")
    for sub in () if isinstance(command, click.Group) else DISPATCHED.get(path.split()[-1], ()):
        dispatched = command.make_context(path, [sub], resilient_parsing=True).command
        assert dispatched is not command, f"{path} {sub} is not a subcommand any more"
        yield from _options(dispatched, f"{path} {sub}")


def _names(text: str, option: str) -> bool:
    """``--since`` named as an option: `` `--since TIME` ``, `` `-q, --quiet` `` or a pair
    `` `--rules/--no-rules` ``."""
    return re.search(rf"(?<=[`/ ]){re.escape(option)}(?![\w-])", text) is not None


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_the_manual_of_each_command_names_every_option(name: str) -> None:
    manual = _manual_of(name, _readme_manuals())
    assert manual is not None
    text = manual.read_text(encoding="utf-8")
    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    missing = [
        f"{path} {option}"
        for path, option, connection in _options(command, f"govern {name}")
        if not (("connection options" in text) if connection else _names(text, option))
    ]
    checked = list(_options(command, name))
    assert checked or isinstance(command, click.Group)
    assert not missing, f"{manual.relative_to(REPO)} does not name: {', '.join(missing)}"


# --- every page ---------------------------------------------------------------------------------


def test_every_relative_link_in_the_documentation_resolves() -> None:
    broken = []
    pages = _markdown_files()
    assert len(pages) >= 20
    for page in pages:
        for number, target in links(page):
            if re.match(r"^[a-z]+:", target):
                continue  # https:, mailto:
            file, _, fragment = target.partition("#")
            path = (page.parent / file).resolve() if file else page
            where = f"{page.relative_to(REPO)}:{number}: {target}"
            if not path.exists():
                broken.append(f"{where}: no such file")
            elif fragment and path.suffix == ".md" and fragment not in anchors(path):
                broken.append(f"{where}: no heading #{fragment}")
    assert not broken, "\n".join(broken)


def test_the_anchor_of_a_heading_is_githubs() -> None:
    assert slug(" `govern.doctor` version 1 (`govern doctor --json`)") == (
        "governdoctor-version-1-govern-doctor---json"
    )
    assert slug(" Measured: rows/s by method") == "measured-rowss-by-method"


def test_no_file_cites_an_issue_number() -> None:
    listed = subprocess.run(
        ["git", "grep", "-n", "-I", "-i", "-E", r"issues?[ -]?#?[0-9]+", "--", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert listed.returncode in (0, 1), listed.stderr
    assert listed.stdout == "", "comments and docs cite a design-doc section instead:\n" + (
        listed.stdout
    )


def test_there_are_no_notes_only_design_docs() -> None:
    assert not (DOCS / "notes").exists()
    topics = sorted(path.name for path in (DOCS / "design").glob("*.md"))
    assert {"layout.md", "run-crash-safety.md", "digest-engines.md", "query-cache.md"} <= set(
        topics
    )
    for path in (DOCS / "design").glob("*.md"):
        text = path.read_text(encoding="utf-8")
        assert text.count("\n## Rejected") == 1, f"{path.name}: one Rejected section"


def test_the_rule_catalog_in_the_lint_manual_is_the_rules_own() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/rule-catalog.py", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    text = (DOCS / "lint.md").read_text(encoding="utf-8")
    assert "### QC001 sql-cache-unsafe" in text and "### BATCH008 single-row-run" in text
