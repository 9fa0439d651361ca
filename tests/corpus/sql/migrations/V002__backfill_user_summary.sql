-- Backfill in key ranges: set-based, idempotent.
INSERT INTO user_summary (user_id, n_events, total, last_ts)
SELECT user_id, COUNT(*), SUM(amount), MAX(ts)
  FROM events
 WHERE user_id BETWEEN 1 AND 50000
 GROUP BY user_id
ON DUPLICATE KEY UPDATE n_events = VALUES(n_events), total = VALUES(total), last_ts = VALUES(last_ts);

-- Hand-written upsert copied from a spreadsheet export: the per-key IF chain.
INSERT INTO user_summary (user_id, n_events, total) VALUES
  (101, 4, 39.60), (102, 1, 9.99), (103, 2, 18.00)
ON DUPLICATE KEY UPDATE
  n_events = IF(user_id = 101, 4, IF(user_id = 102, 1, IF(user_id = 103, 2, n_events))),
  total = CASE user_id WHEN 101 THEN 39.60 WHEN 102 THEN 9.99 WHEN 103 THEN 18.00 ELSE total END;

-- A row alias copied from MySQL 8 documentation: not on MariaDB.
INSERT INTO user_summary (user_id, n_events, total) VALUES (104, 1, 5.00) AS incoming
ON DUPLICATE KEY UPDATE n_events = incoming.n_events, total = incoming.total;
