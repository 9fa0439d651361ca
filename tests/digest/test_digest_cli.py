"""``govern digest`` and ``govern digest merge`` as users run them: formats, options, errors."""

from __future__ import annotations

import gzip
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.paths import REPO, SLOWLOGS

DATA = SLOWLOGS
#: What a piped digest says on stderr (no bar showed it): the inputs, events, classes, time.
DIGESTED = re.compile(
    r"govern: digested (?P<what>.+?)(?:, (?P<size>[\d.]+ (?:B|KiB|MiB|GiB|TiB)))?: "
    r"(?P<events>[\d,]+) events?, (?P<classes>[\d,]+) class(?:es)? in \d+\.\d s"
)
#: A phase after the digest that took long, piped (govern/reports/digest_run.py).
LONG_PHASE = re.compile(
    r"govern: (?:checked \S+ rules? over|wrote) [\d,]+ class(?:es)?.* in \d+\.\d s"
)


def said(stderr: str) -> dict[str, str]:
    """The piped digest's lines on stderr, checked: the digest's line (its fields returned)
    and, for slow phases only, a line each; nothing else."""
    first, *rest = stderr.splitlines()
    found = DIGESTED.fullmatch(first)
    assert found, stderr
    assert all(LONG_PHASE.fullmatch(line) for line in rest), stderr
    return found.groupdict()


def govern(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "govern", *args],
        input=None if stdin is None else stdin.decode("utf-8", "surrogateescape"),
        capture_output=True,
        text=True,
        check=False,
    )


