//! Any bytes as a slow log through the engine's range digest (`range.rs`): no panic, and
//! two ranges cut at a record boundary (the second redone from where the first reader
//! stopped, as the runner does) count the same events, lines and classes as one range.
#![no_main]

use govern_native::filemap::Bytes;
use govern_native::range::{digest_range, RangeOptions};
use govern_native::records::Separators;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let known = RangeOptions { max_classes: usize::MAX, context_known: true, server_salt: 7, ..Default::default() };
    let unknown = RangeOptions { context_known: false, ..known };
    let n = data.len();
    let whole = digest_range(Bytes::Memory(data), 0, n, n, &known);
    assert_eq!(whole.end, n);
    let mid = Separators::default().next_boundary(data, n / 2).unwrap_or(n);
    let first = digest_range(Bytes::Memory(data), 0, mid, n, &known);
    let start = first.end.max(mid);
    let second = digest_range(Bytes::Memory(data), start, n, n, &unknown);
    assert_eq!(first.events + second.events, whole.events);
    assert_eq!(first.no_statement + second.no_statement, whole.no_statement);
    assert_eq!(first.malformed.len() + second.malformed.len(), whole.malformed.len());
    assert_eq!(first.newlines + second.newlines, whole.newlines);
    let count = |r: &govern_native::range::RangeDigest| r.classes.iter().map(|c| c.1.count).sum::<u64>();
    assert_eq!(count(&first) + count(&second), count(&whole));
    let capped = RangeOptions { max_classes: 1, ..known };
    let one = digest_range(Bytes::Memory(data), 0, n, n, &capped);
    assert_eq!(one.events, whole.events);
    assert!(one.classes.len() <= 1);
});
