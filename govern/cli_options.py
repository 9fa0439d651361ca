"""Options shared by commands: connection settings, state file, output format, durations."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from govern.units import parse_duration, parse_size

F = TypeVar("F", bound=Callable[..., Any])

_CONNECTION_KEYS = (
    "host",
    "port",
    "user",
    "socket",
    "database",
    "dsn",
    "defaults_file",
    "ask_pass",
)


def connection_options(command: F) -> F:
    """Add the mysql-client connection options; the command receives ``settings``."""
    options = [
        click.option("-h", "--host", help="Server host (TCP unless localhost)."),
        click.option("-P", "--port", type=int, help="Server TCP port."),
        click.option("-u", "--user", help="Account name."),
        click.option("-S", "--socket", help="Unix socket path."),
        click.option("-D", "--database", help="Default schema."),
        click.option(
            "--dsn",
            metavar="URL",
            help="mysql://user@host:port/db?unix_socket=PATH (no password; env GOVERN_DSN may have one).",
        ),
        click.option(
            "--defaults-file",
            type=click.Path(dir_okay=False),
            help="Read this option file instead of ~/.my.cnf ([client] and [govern] groups).",
        ),
        click.option("--ask-pass", is_flag=True, help="Prompt for the password."),
    ]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from govern.connection import resolve_settings

        values = {key: kwargs.pop(key) for key in _CONNECTION_KEYS}
        kwargs["settings"] = resolve_settings(**values)
        return command(*args, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


def connection_options_given(ctx: click.Context) -> bool:
    """Was any connection option typed on the command line (not just a default)?"""
    return any(
        ctx.get_parameter_source(key) is click.core.ParameterSource.COMMANDLINE
        for key in _CONNECTION_KEYS
    )


def state_option(command: F) -> F:
    """``--state PATH``: the SQLite state file (default under $XDG_STATE_HOME/govern/)."""
    return click.option(
        "--state",
        "state_path",
        type=click.Path(dir_okay=False),
        envvar="GOVERN_STATE",
        help="State file [default: $XDG_STATE_HOME/govern/state.db or ~/.local/state/govern/state.db].",
    )(command)


def format_option(*choices: str, default: str = "text") -> Callable[[F], F]:
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(choices),
        default=default,
        show_default=True,
        help="Output format.",
    )


class Duration(click.ParamType):
    """``90``, ``90s``, ``15m``, ``1h30m`` → seconds above 0 (govern.units.parse_duration)."""

    name = "DURATION"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = parse_duration(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if seconds <= 0:
            self.fail(f"expected a duration above 0, got {value!r}", param, ctx)
        return seconds


class Size(click.ParamType):
    """``512``, ``64K``, ``16M``, ``1G`` → bytes above 0, read by govern.units.parse_size."""

    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        try:
            count = parse_size(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        if count <= 0:
            self.fail(f"expected a size above 0, got {value!r}", param, ctx)
        return count


def throttle_option(command: F) -> F:
    """``--throttle KEY=VALUE`` (repeatable): throttle checks, as in docs/throttle.md."""
    return click.option(
        "--throttle",
        "throttle_items",
        multiple=True,
        metavar="KEY=VALUE",
        help="A throttle check or setting, repeatable: max_lag=2s, max_load=Threads_running=25, "
        "critical_load=…, query=SELECT…, flag_file=PATH, replica=HOST:PORT, interval=1s, "
        "max_wait=1h [default: the job's (govern run --throttle), else govern.toml's [throttle]].",
    )(command)
