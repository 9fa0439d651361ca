"""Keeping the lease while the job runs: renew every third of it, reconnect when cut off.

A renewal is one statement on the holder connection (its ``wait_timeout`` is the
lease, so a host that falls silent loses its claim), a push of the dead-man event and
the new deadline in the journal. When the connection is gone (killed from another
session, network, server restart) the keeper reconnects with backoff and rejoins
(:meth:`govern.wrappers.hold.Holding.rejoin`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pymysql

from govern.errors import ServerError
from govern.wrappers.hold import CONNECTION_ERRORS, Holding


class LeaseKeeper:
    def __init__(self, holding: Holding, warn: Callable[[str], None]) -> None:
        self.holding = holding
        self.warn = warn
        self.interval = max(0.2, holding.lease / 3)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="govern-lease", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing; the holding's connection is the caller's again afterwards."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self.holding.lost:
                return
            try:
                self.holding.renew()
            except CONNECTION_ERRORS as exc:
                self._reconnect(exc)
            except Exception as exc:  # say so and keep renewing: this thread must not die
                self.warn(f"lease renewal failed: {_short(exc)}")

    def _reconnect(self, cause: BaseException) -> None:
        self.warn(f"lost the server connection ({_short(cause)}); reconnecting")
        delay = 0.2
        while not self._stop.is_set():
            try:
                self.holding.reconnect()
            except (ServerError, pymysql.err.MySQLError, OSError) as exc:
                if self._stop.wait(delay):
                    return
                delay = min(delay * 2, self.interval)
                cause = exc
                continue
            if self.holding.lost:
                self.warn(self.holding.lost)
            else:
                self.warn("reconnected; govern holds the setting again")
            return


def _short(exc: BaseException) -> str:
    from govern.connection import error_text

    return error_text(exc)