def digest_json(*args: str) -> dict[str, Any]:
    proc = govern("digest", "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_json_document_contract() -> None:
    document = digest_json(str(DATA / "mysql57.log"))
    assert document["schema"] == "govern.digest" and document["schema_version"] == 1
    assert document["totals"] == {
        "events": 3,
        "classes": 2,
        "query_time": 0.25039,
        "other_events": 0,
        "unreported_events": 0,
        "filtered": 0,
        "no_statement": 0,
        "malformed": 0,
        "banners": 1,  # the log starts with the server's banner
    }
    first, second = document["classes"]
    assert first["fingerprint"] == "update t set n = n ? ? where grp = ? "
    assert first["share"] == pytest.approx(0.25 / 0.25039, abs=1e-6)
    qt = second["metrics"]["Query_time"]
    assert qt == {
        "count": 2,
        "sum": 0.00039,
        "min": 0.00018,
        "max": 0.00021,
        "avg": 0.000195,
        "median": 0.00018,
        "p95": 0.00021,
        "p99": 0.00021,
    }
    assert second["metrics"]["Rows_examined"]["sum"] == 2  # counts stay integers
    assert second["sample"]["query"] == "SELECT * FROM t WHERE id = 1"  # the slowest
    assert second["sample"]["line"] == 4 and second["sample"]["file"].endswith("mysql57.log")
    assert second["id"] == second["id"].upper() and len(second["id"]) == 32
    assert second["id16"] == second["id"][-16:]
    assert document["window"] == {
        "first_seen": "2018-03-21 12:51:17",
        "last_seen": "2018-03-21 12:51:18",
        "seconds": 1.0,
    }
    assert second["qps"] == 2.0
    assert second["tables"] == {"read": ["t"], "written": []}
    assert first["tables"] == {"read": [], "written": ["t"]}


def test_text_and_markdown_reports() -> None:
    text = govern("digest", str(DATA / "mysql57.log"))
    # piped: no progress bar, one plain line saying what was digested
    assert text.returncode == 0 and len(text.stderr.splitlines()) == 1
    size = (DATA / "mysql57.log").stat().st_size
    assert said(text.stderr) == {
        "what": str(DATA / "mysql57.log"),
        "size": f"{size} B",
        "events": "3",
        "classes": "2",
    }
    lines = text.stdout.splitlines()
    assert lines[:2] == ["govern digest", "  3 events, 2 classes, 250.4ms total query time"]
    assert "  update t set n = n ? ? where grp = ?" in lines
    markdown = govern("digest", "--format", "md", "--top", "1", str(DATA / "mariadb.log"))
    assert markdown.stdout.startswith("## govern digest")
    assert markdown.stdout.count("<details>") == 1 and "```sql" in markdown.stdout


def test_top_and_order_by() -> None:
    by_time = digest_json(str(DATA / "mysql57.log"))
    by_calls = digest_json("--order-by", "Query_time:cnt", str(DATA / "mysql57.log"))
    assert [c["count"] for c in by_time["classes"]] == [1, 2]
    assert [c["count"] for c in by_calls["classes"]] == [2, 1]
    assert by_calls["options"]["order_by"] == "Query_time:cnt"
    ids = [item["id"] for item in digest_json(str(DATA / "mariadb.log"))["classes"]]
    top = digest_json("--top", "2", str(DATA / "mariadb.log"))
    assert [item["id"] for item in top["classes"]] == ids[:2]
    assert top["omitted_classes"] == len(ids) - 2
    bad = govern("digest", "--order-by", "Query_time:median", str(DATA / "mariadb.log"))
    assert bad.returncode == 2 and bad.stderr.startswith("govern: error: --order-by")
    assert len(bad.stderr.strip().splitlines()) == 1
    # An attribute the log lacks orders nothing: a warning names the ones it has, exit 0
    absent = govern("digest", "--order-by", "InnoDB_IO_r_ops:sum", str(DATA / "mariadb.log"))
    assert absent.returncode == 0
    assert "govern: warning: --order-by InnoDB_IO_r_ops:sum: no event has InnoDB_IO_r_ops" in (
        absent.stderr
    )
    assert "Query_time" in absent.stderr.split("these have:")[1]
    plain = govern("digest", "--order-by", "Rows_sent:max", str(DATA / "mariadb.log")).stderr
    assert said(plain) and len(plain.splitlines()) == 1  # no warning


def test_since_until_and_filters() -> None:
    path = str(DATA / "mysql57.log")
    later = digest_json("--since", "2018-03-21 12:51:18", path)
    assert [c["count"] for c in later["classes"]] == [1] and later["totals"]["filtered"] == 2
    earlier = digest_json("--until", "2018-03-21 12:51:18", path)
    assert earlier["totals"]["events"] == 2
    assert digest_json("--filter", "user=app", path)["totals"]["events"] == 1
    assert digest_json("--filter", "user!=app", path)["totals"]["events"] == 2
    assert digest_json("--filter", "host=10.0.*", path)["totals"]["events"] == 1
    assert digest_json("--filter", "fingerprint~^select", path)["totals"]["events"] == 2
    either = digest_json("--filter", "user=app", "--filter", "user=root", path)
    assert either["totals"]["events"] == 3
    select_id = digest_json("--filter", "fingerprint~^select", path)["classes"][0]["id"]
    assert digest_json("--filter", f"id={select_id[-16:-8]}", path)["totals"]["events"] == 2
    assert digest_json("--filter", "db=test", path)["totals"]["events"] == 3  # inherited db
    for option, value in (("--filter", "schema=x"), ("--filter", "db~("), ("--since", "yesterday")):
        proc = govern("digest", option, value, path)
        assert proc.returncode == 2 and proc.stderr.startswith(f"govern: error: {option}")


def test_max_classes_other_bucket() -> None:
    document = digest_json("--max-classes", "1", str(DATA / "mariadb.log"))
    assert document["totals"]["classes"] == 1
    assert document["other"]["count"] == document["totals"]["other_events"] > 0
    kept = document["classes"][0]["count"]
    assert kept + document["other"]["count"] == document["totals"]["events"]


def test_input_errors_are_one_line_exit_2(tmp_path: Path) -> None:
    binary = tmp_path / "core.bin"
    binary.write_bytes(bytes(range(256)) * 100)
    cases = {
        str(tmp_path / "missing.log"): "no such file",
        str(tmp_path): "is a directory",
        str(binary): "binary data, not a slow log",
        str(tmp_path / "*.nothing"): "no file matches",
    }
    for argument, message in cases.items():
        proc = govern("digest", argument)
        assert proc.returncode == 2, argument
        assert proc.stderr.strip().startswith("govern: error:") and message in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert govern("digest").returncode == 2


def test_empty_truncated_and_malformed_inputs(tmp_path: Path) -> None:
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    proc = govern("digest", "--format", "json", str(empty))
    assert proc.returncode == 0 and "empty file" in proc.stderr
    assert json.loads(proc.stdout)["totals"]["events"] == 0
    whole = (DATA / "mariadb.log").read_bytes()
    truncated = tmp_path / "cut.log.gz"
    truncated.write_bytes(gzip.compress(whole)[:-30])
    proc = govern("digest", "--format", "json", str(truncated))
    assert proc.returncode == 0 and "truncated gzip data" in proc.stderr
    assert json.loads(proc.stdout)["totals"]["events"] >= 1
    bad = tmp_path / "bad.log"
    bad.write_bytes(
        b"# Time: 071015 21:43:52\n# User@Host: a[a] @ h []\n"
        b"# Query_time: 18446744073708.796870.000036  Lock_time: 0  Rows_sent: 1  Rows_examined: 0\n"
        b"SELECT 1;\n"
        b"# User@Host: a[a] @ h []\n# Query_time: 0.5  Lock_time: 0  Rows_sent: 1  Rows_examined: 0\n"
        b"SELECT 2;\n"
    )
    proc = govern("digest", "--format", "json", str(bad))
    assert proc.returncode == 0
    assert f"{bad}:1: Query_time is not a number" in proc.stderr
    document = json.loads(proc.stdout)
    assert document["totals"]["malformed"] == 1 and document["totals"]["events"] == 1
    assert document["malformed"] == [
        {
            "file": str(bad),
            "line": 1,
            "reason": "Query_time is not a number: 18446744073708.796870.000036",
        }
    ]


def test_stdin_and_compressed_inputs(tmp_path: Path) -> None:
    import bz2
    import lzma

    raw = (DATA / "percona.log").read_bytes()
    expected = digest_json(str(DATA / "percona.log"))["classes"]
    for name, packed in (("p.log.bz2", bz2.compress(raw)), ("p.xz", lzma.compress(raw))):
        path = tmp_path / name
        path.write_bytes(packed)
        classes = digest_json(str(path))["classes"]
        assert [(c["id"], c["count"]) for c in classes] == [(c["id"], c["count"]) for c in expected]
    proc = govern("digest", "--format", "json", "-", stdin=raw)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["classes"][0]["count"] == 2


@pytest.mark.parametrize("engine", ["native", "python"])
def test_a_fifo_and_process_substitution_are_read_once_as_streams(
    tmp_path: Path, engine: str
) -> None:
    """Not a regular file (a FIFO, ``<(zcat x.gz)``): read once as a stream, never mapped
    (the core failed with "Illegal seek") nor opened twice (the Python engine hung)."""
    from govern import native

    if engine == "native" and not native.available():
        pytest.skip("the native core is not built")
    env = dict(os.environ, GOVERN_NATIVE="1" if engine == "native" else "0")
    source = DATA / "mysql57.log"
    expected = digest_json(str(source))

    def figures(document: dict[str, Any]) -> tuple[Any, ...]:
        classes = [
            (c["id"], c["count"], c["metrics"], c["sample"]["line"]) for c in document["classes"]
        ]
        return document["totals"], classes

    fifo = tmp_path / "slow.fifo"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", 'cat "$0" > "$1"', str(source), str(fifo)])
    try:
        fed = subprocess.run(
            [sys.executable, "-m", "govern", "digest", "--format", "json", str(fifo)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    finally:
        if writer.poll() is None:  # govern never opened the FIFO
            writer.kill()
    assert writer.wait(timeout=10) == 0
    assert fed.returncode == 0, fed.stderr  # no "empty file" either, and no size: a stream
    assert said(fed.stderr) == {"what": str(fifo), "size": None, "events": "3", "classes": "2"}
    assert len(fed.stderr.splitlines()) == 1
    assert figures(json.loads(fed.stdout)) == figures(expected)
    packed = tmp_path / "slow.log.gz"
    packed.write_bytes(gzip.compress(source.read_bytes()))
    for substitution in ('<(gzip -dc "$1")', '<(cat "$1")'):  # plain, then gzip sniffed
        script = f'exec "$0" -m govern digest --format json {substitution}'
        proc = subprocess.run(
            ["bash", "-c", script, sys.executable, str(packed)],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        document = json.loads(proc.stdout)
        assert document["inputs"][0]["name"].startswith("/dev/fd/")
        assert figures(document) == figures(expected)


def test_merge_equals_one_digest_of_everything(tmp_path: Path) -> None:
    """Split a log in two at an event, digest each part, merge: same classes, same percentiles."""
    from tests.paths import require_corpus

    whole = require_corpus() / "mariadb" / "mixed-workload.log"
    data = whole.read_bytes()
    cut = data.index(b";\n# User@Host", len(data) // 2) + 2
    parts = []
    for index, piece in enumerate((data[:cut], data[cut:])):
        path = tmp_path / f"part{index}.log"
        path.write_bytes(piece)
        saved = tmp_path / f"part{index}.json"
        saved.write_text(json.dumps(digest_json(str(path))))
        parts.append(str(saved))
    merged = json.loads(govern("digest", "merge", "--format", "json", *parts).stdout)
    single = digest_json(str(whole))
    assert merged["totals"] == single["totals"]

    def figures(document: dict[str, Any]) -> dict[str, Any]:
        return {
            c["id"]: (c["count"], c["metrics"], c["histogram"], c["first_seen"])
            for c in document["classes"]
        }

    assert figures(merged) == figures(single)


def test_merge_lists_servers_per_class(tmp_path: Path) -> None:
    saved = []
    for host in ("db1", "db2"):
        proc = govern("digest", "--format", "json", "--host", host, str(DATA / "percona.log"))
        path = tmp_path / f"{host}.json"
        path.write_text(proc.stdout)
        saved.append(str(path))
    merged = json.loads(govern("digest", "merge", "--format", "json", *saved).stdout)
    assert merged["classes"][0]["servers"] == {"db1": 2, "db2": 2}
    assert merged["classes"][0]["count"] == 4
    assert [i["host"] for i in merged["inputs"]] == ["db1", "db2"]
    text = govern("digest", "merge", *saved)
    assert "servers: db1 50%, db2 50%" in text.stdout


def test_merge_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{\n  "schema": "govern.digest",\n  oops\n}')
    proc = govern("digest", "merge", str(broken))
    assert proc.returncode == 2 and f"{broken}:3: not valid JSON" in proc.stderr
    other = tmp_path / "doctor.json"
    other.write_text('{"schema": "govern.doctor", "schema_version": 1}')
    proc = govern("digest", "merge", str(other))
    assert proc.returncode == 2 and "not a saved digest" in proc.stderr
    assert govern("digest", "merge").returncode == 2
    assert "Usage: govern digest merge" in govern("digest", "merge", "--help").stdout


def test_a_log_named_like_a_subcommand_is_digested_by_its_path(tmp_path: Path) -> None:
    """``govern digest merge`` is the subcommand; ``./merge`` (or ``-- merge``) the file."""
    for name in ("merge", "compare"):
        (tmp_path / name).write_bytes((DATA / "mysql57.log").read_bytes())
        for args in ([f"./{name}"], ["--", name], ["--top", "5", name]):
            proc = subprocess.run(
                [sys.executable, "-m", "govern", "digest", "--format", "json", *args],
                capture_output=True,
                text=True,
                cwd=tmp_path,
                check=False,
            )
            assert proc.returncode == 0, (args, proc.stderr)
            document = json.loads(proc.stdout)
            assert document["totals"]["events"] == 3 and document["inputs"][0]["name"] == args[-1]
    subcommand = subprocess.run(
        [sys.executable, "-m", "govern", "digest", "merge"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert subcommand.returncode == 2 and "govern digest ./merge" in subcommand.stderr


def test_progress_bar_on_a_terminal_only() -> None:
    """stderr on a terminal: a progress bar and no plain line; piped: the plain lines
    (checked in the tests above)."""
    import os
    import pty
    import select

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "govern", "digest", "--format", "json", str(DATA / "mariadb.log")],
        stdout=subprocess.DEVNULL,
        stderr=slave,
        stdin=subprocess.DEVNULL,
    )
    os.close(slave)
    seen = b""
    while select.select([master], [], [], 10)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert proc.wait(timeout=30) == 0
    assert b"digesting" in seen and b"govern: digested" not in seen


def test_document_fields_are_the_documented_ones() -> None:
    """docs/json.md lists every field of govern.digest/1, top level and per class."""
    import re

    text = (REPO / "docs" / "json.md").read_text()
    section = text.split("## `govern.digest` version 1", 1)[1].split("\n## ", 1)[0]
    top_table, class_table = section.split("Each class:", 1)

    def documented(table: str) -> set[str]:
        names: set[str] = set()
        for line in table.splitlines():
            if line.startswith("| `"):
                names.update(re.findall(r"`([a-z_0-9]+)(?:\[\])?`", line.split("|")[1]))
        return names

    document = digest_json(str(DATA / "mariadb.log"))
    # collect: only in the buckets govern collect writes; store: only in a report over a
    # history store (govern digest --store)
    assert documented(top_table) - {"collect", "store"} == set(document)
    assert documented(class_table) - {"top_hosts"} == set(document["classes"][0])


def test_log_cut_inside_an_event(tmp_path: Path) -> None:
    whole = (DATA / "mysql57.log").read_bytes()
    cut = tmp_path / "cut.log"
    cut.write_bytes(whole[: whole.rindex(b"# Query_time")])  # the last event loses its statement
    proc = govern("digest", "--format", "json", str(cut))
    assert proc.returncode == 0
    document = json.loads(proc.stdout)
    assert document["totals"]["events"] == 2 and document["totals"]["malformed"] == 1
    assert document["malformed"][0]["line"] == 15  # its "# Time:" line
    assert f"{cut}:15: event without a statement: the input ends inside it" in proc.stderr


def test_text_report_rates_in_plain_figures(tmp_path: Path) -> None:
    """1,500 calls a second read as 1.50k/s, not 1.5e+03/s."""
    event = (
        "# User@Host: app[app] @ localhost []\n# Query_time: 0.000100  Lock_time: 0.000000"
        "  Rows_sent: 1  Rows_examined: 1\nSELECT 1;\n"
    )
    log = tmp_path / "busy.log"
    log.write_text(
        "# Time: 261125 10:00:00\n" + event * 1500 + "# Time: 261125 10:00:02\n" + event * 1500
    )
    text = govern("digest", str(log)).stdout
    assert "3,000 calls, 1.50k/s" in text, text
    assert "e+" not in text


def _letters(number: int) -> str:
    """A table name part without digits (a fingerprint folds digits in names)."""
    return "".join("abcdefghijklmnopqrstuvwxyz"[number // 26**k % 26] for k in range(4))


def _distinct_log(path: Path, classes: int) -> Path:
    with path.open("w") as f:
        f.write("# Time: 261121 22:42:45\n")
        for i in range(classes):
            f.write(
                "# User@Host: web[web] @ localhost []\n"
                f"# Query_time: 0.{i % 997:06d}  Lock_time: 0.000010  Rows_sent: 1  Rows_examined: 1\n"
                f"SELECT id FROM notes_{_letters(i)} WHERE id = {i};\n"
            )
    return path


@pytest.mark.skipif(not shutil.which("script"), reason="needs script(1) for a terminal")
def test_rules_and_json_phases_show_a_bar_on_a_terminal_only(tmp_path: Path) -> None:
    """On a terminal (stderr), the rules' pass and the classes written have a bar each;
    piped, stderr has plain lines instead; the JSON is the same either way."""
    log = _distinct_log(tmp_path / "slow.log", 5000)
    out, typescript = tmp_path / "out.json", tmp_path / "typescript"
    command = shlex.join([sys.executable, "-m", "govern", "digest", "--format", "json", str(log)])
    subprocess.run(
        ["script", "-qc", f"{command} > {shlex.quote(str(out))}", str(typescript)],
        check=True,
        capture_output=True,
    )
    drawn = typescript.read_bytes()
    assert b"checking rules" in drawn and b"writing classes" in drawn and b"5000/5000" in drawn
    piped = govern("digest", "--format", "json", str(log))
    assert piped.returncode == 0 and said(piped.stderr)["classes"] == "5,000"
    assert b"govern: digested" not in drawn
    assert piped.stdout == out.read_text() and len(json.loads(piped.stdout)["classes"]) == 5000
