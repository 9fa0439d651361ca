//! Shared by `tests/total.rs` and the `total` fuzz target: a log digested whole equals
//! the same log cut into ranges merged by `total.rs` (every class frozen after each merge),
//! also with filters, whose ranges defer their first events until the context before them
//! is known (the runner digests that head again with it and merges it first).

use govern_native::filemap::Bytes;
use govern_native::range::{digest_range, Filters, RangeOptions};
use govern_native::records::Separators;
use govern_native::time::normalize_time;
use govern_native::total::Total;

#[allow(clippy::type_complexity)]
fn summary(t: &Total) -> (u64, u64, u64, u64, Vec<(Vec<u8>, u64, i128, u64, u64)>, u64, u64, Vec<(Vec<u8>, u64)>) {
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
    (t.events, t.no_statement, t.filtered, t.malformed, classes, other.0, other.1, minutes)
}

/// `--since` the middle of the log's own `# Time:` values (or a date before any).
fn middle_time(data: &[u8]) -> Vec<u8> {
    let mut times: Vec<Vec<u8>> = data
        .split(|&b| b == b'\n')
        .filter_map(|line| line.strip_prefix(b"# Time: "))
        .map(|raw| normalize_time(raw).as_bytes().to_vec())
        .collect();
    times.sort();
    times.get(times.len() / 2).cloned().unwrap_or_else(|| b"2000-01-01 00:00:00".to_vec())
}

/// Panics unless `data` cut every `step` records and merged equals `data` whole: events,
/// classes, counts, Query_time sums, runs and calls in runs, minutes, malformed and
/// filtered events. `filtering`: 0 none, 1 `--since` the middle time, 2 a condition on
/// db (even length) and on the fingerprint (length not a multiple of 3).
pub fn check(data: &[u8], step: usize, filtering: u8) {
    let n = data.len();
    let since = middle_time(data);
    let keep_event =
        |db: Option<&[u8]>, _: Option<&[u8]>, _: Option<&[u8]>| db.is_some_and(|d| d.len().is_multiple_of(2));
    let keep_class = |fp: &[u8]| !fp.len().is_multiple_of(3);
    let filters = Filters { needs_db: true, keep_event: Some(&keep_event), keep_class: Some(&keep_class) };
    let options = |known: bool| RangeOptions {
        max_classes: usize::MAX,
        context_known: known,
        since: (filtering == 1).then_some(&since[..]),
        filters: (filtering == 2).then_some(&filters),
        ..Default::default()
    };
    let mut whole = Total::new(usize::MAX);
    whole.add(digest_range(Bytes::Memory(data), 0, n, n, &options(true)), 0, 0, None);
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
        let stop = stop.max(start + 1).min(n);
        let r = digest_range(Bytes::Memory(data), start, stop, n, &options(start == 0));
        if r.deferred_events > 0 {
            let ts = pieces.last_ts.map(|t| t.as_bytes().to_vec());
            let db = pieces.last_db.map(|d| pieces.texts.get(d).to_vec());
            let head = RangeOptions {
                context_ts: ts.as_deref(),
                context_db: db.as_deref(),
                max_events: Some(r.deferred_events),
                ..options(true)
            };
            pieces.add(digest_range(Bytes::Memory(data), start, stop, n, &head), 0, lines, None);
        }
        let (end, newlines) = (r.end, r.newlines);
        pieces.add(r, 0, lines, None);
        lines += newlines;
        start = end.max(stop);
    }
    pieces.finish();
    assert_eq!(summary(&whole), summary(&pieces));
}
