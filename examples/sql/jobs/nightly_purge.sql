-- A nightly job: examples/sql/govern.toml marks jobs/* as batch jobs (BATCH010, BATCH011).

-- fires BATCH010: one DELETE for every old row, one transaction that replicas apply as one
DELETE FROM events WHERE ts < NOW() - INTERVAL 90 DAY;

-- fires BATCH011: the whole table copied in one statement
INSERT INTO events_archive SELECT * FROM events;

-- passes: one chunk by primary-key range, repeated by the job until no row is left
DELETE FROM events WHERE id >= 1 AND id < 5001 AND ts < NOW() - INTERVAL 90 DAY;

-- passes: the same with LIMIT, ordered by the key
DELETE FROM events WHERE ts < NOW() - INTERVAL 90 DAY ORDER BY id LIMIT 5000;

-- passes: the copy in key ranges
INSERT INTO events_archive SELECT * FROM events WHERE id >= 1 AND id < 5001;
