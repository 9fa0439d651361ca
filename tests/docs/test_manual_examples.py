"""Every example in the manuals runs, against the test server, as a user would type it.

The examples name files a user has (``slow.log``, ``admin.cnf``, ``summaries.toml``…): each
manual's examples run in order in a sandbox that has them (``sandbox`` below: real slow logs
from examples/, option files of the harness accounts, ``~/.my.cnf`` for the admin account, a
catalog whose jobs run on the test server). The conventions are in tests/docs/examples.py and
CONTRIBUTING.md.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.docs.examples import MANUALS, RUN, Block, blocks, commands, matches
from tests.harness import MariaDB
from tests.paths import REPO

BIN = Path(sys.executable).parent
WITH_EXAMPLES = [path for path in MANUALS if blocks(path)]


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)


def _environment(sandbox: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HOME=str(sandbox / "home"),
        XDG_STATE_HOME=str(sandbox / "state"),
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        COLUMNS="120",
    )
    return env


def _shell(command: str, sandbox: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail\n{command}"],
        cwd=sandbox,
        env=_environment(sandbox),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def sandbox_base(mariadb: MariaDB, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files the examples name, made once; each manual runs in its own copy."""
    base = tmp_path_factory.mktemp("manual-examples")
    for user, name in (("govern_admin", "admin.cnf"), ("govern_app", "app.cnf")):
        text = mariadb.defaults_file(user).read_text()
        _write(base / name, text, 0o600)
        if name == "admin.cnf":
            _write(base / "home" / ".my.cnf", text, 0o600)
    (base / "examples").symlink_to(REPO / "examples")
    shutil.copy(REPO / "examples" / "mariadb-slow.log", base / "slow.log")
    shutil.copy(REPO / "examples" / "digest" / "rules-slow.log.gz", base / "db2-slow.log.gz")
    _write(base / "load.sh", "#!/bin/sh\necho loaded\n", 0o755)
    _write(base / "backfill.sql", "SELECT 1;\n")
    _write(
        base / "migrations" / "001_orders.sql", "SELECT SQL_CACHE id FROM orders WHERE d > NOW();\n"
    )
    rows = [("2026-11-21", shop, shop * 10) for shop in range(1, 6)]
    _write(base / "sales.csv", "day,shop,sales\n" + "".join(f"{d},{s},{n}\n" for d, s, n in rows))
    (base / "sales.tsv.gz").write_bytes(
        gzip.compress(
            ("day\tshop\tsales\n" + "".join(f"{d}\t{s}\t{n}\n" for d, s, n in rows)).encode()
        )
    )
    (base / "sales.jsonl.gz").write_bytes(
        gzip.compress(
            "".join(f'{{"day": "{d}", "shop": {s}, "sales": {n}}}\n' for d, s, n in rows).encode()
        )
    )
    _write(
        base / "summaries.toml",
        'name = "summaries"\npolicy = "sjf"\n\n[workers.main]\ndefaults_file = "admin.cnf"\n'
        'concurrency = 2\n\n[jobs.small]\ncommand = "true"\nrows = 10\n\n'
        '[jobs.large]\ncommand = "sleep 0.2"\nrows = 1000\n\n'
        '[jobs.totals]\ncommand = "true"\ndepends_on = ["small", "large"]\n',
    )
    conn = mariadb.connect("root")
    with conn.cursor() as cur:
        cur.execute(
            "CREATE TABLE IF NOT EXISTS app.daily_sales"
            " (day DATE, shop INT, sales INT, PRIMARY KEY (day, shop))"
        )
    conn.close()
    # two halves of the example log, cut where an event starts, for `govern digest compare`
    lines = (base / "slow.log").read_text().splitlines(keepends=True)
    half = next(i for i in range(len(lines) // 2, len(lines)) if lines[i].startswith("# User@"))
    _write(base / "before.log", "".join(lines[:half]))
    _write(base / "after.log", "".join(lines[half:]))
    made = [
        "govern digest --host db1 --format json slow.log > db1.json",
        "govern digest --host db2 --format json db2-slow.log.gz > db2.json",
        "govern digest --format json before.log > before.json",
        "govern digest --format json after.log > after.json",
        "govern run --name setup -- true && govern history --json > history.json",
    ]
    for command in made:
        done = _shell(command, base)
        assert done.returncode == 0, f"{command}: {done.stderr}"
    shutil.rmtree(base / "state")
    broken = json.loads((base / "db1.json").read_text(encoding="utf-8"))
    broken["classes"][3]["count"] = "many"  # a hand-edited digest, for merge to refuse
    _write(base / "broken.json", json.dumps(broken))
    return base


def _run_block(block: Block, sandbox: Path) -> list[str]:
    """What went wrong running one block (empty when it ran as the manual says)."""
    if block.language == "python":
        script = sandbox / f"example_{block.line}.py"
        script.write_text(block.text, encoding="utf-8")
        done = subprocess.run(
            [sys.executable, script.name],
            cwd=sandbox,
            env=_environment(sandbox),
            capture_output=True,
            text=True,
            timeout=300,
        )
        return (
            []
            if done.returncode == 0
            else [f"{block.where}: exit {done.returncode}: {done.stderr[-800:]}"]
        )
    if block.language == "toml":
        return _check_toml(block, sandbox)
    failures = []
    found = commands(block)
    if not found:
        return [f"{block.where}: a {block.language} block without a command"]
    for command in found:
        done = _shell(command.text, sandbox)
        # a console example may show govern refusing something: its error line is the output
        shows_error = any(line.startswith("govern: error:") for line in command.expected)
        allowed = (2, 3) if shows_error else (0, 1)
        if (
            done.returncode not in allowed
            or "Traceback" in done.stderr
            or ("govern: error" in done.stderr and not shows_error)
        ):
            failures.append(
                f"{block.path.name}:{command.line}: `{command.text}` exit {done.returncode}: "
                f"{done.stderr.strip()[-800:]}"
            )
        elif command.expected and not matches(
            command.expected, (done.stdout + done.stderr).splitlines()
        ):
            failures.append(
                f"{block.path.name}:{command.line}: `{command.text}` printed:\n"
                f"{(done.stdout + done.stderr)[:2000]}"
            )
    return failures


def _check_toml(block: Block, sandbox: Path) -> list[str]:
    """TOML parses; a govern configuration (``[tool.govern…]``) is also read by govern lint."""
    try:
        tomllib.loads(block.text)
    except tomllib.TOMLDecodeError as exc:
        return [f"{block.where}: not TOML: {exc}"]
    if "[tool.govern" not in block.text:
        return []
    folder = sandbox / f"config_{block.line}"
    _write(folder / "pyproject.toml", block.text)
    _write(folder / "empty.sql", "SELECT 1;\n")
    _write(
        folder / "govern-baseline.json",
        '{"schema": "govern.lint-baseline", "schema_version": 1, "findings": []}\n',
    )
    done = _shell(
        f"govern lint --config {folder.name}/pyproject.toml {folder.name}/empty.sql", sandbox
    )
    if done.returncode not in (0, 1):
        return [f"{block.where}: govern lint refuses it: {done.stderr.strip()}"]
    return []


@pytest.mark.server
@pytest.mark.parametrize("manual", WITH_EXAMPLES, ids=lambda path: path.name)
def test_every_example_of_the_manual_runs(
    manual: Path, server: MariaDB, sandbox_base: Path, tmp_path: Path
) -> None:
    sandbox = tmp_path / "sandbox"
    shutil.copytree(sandbox_base, sandbox, symlinks=True)
    failures: list[str] = []
    ran = 0
    for block in blocks(manual):
        if block.not_run is not None or block.language == "text":
            continue
        if block.language not in RUN:
            failures.append(
                f"{block.where}: a {block.language or 'plain'} block: make it sh, console, python,"
                " toml or text, or mark it <!-- example not run: the reason -->"
            )
            continue
        failures += _run_block(block, sandbox)
        ran += 1
    assert ran > 0, f"{manual.name}: no example runs"
    assert not failures, "\n".join(failures)


def test_manuals_without_examples_are_reference_pages() -> None:
    """Each manual has examples that run, except the JSON contracts page (tables only)."""
    assert {path.name for path in MANUALS if not blocks(path)} == {"json.md"}


def test_a_not_run_example_says_why() -> None:
    marked = [block for path in MANUALS for block in blocks(path) if block.not_run is not None]
    assert marked, "no example is marked as not run: the marker's parsing is untested"
    for block in marked:
        assert len(block.not_run or "") >= 10, f"{block.where}: say why it cannot run"
