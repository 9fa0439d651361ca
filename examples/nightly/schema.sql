-- The example's schema: one day of raw events, the ETL's cache table of row counts,
-- and the summaries the nightly jobs build. Run it on the primary (it replicates).
CREATE DATABASE IF NOT EXISTS nightly;

-- Raw rows, loaded during the day. Event types follow a heavy-tailed (Zipf) distribution:
-- a few types have most of the rows, most types have few.
CREATE TABLE IF NOT EXISTS nightly.events (
    id      BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    ts      DATETIME NOT NULL,
    type    VARCHAR(64) NOT NULL,
    user_id INT UNSIGNED NOT NULL,
    value   DECIMAL(10, 2) NOT NULL,
    KEY type_ts (type, ts)
) ENGINE = InnoDB;

-- The cache table the ETL keeps while loading: approximate rows per type and day.
-- govern's sizing query reads it to order the summary builds.
CREATE TABLE IF NOT EXISTS nightly.row_counts (
    day         DATE NOT NULL,
    type        VARCHAR(64) NOT NULL,
    approx_rows BIGINT UNSIGNED NOT NULL,
    PRIMARY KEY (day, type)
) ENGINE = InnoDB;

-- What the nightly jobs build: one row per day, type and hour.
CREATE TABLE IF NOT EXISTS nightly.summary_hourly (
    day       DATE NOT NULL,
    type      VARCHAR(64) NOT NULL,
    hour      TINYINT UNSIGNED NOT NULL,
    events    BIGINT UNSIGNED NOT NULL,
    users     BIGINT UNSIGNED NOT NULL,
    value_sum DECIMAL(16, 2) NOT NULL,
    value_max DECIMAL(10, 2) NOT NULL,
    PRIMARY KEY (day, type, hour)
) ENGINE = InnoDB;

-- Built last, from the hourly summaries (the job that depends on all of them).
CREATE TABLE IF NOT EXISTS nightly.daily_totals (
    day       DATE NOT NULL,
    type      VARCHAR(64) NOT NULL,
    events    BIGINT UNSIGNED NOT NULL,
    value_sum DECIMAL(18, 2) NOT NULL,
    PRIMARY KEY (day, type)
) ENGINE = InnoDB;
