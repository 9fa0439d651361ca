#!/bin/bash
# totals.sh: daily totals per type from the hourly summaries, on the primary.
# The catalog runs it after every summary job (depends_on = ["summary"]).
set -euo pipefail
night=${GOVERN_DATE:-${GOVERN_SCHEDULED_FOR:-$(date -Iseconds)}}
day=${SUMMARY_DAY:-$(date -d "${night:0:10} -1 day" +%F)}
client=$(command -v mariadb || command -v mysql)
"$client" --defaults-file="$GOVERN_PRIMARY_CNF" --execute="
  REPLACE INTO nightly.daily_totals
  SELECT day, type, SUM(events), SUM(value_sum) FROM nightly.summary_hourly
  WHERE day = '$day' GROUP BY day, type;"
