//! Any bytes as a slow log: parsing and digesting must not panic, and digesting in
//! parts (cut at every record boundary), in a stream of small pieces, or whole must
//! give the same digest.
#![no_main]

use govern_native::parallel::{digest_parts, split_points};
use govern_native::stream::Stream;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let whole = digest_parts(data, &[0, data.len()], 1, usize::MAX);
    let cut = digest_parts(data, &split_points(data, 1), 2, usize::MAX);
    assert_eq!(whole.events, cut.events);
    assert_eq!(whole.no_query, cut.no_query);
    assert_eq!(whole.classes.fingerprints, cut.classes.fingerprints);
    assert_eq!(whole.classes.stats, cut.classes.stats);
    let mut s = Stream::new(usize::MAX, 64);
    for piece in data.chunks(7) {
        s.feed(piece);
    }
    let streamed = s.finish();
    assert_eq!(whole.classes.fingerprints, streamed.classes.fingerprints);
    assert_eq!(whole.classes.stats, streamed.classes.stats);
    let capped = digest_parts(data, &split_points(data, 1), 2, 1);
    assert_eq!(capped.events, whole.events);
});
