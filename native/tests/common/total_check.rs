//! Shared by `tests/total.rs` and the `total` fuzz target: a log digested whole equals
//! the same log cut into ranges merged by `total.rs` (every class frozen after each merge).

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

/// Panics unless `data` cut every `step` records and merged equals `data` whole: events,
/// classes, counts, Query_time sums, runs and calls in runs, minutes, malformed events.
pub fn check(data: &[u8], step: usize) {
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
