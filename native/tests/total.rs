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

/// Cut `data` every `step` records and merge the ranges into a total of `max_classes`
/// that forgets unnamed fingerprints after `forget_after` of them (0: after every merge).
fn merged(data: &[u8], step: usize, max_classes: usize, forget_after: usize) -> govern_native::total::Total {
    use govern_native::filemap::Bytes;
    use govern_native::range::{digest_range, RangeOptions};
    let n = data.len();
    let separators = govern_native::records::Separators::default();
    let mut total = govern_native::total::Total::new(max_classes);
    total.forget_after = forget_after;
    let mut start = 0;
    while start < n {
        let mut stop = start;
        for _ in 0..step {
            stop = separators.next_boundary(data, stop + 1).unwrap_or(n);
            if stop >= n {
                break;
            }
        }
        let stop = stop.max(start + 1).min(n);
        let options = RangeOptions { max_classes, context_known: start == 0, ..Default::default() };
        let r = digest_range(Bytes::Memory(data), start, stop, n, &options);
        start = r.end.max(stop);
        total.add(r, 0, 0, None);
    }
    total.finish();
    total
}

type Leads = Vec<(Vec<u8>, u64, u64)>;
/// A class as `by_text` lists it.
type Row = (Vec<u8>, u64, u64, u64, Leads, Option<(u64, u64)>, u64);

/// Every class (fingerprint, count, runs, calls, leads by fingerprint, single-row runs)
/// and `other`'s, in an order that does not depend on fingerprint ids.
fn by_text(t: &govern_native::total::Total) -> Vec<Row> {
    let row = |fp: &[u8], c: &govern_native::class::Class| {
        let mut leads: Leads = c.runs.leads.iter().map(|l| (t.fingerprints.get(l.0).to_vec(), l.1, l.2)).collect();
        leads.sort();
        let single = c.single_runs.as_ref().map_or(0, |s| s.runs);
        (fp.to_vec(), c.count, c.runs.runs, c.runs.calls, leads, c.runs.leads_other, single)
    };
    let mut rows: Vec<_> = t.classes.iter().map(|(fp, slot)| row(t.fingerprints.get(*fp), &slot.get())).collect();
    rows.sort();
    if let Some(o) = &t.other {
        rows.push(row(b"(other)", o));
    }
    rows
}

/// Forgetting the fingerprints nothing names, after every merge, gives the digest that
/// keeping every fingerprint gives: classes, leads (which may name folded classes), runs
/// stitched across cuts, and `other`; on every corpus log and the odd logs, with few
/// classes kept.
#[test]
fn forgetting_fingerprints_changes_nothing() {
    let mut logs: Vec<(String, Vec<u8>)> = common::regressions();
    for seed in 0..20 {
        logs.push((format!("odd log {seed}"), common::odd_log(seed)));
    }
    if let Some(files) = common::corpus_files() {
        for path in files {
            logs.push((path.display().to_string(), common::read_log(&path)));
        }
    }
    let mut forgotten = 0;
    for (name, data) in &logs {
        for (step, max_classes) in [(1, 3), (3, 10), (2, 1)] {
            let kept = merged(data, step, max_classes, usize::MAX);
            let forgetting = merged(data, step, max_classes, 0);
            assert_eq!(kept.forgotten, 0);
            assert_eq!(by_text(&kept), by_text(&forgetting), "{name}, every {step} records, {max_classes} classes");
            forgotten += forgetting.forgotten;
        }
    }
    assert!(forgotten > 0, "no test forgot a fingerprint");
}

