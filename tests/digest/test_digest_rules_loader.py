"""``govern digest`` loads the rules' modules and sqlglot's MySQL dialect on a thread
while the core digests; the rules must never read with a dialect still being built.

sqlglot registers a dialect class in its registry before it has set the class up
(tokenizer, parser): a grammar check that looked the dialect up in that window read
backquoted names with sqlglot's default tokenizer and reported a spurious META001
"not analysed" (seen once in hundreds of runs of a tiny log under load). Here the
loader is held inside that window, and the rules are made to start in it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.paths import REPO

LOG = b"""# Time: 100624 11:48:27
# Query_time: 0.000012  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0
SELECT * FROM `products` ORDER BY name ASC, shape ASC;
# Time: 100624 11:48:28
# Query_time: 0.000013  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0
INSERT `foo` VALUES("bar");
"""

# Holds the loader thread just after sqlglot registered the dialect class (new_trie is
# the first thing its metaclass calls after that), and starts the rules only then.
SLOW_LOADER = textwrap.dedent(
    """
    import sys, threading, time
    import sqlglot.dialects.dialect as dialect
    import govern.rules.digest as rules_digest

    registered = threading.Event()
    real_trie, real_check = dialect.new_trie, rules_digest.check_document

    def slow_trie(*args, **kwargs):
        loader = threading.current_thread().name == "govern-load-rules"
        if loader and "mysql" in dialect._Dialect._classes:
            registered.set()
            time.sleep(0.3)
        return real_trie(*args, **kwargs)

    def late_check(*args, **kwargs):
        registered.wait(10)
        return real_check(*args, **kwargs)

    dialect.new_trie, rules_digest.check_document = slow_trie, late_check
    from govern.cli import main
    sys.argv = ["govern", "digest", "--format", "json", sys.argv[1]]
    try:
        main()
    finally:
        print("held:", registered.is_set(), file=sys.stderr)
    """
)


def test_rules_wait_for_the_dialect_being_built(tmp_path: Path) -> None:
    log = tmp_path / "slow.log"
    log.write_bytes(LOG)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", SLOW_LOADER, str(log)], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert "held: True" in proc.stderr, "the loader was never held: sqlglot's setup changed"
    document = json.loads(proc.stdout)
    found = [f["rule"] for item in document["classes"] for f in item["findings"]]
    assert "META001" not in found
    assert document["rules"]["summary"]["findings"] == len(found)
