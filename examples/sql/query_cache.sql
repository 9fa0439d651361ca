-- Query-cache policy on a shop schema, read with examples/sql/govern.toml
-- (target mariadb-10.11; SQL_CACHE allowed, and demanded, on *_summary tables only).
-- Each statement says which rule it shows firing (fires) or passing (passes).

-- passes: a summary read, cached on demand
SELECT SQL_CACHE day, SUM(cnt), SUM(total) FROM daily_summary
 WHERE day BETWEEN '2025-01-01' AND '2025-01-31' GROUP BY day;

-- fires QC001: NOW() is frozen in the cached result on MariaDB
SELECT SQL_CACHE country, COUNT(*) FROM user_summary WHERE built_at > NOW() - INTERVAL 1 HOUR;

-- fires QC001: the result for the first @uid is served for every @uid
SELECT SQL_CACHE n_events FROM user_summary WHERE user_id = @uid;

-- fires QC002: SQL_CACHE in a derived table is error 1234
SELECT s.day FROM (SELECT SQL_CACHE day FROM daily_summary) AS s;

-- fires QC004: no table, never stored
SELECT SQL_CACHE 1 + 1;

-- fires QC005: SQL_CACHE on a table outside the allowlist (users is written all day)
SELECT SQL_CACHE id, email FROM users WHERE id = 42;

-- fires QC005 (demand): an allowlisted read without SQL_CACHE
SELECT day, cnt FROM daily_summary WHERE day = '2025-01-01';

-- passes: not allowlisted, not cached
SELECT id, email FROM users WHERE id = 42;

-- passes: SQL_NO_CACHE opts out explicitly
SELECT SQL_NO_CACHE day, cnt FROM daily_summary ORDER BY day DESC LIMIT 7;
