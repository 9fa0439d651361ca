#!/bin/bash
# job.sh TYPE: build one event type's hourly summary of one day.
#
# govern schedule runs it with the worker it picked in the environment: it reads on
# that worker (a replica, $GOVERN_WORKER_CNF) and writes the few result rows on the
# primary ($GOVERN_PRIMARY_CNF). Both are 0600 option files: no password in argv.
# The catalog runs it under `govern run` in session mode (wrap, opts_out): the heavy
# read's session runs $GOVERN_INIT_COMMAND, so its slow queries stay out of the
# replica's slow log while every other client's stay in.
#
# The day is the one before the night's date ($GOVERN_DATE; SUMMARY_DAY overrides).
set -euo pipefail

type=${1:?usage: job.sh TYPE}
here=$(cd "$(dirname "$0")" && pwd)
night=${GOVERN_DATE:-${GOVERN_SCHEDULED_FOR:-$(date -Iseconds)}}
day=${SUMMARY_DAY:-$(date -d "${night:0:10} -1 day" +%F)}
client=$(command -v mariadb || command -v mysql)

sql=$here/sql/summary.sql
base=${type##*.}  # web.purchase -> purchase: a type family may have its own SQL
[ -f "$here/sql/$base.sql" ] && sql=$here/sql/$base.sql

# $GOVERN_INIT_COMMAND is set by `govern run` in session mode (the catalog's wrap).
opt_out=()
if [ -n "${GOVERN_INIT_COMMAND:-}" ]; then
  opt_out=(--init-command="$GOVERN_INIT_COMMAND")
else
  echo "job.sh: not under govern run in session mode: the read is slow-logged" >&2
fi

{ printf "SET @type = '%s', @day = '%s';\n" "$type" "$day"; cat "$sql"; } |
  "$client" --defaults-file="$GOVERN_WORKER_CNF" "${opt_out[@]}" --batch --skip-column-names |
  "$client" --defaults-file="$GOVERN_PRIMARY_CNF" --local-infile=1 --execute="
    DELETE FROM nightly.summary_hourly WHERE day = '$day' AND type = '$type';
    LOAD DATA LOCAL INFILE '/dev/stdin' INTO TABLE nightly.summary_hourly;"
