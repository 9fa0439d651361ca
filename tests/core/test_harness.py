"""The harness itself: restart and crash keep the same server reachable (later issues rely on it)."""

from __future__ import annotations

import time

import pytest

from tests.harness import MariaDB

pytestmark = pytest.mark.server


def test_kill_and_restart_same_port(server: MariaDB) -> None:
    port = server.port
    first = server.pid()
    server.kill()
    assert server.pid() is None
    started = time.monotonic()
    server.start()
    assert server.pid() not in (None, first)
    assert server.port == port
    conn = server.connect("govern_admin", tcp=True)
    conn.close()  # type: ignore[attr-defined]
    assert time.monotonic() - started < 60
    server.restart()
    assert server.pid() is not None
