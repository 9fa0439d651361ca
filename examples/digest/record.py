"""Record examples/digest/rules-slow.log.gz again: the digest rules' workload on a fresh MariaDB.

Starts a throwaway MariaDB (tests/harness.py; needs mariadb-server), runs
tests/digest/support.rules_workload with every statement logged
(long_query_time = 0, query_cache_type = DEMAND), and writes the slow log,
gzip-compressed, next to this script. Run from the repository root:

    .venv/bin/python examples/digest/record.py
"""

from __future__ import annotations

import gzip
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from tests.digest.support import record_workload, rules_workload  # noqa: E402
from tests.harness import temporary_server  # noqa: E402


def main() -> None:
    with temporary_server("govern-example-") as server, tempfile.TemporaryDirectory() as tmp:
        log = record_workload(server, Path(tmp) / "slow.log", rules_workload)
        target = HERE / "rules-slow.log.gz"
        target.write_bytes(gzip.compress(log.read_bytes(), mtime=0))
        print(
            f"{target}: {log.stat().st_size:,} bytes of slow log, {target.stat().st_size:,} gzipped"
        )


if __name__ == "__main__":
    main()
