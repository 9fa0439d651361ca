"""A run's hold on a server variable: join, keep, let go; the last run out restores.

Every decision is taken under the server-wide ``govern:mutex`` (:mod:`govern.wrappers.claims`):

* **join** — if other runs hold the variable, take the value from before the first
  and the value in force from their claims; otherwise the value from before is the
  current one. Journal it, claim a slot, arm the dead-man event, then change it.
* **renew** — every third of the lease: a statement on the holder connection (whose
  ``wait_timeout`` is the lease, so a silent host loses its claim), push the event.
* **rejoin** — after a lost connection: claim again if the setting is still govern's;
  after a server restart, set it again if the server came back with the original value.
  Anything else means someone else decided: the run lets go and says so.
* **finish** — if other runs still hold it, leave it to them. Otherwise compare and
  swap: restore the original only if the value is still the one govern set.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable

import pymysql

from govern.connection import Connection, ConnectionSettings, connect, error_text, query_one
from govern.errors import ServerError
from govern.state import StateStore, utcnow
from govern.units import plural
from govern.wrappers import blind, claims, deadman, journal
from govern.wrappers.claims import Claim, server_mutex
from govern.wrappers.journal import RunRecord
from govern.wrappers.variables import Variable

#: Errors that mean "the connection is gone", as opposed to "the server said no".
CONNECTION_ERRORS = (pymysql.err.OperationalError, pymysql.err.InterfaceError, OSError)
_ACCESS_DENIED = (1227, 1044, 1045, 1142)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How a run let go of a variable: ``restored``, ``left_for_others``, ``changed`` …"""

    code: str
    message: str
    warning: bool = False


def server_started(conn: Connection) -> float:
    """When the server started, on this host's clock: a different value means it restarted.

    (``SHOW GLOBAL STATUS`` works on MySQL 8 too, where information_schema lost it.)
    """
    row = query_one(conn, "SHOW GLOBAL STATUS LIKE 'Uptime'")
    assert row is not None
    return time.time() - float(row[1])


def _remembered_original(store: StateStore, record: RunRecord, variable: Variable) -> int | None:
    """The value from before, from a live local run whose claim is missing (reconnecting)."""
    for other in journal.open_runs(store, record.server):
        if (
            other.id != record.id
            and other.variable == variable.name
            and other.original_value is not None
            and other.stale_reason() is None
        ):
            return other.original_value
    return None


