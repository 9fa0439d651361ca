"""Overlapping runs, counted on the server with user-level locks: nothing is written there.

Each run that changes a variable *claims a slot*: it holds the user lock
``govern:<code>:<slot>`` (``govern:slow:3``) on its own connection, plus one lock per set
bit of three integers it carries: the value from before the first run (``…:3:o<k>``),
the value govern set (``…:3:v<k>``) and the id of the first connection of the window
(``…:3:w<k>``, for listing blind connections). Anyone can read a claim back with
``IS_USED_LOCK`` on those fixed names, on any server and with no plugin: that is how
the last run, maybe on another host, learns what to restore. A claim disappears with
its connection (wrapper killed, host lost once ``wait_timeout`` = the lease ends it),
so no one has to clean up after a dead run.

Changes happen under ``govern:mutex`` so that "am I the last?" and "what was it
before the first?" are answered consistently.

A third lock, ``govern:who:…``, names the run (pid, host, run name) for
``govern status``; only MariaDB's ``metadata_lock_info`` plugin can list it, and it
shows the first 64 characters of a lock name (measured), so it is cut to that.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

import pymysql

from govern.connection import Connection, query_all, query_one
from govern.errors import ServerError
from govern.wrappers.variables import Variable

MUTEX = "govern:mutex"
#: How many runs may hold one variable at once (each probe reads all of them).
SLOTS = 64
#: METADATA_LOCK_INFO.TABLE_SCHEMA is VARCHAR(64): longer names are listed cut.
LISTED_NAME_LENGTH = 64
MUTEX_TIMEOUT_S = 10
#: Connection ids are carried in 40 bits (a server would need 10^12 connections to overflow).
ID_BITS = 40


def slot_lock(variable: Variable, slot: int) -> str:
    return f"govern:{variable.code}:{slot}"


def bit_lock(variable: Variable, slot: int, kind: str, bit: int) -> str:
    return f"govern:{variable.code}:{slot}:{kind}{bit}"


@dataclasses.dataclass(frozen=True)
class Claim:
    """A run's slot: which connection holds it and the two values it carries."""

    variable: Variable
    slot: int
    connection_id: int
    original: int
    value: int
    #: Connections with a higher id were opened while the variable was changed.
    since: int
    #: The ``govern:who:…`` lock naming the run, on claims this process took.
    who: str | None = None

    def lock_names(self) -> list[str]:
        names = [slot_lock(self.variable, self.slot)]
        if self.who:
            names.append(self.who)
        for kind, width in _carried(self.variable):
            number = getattr(self, _FIELD[kind])
            names += [
                bit_lock(self.variable, self.slot, kind, bit)
                for bit in range(width)
                if number >> bit & 1
            ]
        return names


_FIELD = {"o": "original", "v": "value", "w": "since"}


def _carried(variable: Variable) -> tuple[tuple[str, int], ...]:
    """(kind, bit width) of the numbers a claim carries."""
    return (("o", variable.bits), ("v", variable.bits), ("w", ID_BITS))


@contextlib.contextmanager
def server_mutex(conn: Connection, timeout: float = MUTEX_TIMEOUT_S) -> Iterator[None]:
    """Serialise govern's decisions on this server (all hosts) for the block's duration."""
    row = query_one(conn, "SELECT GET_LOCK(%s, %s)", (MUTEX, timeout))
    if not row or row[0] != 1:
        holder = query_one(conn, "SELECT IS_USED_LOCK(%s)", (MUTEX,))
        raise ServerError(
            f"another govern process (connection {holder[0] if holder else '?'}) has held "
            f"{MUTEX} for over {timeout:g} s"
        )
    try:
        yield
    finally:
        with contextlib.suppress(pymysql.err.MySQLError):
            query_one(conn, "SELECT RELEASE_LOCK(%s)", (MUTEX,))


