"""Errors that end a command, each carrying the exit code the CLI returns.

Exit codes are a contract (README.md, "Exit codes"): 0 ok, 1 findings or a failed
job, 2 usage or configuration error, 3 server or connection error. Raise one
of these for anything a user can cause; the CLI prints ``govern: <message>``
on one line and exits with the code. Anything else is a bug and may traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_SERVER = 3


class GovernError(Exception):
    """Base class: a one-line message for the user and an exit code."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.__class__.__name__


class UsageError(GovernError):
    """Bad option, bad argument, bad input file (exit 2)."""

    exit_code = EXIT_USAGE


class ConfigError(GovernError):
    """Bad option file, config file or state file (exit 2)."""

    exit_code = EXIT_USAGE


class ServerError(GovernError):
    """The server is unreachable, refused us, or lacks what we need (exit 3)."""

    exit_code = EXIT_SERVER
