"""Passwords out of the command lines govern stores and prints.

``govern run -- mariadb -psecret …`` keeps its job's command line in the state store and
prints it in ``govern history --json``: the password must not go with it. Recognised, in
an argument or inside a shell string (``sh -c "mysqldump -psecret …"``):

* ``--password=…`` (any program), and ``-p…`` attached to a MySQL/MariaDB or Percona
  Toolkit program's command line (``mkdir -pv`` is left alone), and the argument after
  ``-p``/``--password`` for Percona Toolkit, whose ``-p`` takes a value;
* ``MYSQL_PWD=…`` (``env MYSQL_PWD=… mysql``);
* a password in a URL or DSN: ``mysql://user:secret@host/db``.

Each becomes ``***``. A password in argv is visible to every local user (``ps``) while
the job runs: callers warn about that too.
"""

from __future__ import annotations

import os
import re

MASK = "***"
_VALUE = r"""('[^']*'|"[^"]*"|[^\s'"]\S*)"""
_ANYWHERE = (
    re.compile(r"(?<![\w-])(--password=)" + _VALUE),
    re.compile(r"(?<![\w])(MYSQL_PWD=)" + _VALUE),
    re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)([^\s@/]+)(?=@)"),
)
_SHORT = re.compile(r"(?<![\w-])(-p)" + _VALUE)
#: Programs whose ``-pSECRET`` is a password.
_CLIENT = re.compile(r"^(?:mysql|mariadb)[\w.-]*$|^pt-[\w-]+$|^my(?:dumper|loader)$")


def redact(argv: list[str]) -> tuple[list[str], bool]:
    """``argv`` with every password replaced by ``***``, and whether one was found."""
    client = any(_is_client(word) for arg in argv for word in arg.split())
    toolkit = any(os.path.basename(word).startswith("pt-") for arg in argv for word in arg.split())
    out: list[str] = []
    found = False
    after_flag = False
    for arg in argv:
        if after_flag:  # Percona Toolkit's `-p SECRET` / `--password SECRET`
            out.append(MASK)
            found, after_flag = True, False
            continue
        text = arg
        for pattern in _ANYWHERE:
            text = pattern.sub(_masked, text)
        if client:
            text = _SHORT.sub(_masked, text)
        found = found or text != arg
        after_flag = toolkit and arg in ("-p", "--password")
        out.append(text)
    return out, found


def _is_client(word: str) -> bool:
    return bool(_CLIENT.match(os.path.basename(word.strip("'\""))))


def _masked(match: re.Match[str]) -> str:
    return match.group(1) + MASK
