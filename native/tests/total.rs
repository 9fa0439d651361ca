//! Ranges merged by `total.rs` equal the whole log digested as one range: every corpus
//! log, the odd logs and the fuzzers' finds, cut every 1 to 4 records, each range after
//! the first with an unknown context, classes frozen after every merge. (The `total`
//! fuzz target checks the same on any bytes.)
mod common;

use govern_native::range::{digest_range, RangeOptions};
use govern_native::records::Separators;
use govern_native::total::Total;

#[allow(clippy::type_complexity)]
fn summary(t: &Total) -> (u64, u64, u64, Vec<(Vec<u8>, u64, i128, u64, u64)>, u64, u64, Vec<(Vec<u8>, u64)>) {
    let qt = (0..t.num_names.len() as u32).find(|&i| t.num_names.get(i) == b"Query_time");
    let mut classes: Vec<_> = t
        .classes
        .iter()
        .map(|(fp, slot)| {
            let c = slot.get();
            let sum = qt.and_then(|i| c.nums.get(i as usize)).map_or(0, |s| s.sum());
            (t.fingerprints.get(*fp).to_vec(), c.count, sum, c.runs.runs, c.runs.calls)
        })
        .collect();
    classes.sort();
    let other = t.other.as_ref().map_or((0, 0), |o| (o.runs.runs, o.runs.calls));
    let mut minutes: Vec<_> = t.minutes.iter().map(|(m, v)| (m.as_bytes().to_vec(), v.0)).collect();
    minutes.sort();
    (t.events, t.no_statement, t.malformed, classes, other.0, other.1, minutes)
}

fn check(data: &[u8], step: usize) {
    let n = data.len();
    let options = |known: bool| RangeOptions {
        max_classes: usize::MAX,
        context_ts: None,
        context_db: None,
        context_known: known,
        server_salt: 0,
    };
    let mut whole = Total::new(usize::MAX);
    whole.add(digest_range(data, 0, n, n, &options(true), false), 0, 0, None);
    whole.finish();

    let mut pieces = Total::new(usize::MAX);
    pieces.freeze_above = 0;
    let separators = Separators::default();
    let (mut start, mut lines) = (0, 0);
    while start < n {
        let mut stop = start;
        for _ in 0..step {
            stop = separators.next_boundary(data, stop + 1).unwrap_or(n);
            if stop >= n {
                break;
            }
        }
        let r = digest_range(data, start, stop.max(start + 1).min(n), n, &options(start == 0), false);
        let (end, newlines) = (r.end, r.newlines);
        pieces.add(r, 0, lines, None);
        lines += newlines;
        start = end.max(stop);
    }
    pieces.finish();
    assert_eq!(summary(&whole), summary(&pieces));
}

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
            let outcome = std::panic::catch_unwind(|| check(data, step));
            assert!(outcome.is_ok(), "{name}, cut every {step} records");
        }
    }
}
