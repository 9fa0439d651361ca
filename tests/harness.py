"""A private, throwaway MariaDB for govern's tests: own datadir, socket, free port.

Never touches the machine's default server: the datadir lives in a temp dir,
the socket is ours, the port is a free one (never 3306), and ``--no-defaults``
style option files keep /etc/mysql out of it.

Used three ways:

* by ``scripts/test`` (``python3 tests/harness.py start --dir D`` … ``stop --dir D``),
  which exports ``GOVERN_TEST_SERVER_DIR`` so pytest reuses the running server;
* by ``tests/conftest.py``, which starts its own when that variable is unset;
* by tests that restart, crash or replicate servers (``restart()``, ``kill()``,
  ``start_replica_of()``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MARIADBD_CANDIDATES = ("/usr/sbin/mariadbd", "/usr/sbin/mysqld", "/usr/bin/mariadbd")

#: Accounts every harness server has. name -> (password, global grants, schema grants)
ACCOUNTS: dict[str, tuple[str, str, str]] = {
    "govern_admin": ("", "ALL PRIVILEGES", ""),
    "govern_app": ("", "", "SELECT, INSERT, UPDATE, DELETE, CREATE, DROP, INDEX, ALTER"),
    "govern_repl": ("", "REPLICATION SLAVE", ""),
}
APP_SCHEMA = "app"


class PortTaken(RuntimeError):
    """mariadbd could not bind its port: someone took it after ``free_port`` probed it."""


def _alive(pid: int) -> bool:
    """Running and not a zombie (a killed child we have not reaped yet counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def free_port() -> int:
    for _ in range(50):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port != 3306:
            return port
    raise RuntimeError("no free port")


def _mariadbd() -> str:
    for candidate in MARIADBD_CANDIDATES:
        if os.path.exists(candidate):
            return candidate
    raise RuntimeError("mariadbd not found: install mariadb-server (scripts/test does)")


@dataclass
class Account:
    user: str
    password: str

    def defaults_file(self, server: MariaDB) -> Path:
        return server.base / f"{self.user}.cnf"


class MariaDB:
    """One throwaway server; its description is saved in ``<base>/harness.json``."""

    def __init__(self, base: Path, *, port: int | None = None, server_id: int = 1) -> None:
        self.base = base
        meta = base / "harness.json"
        saved = json.loads(meta.read_text()) if meta.exists() else {}
        self.port = int(saved.get("port") or port or free_port())
        self.server_id = int(saved.get("server_id", server_id))
        self._proc: subprocess.Popen[bytes] | None = None
        #: Extra ``[mariadbd]`` settings for the next start (a restart test's my.cnf).
        self.options: dict[str, str] = {}
        self.passwords: dict[str, str] = saved.get("passwords") or {
            name: secrets.token_hex(12) for name in ["root", *ACCOUNTS]
        }

    # --- paths --------------------------------------------------------------------
    @property
    def datadir(self) -> Path:
        return self.base / "data"

    @property
    def rundir(self) -> Path:
        return self.base / "run"

    @property
    def logdir(self) -> Path:
        return self.base / "logs"

    @property
    def socket(self) -> Path:
        return self.rundir / "mariadb.sock"

    @property
    def pidfile(self) -> Path:
        return self.rundir / "mariadb.pid"

    @property
    def error_log(self) -> Path:
        return self.rundir / "error.log"

    @property
    def slow_log(self) -> Path:
        return self.logdir / "slow.log"

    @property
    def cnf(self) -> Path:
        return self.base / "my.cnf"

    def defaults_file(self, user: str = "govern_admin", *, tcp: bool = True) -> Path:
        """A 0600 client option file for one of the harness accounts."""
        path = self.base / f"{user}{'' if tcp else '-socket'}.cnf"
        if not path.exists():
            where = f"host=127.0.0.1\nport={self.port}\n" if tcp else f"socket={self.socket}\n"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as handle:
                handle.write(f"[client]\n{where}user={user}\npassword={self.passwords[user]}\n")
        return path

    # --- lifecycle ------------------------------------------------------------------
    def _run_as(self) -> str | None:
        """As root, run mariadbd as root too: temp dirs stay private (0700) and reachable."""
        return "root" if os.geteuid() == 0 else None

    def _write_cnf(self) -> None:
        user = self._run_as()
        lines = [
            "# govern test harness server: throwaway, not production settings",
            "[mariadbd]",
            *([f"user = {user}"] if user else []),
            f"datadir = {self.datadir}",
            f"socket = {self.socket}",
            f"port = {self.port}",
            "bind-address = 127.0.0.1",
            f"pid-file = {self.pidfile}",
            f"log-error = {self.error_log}",
            "skip-name-resolve",
            "innodb_buffer_pool_size = 64M",
            "innodb_log_file_size = 32M",
            "innodb_flush_log_at_trx_commit = 2",
            "sync_binlog = 0",
            f"server_id = {self.server_id}",
            f"log-bin = {self.datadir}/binlog",
            "binlog_format = MIXED",
            "max_connections = 300",
            "character-set-server = utf8mb4",
            "collation-server = utf8mb4_general_ci",
            f"slow_query_log_file = {self.slow_log}",
            "log_output = FILE",
            "performance_schema = OFF",
            "max_allowed_packet = 16M",
            *(f"{name} = {value}" for name, value in self.options.items()),
        ]
        self.cnf.write_text("\n".join(lines) + "\n")

    def _save(self) -> None:
        meta = {
            "port": self.port,
            "server_id": self.server_id,
            "socket": str(self.socket),
            "passwords": self.passwords,
        }
        path = self.base / "harness.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(meta, handle)

    def _prepare_dirs(self) -> None:
        for folder in (self.base, self.datadir, self.rundir, self.logdir):
            folder.mkdir(parents=True, exist_ok=True)

    def pid(self) -> int | None:
        try:
            pid = int(self.pidfile.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        if self._proc is not None:
            self._proc.poll()  # reap our own child so it does not linger as a zombie
        return pid if _alive(pid) else None

    def start(self, timeout: float = 90) -> None:
        """Initialise on first use, start, and wait until it answers."""
        fresh = not (self.datadir / "mysql").is_dir()
        self._prepare_dirs()
        self._write_cnf()
        if self.pid() is None:
            self._launch(fresh, timeout)
        self._save()
        for user in ["root", *ACCOUNTS]:
            self.defaults_file(user)
            self.defaults_file(user, tcp=False)

    def _launch(self, fresh: bool, timeout: float) -> None:
        if fresh:
            result = subprocess.run(
                [
                    "mariadb-install-db",
                    f"--defaults-file={self.cnf}",
                    "--auth-root-authentication-method=normal",
                    "--skip-test-db",
                    # Skip its host name lookup (resolveip): the server runs with
                    # skip-name-resolve, and a machine without /etc/hosts (a fresh
                    # chroot or container) fails it with "Neither host ... nor
                    # 'localhost' could be looked up".
                    "--force",
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                raise RuntimeError(f"mariadb-install-db failed:\n{result.stdout}\n{result.stderr}")
            self._prepare_dirs()
        for attempt in range(5):
            self._proc = subprocess.Popen(
                [_mariadbd(), f"--defaults-file={self.cnf}"],
                stdin=subprocess.DEVNULL,
                stdout=open(self.base / "mariadbd.out", "ab"),  # noqa: SIM115
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                self._wait_ready(timeout, root_password="" if fresh else self.passwords["root"])
                break
            except PortTaken:
                # Another throwaway server took the free port between our probe and bind.
                if not fresh or attempt == 4:
                    raise
                self.port = free_port()
                self._write_cnf()
        if fresh:
            self._bootstrap()

    def _wait_ready(self, timeout: float, root_password: str) -> None:
        import pymysql

        deadline = time.monotonic() + timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                log = self.error_log.read_text(errors="replace") if self.error_log.exists() else ""
                if "Address already in use" in log[-2000:]:
                    raise PortTaken(self.port)
                raise RuntimeError(f"mariadbd exited with {self._proc.returncode}:\n{log[-3000:]}")
            try:
                pymysql.connect(
                    unix_socket=str(self.socket),
                    user="root",
                    password=root_password,
                    connect_timeout=2,
                ).close()
                return
            except pymysql.err.MySQLError as exc:
                last = exc
                time.sleep(0.2)
        tail = self.error_log.read_text(errors="replace")[-3000:] if self.error_log.exists() else ""
        raise RuntimeError(f"MariaDB did not answer in {timeout}s ({last}); error log:\n{tail}")

    def _bootstrap(self) -> None:
        """Accounts, unbinlogged so a replica of this server never replays them."""
        import pymysql

        conn = pymysql.connect(
            unix_socket=str(self.socket), user="root", password="", autocommit=True
        )
        with conn.cursor() as cur:
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute(f"CREATE DATABASE IF NOT EXISTS `{APP_SCHEMA}`")
            for name, (_, global_grants, schema_grants) in ACCOUNTS.items():
                for host in ("localhost", "127.0.0.1"):
                    cur.execute(
                        f"CREATE USER IF NOT EXISTS '{name}'@'{host}' IDENTIFIED BY %s",
                        (self.passwords[name],),
                    )
                    if global_grants:
                        cur.execute(f"GRANT {global_grants} ON *.* TO '{name}'@'{host}'")
                    if schema_grants:
                        cur.execute(
                            f"GRANT {schema_grants} ON `{APP_SCHEMA}`.* TO '{name}'@'{host}'"
                        )
            for host in ("localhost", "127.0.0.1", "::1"):
                cur.execute(
                    f"CREATE USER IF NOT EXISTS 'root'@'{host}' IDENTIFIED BY %s",
                    (self.passwords["root"],),
                )
                cur.execute(
                    f"ALTER USER 'root'@'{host}' IDENTIFIED BY %s", (self.passwords["root"],)
                )
                cur.execute(f"GRANT ALL PRIVILEGES ON *.* TO 'root'@'{host}' WITH GRANT OPTION")
        conn.close()

    def stop(self, timeout: float = 60) -> None:
        pid = self.pid()
        if pid is None:
            return
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.pid() is not None:
            time.sleep(0.1)
        if self.pid() is not None:
            os.kill(pid, signal.SIGKILL)
            self._wait_gone(pid)

    def kill(self) -> None:
        """SIGKILL the server: a crash, for crash-safety tests (InnoDB recovers on start)."""
        pid = self.pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            self._wait_gone(pid)

    def _wait_gone(self, pid: int) -> None:
        for _ in range(400):
            if self._proc is not None:
                self._proc.poll()
            if not _alive(pid):
                return
            time.sleep(0.05)

    def restart(self) -> None:
        self.stop()
        self.start()

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)

    # --- connections --------------------------------------------------------------------
    def connect(self, user: str = "root", *, tcp: bool = False, **kwargs: object) -> object:
        import pymysql

        where: dict[str, object] = (
            {"host": "127.0.0.1", "port": self.port} if tcp else {"unix_socket": str(self.socket)}
        )
        options: dict[str, object] = {"autocommit": True, "charset": "utf8mb4", **kwargs}
        return pymysql.connect(
            user=user,
            password=self.passwords[user],
            **where,
            **options,  # type: ignore[arg-type]
        )

    def hang_up(self, conn: object, timeout: float = 10) -> None:
        """Close ``conn`` and wait until the server has ended it.

        The server frees a connection's user locks and temporary objects only when its
        thread has seen the client's COM_QUIT, a moment after ``close()`` returns; a test
        that asserts "the dead hold nothing" must wait for that, not race it.
        """
        with conn.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SELECT CONNECTION_ID()")
            (connection_id,) = cur.fetchone()
        conn.close()  # type: ignore[attr-defined]
        watcher = self.connect()
        try:
            deadline = time.monotonic() + timeout
            while True:
                with watcher.cursor() as cur:  # type: ignore[attr-defined]
                    cur.execute(
                        "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s",
                        (connection_id,),
                    )
                    if cur.fetchone()[0] == 0:
                        return
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"connection {connection_id} still on the server {timeout}s after close"
                    )
                time.sleep(0.02)
        finally:
            watcher.close()  # type: ignore[attr-defined]

    def start_replica_of(self, primary: MariaDB, timeout: float = 120) -> None:
        """Make this (started) server a read-only replica of ``primary`` over TCP, caught up.

        A long-lived primary (a reused test server) has hours of binlog: until the replica has
        applied them its lag is the age of the events it replays, not 0."""
        source = primary.connect()
        with source.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SELECT @@GLOBAL.gtid_binlog_pos")
            position = cur.fetchone()[0]
        source.close()  # type: ignore[attr-defined]
        conn = self.connect()
        with conn.cursor() as cur:  # type: ignore[attr-defined]
            cur.execute("SET SESSION sql_log_bin = 0")
            cur.execute(
                "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%s, MASTER_USER='govern_repl', "
                "MASTER_PASSWORD=%s, MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1",
                (primary.port, primary.passwords["govern_repl"]),
            )
            cur.execute("START SLAVE")
            cur.execute("SET GLOBAL read_only = ON")
            cur.execute("SELECT MASTER_GTID_WAIT(%s, %s)", (position, timeout))
            if cur.fetchone()[0] != 0:
                cur.execute("SHOW SLAVE STATUS")
                names = [d[0] for d in cur.description]
                status = dict(zip(names, cur.fetchone() or (), strict=False))
                errors = {
                    k: status.get(k) for k in ("Last_IO_Error", "Last_SQL_Error") if status.get(k)
                }
                raise RuntimeError(
                    f"the replica did not reach {position} in {timeout} s"
                    + (f": {errors}" if errors else "")
                )
        conn.close()  # type: ignore[attr-defined]


@contextlib.contextmanager
def temporary_server(prefix: str = "govern-test-") -> Iterator[MariaDB]:
    base = Path(tempfile.mkdtemp(prefix=prefix))
    server = MariaDB(base)
    try:
        server.start()
        yield server
    finally:
        server.destroy()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="action", required=True)
    for action in ("start", "stop", "destroy", "info"):
        p = sub.add_parser(action)
        p.add_argument("--dir", required=True, type=Path)
    args = parser.parse_args(argv)
    server = MariaDB(args.dir)
    if args.action == "start":
        server.start()
        print(f"MariaDB up: port {server.port}, socket {server.socket}, dir {server.base}")
    elif args.action == "stop":
        server.stop()
    elif args.action == "destroy":
        server.destroy()
    else:
        print(json.dumps({"port": server.port, "socket": str(server.socket), "pid": server.pid()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
