-- Purchases get their own summary: value is revenue, and a user counts once per hour
-- only if they paid something (zero-value purchases are test orders).
-- Same columns as summary.sql, so job.sh loads it the same way.
SELECT @day AS day,
       @type AS type,
       HOUR(ts) AS hour,
       COUNT(*) AS events,
       COUNT(DISTINCT IF(value > 0, user_id, NULL)) AS users,
       SUM(value) AS value_sum,
       MAX(value) AS value_max
FROM nightly.events
WHERE type = @type
  AND ts >= @day AND ts < @day + INTERVAL 1 DAY
GROUP BY HOUR(ts)
ORDER BY hour;
