"""govern.redact: passwords out of stored and printed command lines, nothing else touched."""

from __future__ import annotations

import pytest

from govern.redact import redact


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (["mariadb", "-psecret", "-P3306", "db"], ["mariadb", "-p***", "-P3306", "db"]),
        (
            ["/usr/bin/mysql", "--password=s3", "-e", "x"],
            ["/usr/bin/mysql", "--password=***", "-e", "x"],
        ),
        (["./load.py", "--password='a b'"], ["./load.py", "--password=***"]),
        (["env", "MYSQL_PWD=s", "mysql"], ["env", "MYSQL_PWD=***", "mysql"]),
        (
            ["job", "--dsn", "mysql://app:pw@db1:3306/x"],
            ["job", "--dsn", "mysql://app:***@db1:3306/x"],
        ),
        (
            ["sh", "-c", "mysqldump -u a -pxyz db | gzip"],
            ["sh", "-c", "mysqldump -u a -p*** db | gzip"],
        ),
        (
            ["pt-online-schema-change", "-p", "pw", "D=x"],
            ["pt-online-schema-change", "-p", "***", "D=x"],
        ),
        (
            ["mkdir", "-pv", "/srv/x"],
            ["mkdir", "-pv", "/srv/x"],
        ),  # not a client: -p is not a password
        (["curl", "http://host:8080/path"], ["curl", "http://host:8080/path"]),
        (["mysql", "-p", "db"], ["mysql", "-p", "db"]),  # the client prompts: db is a database
    ],
)
def test_redact(argv: list[str], shown: list[str]) -> None:
    redacted, found = redact(argv)
    assert redacted == shown
    assert found is (redacted != argv)
