-- The same policies on MySQL 8.0 (mysql8/govern.toml).

-- fires QC003: MySQL 8.0 has no query cache; SQL_CACHE is a syntax error
SELECT SQL_CACHE day, cnt FROM daily_summary WHERE day = '2025-01-01';

-- fires QC003: the variable does not exist on 8.0
SET GLOBAL query_cache_type = DEMAND;

-- passes QC003: a plain read
SELECT day, cnt FROM daily_summary WHERE day = '2025-01-01';

-- fires BATCH005: VALUES() is deprecated from 8.0.20 (warning 1287)
INSERT INTO user_summary (user_id, n_events) VALUES (1, 3), (2, 1)
ON DUPLICATE KEY UPDATE n_events = VALUES(n_events);

-- passes BATCH005 and BATCH006: the row alias, MySQL 8.0.19+
INSERT INTO user_summary (user_id, n_events) VALUES (1, 3), (2, 1) AS new
ON DUPLICATE KEY UPDATE n_events = new.n_events;