class Holding:
    """The wrapper's hold: its connection, claim and event, kept alive by :mod:`govern.wrappers.lease`."""

    def __init__(
        self,
        settings: ConnectionSettings,
        conn: Connection,
        store: StateStore,
        record: RunRecord,
        variable: Variable,
        *,
        lease: float,
        event: str | None,
    ) -> None:
        self.settings = settings
        self.conn = conn
        self.store = store
        self.record = record
        self.variable = variable
        self.lease = lease
        self.event = event
        self.claim: Claim | None = None
        #: Why the run no longer holds the variable (someone else decided), or None.
        self.lost: str | None = None
        self.joined_others = 0
        #: Every holder connection this run opened (not blind: govern's own).
        self.connection_ids: set[int] = set()
        self.connection_id = 0
        #: The server's ``Connections`` count when the window began (None: not known).
        self.connections_at_start: int | None = None

    # --- join ---------------------------------------------------------------------
    def prepare(self, conn: Connection) -> None:
        """Session settings of a holder connection: silent death ends it within a lease."""
        query_one(conn, f"SET SESSION wait_timeout = {max(1, int(self.lease))}")
        row = query_one(conn, "SELECT CONNECTION_ID()")
        assert row is not None
        self.connection_id = int(row[0])
        self.connection_ids.add(self.connection_id)
        if self.event and deadman.unbinlogged(conn):
            self.event = None  # cannot keep it out of the binlog: do without it

    def join(self, want: Callable[[int], int]) -> int:
        """Claim the variable and set it to ``want(current)`` unless others already hold it.

        Returns the value that was in force before (for the start line).
        """
        conn, record, variable = self.conn, self.record, self.variable
        self.prepare(conn)
        with server_mutex(conn):
            others = claims.probe(conn, variable)
            current = variable.read(conn)
            if others:
                original, value = others[0].original, others[0].value
                self.joined_others = len(others)
            else:
                remembered = _remembered_original(self.store, record, variable)
                original = current if remembered is None else remembered
                value = want(current)
            record.variable, record.original_value, record.set_value = (
                variable.name,
                original,
                value,
            )
            record.state = journal.STARTING
            record.lease_seconds = self.lease
            record.lease_until = journal.lease_deadline(self.lease)
            record.event = self.event
            record.server_started = server_started(conn)
            with self.store.transaction():
                journal.save(self.store, record)
                seq = (
                    journal.change_intent(
                        self.store, record.id, "wrapper", variable.name, current, value
                    )
                    if current != value
                    else None
                )
            claim = self._take(original, value, others)
            try:
                if self.event:
                    deadman.create(conn, self.event, variable, original, value, self.lease)
                if current != value:
                    query_one(conn, variable.set_sql(value))
            except pymysql.err.MySQLError as exc:
                self._undo_join()
                if exc.args and exc.args[0] in _ACCESS_DENIED:
                    raise ServerError(
                        f"{self.settings.describe()} may not change {variable.name}: "
                        f"{error_text(exc)}"
                    ) from None
                raise
            record.state = journal.RUNNING
            record.window_start = utcnow()
            self.connections_at_start = blind.connections_made(conn)
            record.connection_id = claim.connection_id
            record.window_first_id = claim.since
            with self.store.transaction():
                journal.save(self.store, record)
                if seq is not None:
                    journal.change_done(self.store, seq)
        return current

    def _take(self, original: int, value: int, others: list[Claim]) -> Claim:
        record = self.record
        self.claim = claims.take(
            self.conn,
            self.connection_id,
            self.variable,
            original,
            value,
            others,
            (record.pid, record.host, record.name),
        )
        return self.claim

    def _undo_join(self) -> None:
        with contextlib.suppress(pymysql.err.MySQLError):
            if self.claim:
                claims.release(self.conn, self.claim.lock_names())
            if self.event:
                deadman.drop(self.conn, self.event)
        self.claim = None
        self.record.state = journal.REFUSED
        self.record.ended_at = utcnow()
        journal.save(self.store, self.record)

    # --- keep -----------------------------------------------------------------------
    def renew(self) -> None:
        """One lease renewal; raises a CONNECTION_ERRORS member when the connection is gone."""
        if self.lost:
            return
        query_one(self.conn, "SELECT 1")
        if self.event:
            deadman.renew(
                self.conn,
                self.event,
                self.variable,
                self.record.original_value or 0,
                self.record.set_value or 0,
                self.lease,
            )
        self.record.lease_until = journal.lease_deadline(self.lease)
        journal.save(self.store, self.record)

    def reconnect(self) -> None:
        """Open a new holder connection and :meth:`rejoin`; raises while the server is away."""
        with contextlib.suppress(Exception):
            self.conn.close()
        self.conn = connect(self.settings, command="run")
        self.rejoin()

    def rejoin(self) -> None:
        """Claim again on a new connection, or let go when someone else has decided."""
        conn, record, variable = self.conn, self.record, self.variable
        self.prepare(conn)
        restarted = abs(server_started(conn) - (record.server_started or 0)) > 2
        with server_mutex(conn):
            saved = journal.load(self.store, record.id)
            if saved is not None and not saved.is_open:  # repaired meanwhile: keep its story
                record.warnings[:0] = [w for w in saved.warnings if w not in record.warnings]
                self._let_go(f"{saved.outcome or 'recovered'} while govern was disconnected")
                return
            others = claims.probe(conn, variable)
            current = variable.read(conn)
            original, value = record.original_value or 0, record.set_value or 0
            if others or current == value:
                pass  # still govern's: claim again below
            elif restarted and current == original:
                seq = journal.change_intent(
                    self.store, record.id, "wrapper", variable.name, current, value
                )
                query_one(conn, variable.set_sql(value))
                journal.change_done(self.store, seq)
            else:
                why = "the server restarted" if restarted else "the connection was lost"
                self._let_go(
                    f"{why} and {variable.name} is now {variable.show(current)}: "
                    "someone else decided, govern leaves it"
                )
                return
            claim = self._take(original, value, others)
            if restarted:  # thread ids start again: a new window of blind connections
                record.server_started = server_started(conn)
                record.window_first_id = claim.since
                self.connections_at_start = blind.connections_made(conn)
            if self.event:
                deadman.create(conn, self.event, variable, original, value, self.lease)
            record.connection_id = claim.connection_id
            record.lease_until = journal.lease_deadline(self.lease)
            journal.save(self.store, record)

    def _drop_event(self) -> None:
        """Drop the run's event (fired or not) after the run let go: on this connection, or,
        when it is gone (nothing renews a run that let go, so its wait_timeout ends it), on
        a fresh one; a fired event left behind would wait for ``govern recover``."""
        assert self.event is not None
        try:
            deadman.drop(self.conn, self.event)
            return
        except CONNECTION_ERRORS:
            pass
        # Best effort: what is still left, govern status shows and govern recover drops.
        with contextlib.suppress(ServerError, pymysql.err.MySQLError, OSError):
            conn = connect(self.settings, command="run")
            try:
                if deadman.unbinlogged(conn) is None:
                    deadman.drop(conn, self.event)
            finally:
                conn.close()

    def _let_go(self, why: str) -> None:
        self.lost = why
        self.claim = None
        self.record.warnings.append(why)
        journal.save(self.store, self.record)

    def connections_opened(self) -> int | None:
        """Connections opened on the server since the window began, govern's own
        reconnections left out (the first holder connection came before it)."""
        if self.connections_at_start is None:
            return None
        opened = blind.connections_made(self.conn) - self.connections_at_start
        opened -= len(self.connection_ids) - 1
        return opened if opened >= 0 else None  # counters reset: the server restarted

    # --- finish ---------------------------------------------------------------------
    def finish(self) -> Outcome:
        """Let go; restore if this is the last run (the caller reconnects first if needed)."""
        if self.lost:
            if self.event:
                self._drop_event()
            return Outcome("lost", self.lost, warning=True)
        outcome = finish(
            self.conn,
            self.store,
            self.record,
            self.variable,
            exclude=self.connection_id,
            actor="wrapper",
        )
        if self.claim:
            claims.release(self.conn, self.claim.lock_names())
            self.claim = None
        return outcome


