"""``govern collect``: slow-log files, ``mysql.slow_log`` and Performance Schema read
continuously into time buckets of query classes, nothing read twice (docs/collect.md,
docs/design/collect.md)."""
