"""The examples of the manuals: fenced blocks, what each one is, and how to judge a run.

Every fenced block names its language. ``sh`` blocks are commands, ``console`` blocks are
``$ command`` lines with the output they print, ``python`` blocks are programs, ``toml`` blocks
are configuration; all of them run (tests/docs/test_manual_examples.py). ``text`` is output or a
synopsis and never runs. A block of any other language, or one that cannot run here, carries
``<!-- example not run: the reason -->`` on the line before it. The rule catalog that
scripts/rule-catalog.py generates into docs/lint.md is the rules' docstrings, whose examples
tests/rules/test_rules_catalog.py runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from tests.paths import REPO

#: The manuals: the README and every page of docs/ (not the design docs).
MANUALS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN = ("sh", "console", "python", "toml")
NOT_RUN = re.compile(r"^<!-- example not run: (.+?) -->$")
GENERATED = ("<!-- rule catalog: generated", "<!-- end of the generated rule catalog -->")


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    text: str
    not_run: str | None = None  # the reason, when marked

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


@dataclass
class Command:
    """One command of a block, and (console blocks) the output it must print."""

    text: str
    line: int
    expected: list[str] = field(default_factory=list)


def blocks(path: Path) -> list[Block]:
    """The fenced blocks of a manual, outside the generated rule catalog."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    generated = False
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith(GENERATED[0]):
            generated = True
        elif line.startswith(GENERATED[1]):
            generated = False
        if line.startswith("```"):
            end = index + 1
            while end < len(lines) and not lines[end].startswith("```"):
                end += 1
            if not generated:
                marker = NOT_RUN.match(lines[index - 1]) if index else None
                found.append(
                    Block(
                        path,
                        index + 1,
                        line[3:].strip(),
                        "\n".join(lines[index + 1 : end]) + "\n",
                        marker.group(1) if marker else None,
                    )
                )
            index = end
        index += 1
    return found


def commands(block: Block) -> list[Command]:
    """The commands of an ``sh`` or ``console`` block: ``\\`` continuations joined, comment
    lines left out, a console command's expected output attached to it."""
    found: list[Command] = []
    pending = ""
    for offset, raw in enumerate(block.text.splitlines(), start=1):
        if block.language == "console" and not raw.startswith("$ ") and not pending:
            if found:
                found[-1].expected.append(raw)
            continue
        line = raw[2:] if block.language == "console" and not pending else raw
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        found.append(Command(pending + line, block.line + offset))
        pending = ""
    return found


def matches(expected: list[str], actual: list[str]) -> bool:
    """Doctest-like: a line ``...`` (or ``…``) stands for any lines, ``...`` inside a line for
    any text, and trailing spaces do not count."""
    if not expected:
        return True
    head, rest = expected[0].rstrip(), expected[1:]
    if head in ("...", "…"):
        return any(matches(rest, actual[skip:]) for skip in range(len(actual) + 1))
    if not actual:
        return False
    pattern = ".*".join(re.escape(part) for part in re.split(r"\.\.\.|…", head))
    return bool(re.fullmatch(pattern, actual[0].rstrip())) and matches(rest, actual[1:])
