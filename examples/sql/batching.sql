-- Batching policy, read with examples/sql/govern.toml (target mariadb-10.11).

-- passes: the house style, a multi-row upsert with VALUE()
INSERT INTO user_summary (user_id, n_events, total) VALUES
  (1, 3, 29.90), (2, 1, 5.00), (3, 7, 81.20)
ON DUPLICATE KEY UPDATE n_events = n_events + VALUE(n_events), total = total + VALUE(total);

-- fires BATCH004: the incoming values repeated per key in the update clause
INSERT INTO user_summary (user_id, n_events) VALUES (1, 3), (2, 1), (3, 7)
ON DUPLICATE KEY UPDATE n_events = IF(user_id = 1, 3, IF(user_id = 2, 1, IF(user_id = 3, 7, n_events)));

-- fires BATCH006: MariaDB has no row alias (error 1064)
INSERT INTO user_summary (user_id, n_events) VALUES (4, 2) AS new
ON DUPLICATE KEY UPDATE n_events = new.n_events;

-- passes: a summary build, set-based
INSERT INTO daily_summary (day, type, cnt, total)
SELECT DATE(ts), type, COUNT(*), SUM(amount) FROM events
 WHERE ts >= '2025-01-01' AND ts < '2025-01-02'
 GROUP BY DATE(ts), type
ON DUPLICATE KEY UPDATE cnt = VALUE(cnt), total = VALUE(total);

-- fires BATCH008: one row per statement (min-run = 5 in govern.toml)
INSERT INTO events (user_id, type, amount) VALUES (11, 'view', 0);
INSERT INTO events (user_id, type, amount) VALUES (12, 'view', 0);
INSERT INTO events (user_id, type, amount) VALUES (13, 'click', 0);
INSERT INTO events (user_id, type, amount) VALUES (14, 'cart', 19.99);
INSERT INTO events (user_id, type, amount) VALUES (15, 'purchase', 19.99);

-- passes: the same rows as one statement
INSERT INTO events (user_id, type, amount) VALUES
  (11, 'view', 0), (12, 'view', 0), (13, 'click', 0), (14, 'cart', 19.99), (15, 'purchase', 19.99);
