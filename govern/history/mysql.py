"""The fleet history store: a MySQL/MariaDB schema many collectors write to."""

from __future__ import annotations

from typing import Any


class MysqlStore:
    @classmethod
    def open(cls, url: str, *, log_bin: bool = False) -> Any:
        raise NotImplementedError("the MySQL history store lands next")
