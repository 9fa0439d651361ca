"""Bucket documents from real logs, and both backends of the history store to run them on."""

from __future__ import annotations

import copy
import functools
import json
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.harness import MariaDB
from tests.paths import CORPUS, SLOWLOGS

#: The shipped corpus log (10,328 events over two minutes), else a small one of the repo.
LOG = CORPUS / "mariadb" / "mixed-workload.log"


def log_path() -> Path:
    return LOG if LOG.is_file() else SLOWLOGS / "mariadb.log"


@functools.cache
def minute_buckets(log: Path, folder: Path) -> tuple[dict[str, Any], ...]:
    """``govern collect --once --bucket 1m`` of the log: its closed buckets, in time order."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "govern", "collect", str(log), "--to", str(folder / "b"),
         "--state", str(folder / "state.db"), "--once", "--label", "db1",
         "--bucket", "1m", "--close-after", "0s"],
        check=True, capture_output=True,
    )  # fmt: skip
    return tuple(json.loads(p.read_text()) for p in sorted((folder / "b").glob("*.json")))


def at(document: dict[str, Any], host: str, start: str) -> dict[str, Any]:
    """The same bucket as if ``host`` had closed it at ``start`` (a copy)."""
    moved = copy.deepcopy(document)
    moved["collect"] = dict(moved["collect"], host=host)
    moved["collect"]["bucket"] = dict(moved["collect"]["bucket"], start=start, seconds=3600)
    for item in moved["inputs"]:
        item["host"] = host
    for item in moved["classes"]:
        item["servers"] = {host: item["count"]}
    return moved


def mysql_url(server: MariaDB, schema: str | None = None, **parameters: str) -> str:
    schema = schema or f"history_{secrets.token_hex(4)}"
    query = "&".join(
        [f"defaults-file={server.defaults_file('govern_admin')}"]
        + [f"{key}={value}" for key, value in parameters.items()]
    )
    return f"mysql://127.0.0.1:{server.port}/{schema}?{query}"
