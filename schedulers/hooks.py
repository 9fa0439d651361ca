"""Telling someone: ``on_failure``, ``on_deadline_miss`` and ``on_missed_fire`` hooks.

Each event is one ``govern.schedule.event`` document (docs/json.md), delivered to every target
of its ``[hooks.on_EVENT]`` table at once, each in its own thread so a slow webhook never holds
the night back:

- ``command``: run in the catalog's folder with the event as JSON on stdin, in an environment
  reduced to PATH, HOME, locale and the ``GOVERN_EVENT*`` variables: no option file, no
  ``MYSQL_PWD``, nothing of the night's credentials (a hook is not a job);
- ``webhook``: an HTTP POST of the JSON (``Content-Type: application/json``);
- ``mail``: a message through the local MTA, ``sendmail -t -oi`` (found on PATH, else
  /usr/sbin/sendmail or /usr/lib/sendmail).

Every target has ``[hooks] timeout`` (default 30 s; a command's process group is killed then).
A delivery that fails is said (a warning) and recorded with the night (``summary.events``),
never raised: a broken pager must not fail a good night.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from govern import __version__
from govern.output import warn
from govern.schedulers.catalog import Catalog, HookSpec

EVENT_SCHEMA = "govern.schedule.event"
EVENT_VERSION = 1
EVENTS = ("failure", "deadline_miss", "missed_fire")
#: What a hook command inherits of govern's environment: nothing that could be a secret.
KEPT_ENVIRONMENT = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME", "TMPDIR")
SENDMAILS = ("/usr/sbin/sendmail", "/usr/lib/sendmail")


def make_event(
    event: str,
    catalog: Catalog,
    *,
    reason: str,
    scope: str = "night",
    night_id: int | None = None,
    scheduled_for: str | None = None,
    job: str | None = None,
    worker: str | None = None,
    deadline: datetime | None = None,
    status: str | None = None,
    outcomes: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """One ``govern.schedule.event`` document (docs/json.md): what happened, to what, why."""
    assert event in EVENTS, event
    return {
        "schema": EVENT_SCHEMA,
        "schema_version": EVENT_VERSION,
        "event": event,
        "scope": scope,
        "schedule": catalog.name,
        "catalog": str(catalog.path),
        "host": socket.gethostname(),
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "night_id": night_id,
        "scheduled_for": scheduled_for,
        "job": job,
        "worker": worker,
        "deadline": deadline.isoformat(timespec="seconds") if deadline else None,
        "status": status,
        "outcomes": dict(outcomes) if outcomes is not None else None,
        "reason": reason,
    }


@dataclasses.dataclass(frozen=True)
class Delivery:
    hook: str  # command, webhook, mail
    target: str  # the program, the webhook's scheme://host (its path may hold a token), addresses
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Hooks:
    """The hooks of one catalog: :meth:`fire` an event, :meth:`wait` for its deliveries."""

    def __init__(self, catalog: Catalog, *, say: Callable[[str], None] = warn) -> None:
        self.catalog = catalog
        self.say = say
        self.timeout = catalog.hook_timeout
        self.fired: list[dict[str, Any]] = []  # what summary.events records
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()

    def fire(self, event: dict[str, Any]) -> None:
        spec = self.catalog.hooks.get(event["event"])
        entry: dict[str, Any] = {
            "event": event["event"],
            "scope": event["scope"],
            "job": event["job"],
            "at": event["at"],
            "reason": event["reason"],
            "deliveries": [],
        }
        with self._lock:
            self.fired.append(entry)
        if spec is None:
            return
        body = json.dumps(event, indent=2).encode() + b"\n"
        for hook, target, send in self._targets(spec, event, body):
            thread = threading.Thread(
                target=self._deliver,
                args=(entry, hook, target, send),
                name=f"hook {event['event']} {hook}",
                daemon=True,
            )
            self._threads.append(thread)
            thread.start()

    def wait(self) -> None:
        """Every delivery started so far has ended (each is bounded by the timeout)."""
        end = time.monotonic() + self.timeout + 5
        for thread in self._threads:
            thread.join(max(end - time.monotonic(), 0))

    def _deliver(
        self, entry: dict[str, Any], hook: str, target: str, send: Callable[[], str]
    ) -> None:
        try:
            delivery = Delivery(hook, target, True, send())
        except HookFailed as exc:
            delivery = Delivery(hook, target, False, str(exc))
        except Exception as exc:
            delivery = Delivery(hook, target, False, f"{type(exc).__name__}: {exc}")
        with self._lock:
            entry["deliveries"].append(delivery.to_json())
        if not delivery.ok:
            self.say(f"hook on_{entry['event']}: {hook} {target} failed: {delivery.detail}")

    def _targets(
        self, spec: HookSpec, event: dict[str, Any], body: bytes
    ) -> list[tuple[str, str, Callable[[], str]]]:
        targets: list[tuple[str, str, Callable[[], str]]] = []
        if spec.command is not None:
            command = spec.command
            shown = command[2] if command[:2] == ("/bin/sh", "-c") else command[0]
            targets.append(
                (
                    "command",
                    shown,
                    lambda: run_command(command, body, event, self._cwd, self.timeout),
                )
            )
        if spec.webhook is not None:
            url = spec.webhook
            targets.append(("webhook", _origin(url), lambda: post(url, body, self.timeout)))
        if spec.mail:
            to = spec.mail
            targets.append(
                ("mail", ", ".join(to), lambda: send_mail(to, event, body, self.timeout))
            )
        return targets

    @property
    def _cwd(self) -> Path:
        return self.catalog.directory


class HookFailed(Exception):
    """A delivery that did not go through: the message says why, in one line."""


def hook_environment(event: Mapping[str, Any]) -> dict[str, str]:
    """PATH, HOME and locale of govern's environment, and the event's names: no secret."""
    env = {k: v for k, v in os.environ.items() if k in KEPT_ENVIRONMENT}
    env.setdefault("PATH", os.defpath)
    env["GOVERN_EVENT"] = str(event["event"])
    env["GOVERN_EVENT_SCOPE"] = str(event["scope"])
    env["GOVERN_SCHEDULE"] = str(event["schedule"])
    if event.get("night_id") is not None:
        env["GOVERN_NIGHT_ID"] = str(event["night_id"])
    if event.get("job") is not None:
        env["GOVERN_JOB"] = str(event["job"])
    return env


def run_command(
    argv: tuple[str, ...], body: bytes, event: Mapping[str, Any], cwd: Path, timeout: float
) -> str:
    """The command with the event on stdin; its own process group, killed at ``timeout``."""
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=hook_environment(event),
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        raise HookFailed(f"cannot start: {exc.strerror or exc}") from None
    try:
        output, _ = process.communicate(body, timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise HookFailed(f"still running after {timeout:g}s: killed") from None
    lines = [line for line in output.decode("utf-8", "replace").splitlines() if line.strip()]
    last = lines[-1].strip()[:300] if lines else ""
    if process.returncode != 0:
        raise HookFailed(f"exit {process.returncode}" + (f": {last}" if last else ""))
    return "exit 0"


def _origin(url: str) -> str:
    """``scheme://host[:port]``: what is shown of a webhook (its path or query may be a token)."""
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")


