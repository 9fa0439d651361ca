"""``govern digest`` loads the rules' modules on a thread while the core digests (not
before it, on the main thread), and sqlglot only when a grammar check needs it, on the
main thread, once per shape ever (rules/catalog/grammar_cache.py).

sqlglot registers a dialect class in its registry before it has set the class up
(tokenizer, parser): a grammar check that looked the dialect up while another thread
loaded it read backquoted names with sqlglot's default tokenizer and reported a
spurious META001 "not analysed". So no thread but the main one may import it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.paths import REPO

#: Two statements that touched no row: META001 checks their grammar with sqlglot.
LOG = b"""# Time: 100624 11:48:27
# Query_time: 0.000012  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0
SELECT * FROM `products` ORDER BY name ASC, shape ASC;
# Time: 100624 11:48:28
# Query_time: 0.000013  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0
INSERT `foo` VALUES("bar");
"""
#: A statement the server read (rows examined): no grammar check.
READ_LOG = b"""# Time: 100624 11:48:27
# Query_time: 0.000012  Lock_time: 0.000000  Rows_sent: 1  Rows_examined: 1
SELECT * FROM `products` WHERE id = 7;
"""

# Notes which threads looked for sqlglot, and whether it was imported at all.
WATCHED = textwrap.dedent(
    """
    import importlib.abc, sys, threading

    importers, catalog = set(), set()

    class Watch(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name in ("sqlglot", "govern.rules.catalog"):
                found = importers if name == "sqlglot" else catalog
                found.add(threading.current_thread().name)
            return None

    sys.meta_path.insert(0, Watch())
    from govern.cli import main
    sys.argv = ["govern", "digest", "--format", "json", sys.argv[1]]
    try:
        main()
    finally:
        loaded = "sqlglot" in sys.modules
        print("catalog:", ",".join(sorted(catalog)), file=sys.stderr)
        print("sqlglot:", ",".join(sorted(importers)) if loaded else "-", file=sys.stderr)
    """
)


def digest(log: Path, state: Path) -> tuple[dict, str]:
    """The JSON of ``govern digest`` in a fresh interpreter, and the threads that looked
    for sqlglot ("-": it was not imported)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "XDG_STATE_HOME": str(state)}
    proc = subprocess.run(
        [sys.executable, "-c", WATCHED, str(log)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    # The rules' catalog loads on the loader thread, during the digest.
    assert "catalog: govern-load-rules\n" in proc.stderr
    importers = proc.stderr.rsplit("sqlglot: ", 1)[1].strip()
    return json.loads(proc.stdout), importers


def rules_found(document: dict) -> list[str]:
    return [f["rule"] for item in document["classes"] for f in item["findings"]]


def test_sqlglot_on_the_main_thread_then_never_again_for_known_shapes(tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    log.write_bytes(LOG)
    first, importers = digest(log, tmp_path / "state")
    assert importers == "MainThread"
    assert "META001" not in rules_found(first)
    cache = tmp_path / "state" / "govern" / "sqlglot-accepted"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    assert cache.read_bytes().startswith(b"govern sqlglot-accepted 1 sqlglot ")
    assert b"products" not in cache.read_bytes()  # hashes, never the SQL
    again, importers = digest(log, tmp_path / "state")
    assert importers == "-"
    assert again == first


def test_no_grammar_check_no_sqlglot(tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    log.write_bytes(READ_LOG)
    document, importers = digest(log, tmp_path / "state")
    assert importers == "-"
    assert document["rules"]["rules_run"]
    assert not (tmp_path / "state" / "govern").exists()
