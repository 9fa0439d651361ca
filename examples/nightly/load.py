"""Load one day of raw events with a heavy-tailed (Zipf) type distribution, keeping the
ETL's cache table of row counts as it goes, as the origin story's loader did.

    python3 examples/nightly/load.py --defaults-file primary.cnf [--rows 1000000]
        [--types 96] [--zipf 1.3] [--day YYYY-MM-DD] [--seed 7]

Creates the schema (schema.sql) if needed, replaces the day's events and counts
(and drops its summaries, which no longer match), and prints the distribution. The k-th most common type gets a share proportional
to 1 / k**zipf; the catalog runs types in alphabetical order (FIFO), which says
nothing about their size.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import tempfile
from pathlib import Path

from govern.connection import connect, resolve_settings

HERE = Path(__file__).resolve().parent
PLATFORMS = ("web", "ios", "android")
EVENTS = (
    "page_view", "ad_impression", "scroll", "click", "api_call", "video_play", "search",
    "add_to_cart", "login", "notification_open", "like", "share", "comment", "video_pause",
    "video_complete", "download", "upload", "error", "email_open", "email_click", "rating",
    "review", "wishlist_add", "coupon_apply", "checkout_start", "purchase", "refund",
    "signup", "subscription_start", "subscription_cancel", "invite_sent", "profile_update",
)  # fmt: skip
BATCH = 250_000


def type_names(count: int) -> list[str]:
    names = [f"{p}.{e}" for e in EVENTS for p in PLATFORMS]  # most common first
    if count > len(names):
        raise SystemExit(f"--types: at most {len(names)}")
    return names[:count]


def zipf_shares(names: list[str], exponent: float) -> dict[str, float]:
    """Rank k (in the order of ``names``: common events first) gets 1 / k**exponent."""
    weights = [1 / (rank**exponent) for rank in range(1, len(names) + 1)]
    total = sum(weights)
    return {name: w / total for name, w in zip(names, weights, strict=True)}


def run_schema(cursor: object) -> None:
    text = "\n".join(
        line for line in (HERE / "schema.sql").read_text().splitlines() if not line.startswith("--")
    )
    for statement in (s.strip() for s in text.split(";")):
        if statement:
            cursor.execute(statement)  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--defaults-file", required=True, help="option file of the primary")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--types", type=int, default=96)
    parser.add_argument("--zipf", type=float, default=1.3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--day", default=str(datetime.date.today() - datetime.timedelta(days=1)))
    args = parser.parse_args()
    day = datetime.date.fromisoformat(args.day)
    shares = zipf_shares(type_names(args.types), args.zipf)
    names, cumulative, running = list(shares), [], 0.0
    for name in names:
        running += shares[name]
        cumulative.append(running)
    rng = random.Random(args.seed)
    conn = connect(resolve_settings(defaults_file=args.defaults_file), local_infile=True)
    with conn.cursor() as cur:
        run_schema(cur)
        cur.execute(
            "DELETE FROM nightly.events WHERE ts >= %s AND ts < %s + INTERVAL 1 DAY", (day, day)
        )
        for table in ("row_counts", "summary_hourly", "daily_totals"):  # a reload redoes the day
            cur.execute(f"DELETE FROM nightly.{table} WHERE day = %s", (day,))
        loaded = 0
        while loaded < args.rows:
            n = min(BATCH, args.rows - loaded)
            types = rng.choices(names, cum_weights=cumulative, k=n)
            counts: dict[str, int] = {}
            with tempfile.NamedTemporaryFile("w", suffix=".tsv", delete=False) as batch:
                for kind in types:
                    counts[kind] = counts.get(kind, 0) + 1
                    second = rng.randrange(86400)
                    value = 0 if rng.random() < 0.02 else round(rng.random() * 200, 2)
                    batch.write(
                        f"{day} {second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}\t"
                        f"{kind}\t{rng.randrange(1, 200_000)}\t{value}\n"
                    )
            try:
                cur.execute(
                    f"LOAD DATA LOCAL INFILE '{batch.name}' INTO TABLE nightly.events"
                    " (ts, type, user_id, value)"
                )
            finally:
                os.unlink(batch.name)
            # the ETL's cache table: counts kept up to date while loading
            cur.executemany(
                "INSERT INTO nightly.row_counts (day, type, approx_rows) VALUES (%s, %s, %s)"
                " ON DUPLICATE KEY UPDATE approx_rows = approx_rows + VALUES(approx_rows)",
                [(day, kind, c) for kind, c in counts.items()],
            )
            loaded += n
        cur.execute("ANALYZE TABLE nightly.events")
        cur.execute(
            "SELECT type, approx_rows FROM nightly.row_counts WHERE day = %s ORDER BY approx_rows DESC",
            (day,),
        )
        rows = cur.fetchall()
    conn.close()
    total = sum(int(r[1]) for r in rows)
    top = ", ".join(f"{t} {int(n) / total:.1%}" for t, n in rows[:3])
    print(
        f"loaded {total:,} events of {len(rows)} types for {day}: largest {top};"
        f" smallest {rows[-1][0]} {int(rows[-1][1]):,} rows"
    )


if __name__ == "__main__":
    main()
