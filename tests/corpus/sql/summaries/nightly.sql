-- Nightly summary build (run by govern schedule), then the reports that read it.
SET SESSION sql_log_bin = 1;

INSERT INTO daily_summary (day, type, cnt, total)
SELECT DATE(ts), type, COUNT(*), SUM(amount)
  FROM events
 WHERE ts >= CURRENT_DATE - INTERVAL 1 DAY AND ts < CURRENT_DATE
 GROUP BY DATE(ts), type
ON DUPLICATE KEY UPDATE cnt = VALUE(cnt), total = VALUE(total);

REPLACE INTO country_summary (country, users, active, built_at)
SELECT country, COUNT(*), SUM(status = 1), NOW() FROM users GROUP BY country;

-- Reports: summary reads are cached on demand.
SELECT SQL_CACHE day, SUM(cnt) AS cnt, SUM(total) AS total
  FROM daily_summary
 WHERE day BETWEEN '2025-01-01' AND '2025-01-31'
 GROUP BY day
 ORDER BY day;

SELECT SQL_CACHE country, users, active FROM country_summary ORDER BY users DESC;

-- Forgot the hint: with DEMAND this read is never cached.
SELECT type, SUM(cnt) FROM daily_summary WHERE day >= '2025-01-01' GROUP BY type;

-- "Today so far" with SQL_CACHE: frozen at the first run on MariaDB.
SELECT SQL_CACHE type, cnt FROM daily_summary WHERE day = CURDATE();

-- The raw table is written all day: caching it only churns the cache.
SELECT SQL_CACHE type, COUNT(*) FROM events WHERE ts >= '2025-01-01' GROUP BY type;

WITH monthly AS (
  SELECT DATE_FORMAT(day, '%Y-%m') AS month, SUM(total) AS total FROM daily_summary GROUP BY 1
)
SELECT SQL_CACHE month, total FROM monthly ORDER BY month;
