"""Connection settings resolved the way DBAs already work, and the one place that connects.

Precedence, per setting (highest first) — documented in docs/connecting.md:

1. explicit options: ``--host/-h``, ``--port/-P``, ``--user/-u``, ``--socket/-S``, ``--database/-D``
2. ``--dsn mysql://user@host:port/db?unix_socket=...`` (never with a password: argv is public)
3. ``--defaults-file FILE`` (read instead of ``~/.my.cnf``, like the mysql client)
4. ``GOVERN_DSN`` from the environment (may carry a password)
5. ``~/.my.cnf``, groups ``[client]``, ``[client-server]``, ``[client-mariadb]``, ``[govern]``
6. ``MYSQL_HOST``, ``MYSQL_TCP_PORT``, ``MYSQL_UNIX_PORT``, ``MYSQL_PWD`` from the environment
7. defaults: localhost through the default socket, the login user, port 3306

``--ask-pass`` prompts and overrides every password source. A password is never taken from
argv, and never printed: :class:`ConnectionSettings` hides it from ``repr``.
"""

from __future__ import annotations

import dataclasses
import getpass
import os
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pymysql
import pymysql.cursors

from govern.errors import ConfigError, ServerError, UsageError
from govern.optionfile import default_option_file, read_option_file

Connection = pymysql.connections.Connection

DEFAULT_PORT = 3306
#: Where Debian, RHEL and source builds put the server's socket, in the order tried.
DEFAULT_SOCKETS = (
    "/run/mysqld/mysqld.sock",
    "/var/run/mysqld/mysqld.sock",
    "/var/lib/mysql/mysql.sock",
    "/tmp/mysql.sock",
)
_FIELDS = (
    "host",
    "port",
    "user",
    "password",
    "socket",
    "database",
    "ssl_ca",
    "ssl_cert",
    "ssl_key",
)


@dataclasses.dataclass(frozen=True)
class ConnectionSettings:
    """Where and how to connect. ``source`` says where each setting came from."""

    host: str | None = None
    port: int | None = None
    user: str | None = None
    password: str | None = dataclasses.field(default=None, repr=False)
    socket: str | None = None
    database: str | None = None
    ssl_ca: str | None = None
    ssl_cert: str | None = None
    ssl_key: str | None = None
    connect_timeout: float = 10.0
    source: Mapping[str, str] = dataclasses.field(default_factory=dict, compare=False)

    @property
    def uses_socket(self) -> bool:
        """True when the mysql client would use the Unix socket (no host, or localhost)."""
        return self.host in (None, "", "localhost") and self.effective_socket is not None

    @property
    def effective_socket(self) -> str | None:
        if self.socket:
            return self.socket
        if self.host in (None, "", "localhost"):
            for candidate in DEFAULT_SOCKETS:
                if os.path.exists(candidate):
                    return candidate
        return None

    @property
    def effective_user(self) -> str:
        return self.user or getpass.getuser()

    def describe(self) -> str:
        """``user@host:port`` or ``user@localhost via /path.sock``; never the password."""
        if self.uses_socket:
            return f"{self.effective_user}@localhost via {self.effective_socket}"
        return f"{self.effective_user}@{self.host or 'localhost'}:{self.port or DEFAULT_PORT}"

    def with_password(self, password: str, source: str) -> ConnectionSettings:
        return dataclasses.replace(
            self, password=password, source={**self.source, "password": source}
        )

    def pymysql_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "user": self.effective_user,
            "password": self.password or "",
            "database": self.database,
            "connect_timeout": self.connect_timeout,
        }
        if self.uses_socket:
            kwargs["unix_socket"] = self.effective_socket
        else:
            kwargs["host"] = self.host or "localhost"
            kwargs["port"] = self.port or DEFAULT_PORT
        if self.ssl_ca or self.ssl_cert or self.ssl_key:
            kwargs["ssl"] = {
                k: v
                for k, v in (("ca", self.ssl_ca), ("cert", self.ssl_cert), ("key", self.ssl_key))
                if v
            }
        elif self.uses_socket:
            # Like the mysql client: no TLS over the local socket. PyMySQL would otherwise
            # load the system CA store for its "preferred" TLS (measured: 19 ms a connection).
            kwargs["ssl_disabled"] = True
        return kwargs


