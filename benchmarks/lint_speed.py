"""How fast govern lint is, side by side with sqlfluff (the reference SQL linter).

Generates three inputs (deterministic): a large mixed file modelled on the shop
workload (point and range reads, SQL_CACHE summary reads, joins, batched upserts
of ~100 rows, single-row writes, migrations, stored procedures with loops), a
file of 10,000 single-row INSERTs, and one 10,000-row INSERT. Runs
``govern lint`` on each as a user would (a new process, JSON output) and
sqlfluff 4 (``--dialect mysql``, large-file limit off) on the inputs it can
finish in reasonable time, then prints statements per second and the ratio.

    .venv/bin/python benchmarks/lint_speed.py [--statements 50000] [--sqlfluff-statements 1000]

sqlfluff is not a govern dependency: ``pip install sqlfluff`` into the same
environment to get its figures (the script says when it is missing).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COUNTRIES = ["US", "DE", "FR", "JP", "BR", "IN", "GB", "CN", "ES", "IT"]
TYPES = ["view", "click", "cart", "purchase", "refund", "login"]


def _day(r: random.Random) -> str:
    return f"2025-{r.randint(1, 12):02d}-{r.randint(1, 28):02d}"


def mixed_statement(r: random.Random) -> str:
    """One statement of a realistic application/migration mix."""
    k = r.random()
    uid = r.randint(1, 100_000)
    if k < 0.20:
        return f"SELECT id, email, name, country, status FROM users WHERE id = {uid};"
    if k < 0.30:
        return (
            f"SELECT id, type, ts, amount FROM events WHERE user_id = {uid} AND ts BETWEEN "
            f"'{_day(r)} 00:00:00' AND '2025-12-31 23:59:59' ORDER BY ts DESC LIMIT 20;"
        )
    if k < 0.38:
        return (
            f"SELECT SQL_CACHE day, SUM(cnt), SUM(total) FROM daily_summary WHERE day BETWEEN "
            f"'2025-01-01' AND '{_day(r)}' GROUP BY day;"
        )
    if k < 0.46:
        return (
            "SELECT u.country, e.type, COUNT(*) AS n\n  FROM events e\n  JOIN users u ON u.id = e.user_id\n"
            f" WHERE e.ts >= '{_day(r)}' AND u.country = '{r.choice(COUNTRIES)}' -- report\n"
            " GROUP BY u.country, e.type\n ORDER BY n DESC\n LIMIT 20;"
        )
    if k < 0.58:
        return (
            "INSERT INTO events (user_id, type, ts, amount) VALUES "
            f"({uid}, '{r.choice(TYPES)}', NOW(), {r.randint(0, 99999) / 100});"
        )
    if k < 0.66:
        return f"UPDATE users SET status = {r.randint(0, 1)} WHERE id = {uid};"
    if k < 0.70:
        return f"DELETE FROM notes WHERE created_at < '{_day(r)}' ORDER BY id LIMIT 1000;"
    if k < 0.72:
        rows = ", ".join(
            f"({uid + i}, {r.randint(1, 50)}, {r.randint(0, 99999) / 100})" for i in range(100)
        )
        return (
            f"INSERT INTO user_summary (user_id, n_events, total) VALUES {rows}\n"
            "ON DUPLICATE KEY UPDATE n_events = VALUE(n_events), total = VALUE(total);"
        )
    if k < 0.75:
        return (
            "INSERT INTO daily_summary (day, type, cnt, total)\nSELECT DATE(ts), type, COUNT(*), SUM(amount)\n"
            f"  FROM events WHERE ts >= '{_day(r)}' AND ts < '{_day(r)}' + INTERVAL 1 DAY\n"
            " GROUP BY DATE(ts), type\nON DUPLICATE KEY UPDATE cnt = VALUE(cnt), total = VALUE(total);"
        )
    if k < 0.80:
        return (
            f"SELECT id, name FROM users WHERE id IN (SELECT user_id FROM user_summary WHERE total > {uid % 5000}) "
            "ORDER BY id LIMIT 100;"
        )
    if k < 0.84:
        return f"SELECT SQL_CACHE country, users FROM country_summary WHERE country = '{r.choice(COUNTRIES)}';"
    if k < 0.87:
        return f"ALTER TABLE t{uid % 50} ADD COLUMN c{uid} INT NULL DEFAULT NULL, ALGORITHM=INPLACE, LOCK=NONE;"
    if k < 0.90:
        return (
            f"CREATE TABLE IF NOT EXISTS archive_{uid % 1000} (\n  id BIGINT UNSIGNED NOT NULL,\n"
            "  user_id INT UNSIGNED NOT NULL,\n  amount DECIMAL(10,2) NOT NULL DEFAULT 0,\n"
            "  PRIMARY KEY (id), KEY k_user (user_id)\n) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;"
        )
    if k < 0.91:
        return (
            f"CREATE PROCEDURE p_copy_{uid}()\nBEGIN\n  DECLARE done INT DEFAULT 0;\n  DECLARE v INT;\n"
            "  DECLARE c CURSOR FOR SELECT id FROM users;\n"
            "  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;\n  OPEN c;\n  l: LOOP\n"
            "    FETCH c INTO v;\n    IF done THEN LEAVE l; END IF;\n"
            "    INSERT INTO users_copy (id) VALUES (v);\n  END LOOP;\n  CLOSE c;\nEND;"
        )
    if k < 0.95:
        return f"SELECT id, status FROM users WHERE id = {uid} FOR UPDATE;"
    return f"SET SESSION sql_mode = '{r.choice(['STRICT_TRANS_TABLES', 'TRADITIONAL', ''])}';"


def write_inputs(directory: Path, statements: int) -> dict[str, tuple[Path, int]]:
    r = random.Random(20261121)
    mixed = directory / "mixed.sql"
    mixed.write_text("\n".join(mixed_statement(r) for _ in range(statements)) + "\n")
    singles = directory / "single_row_inserts.sql"
    singles.write_text(
        "".join(
            f"INSERT INTO events (user_id, type, amount) VALUES ({i}, '{r.choice(TYPES)}', {i % 997 / 10});\n"
            for i in range(10_000)
        )
    )
    big = directory / "insert_10000_rows.sql"
    rows = ",\n".join(f"({i}, '{r.choice(TYPES)}', {i % 997 / 10})" for i in range(10_000))
    big.write_text(f"INSERT INTO events (user_id, type, amount) VALUES\n{rows};\n")
    return {
        "mixed": (mixed, statements),
        "single_row_inserts": (singles, 10_000),
        "insert_10000_rows": (big, 1),
    }


def run_govern(path: Path) -> tuple[float, dict]:
    govern = shutil.which("govern", path=str(Path(sys.executable).parent)) or "govern"
    started = time.perf_counter()
    proc = subprocess.run(
        [govern, "lint", str(path), "--format", "json", "--target", "mariadb-10.11"],
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        raise SystemExit(f"govern lint failed ({proc.returncode}): {proc.stderr.strip()}")
    return elapsed, json.loads(proc.stdout)


def run_sqlfluff(path: Path, timeout: float) -> float | None:
    sqlfluff = shutil.which("sqlfluff", path=str(Path(sys.executable).parent))
    if sqlfluff is None:
        return None
    config = path.parent / ".sqlfluff"
    config.write_text("[sqlfluff]\ndialect = mysql\nlarge_file_skip_byte_limit = 0\n")
    started = time.perf_counter()
    try:
        subprocess.run(
            [sqlfluff, "lint", str(path)],
            capture_output=True,
            check=False,
            timeout=timeout,
            cwd=path.parent,
        )
    except subprocess.TimeoutExpired:
        return float("nan")
    return time.perf_counter() - started


def head(path: Path, statements: int, out: Path) -> Path:
    """The first ``statements`` statements of a generated file (one per line or block)."""
    text = path.read_text()
    parts = text.split(";\n")[:statements]
    out.write_text(";\n".join(parts) + ";\n")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--statements", type=int, default=50_000, help="statements in the mixed file"
    )
    parser.add_argument(
        "--sqlfluff-statements", type=int, default=1_000, help="statements sqlfluff gets"
    )
    parser.add_argument("--sqlfluff-timeout", type=float, default=300.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="govern-lint-bench-"))
    try:
        inputs = write_inputs(work, args.statements)
        print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
        print(
            f"{'input':<22} {'statements':>10} {'MB':>6} {'govern s':>9} {'stmt/s':>9} {'findings':>9}"
        )
        for name, (path, count) in inputs.items():
            elapsed, document = run_govern(path)
            assert document["statements"] == count, (name, document["statements"])
            size = path.stat().st_size / 1e6
            print(
                f"{name:<22} {count:>10,} {size:>6.2f} {elapsed:>9.2f} {count / elapsed:>9,.0f} "
                f"{len(document['findings']):>9,}"
            )
        print()
        n = args.sqlfluff_statements
        (work / "sample").mkdir()
        sample = head(inputs["mixed"][0], n, work / "sample" / "mixed_sample.sql")
        singles = head(inputs["single_row_inserts"][0], n, work / "sample" / "singles_sample.sql")
        print(f"side by side on {n:,}-statement samples (one process each, startup included):")
        print(
            f"{'sample':<22} {'govern s':>9} {'sqlfluff s':>11} {'govern stmt/s':>14} {'sqlfluff stmt/s':>16} {'ratio':>7}"
        )
        for label, path in (("mixed", sample), ("single_row_inserts", singles)):
            g, _ = run_govern(path)
            s = run_sqlfluff(path, args.sqlfluff_timeout)
            if s is None:
                print(f"{label:<22} {g:>9.2f}  sqlfluff not installed (pip install sqlfluff)")
                continue
            print(
                f"{label:<22} {g:>9.2f} {s:>11.2f} {n / g:>14,.0f} {n / s:>16,.0f} {s / g:>6.0f}x"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