def finish(
    conn: Connection,
    store: StateStore,
    record: RunRecord,
    variable: Variable,
    *,
    exclude: int | None,
    actor: str,
) -> Outcome:
    """Under the mutex: leave the variable to other holders, or compare-and-swap it back."""
    original, value = record.original_value, record.set_value
    assert original is not None and value is not None
    with server_mutex(conn):
        others = [c for c in claims.probe(conn, variable) if c.connection_id != exclude]
        if others:
            outcome = Outcome(
                "left_for_others",
                f"{variable.name} stays {variable.show(value)} for"
                f" {plural(len(others), 'other govern run')}; the last one restores it",
            )
        else:
            current = variable.read(conn)
            if current == value and current != original:
                seq = journal.change_intent(store, record.id, actor, variable.name, value, original)
                query_one(conn, variable.set_sql(original))
                journal.change_done(store, seq)
                outcome = Outcome(
                    "restored", f"{variable.name} restored to {variable.show(original)}"
                )
            elif current == original:
                outcome = Outcome(
                    "unchanged", f"{variable.name} is {variable.show(original)}, as before"
                )
            else:
                outcome = Outcome(
                    "changed",
                    f"{variable.name} was changed to {variable.show(current)} during the run "
                    f"(govern set {variable.show(value)}): left as it is, not restored to "
                    f"{variable.show(original)}",
                    warning=True,
                )
        if record.event:
            deadman.drop(conn, record.event)
    return outcome


def repair(
    conn: Connection, store: StateStore, record: RunRecord, variable: Variable, *, actor: str
) -> Outcome:
    """Finish a run that can no longer finish itself (dead wrapper, expired lease)."""
    if record.server_started and abs(server_started(conn) - record.server_started) > 2:
        # A restart reset the globals: the value now is the server's own (its my.cnf), even
        # when it happens to equal what govern had set. Not govern's to change any more.
        if record.event and not deadman.unbinlogged(conn):
            deadman.drop(conn, record.event)
        return Outcome("unchanged", "the server restarted since; its settings are its own")
    dead_owner = record.host == journal.this_host() and not journal.process_alive(
        record.pid, record.pid_started
    )
    holder = record.connection_id
    if holder is not None and _still_claims(conn, variable, holder):
        if not dead_owner:
            return Outcome(
                "still_held",
                f"run {record.id} (pid {record.pid} on {record.host}) still holds its claim "
                f"on connection {holder}",
                warning=True,
            )
        _end_connection(conn, variable, holder)
    if record.event and deadman.unbinlogged(conn):
        record.event = None
    return finish(conn, store, record, variable, exclude=holder, actor=actor)


def _still_claims(conn: Connection, variable: Variable, connection_id: int) -> bool:
    return any(c.connection_id == connection_id for c in claims.probe(conn, variable))


def _end_connection(conn: Connection, variable: Variable, connection_id: int) -> None:
    """A dead wrapper's connection may outlive it briefly (or linger): end it."""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        if not _still_claims(conn, variable, connection_id):
            return
        time.sleep(0.05)
    with contextlib.suppress(pymysql.err.MySQLError):
        query_one(conn, f"KILL CONNECTION {int(connection_id)}")
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and _still_claims(conn, variable, connection_id):
        time.sleep(0.05)