def parse_dsn(dsn: str, *, where: str, allow_password: bool) -> dict[str, Any]:
    """``mysql://user[:pw]@host[:port]/db?unix_socket=/path`` → settings fields.

    ``where`` names the source (``--dsn`` or ``GOVERN_DSN``) in error messages.
    """
    try:
        parts = urlsplit(dsn)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"{where}: not a valid DSN ({exc})") from None
    if parts.scheme not in ("mysql", "mariadb"):
        raise UsageError(f"{where}: DSN must start with mysql:// or mariadb://")
    if parts.password is not None and not allow_password:
        raise UsageError(
            f"{where}: a password in the DSN would be visible in the process list; "
            "use ~/.my.cnf, --defaults-file, MYSQL_PWD or --ask-pass"
        )
    fields: dict[str, Any] = {}
    if parts.username:
        fields["user"] = unquote(parts.username)
    if parts.password is not None:
        fields["password"] = unquote(parts.password)
    if parts.hostname:
        fields["host"] = parts.hostname
    if port:
        fields["port"] = port
    database = unquote(parts.path.lstrip("/"))
    if database:
        fields["database"] = database
    query = parse_qs(parts.query)
    for key, values in query.items():
        name = {"unix_socket": "socket", "socket": "socket"}.get(key, key)
        if name not in ("socket", "ssl_ca", "ssl_cert", "ssl_key"):
            raise UsageError(f"{where}: unknown DSN parameter {key!r}")
        fields[name] = values[-1]
    return fields


def _from_option_file(path: Path) -> dict[str, Any]:
    options = read_option_file(path)
    fields: dict[str, Any] = {}
    for key in ("host", "user", "socket", "database", "ssl-ca", "ssl-cert", "ssl-key"):
        if options.get(key):
            fields[key.replace("-", "_")] = options[key]
    if options.get("port"):
        fields["port"] = _port(options["port"], f"{path}: port")
    if "password" in options:
        fields["password"] = options["password"] if options["password"] is not None else ""
    return fields


def _port(value: object, where: str) -> int:
    try:
        port = int(str(value))
    except ValueError:
        raise UsageError(f"{where}: port must be a number, got {value!r}") from None
    if not 0 < port < 65536:
        raise UsageError(f"{where}: port {port} is out of range")
    return port


def resolve_settings(
    *,
    host: str | None = None,
    port: int | None = None,
    user: str | None = None,
    socket: str | None = None,
    database: str | None = None,
    dsn: str | None = None,
    defaults_file: str | None = None,
    ask_pass: bool = False,
    environ: Mapping[str, str] | None = None,
    prompt: Callable[[str], str] = getpass.getpass,
) -> ConnectionSettings:
    """Merge every source in the documented precedence into one ConnectionSettings."""
    env = os.environ if environ is None else environ
    layers: list[tuple[str, dict[str, Any]]] = []
    explicit = {
        k: v
        for k, v in (
            ("host", host),
            ("port", port),
            ("user", user),
            ("socket", socket),
            ("database", database),
        )
        if v not in (None, "")
    }
    layers.append(("option", explicit))
    if dsn:
        layers.append(("--dsn", parse_dsn(dsn, where="--dsn", allow_password=False)))
    if defaults_file:
        path = Path(defaults_file)
        if not path.is_file():
            raise ConfigError(f"--defaults-file {defaults_file}: no such file")
        layers.append((f"--defaults-file {path}", _from_option_file(path)))
    if env.get("GOVERN_DSN"):
        layers.append(
            ("GOVERN_DSN", parse_dsn(env["GOVERN_DSN"], where="GOVERN_DSN", allow_password=True))
        )
    if not defaults_file:
        home_file = default_option_file()
        if home_file is not None:
            layers.append((str(home_file), _from_option_file(home_file)))
    env_fields: dict[str, Any] = {}
    if env.get("MYSQL_HOST"):
        env_fields["host"] = env["MYSQL_HOST"]
    if env.get("MYSQL_TCP_PORT"):
        env_fields["port"] = _port(env["MYSQL_TCP_PORT"], "MYSQL_TCP_PORT")
    if env.get("MYSQL_UNIX_PORT"):
        env_fields["socket"] = env["MYSQL_UNIX_PORT"]
    if "MYSQL_PWD" in env:
        env_fields["password"] = env["MYSQL_PWD"]
    layers.append(("environment", env_fields))

    merged: dict[str, Any] = {}
    source: dict[str, str] = {}
    for name, fields in layers:
        for key, value in fields.items():
            if key not in merged:
                merged[key] = value
                source[key] = name
    if "port" in merged:
        merged["port"] = _port(merged["port"], source["port"])
    # A remote host and a socket from different sources: the more explicit one wins
    # (``-S`` beats a host in ~/.my.cnf; ``-h db1`` beats a socket in ~/.my.cnf).
    if "host" in merged and merged["host"] not in ("localhost", "") and "socket" in merged:
        loser = (
            "socket" if _rank(source["socket"], layers) >= _rank(source["host"], layers) else "host"
        )
        del merged[loser]
        del source[loser]
    values: dict[str, Any] = {k: merged.get(k) for k in _FIELDS}
    settings = ConnectionSettings(**values, source=source)
    if ask_pass:
        settings = settings.with_password(prompt(f"Password for {settings.describe()}: "), "prompt")
    return settings


