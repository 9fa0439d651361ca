"""Fingerprints equal pt-query-digest's, byte for byte: the oracle is pt's own Perl code."""

from __future__ import annotations

import gzip
import hashlib
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from govern.fingerprint import (
    cache_key,
    fingerprint,
    fingerprint_bytes,
    fingerprint_many,
    query_id,
    short_id,
)
from govern.slowlog import iter_events
from tests.paths import ORACLES

ORACLE = ORACLES / "pt_fingerprint.pl"
PT_QUERY_DIGEST = shutil.which("pt-query-digest")


def pt_fingerprints(queries: list[bytes]) -> list[bytes]:
    """Fingerprints computed by QueryRewriter::fingerprint inside the installed pt-query-digest."""
    if PT_QUERY_DIGEST is None:
        pytest.skip("pt-query-digest is not installed (scripts/test installs percona-toolkit)")
    out = subprocess.run(
        ["perl", str(ORACLE), PT_QUERY_DIGEST],
        input=b"\0".join(queries),
        capture_output=True,
        check=True,
    ).stdout
    return out.split(b"\0") if queries else []


# Each documented rule and each known pt defect (docs/design/digest-engines.md), with pt's answer.
KNOWN = [
    ("SELECT * FROM t WHERE id = 5", "select * from t where id = ?"),
    (
        "select a from t where b in (1, 2, 3) and c = 'x'",
        "select a from t where b in(?+) and c = ?",
    ),
    ("INSERT INTO t (a,b) VALUES (1,'x'),(2,'y'),(3,'z')", "insert into t (a,b) values(?+)"),
    ("SELECT /*!40001 SQL_NO_CACHE */ * FROM `t`", "mysqldump"),
    ("administrator command: Quit", "administrator command: Quit"),
    ("CALL p1(3, 'x')", "call p1"),
    ("use shop", "use ?"),
    ("select * from t limit 10, 20", "select * from t limit ?"),
    ("select * from t order by a asc, b ASC", "select * from t order by a, b"),
    (
        "select 1 from t union select 1 from t union all select 1 from t",
        "select ? from t /*repeat union all*/",
    ),
    ("select * from t where a = TRUE and b is NULL", "select * from t where a = ? and b is ?"),
    ("select /* hint */ a from t -- trailing\n", "select a from t "),
    # pt defects, kept for compatible query IDs:
    ("select a - b from t", "select a ? b from t"),
    ("select * from db1.users_2009", "select * from d?users_?"),
    ("select 'a''b'", "select ??"),
    ("select * from t ", "select * from t "),
    ("select `a`,b from t", "select `a`,b from t"),
]


@pytest.mark.parametrize(("query", "expected"), KNOWN)
def test_documented_rules_and_defects(query: str, expected: str) -> None:
    assert fingerprint(query) == expected
    assert fingerprint_many([query.encode()]) == [expected.encode()]


def test_known_cases_match_pt() -> None:
    queries = [q.encode() for q, _ in KNOWN]
    assert pt_fingerprints(queries) == [fingerprint_bytes(q) for q in queries]


def test_query_ids_are_pts_checksums() -> None:
    """pt-query-digest's JSON names classes by these IDs (the 32-hex form since pt 3.x)."""
    fp = "select * from t where id = ?"
    assert query_id(fp) == hashlib.md5(fp.encode()).hexdigest().upper()
    assert short_id(query_id(fp)) == query_id(fp)[-16:]
    # From pt-query-digest 3.2.1's JSON for percona/slow002.txt:
    assert query_id("update foo.bar set biz = ?") == "32F63B9B2CE5A9B1B211BA2B8D6D065C"


def _corpus_queries(corpus: Path) -> list[bytes]:
    queries: list[bytes] = []
    for path in sorted(corpus.glob("*/*")):
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
        queries.extend(e.query.encode("utf-8", "surrogateescape") for e in iter_events(data))
    return list(dict.fromkeys(queries))


_ATOMS = [
    b"SELECT", b"select", b" ", b"\n", b"\t", b"'a'", b"'", b'"', b'"x"', b"\\'", b"1", b"-1",
    b"0x1F", b"1.5e10", b"a-b", b"users_2009", b"db1.t2", b"/*", b"*/", b"/*!40001", b"--",
    b"#", b"IN", b"in (1,2)", b"IN (1, 2,3)", b"In('a',4)", b"VALUE (1)", b"values(2 ,3)",
    b"valuesx (1)", b" in ( 5 )", b"(1,2)", b"IN(", b"?", b"1 2)", b"VALUES (1,2),(3,4)",
    b"UNION", b"union all", b"LIMIT 1, 2", b"limit 1 offset 2", b"ORDER BY", b"a ASC",
    b" asc", b"NULL", b"null", b"true", b"FALSE", b"use", b"CALL", b"(", b")", b",",
    b"\xff\xfe", b"\xc3\xa9", b"insert into t", b"replace", b"ignore", b"\r\n", b"\x0b",
    b"select a from t union select a from t", b"administrator command: ", b"call p9(",
]  # fmt: skip


def _fuzz(count: int, seed: int) -> list[bytes]:
    rnd = random.Random(seed)
    return [b"".join(rnd.choice(_ATOMS) for _ in range(rnd.randint(1, 14))) for _ in range(count)]


def test_equal_to_pt_on_corpus_and_fuzz() -> None:
    from tests.paths import require_corpus

    queries = _corpus_queries(require_corpus()) + _fuzz(20_000, seed=4)
    queries = [q for q in queries if b"\0" not in q]
    expected = pt_fingerprints(queries)
    reference = [fingerprint_bytes(q) for q in queries]
    mismatches = [(q, e, r) for q, e, r in zip(queries, expected, reference, strict=True) if e != r]
    assert not mismatches[:5], f"{len(mismatches)} of {len(queries)} differ from pt"


def test_batch_path_equals_reference() -> None:
    queries = [*_fuzz(30000, seed=11), b"with\x00nul", b"", b"0", b"use db1", b"#c\nuse db"]
    assert fingerprint_many(queries) == [fingerprint_bytes(q) for q in queries]


def test_cache_key_never_joins_different_fingerprints() -> None:
    """Queries with one cache key have one fingerprint: digits don't matter, except where
    pt keeps them."""
    queries = [
        *_fuzz(30000, seed=7),
        b"INSERT INTO t (a) VALUES ('abc', 'd'), ('x', 'y')",
        b"INSERT INTO t SELECT 'values (1), (2)'",
        b"insert into values_t select 'values (1), (2)'",
        b"SELECT * FROM users WHERE name = 'Alice' AND id = 12",
    ]
    rnd = random.Random(3)
    digits = bytes.maketrans(b"0123456789", bytes(rnd.sample(b"0123456789", 10)))
    variants = [q.translate(digits) for q in queries]
    by_key: dict[bytes, bytes] = {}
    for query in queries + variants:
        fp = fingerprint_bytes(query)
        assert by_key.setdefault(cache_key(query), fp) == fp, query
    # Where pt returns text early, digits count and so the query is its own key.
    assert cache_key(b"call p1(2)") != cache_key(b"call p2(2)")
    assert cache_key(b"call p1(2)") == cache_key(b"CALL p1(7, 'x')")  # pt keeps "call p1"
    assert (
        cache_key(b"administrator command: Binlog Dump 1")
        == b"administrator command: Binlog Dump 1"
    )
    assert cache_key(b"select 12 from t3") == cache_key(b"select 99 from t8")