def _used(conn: Connection, names: list[str]) -> list[int | None]:
    """IS_USED_LOCK for many names in one round trip (connection ids or None).

    One text column rather than a column per name: 64 column descriptions cost more
    to send and parse than the answer itself.
    """
    if not names:
        return []
    row = query_one(
        conn,
        "SELECT CONCAT_WS(',', " + ", ".join(["IFNULL(IS_USED_LOCK(%s), 0)"] * len(names)) + ")",
        names,
    )
    assert row is not None
    return [int(v) or None for v in str(row[0]).split(",")]


def probe(conn: Connection, variable: Variable) -> list[Claim]:
    """Every live claim on ``variable``, with the values it carries (two round trips)."""
    owners = _used(conn, [slot_lock(variable, n) for n in range(SLOTS)])
    held = [(slot, owner) for slot, owner in enumerate(owners) if owner is not None]
    if not held:
        return []
    names = [
        bit_lock(variable, slot, kind, bit)
        for slot, _ in held
        for kind, width in _carried(variable)
        for bit in range(width)
    ]
    bits = iter(_used(conn, names))
    claims = []
    for slot, owner in held:
        numbers = []
        for _kind, width in _carried(variable):
            number = 0
            for bit in range(width):
                if next(bits) == owner:  # a bit counts only when the slot's owner holds it
                    number |= 1 << bit
            numbers.append(number)
        original, value, since = numbers
        claims.append(Claim(variable, slot, owner, original, value, since))
    return claims


def take(
    conn: Connection,
    connection_id: int,
    variable: Variable,
    original: int,
    value: int,
    others: list[Claim],
    who: tuple[int, str, str] | None = None,
) -> Claim:
    """Claim the first free slot on ``conn``, whose id is ``connection_id`` (under the mutex).

    The window's first connection is the oldest claim's, or this one when alone.
    ``who`` is (pid, host, run name) for the lock that names the run.
    """
    used = {c.slot for c in others}
    free = next((s for s in range(SLOTS) if s not in used), None)
    if free is None:
        raise ServerError(f"{SLOTS} govern runs already hold {variable.name} on this server")
    label = who_lock(variable, free, *who) if who else None
    since = min((c.since for c in others), default=connection_id)
    claim = Claim(variable, free, connection_id, original, value, since, label)
    names = claim.lock_names()
    got = query_one(conn, "SELECT " + ", ".join(["GET_LOCK(%s, 0)"] * len(names)), names)
    if not got or any(v != 1 for v in got):
        release(conn, names)
        raise ServerError(f"user lock {slot_lock(variable, free)} is held outside govern")
    return claim


def release(conn: Connection, names: list[str]) -> None:
    if names:
        query_one(conn, "SELECT " + ", ".join(["RELEASE_LOCK(%s)"] * len(names)), names)


def who_lock(variable: Variable, slot: int, pid: int, host: str, name: str) -> str:
    """``govern:who:slow:3:<pid>@<host>:<run name>``, cut to what the plugin can list."""
    text = f"govern:who:{variable.code}:{slot}:{pid}@{host}:{name}"
    return text.encode()[:LISTED_NAME_LENGTH].decode(errors="ignore")


@dataclasses.dataclass(frozen=True)
class Who:
    code: str
    slot: int
    pid: int | None
    host: str
    name: str
    connection_id: int


def list_who(conn: Connection) -> list[Who] | None:
    """Runs named by their who-locks (MariaDB's metadata_lock_info), None without the plugin."""
    try:
        rows = query_all(
            conn,
            "SELECT THREAD_ID, TABLE_SCHEMA FROM information_schema.METADATA_LOCK_INFO"
            " WHERE LOCK_TYPE = 'User lock' AND TABLE_SCHEMA LIKE 'govern:who:%%'",
        )
    except pymysql.err.MySQLError:
        return None
    found = []
    for thread_id, lock_name in rows:
        parts = str(lock_name).split(":", 4)
        if len(parts) < 5:
            continue
        code, slot, rest = parts[2], parts[3], parts[4]
        pid_host, _, name = rest.partition(":")
        pid, _, host = pid_host.partition("@")
        found.append(
            Who(
                code=code,
                slot=int(slot) if slot.isdigit() else -1,
                pid=int(pid) if pid.isdigit() else None,
                host=host,
                name=name,
                connection_id=int(thread_id),
            )
        )
    return found
