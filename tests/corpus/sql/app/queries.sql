-- Queries lifted from the application (PyMySQL placeholders), one per line.
SELECT id, email, name, country, status FROM users WHERE id = %s;
SELECT id, type, ts, amount FROM events WHERE user_id = %s AND ts BETWEEN %s AND %s ORDER BY ts DESC LIMIT 20;
INSERT INTO events (user_id, type, ts, amount, payload) VALUES (%s, %s, NOW(), %s, %s);
SELECT SQL_CACHE name FROM users WHERE id = %(user_id)s;  -- govern: ignore[QC005]
SELECT SQL_CACHE n_events, total FROM user_summary WHERE user_id = %s;
SELECT id, status FROM users WHERE id = %s FOR UPDATE;
SELECT SQL_CACHE id, status FROM users WHERE id = %s FOR UPDATE;  -- govern: ignore[QC005]
SELECT u.country, COUNT(*) FROM users u
  JOIN (SELECT SQL_CACHE user_id FROM user_summary WHERE total > 100) AS big ON big.user_id = u.id
 GROUP BY u.country;
/* app=checkout */ SELECT id FROM notes WHERE blob_data = _binary'abc' LIMIT 1;
SELECT id, name FROM users WHERE email = 'it''s@example.com' -- the ' in a comment is fine
;
SELECT name FROM users WHERE id = 1 AND (status = 1;
