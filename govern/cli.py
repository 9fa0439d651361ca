"""The ``govern`` command: a lazy Click group over the library.

Each command lives next to the code it drives and is imported only when used,
so ``govern --help`` and ``govern run`` start fast. To add a command, add one
line to ``COMMANDS``.
"""

from __future__ import annotations

import atexit
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

import click

from govern import __version__
from govern.errors import EXIT_SERVER, GovernError

#: command name -> "module:attribute" of its Click command.
COMMANDS: dict[str, str] = {
    "doctor": "govern.commands.doctor:doctor",
    "run": "govern.wrappers.cli:run",
    "status": "govern.wrappers.cli:status",
    "recover": "govern.wrappers.cli:recover",
    "history": "govern.wrappers.cli:history",
    "load": "govern.commands.load:load",
    "chunk": "govern.commands.chunk:chunk",
    "lint": "govern.rules.cli:lint",
    "rules": "govern.rules.cli:rules",
    "schedule": "govern.schedulers.cli:schedule",
    "digest": "govern.commands.digest:digest",
    "collect": "govern.collect.cli:collect",
    "regressions": "govern.commands.regressions:regressions",
    "throttle": "govern.throttle.cli:throttle",
}


class LazyGroup(click.Group):
    """Imports a command's module only when that command runs (or help lists it)."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        """Click's own errors (a bad option, a missing argument) as one line too, like
        govern's: ``govern: error: …`` on stderr with the exit code Click gives (2)."""
        call = {"args": args, "prog_name": prog_name, "complete_var": complete_var, **extra}
        if not standalone_mode:
            return super().main(**call, standalone_mode=False)
        try:
            code = super().main(**call, standalone_mode=False)
        except click.ClickException as exc:
            where = exc.ctx.command_path if isinstance(exc, click.UsageError) and exc.ctx else ""
            more = f" (see '{where} --help')" if where else ""
            click.echo(f"govern: error: {exc.format_message()}{more}", err=True)
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("Aborted!", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(super().list_commands(ctx)) | set(COMMANDS))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS:
            module_name, attribute = COMMANDS[cmd_name].split(":")
            command = getattr(importlib.import_module(module_name), attribute)
            assert isinstance(command, click.Command)
            return command
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        """Turn govern's own errors into one line on stderr and the documented exit code."""
        try:
            return super().invoke(ctx)
        except GovernError as exc:
            click.echo(f"govern: error: {exc.message}", err=True)
            ctx.exit(exc.exit_code)
        except Exception as exc:
            # A server error escaping a command (lost connection mid-report...) is exit 3.
            if type(exc).__module__.startswith("pymysql"):
                from govern.connection import error_text

                click.echo(f"govern: error: server: {error_text(exc)}", err=True)
                ctx.exit(EXIT_SERVER)
            raise


@click.group(
    cls=LazyGroup, context_settings={"help_option_names": ["--help"], "max_content_width": 100}
)
@click.version_option(__version__, "--version", prog_name="govern")
def cli() -> None:
    """Keep MySQL and MariaDB servers honest about their workload.

    Exit codes: 0 ok, 1 findings or a failed job, 2 usage or config error,
    3 server or connection error.

    Shell completion (bash): eval "$(_GOVERN_COMPLETE=bash_source govern)"
    """


#: Commands whose process ends without Python's teardown (freeing every object and
#: module, sqlglot's among them: about 0.05 s after a digest). They leave nothing to
#: close to the garbage collector: their files and connections are closed when they return.
QUICK_EXIT = frozenset({"digest"})


def main() -> None:
    """The ``govern`` command in process: ends with ``SystemExit``."""
    cli.main(prog_name="govern")


def program() -> None:
    """The ``govern`` program (its console script, ``python -m govern``): :func:`main`,
    and a :data:`QUICK_EXIT` command's process ends at once."""
    try:
        main()
    except SystemExit as exc:
        if len(sys.argv) > 1 and sys.argv[1] in QUICK_EXIT:
            _quick_exit(exc)
        raise


def _quick_exit(exc: SystemExit) -> None:
    """End the process now with ``exc``'s code, once its output is out and the atexit
    handlers ran; returns (the normal exit follows) when that is not sure to be the same:
    a message as the code, output that cannot be flushed, a thread still running."""
    import threading

    code = 0 if exc.code is None else exc.code
    if not isinstance(code, int) or threading.active_count() > 1:
        return
    atexit._run_exitfuncs()  # run once: the normal exit would find none left
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return  # a closed pipe: Python's own exit reports it as it always did
    os._exit(code & 0xFF)


if __name__ == "__main__":
    main()
