-- Batch size limits (bounds shrunk by limits/govern.toml).

-- fires BATCH001: 16 placeholders above the limit of 12 (65,535 on a real server: error 1390)
INSERT INTO events (user_id, type, amount, ts) VALUES (?, ?, ?, ?), (?, ?, ?, ?), (?, ?, ?, ?), (?, ?, ?, ?);

-- passes BATCH001: 12 placeholders
INSERT INTO events (user_id, type, amount) VALUES (?, ?, ?), (?, ?, ?), (?, ?, ?), (?, ?, ?);

-- fires BATCH002: this statement is more than half of a 512-byte max_allowed_packet
INSERT INTO notes (user_id, note) VALUES
  (1, 'Customer called about order 1001: the parcel arrived damaged, a replacement was sent.'),
  (2, 'Customer asked to change the delivery address of order 1002 to the office address.'),
  (3, 'Refund for order 1003 approved after the return was received and checked.');

-- passes BATCH002: a short statement
INSERT INTO notes (user_id, note) VALUES (4, 'ok');

-- fires BATCH003: 5 rows above max-rows = 4
INSERT INTO daily_summary (day, type, cnt) VALUES
  ('2025-01-01', 'view', 10), ('2025-01-02', 'view', 12), ('2025-01-03', 'view', 9),
  ('2025-01-04', 'view', 14), ('2025-01-05', 'view', 11);

-- passes BATCH003: 4 rows
INSERT INTO daily_summary (day, type, cnt) VALUES
  ('2025-01-06', 'view', 10), ('2025-01-07', 'view', 12), ('2025-01-08', 'view', 9),
  ('2025-01-09', 'view', 14);