def _rank(source_name: str, layers: list[tuple[str, dict[str, Any]]]) -> int:
    return next(i for i, (name, _) in enumerate(layers) if name == source_name)


#: The largest ``long_query_time`` a server accepts (one year): a session with it logs nothing
#: slow (MySQL's opt-out; MariaDB's is its session switch).
LONG_QUERY_TIME_MAX = 31_536_000
_LONG_QUERY_TIME_OUT = f"SET SESSION long_query_time = {LONG_QUERY_TIME_MAX}"
#: How a session opts out of the slow log, tried in order until the server accepts one.
_OPT_OUTS_MARIADB = ("SET SESSION slow_query_log = OFF", _LONG_QUERY_TIME_OUT)
_OPT_OUTS_MYSQL = (_LONG_QUERY_TIME_OUT,)


class OwnConnection(pymysql.connections.Connection):
    """A connection govern opens for its own work: out of the slow log it governs, and tagged.

    Its session opts out of the slow log before anything else (before PyMySQL's ``SET
    NAMES``), and every statement starts with ``/* govern:<command> */``, so whatever
    still reaches a log (a server that ignores the opt-out) says whose it is. See
    docs/design/run-crash-safety.md, "govern's own footprint".
    """

    def __init__(self, *args: Any, command: str, **kwargs: Any) -> None:
        self.command = command
        self.tag = f"/* govern:{command} */ "
        #: The statement that opted this session out, or None when the server took none.
        self.opt_out: str | None = None
        self._opting_out = True
        super().__init__(*args, **kwargs)

    def set_character_set(self, charset: str, collation: str | None = None) -> None:
        if self._opting_out:  # PyMySQL's first statement on a new connection: go first
            self._opting_out = False
            self.opt_out = self._opt_out()
        super().set_character_set(charset, collation)

    def _opt_out(self) -> str | None:
        mariadb = "mariadb" in str(getattr(self, "server_version", "")).lower()
        for statement in _OPT_OUTS_MARIADB if mariadb else _OPT_OUTS_MYSQL:
            try:
                self.query(statement)
            except pymysql.err.MySQLError as exc:
                if exc.args and isinstance(exc.args[0], int) and exc.args[0] >= 2000:
                    raise  # the connection itself failed, not the statement
                continue  # e.g. a server whose slow_query_log is global only: the next one
            return statement
        return None

    def query(self, sql: str | bytes, unbuffered: bool = False) -> int:
        # bytes, or a bytearray: PyMySQL's executemany sends its multi-row statement as one
        tagged = self.tag.encode() + sql if isinstance(sql, bytes | bytearray) else self.tag + sql
        return int(super().query(tagged, unbuffered))


def connect(
    settings: ConnectionSettings, *, command: str | None = None, **overrides: Any
) -> Connection:
    """Open an autocommit utf8mb4 connection, or raise ServerError with one clear line.

    ``command`` names the govern command the connection works for (``run``, ``status``…):
    its session then stays out of the slow log and its statements carry a
    ``/* govern:<command> */`` tag (:class:`OwnConnection`). Every connection govern opens
    for itself passes one; a library caller writing its own rows leaves it out: those
    statements are its workload.
    """
    kwargs = settings.pymysql_kwargs()
    kwargs.update(
        autocommit=True,
        charset="utf8mb4",
        program_name="govern" if command is None else f"govern {command}",
        cursorclass=pymysql.cursors.Cursor,
    )
    kwargs.update(overrides)
    try:
        if command is None:
            return pymysql.connect(**kwargs)
        return OwnConnection(command=command, **kwargs)
    except pymysql.err.MySQLError as exc:
        raise ServerError(f"cannot connect to {settings.describe()}: {error_text(exc)}") from None
    except OSError as exc:  # e.g. a socket path that is not a socket
        raise ServerError(f"cannot connect to {settings.describe()}: {exc}") from None


