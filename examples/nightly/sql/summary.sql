-- One type's hourly summary for one day, read on the worker (a replica).
-- job.sh sets @type and @day first and loads the rows into nightly.summary_hourly
-- on the primary. Its cost grows with the type's rows: the cache table predicts it.
SELECT @day AS day,
       @type AS type,
       HOUR(ts) AS hour,
       COUNT(*) AS events,
       COUNT(DISTINCT user_id) AS users,
       SUM(value) AS value_sum,
       MAX(value) AS value_max
FROM nightly.events
WHERE type = @type
  AND ts >= @day AND ts < @day + INTERVAL 1 DAY
GROUP BY HOUR(ts)
ORDER BY hour;
