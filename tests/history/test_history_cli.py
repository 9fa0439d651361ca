"""``govern collect --once --store`` and ``govern digest --store`` as users run them: every
report format over the stored buckets, host globs, and one line for every mistake."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from govern.digest.schema import published
from govern.history.sql import SqlStore
from govern.history.store import open_store
from tests.collect.support import govern
from tests.harness import MariaDB
from tests.history.support import log_path, mysql_url

SINCE = ("--since", "2000-01-01", "--until", "2100-01-01")


def _collect(log: Path, url: str, tmp_path: Path, label: str) -> None:
    result = govern(
        "collect", str(log), "--store", url, "--state", str(tmp_path / f"{label}.db"),
        "--once", "--label", label, "--bucket", "1m", "--close-after", "0s",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"{label} " in result.stderr  # "closed bucket …: URL: db1 START"


@pytest.fixture(params=["sqlite", "mysql"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'history.db'}"
    server: MariaDB = request.getfixturevalue("server")
    return mysql_url(server)


def test_collect_once_into_the_store_then_every_format(url: str, tmp_path: Path) -> None:
    log = log_path()
    _collect(log, url, tmp_path, "db1")
    # db1's rows as a store written before migration 0008 holds them: the next collector's
    # write backfills them, with no command to run
    store = open_store(url)
    assert isinstance(store, SqlStore)
    try:
        for table in ("history_classes", "history_day_classes"):
            store.run(f"UPDATE {table} SET qt_p95_key = NULL, qt_p99_key = NULL, explained = NULL")
        store.run("UPDATE history_backfill SET bucket = NULL, host = NULL, done = 0")
        _collect(log, url, tmp_path, "db2")
        assert store.run("SELECT COUNT(*) FROM history_classes WHERE explained IS NULL") == [(0,)]
        assert store.run("SELECT SUM(done) FROM history_backfill") == [(2,)]
    finally:
        store.close()
    result = govern("digest", "--store", url, *SINCE, "--format", "json", "--no-rules")
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert published("govern.digest").problem(document) is None
    assert document["store"]["hosts"] == ["db1", "db2"]
    direct = json.loads(govern("digest", str(log), "--format", "json", "--no-rules").stdout)
    assert document["totals"]["events"] == 2 * direct["totals"]["events"]
    first = document["classes"][0]
    assert first["count"] == 2 * direct["classes"][0]["count"]
    assert [share["host"] for share in first["top_hosts"]] == ["db1", "db2"]
    assert (
        first["metrics"]["Query_time"]["p99"]
        == direct["classes"][0]["metrics"]["Query_time"]["p99"]
    )

    text = govern("digest", "--store", url, *SINCE, "--host", "db2", "--top", "3")
    assert text.returncode == 0, text.stderr
    assert f"{direct['totals']['events']:,} events" in text.stdout
    assert "top hosts by time: db2 " in text.stdout
    markdown = govern("digest", "--store", url, *SINCE, "--format", "md", "--top", "3")
    assert markdown.returncode == 0, markdown.stderr
    assert "- top hosts by time: db1 " in markdown.stdout
    page = tmp_path / "report.html"
    html = govern("digest", "--store", url, *SINCE, "--format", "html", "-o", str(page))
    assert html.returncode == 0, html.stderr
    assert "Top hosts by time" in page.read_text()


def test_a_window_without_buckets_says_so(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'history.db'}"
    result = govern("digest", "--store", url, "--since", "24h", "--host", "db*", "--no-rules")
    assert result.returncode == 0, result.stderr
    assert "no buckets of hosts matching 'db*' between" in result.stderr
    assert "0 events" in result.stdout


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--store", "sqlite:X", "FILE"], "--store: reports over the store's buckets, give no FILE too"),
        (["--store", "sqlite:X", "--filter", "db=a"], "--filter: not with --store (the store keeps classes, not events)"),
        (["--store", "sqlite:X", "--since", "soon"], "--since 'soon': expected YYYY-MM-DD[ HH:MM[:SS]], YYMMDD HH:MM:SS or a duration like 30m, 2h, 7d"),
        (["--store", "sqlite:X", "--since", "1d", "--until", "2d"], "is not before --until"),
        (["--store", "mysql://me:pw@db1/h"], "--store: a password in the URL would be visible in the process list; put it in an option file (defaults-file=PATH in the URL, or ~/.my.cnf)"),
    ],
)  # fmt: skip
def test_digest_store_mistakes_give_one_line_and_exit_2(
    tmp_path: Path, arguments: list[str], message: str
) -> None:
    given = [a.replace("sqlite:X", f"sqlite:{tmp_path / 'h.db'}") for a in arguments]
    result = govern("digest", *given)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("govern: error: ") and message in line


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--keep-hourly", "0d"], "--keep-hourly: whole days, at least 1d"),
        (["--keep-hourly", "30d", "--keep", "7d"], "--keep-hourly 30d is longer than --keep 7d"),
        ([], "--to DIR or --store URL: where the buckets go"),
    ],
)
def test_collect_store_mistakes(tmp_path: Path, arguments: list[str], message: str) -> None:
    result = govern("collect", str(log_path()), "--state", str(tmp_path / "s.db"), "--once",
                    *(["--store", f"sqlite:{tmp_path / 'h.db'}"] if arguments else []), *arguments)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert message in result.stderr.splitlines()[0]


def test_an_unreachable_store_exits_3(tmp_path: Path) -> None:
    defaults = tmp_path / "my.cnf"
    defaults.write_text("[client]\nuser=nobody\n")
    defaults.chmod(0o600)
    url = f"mysql://127.0.0.1:1/h?defaults-file={defaults}"
    result = govern("digest", "--store", url, "--no-rules")
    assert result.returncode == 3, result.stderr
    assert len(result.stderr.splitlines()) == 1
