//! Digesting a log in parts and merging them in order equals digesting it whole, for
//! every corpus file and many ways of cutting it (tiny parts included), with and
//! without a class cap.

mod common;

use govern_native::aggregate::Kind;
use govern_native::digest::Part;
use govern_native::parallel::{digest_parts, split_points};

fn assert_same(a: &Part, b: &Part, what: &str) {
    assert_eq!(a.events, b.events, "{what}: events");
    assert_eq!(a.no_query, b.no_query, "{what}: no_query");
    assert_eq!((a.malformed, a.first_malformed), (b.malformed, b.first_malformed), "{what}: malformed");
    let texts = |p: &Part| (0..p.texts.len() as u32).map(|i| p.texts.get(i).to_vec()).collect::<Vec<_>>();
    assert_eq!(texts(a), texts(b), "{what}: text values");
    for k in [Kind::Num, Kind::Flag, Kind::Text] {
        assert_eq!(a.attrs.names(k), b.attrs.names(k), "{what}: attributes");
    }
    assert_eq!(a.classes.fingerprints, b.classes.fingerprints, "{what}: classes");
    for (i, (x, y)) in a.classes.stats.iter().zip(&b.classes.stats).enumerate() {
        assert_eq!(x, y, "{what}: class {i} {}", common::latin1(&a.classes.fingerprints[i]));
    }
    assert_eq!(a.classes.other, b.classes.other, "{what}: other");
    assert_eq!(a.classes.other_events, b.classes.other_events, "{what}: other count");
}

#[test]
fn parts_merge_to_the_serial_digest() {
    let Some(files) = common::corpus_files() else { return };
    let mut checked = 0;
    for path in files {
        let log = common::read_log(&path);
        if log.is_empty() || path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        for max_classes in [usize::MAX, 5] {
            let serial = digest_parts(&log, &[0, log.len()], 1, max_classes);
            for size in [1, 700, 4096, 100_000, 1 << 20] {
                let points = split_points(&log, size);
                for threads in [1, 2, 3] {
                    let parts = digest_parts(&log, &points, threads, max_classes);
                    let what = format!("{} size {size} threads {threads} cap {max_classes}", path.display());
                    assert_same(&serial, &parts, &what);
                    checked += 1;
                }
            }
        }
    }
    eprintln!("{checked} split digests equal to the serial ones");
}

/// Events without a query line make pt read across the next record boundary (and
/// cascade); cutting such a log at every boundary must still give the serial digest.
#[test]
fn read_ahead_across_part_boundaries() {
    let mut logs: Vec<(String, Vec<u8>)> = (0..40).map(|s| (format!("odd log {s}"), common::odd_log(s))).collect();
    logs.extend(common::regressions());
    for (round, log) in logs {
        let serial = digest_parts(&log, &[0, log.len()], 1, usize::MAX);
        assert!(serial.events > 0);
        for threads in [1, 2] {
            let parts = digest_parts(&log, &split_points(&log, 1), threads, usize::MAX);
            assert_same(&serial, &parts, &format!("round {round} threads {threads}"));
        }
    }
}

/// Feeding a log in pieces of any size gives the digest of the whole log.
#[test]
fn streamed_input_equals_the_whole() {
    use govern_native::stream::Stream;
    let Some(files) = common::corpus_files() else { return };
    let mut logs: Vec<(String, Vec<u8>)> = files
        .iter()
        .filter(|p| p.extension().is_none_or(|e| e != "md"))
        .map(|p| (p.display().to_string(), common::read_log(p)))
        .collect();
    logs.extend((0..10).map(|s| (format!("odd log {s}"), common::odd_log(s))));
    logs.extend(common::regressions());
    for (name, log) in logs {
        let whole = digest_parts(&log, &[0, log.len()], 1, usize::MAX);
        for (piece, part_size) in [(1usize, 64usize), (97, 1000), (4096, 10_000), (1 << 20, 1 << 16)] {
            let mut s = Stream::new(usize::MAX, part_size);
            for chunk in log.chunks(piece) {
                s.feed(chunk);
            }
            assert_same(&whole, &s.finish(), &format!("{name} piece {piece} part {part_size}"));
        }
    }
}
