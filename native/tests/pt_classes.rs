//! Conformance with pt-query-digest itself: on every corpus log, the classes of the
//! range digest merged into a total (what `govern digest` reports: fingerprint → count,
//! and the sum of Query_time) equal those of
//! `pt-query-digest --no-version-check --output json --limit 100% FILE`.
//! pt's report leaves out classes without a Query_time (it orders by it), so those are
//! compared only by their absence there.

mod common;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Command;

use govern_native::filemap::Bytes;
use govern_native::range::{digest_range, RangeOptions};
use govern_native::total::Total;

type Classes = BTreeMap<String, (u64, f64)>;

fn pt_classes(pt: &std::path::Path, log: &[u8]) -> Classes {
    let path = std::env::temp_dir().join(format!("govern-native-classes-{}", std::process::id()));
    std::fs::File::create(&path).unwrap().write_all(&common::pt_view(log)).unwrap();
    let out = Command::new(pt)
        .args(["--no-version-check", "--output", "json", "--limit", "100%"])
        .arg(&path)
        .output()
        .unwrap();
    std::fs::remove_file(&path).ok();
    assert!(out.status.success(), "pt-query-digest failed: {}", String::from_utf8_lossy(&out.stderr));
    let mut classes = Classes::new();
    let text = String::from_utf8_lossy(&out.stdout);
    let text = text.trim_start();
    if !text.starts_with('{') {
        return classes; // an empty log prints nothing
    }
    let doc: serde_json::Value = serde_json::from_str(text).unwrap();
    for c in doc["classes"].as_array().unwrap() {
        let fp = c["fingerprint"].as_str().unwrap().to_string();
        let count = c["query_count"].as_u64().unwrap();
        let sum = c["metrics"]["Query_time"]["sum"].as_str().map_or(0.0, |s| s.parse().unwrap());
        classes.insert(fp, (count, sum));
    }
    classes
}

#[test]
fn classes_equal_pt_query_digest() {
    let (Some(pt), Some(files)) = (common::pt_query_digest(), common::corpus_files()) else { return };
    let mut n_classes = 0;
    for path in files {
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let log = common::read_log(&path);
        let want = pt_classes(&pt, &log);
        let options = RangeOptions { max_classes: usize::MAX, context_known: true, ..Default::default() };
        let mut total = Total::new(usize::MAX);
        total.add(digest_range(Bytes::Memory(&log), 0, log.len(), log.len(), &options), 0, 0, None);
        total.finish();
        let qt = total.num_id(b"Query_time");
        let mut got = Classes::new();
        for (fp, slot) in &total.classes {
            let (fp, class) = (total.fingerprints.get(*fp), slot.get());
            // pt's JSON decodes the fingerprint's bytes as Latin-1 only when they are not
            // valid UTF-8; compare the way it prints them.
            let name = String::from_utf8(fp.to_vec()).unwrap_or_else(|_| common::latin1(fp));
            let Some(q) = qt.and_then(|i| class.nums.get(i as usize)).filter(|q| q.count() > 0) else { continue };
            got.insert(name, (class.count, q.sum() as f64 / 1e6));
        }
        let only_pt: Vec<_> = want.keys().filter(|k| !got.contains_key(*k)).take(3).collect();
        let only_us: Vec<_> = got.keys().filter(|k| !want.contains_key(*k)).take(3).collect();
        assert_eq!(
            got.len(),
            want.len(),
            "{}: class count {} vs pt {}; only pt: {only_pt:?}; only native: {only_us:?}",
            path.display(),
            got.len(),
            want.len()
        );
        for (fp, (count, sum)) in &want {
            let Some((c, s)) = got.get(fp) else { panic!("{}: pt class missing: {fp:?}", path.display()) };
            assert_eq!(c, count, "{}: count of {fp:?}", path.display());
            assert!(
                (s - sum).abs() <= 1e-6 * sum.abs().max(1.0),
                "{}: Query_time sum of {fp:?}: {s} vs {sum}",
                path.display()
            );
        }
        n_classes += want.len();
    }
    eprintln!("{n_classes} classes identical to pt-query-digest's");
    assert!(n_classes > 100);
}