def connect_retrying(
    settings: ConnectionSettings,
    *,
    command: str,
    wait: float,
    say: Callable[[str], None] | None = None,
) -> Connection:
    """:func:`connect`, retried with backoff for up to ``wait`` seconds (a server that is
    restarting); ``say`` hears of each retry. Raises the last ServerError after that."""
    deadline = time.monotonic() + wait
    delay = 0.5
    while True:
        try:
            return connect(settings, command=command)
        except ServerError as exc:
            if time.monotonic() + delay > deadline:
                raise
            if say is not None:
                say(f"{exc.message}; retrying in {delay:g} s")
            time.sleep(delay)
            delay = min(delay * 2, 30)


def log_like_anyone(conn: Connection) -> None:
    """From now on, ``conn``'s statements are logged like any client's (``govern load``'s
    rows are the user's workload, not govern's own); a no-op on other connections."""
    if not isinstance(conn, OwnConnection) or conn.opt_out is None:
        return
    name = conn.opt_out.split()[2]
    statement = f"SET SESSION {name} = DEFAULT"
    if name == "slow_query_log":
        # MariaDB: the statement that switches the log back on would be logged itself;
        # with its own long_query_time it is not (measured, tests/core/test_footprint.py).
        statement = f"SET STATEMENT long_query_time = {LONG_QUERY_TIME_MAX} FOR {statement}"
    query_one(conn, statement)
    conn.opt_out = None


def error_text(exc: BaseException) -> str:
    """``message (errno)`` for a PyMySQL error, one line, for the user."""
    args: tuple[Any, ...] = tuple(getattr(exc, "args", ()))
    if len(args) >= 2 and isinstance(args[0], int):
        message = str(args[1]).splitlines()[0] if str(args[1]) else ""
        return f"{message} ({args[0]})"
    return str(exc).splitlines()[0] if str(exc) else exc.__class__.__name__


def write_defaults_file(
    settings: ConnectionSettings, path: str | os.PathLike[str], init_command: str | None = None
) -> Path:
    """Write ``settings`` as a 0600 ``[client]`` option file for a child mysql client or job.

    This is how govern hands credentials to a job without putting them in argv.
    ``init_command`` is run first by every session a client opens with the file (the
    ``mariadb``/``mysql`` clients run it; PyMySQL does not read it).
    """
    path = Path(path)
    lines = ["[client]"]
    if settings.uses_socket:
        lines.append(f"socket={_quote(settings.effective_socket or '')}")
    else:
        lines.append(f"host={_quote(settings.host or 'localhost')}")
        lines.append(f"port={settings.port or DEFAULT_PORT}")
    lines.append(f"user={_quote(settings.effective_user)}")
    if settings.password:
        lines.append(f"password={_quote(settings.password)}")
    if settings.database:
        lines.append(f"database={_quote(settings.database)}")
    if init_command:  # loose-: mariadb-dump and mariadb-admin know no init-command (a warning)
        lines.append(f"loose-init-command={_quote(init_command)}")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, stat.S_IRUSR | stat.S_IWUSR)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), 0o600)
        handle.write("\n".join(lines) + "\n")
    return path


def temporary_defaults_file(settings: ConnectionSettings) -> Path:
    """A fresh 0600 option file in a private temp dir; the caller deletes it."""
    import tempfile  # not at the top: ``govern run`` starts without it

    folder = Path(tempfile.mkdtemp(prefix="govern-"))
    return write_defaults_file(settings, folder / "client.cnf")


def _quote(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def query_all(conn: Connection, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def query_one(conn: Connection, sql: str, args: Any = None) -> tuple[Any, ...] | None:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        row = cur.fetchone()
        return tuple(row) if row is not None else None


def query_dicts(conn: Connection, sql: str, args: Any = None) -> list[dict[str, Any]]:
    with conn.cursor(pymysql.cursors.DictCursor) as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())