def post(url: str, body: bytes, timeout: float) -> str:
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": f"govern/{__version__}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return f"HTTP {response.status}"
    except urllib.error.HTTPError as exc:
        raise HookFailed(f"HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise HookFailed(f"cannot POST: {reason}") from None


def sendmail_program() -> str | None:
    """The local MTA's sendmail interface, or None."""
    found = shutil.which("sendmail")
    if found:
        return found
    return next((p for p in SENDMAILS if os.access(p, os.X_OK)), None)


def send_mail(to: tuple[str, ...], event: Mapping[str, Any], body: bytes, timeout: float) -> str:
    program = sendmail_program()
    if program is None:
        raise HookFailed("no sendmail (install a local MTA, or use command or webhook)")
    message = EmailMessage()
    message["To"] = ", ".join(to)
    message["Subject"] = subject(event)
    message["X-Govern-Event"] = str(event["event"])
    # 8bit, not quoted-printable: the JSON stays readable (and parseable) in a mail client
    message.set_content(f"{event['reason']}\n\n{body.decode()}", cte="8bit")
    run_command((program, "-t", "-oi"), message.as_bytes(), event, Path("/"), timeout)
    return f"handed to {program}"


def subject(event: Mapping[str, Any]) -> str:
    """``[govern] nightly: deadline_miss of job sales.eu``: one line for a mail or a pager."""
    what = f"job {event['job']}" if event.get("job") else "the night"
    night = f" (night {event['night_id']})" if event.get("night_id") is not None else ""
    return f"[govern] {event['schedule']}: {event['event']} of {what}{night}"
