"""How a job receives its throttle: ``$GOVERN_THROTTLE``.

``govern run --throttle …`` and the scheduler (a catalog's ``[throttle]``) put
the checks in the job's environment, with a 0600 option file for the account the
checks connect with (never a password in the environment) and the state file
where holds are recorded. ``govern throttle wait``, ``govern load``,
``govern chunk`` and :func:`govern.throttle.wait` inside the job read it, so
their holds are recorded under the job's run or night.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping

from govern.errors import UsageError
from govern.throttle.spec import ThrottleSpec

ENV = "GOVERN_THROTTLE"


@dataclasses.dataclass(frozen=True)
class Handoff:
    spec: ThrottleSpec
    defaults_file: str | None  # the option file the checks connect with
    state: str | None  # the state file holds are recorded in

    def environment(self) -> dict[str, str]:
        document = {
            "spec": self.spec.to_json(),
            "defaults_file": self.defaults_file,
            "state": self.state,
        }
        return {ENV: json.dumps(document)}

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Handoff | None:
        env = os.environ if environ is None else environ
        text = env.get(ENV)
        if not text:
            return None
        try:
            document = json.loads(text)
            spec = ThrottleSpec.from_json(document["spec"])
            defaults_file = document.get("defaults_file")
            state = document.get("state")
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"${ENV}: not what govern run or the scheduler set ({exc})") from None
        return cls(spec, defaults_file, state)