/// Past `--max-classes` the core's state stops growing with distinct statements: 200,000
/// of them, 1,000 classes kept, 1,000 connections (so kept classes have leads and runs are
/// open at every cut), and the fingerprints kept stay below 1,000 classes + their leads
/// and open runs + `FORGET_AFTER` at every merge.
#[test]
fn distinct_statements_past_the_cap_keep_bounded_state() {
    use govern_native::filemap::Bytes;
    use govern_native::range::{digest_range, RangeOptions};
    let mut data = b"# Time: 261121 22:42:45\n".to_vec();
    for i in 0..200_000u32 {
        data.extend_from_slice(
            format!(
                "# User@Host: web[web] @ localhost []\n# Thread_id: {}  Schema: shop\n\
                 # Query_time: 0.000{:03}  Lock_time: 0.000010  Rows_sent: 1  Rows_examined: 1\n\
                 SELECT id FROM notes_{} WHERE id = 1;\n",
                i % 1000,
                i % 997,
                to_letters(i)
            )
            .as_bytes(),
        );
    }
    let n = data.len();
    let mut total = govern_native::total::Total::new(1000);
    let (mut start, mut most) = (0, 0);
    while start < n {
        let stop = memchr::memmem::find(&data[(start + (1 << 20)).min(n)..], b";\n#")
            .map_or(n, |i| (start + (1 << 20)).min(n) + i + 2);
        let options = RangeOptions { max_classes: 1000, context_known: start == 0, ..Default::default() };
        let r = digest_range(Bytes::Memory(&data), start, stop, n, &options);
        start = r.end.max(stop);
        total.add(r, 0, 0, None);
        most = most.max(total.fingerprints.len());
    }
    total.finish();
    assert_eq!(total.events, 200_000);
    assert_eq!(total.classes.len(), 1000);
    assert!(most < 1000 + 1000 + 4 * 1000 + govern_native::total::FORGET_AFTER, "{most} fingerprints kept");
    assert!(total.forgotten > 150_000, "{} forgotten", total.forgotten);
}

/// `n` in letters (a table name's digits would fold into `?` in the fingerprint).
fn to_letters(mut n: u32) -> String {
    let mut s = String::new();
    for _ in 0..5 {
        s.insert(0, (b'a' + (n % 26) as u8) as char);
        n /= 26;
    }
    s
}

