//! Ranges merged by `total.rs` equal the whole log digested as one range: every corpus
//! log, the odd logs and the fuzzers' finds, cut every 1 to 4 records, each range after
//! the first with an unknown context, classes frozen after every merge. (The `total`
//! fuzz target checks the same on any bytes.) Also with filters: `--since` the log's
//! middle time, conditions on db and fingerprint (deferred heads digested again).
mod common;
#[path = "common/total_check.rs"]
mod total_check;

use total_check::check;

#[test]
fn merged_ranges_equal_the_whole() {
    let mut logs: Vec<(String, Vec<u8>)> = common::regressions();
    for seed in 0..20 {
        logs.push((format!("odd log {seed}"), common::odd_log(seed)));
    }
    if let Some(files) = common::corpus_files() {
        for path in files {
            logs.push((path.display().to_string(), common::read_log(&path)));
        }
    }
    for (name, data) in &logs {
        for step in 1..=4 {
            for filtering in 0..3 {
                let outcome = std::panic::catch_unwind(|| check(data, step, filtering));
                assert!(outcome.is_ok(), "{name}, cut every {step} records, filters {filtering}");
            }
        }
    }
}
