"""Which mode a run uses, and why: ``auto`` picks the least intrusive one that works.

| mode | changes | others' sessions |
|---|---|---|
| session | the job's own sessions only | untouched |
| threshold | global ``long_query_time`` (only ever raised) | new ones log only statements over the threshold |
| global | global slow-log switch off | nothing logged |
| none | nothing | untouched |

``auto``: session when the job opts its own sessions out: a MariaDB ``mysql``/``mariadb``
client (it reads the init command govern hands it), ``govern load``, or a job declared with
``--opts-out`` (it passes ``$GOVERN_INIT_COMMAND`` to its connections); nothing when the
slow log is off anyway; otherwise threshold, which keeps pathological queries (everyone's,
the job's too) logged.
Global is never picked for you: it silences every session on the server.
"""

from __future__ import annotations

import dataclasses
from enum import StrEnum

from govern.errors import ServerError
from govern.privileges import Grants, grant_statement
from govern.server import ServerInfo
from govern.wrappers import session


class Mode(StrEnum):
    AUTO = "auto"
    GLOBAL = "global"
    THRESHOLD = "threshold"
    SESSION = "session"
    NONE = "none"


@dataclasses.dataclass(frozen=True)
class Choice:
    mode: Mode
    reason: str


def refusal(info: ServerInfo, account: tuple[str, str], variable: str) -> ServerError:
    user, host = account
    return ServerError(
        f"'{user}'@'{host}' may not change the global {variable} "
        f"(needs {' or '.join(info.set_global_privileges)}: "
        f"{grant_statement(info.set_global_privileges[0], user, host)}); "
        "a mysql/mariadb client job, or --mode session with govern's Python API, needs no "
        "privilege; --on-error=run runs the job anyway"
    )


def choose(
    requested: Mode,
    info: ServerInfo,
    grants: Grants,
    account: tuple[str, str],
    argv: list[str],
    opts_out: bool = False,
) -> Choice:
    """The mode for this run; raises ServerError (exit 3) when the account cannot do it.

    ``opts_out``: the job declares that its sessions opt out (``--opts-out``)."""
    can_set_global = grants.has_any(info.set_global_privileges)
    if requested is Mode.SESSION or requested is Mode.NONE:
        return Choice(requested, "requested")
    if requested in (Mode.GLOBAL, Mode.THRESHOLD):
        if not can_set_global:
            name = info.slow_log_variable if requested is Mode.GLOBAL else "long_query_time"
            raise refusal(info, account, name)
        return Choice(requested, "requested")
    problem = session.client_problem(argv)
    declared = "the job opts its sessions out (--opts-out)" if opts_out else None
    declared = declared or session.opting_out_job(argv)
    if session.exemption(info) and (declared or problem is None):
        return Choice(Mode.SESSION, declared or "the job is a MariaDB client: its sessions opt out")
    if not info.slow_log_enabled or info.log_output.upper() == "NONE":
        return Choice(Mode.NONE, "the slow log is off: nothing to change")
    if not can_set_global:
        raise refusal(info, account, "long_query_time")
    return Choice(Mode.THRESHOLD, f"{problem}; threshold keeps the slowest queries logged")