/// The range's fingerprint cache (keyed by the statement with digits as 0) gives each
/// event the fingerprint pt's steps give it, where digits do matter too: CALL names,
/// administrator commands, mysqldump's `/*!40001` test, and repeats in any order.
#[test]
fn cached_fingerprints_are_the_fingerprints() {
    use govern_native::filemap::Bytes;
    use govern_native::fingerprint::Fingerprinter;
    use govern_native::range::{digest_range, RangeOptions};
    let statements: &[&[u8]] = &[
        b"CALL p1(1)",
        b"CALL p2(2)",
        b"call p2(3)",
        b"SELECT /*!40001 SQL_NO_CACHE */ * FROM `t1`",
        b"SELECT /*!40002 SQL_NO_CACHE */ * FROM `t1`",
        b"SELECT /*!40001 SQL_NO_CACHE */ * FROM `t2`",
        b"SELECT a FROM t1 WHERE id IN (1, 2, 3)",
        b"SELECT a FROM t2 WHERE id IN (4,5)",
        b"SELECT a FROM t9 WHERE x = 'a1' LIMIT 10",
        b"SELECT a FROM t9 WHERE x = 'a2' LIMIT 20",
        b"INSERT INTO t3 VALUES (1),(2)",
        b"INSERT INTO t4 VALUES (3)",
        b"SELECT 1 /*foo.bar:1/2*/",
        b"SELECT 2 /*foo.bar:3/4*/",
        // The second key (the text after the string rules): other strings, an INSERT cut
        // inside a string, escapes, comments inside strings, long multi-row INSERTs.
        b"SELECT a FROM t9 WHERE x = 'b c' LIMIT 30",
        b"SELECT a FROM t9 WHERE x = \"q\" LIMIT 30",
        b"INSERT INTO t5 VALUES ('a),(b')",
        b"INSERT INTO t5 VALUES ('c')",
        b"INSERT INTO t5 VALUES ('d'),('e')",
        b"SELECT 'it\\'s', 'x' FROM t7",
        b"SELECT 'its', 'x' FROM t7",
        b"SELECT '-- x\n', 'y' FROM t7",
        b"SELECT '-- z\n', 'w' FROM t7",
        b"SELECT '/* x', '*/' FROM t7",
    ];
    let long: Vec<Vec<u8>> = [300, 400]
        .iter()
        .map(|&rows| {
            let mut s = b"INSERT INTO t6 VALUES (0,'a')".to_vec();
            for r in 1..rows {
                s.extend_from_slice(format!(",({r},'v{r}')").as_bytes());
            }
            s
        })
        .collect();
    // Statements above 2 KB whose first key folds each IN list of integers to one `0`
    // (`fold_lists`), and neighbours where pt does not make the list `in(?+)` or where
    // the list lies in a string or a comment.
    let list = |sep: &str, n: usize| (1..=n).map(|k| (k * 7919).to_string()).collect::<Vec<_>>().join(sep);
    let in_lists: Vec<Vec<u8>> = [
        format!("SELECT a FROM t8 WHERE id IN ({})", list(",", 600)),
        format!("SELECT a FROM t8 WHERE id IN ({})", list(",", 700)),
        format!("SELECT a FROM t8 WHERE id in  ({}) AND b IN ({})", list(", ", 500), list(",", 3)),
        format!("select a from t8 where id\nIN ({})", list(",", 650)),
        format!("SELECT a FROM t8 WHERE x/**/in ({})", list(",", 600)),
        format!("SELECT a FROM t8 WHERE x/**/in ({})", list(",", 601)),
        format!("SELECT a FROM t8 WHERE xin ({})", list(",", 600)),
        format!("SELECT a FROM t8 WHERE xin ({})", list(",", 601)),
        format!("SELECT a FROM t8 WHERE 'x in ({})", list(",", 600)),
        format!("SELECT a FROM t8 WHERE 'x' in ({}) AND y = 'in (1)'", list(",", 600)),
        format!("SELECT a FROM t8 WHERE x = 1 -- in ({})\n", list(",", 600)),
        format!("SELECT a FROM t8 WHERE x = 1 -- in ({}) 'q'\n", list(",", 600)),
        format!(
            "SELECT a FROM t8 WHERE id IN ({}) UNION SELECT a FROM t8 WHERE id IN ({})",
            list(",", 400),
            list(",", 300)
        ),
        // After the comment is stripped, pt's `use ?` rule sees these (a log line that
        // starts with `use ` is the log's own db line).
        format!("/*c*/use in({})", list(",", 600)),
        format!("/*c*/use in({})", list(", ", 600)),
        format!("SELECT a FROM t8 WHERE id IN ({},-1)", list(",", 600)),
        format!("SELECT a FROM t8 WHERE id IN ({},0x1F)", list(",", 600)),
        format!("INSERT INTO t8 SELECT a FROM t9 WHERE id IN ({}),(1)", list(",", 600)),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect();
    let statements: Vec<&[u8]> =
        statements.iter().copied().chain(long.iter().chain(&in_lists).map(|s| &s[..])).collect();
    let mut log = b"# Time: 261121 22:42:45\n".to_vec();
    let mut want = std::collections::BTreeMap::new();
    for round in 0..3 {
        for (i, s) in statements.iter().enumerate() {
            let s = if round == 1 { statements[statements.len() - 1 - i] } else { s };
            log.extend_from_slice(b"# User@Host: u[u] @ h []\n# Query_time: 0.000100  Lock_time: 0.000000\n");
            log.extend_from_slice(s);
            log.extend_from_slice(b";\n");
            *want.entry(Fingerprinter::new().fingerprint(s).to_vec()).or_insert(0u64) += 1;
        }
    }
    log.extend_from_slice(b"# User@Host: u[u] @ h []\n# Query_time: 0.000100  Lock_time: 0.000000\n# administrator command: Binlog Dump 7;\n");
    *want.entry(b"administrator command: Binlog Dump 7".to_vec()).or_insert(0) += 1;
    let n = log.len();
    let options = RangeOptions { context_known: true, ..Default::default() };
    let r = digest_range(Bytes::Memory(&log), 0, n, n, &options);
    let got: std::collections::BTreeMap<Vec<u8>, u64> =
        r.classes.iter().map(|(fp, c)| (r.fingerprints.get(*fp).to_vec(), c.count)).collect();
    assert_eq!(got, want);
    assert!(got.contains_key(&b"mysqldump"[..]) && got.contains_key(&b"call p1"[..]));
}
