//! Differential tests against pt-query-digest's own Perl code (oracle/pt_oracle.pl).
//!
//! - every event of every corpus log: all properties pt's parser returns, and the
//!   fingerprint, must be identical;
//! - generated statements full of the cases pt's regexes treat oddly: identical
//!   fingerprints.
//!
//! They need perl and pt-query-digest (Debian's percona-toolkit), and the corpus in
//! `../shared/corpus` beside the repository; without them they say why and pass.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use govern_native::fingerprint::Fingerprinter;
use govern_native::perl::truthy;
use govern_native::slowlog::{Parser, Value};

mod common;
use common::{corpus_files, latin1, pt_query_digest, read_log};

fn oracle() -> Option<PathBuf> {
    pt_query_digest()?;
    Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("oracle/pt_oracle.pl"))
}

type EventMap = BTreeMap<String, Option<String>>;

fn oracle_events(oracle: &Path, log: &[u8]) -> Vec<EventMap> {
    let mut tmp = tempfile("events");
    tmp.1.write_all(&common::pt_view(log)).unwrap();
    let out = Command::new("perl").arg(oracle).arg("events").arg(&tmp.0).output().unwrap();
    assert!(out.status.success(), "oracle failed: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_file(&tmp.0).ok();
    out.stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice::<EventMap>(l).unwrap())
        .collect()
}

fn native_events(log: &[u8]) -> Vec<EventMap> {
    let mut parser = Parser::new(log, 0);
    let mut fp = Fingerprinter::new();
    let mut events = Vec::new();
    while let Some(ev) = parser.next_event() {
        let mut m = EventMap::new();
        for (k, v) in ev.iter() {
            let v = v.map(|v| match v {
                Value::Bytes(b) => latin1(b),
                Value::Num(n) => n.to_string(),
            });
            m.insert(latin1(k), v);
        }
        if let Some(arg) = ev.arg().filter(|a| truthy(a)) {
            m.insert("fingerprint".into(), Some(latin1(fp.fingerprint(arg))));
        }
        events.push(m);
    }
    events
}

fn tempfile(tag: &str) -> (PathBuf, std::fs::File) {
    let path = std::env::temp_dir().join(format!(
        "govern-native-{tag}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let f = std::fs::File::create(&path).unwrap();
    (path, f)
}

#[test]
fn every_corpus_event_matches_pt() {
    let (Some(oracle), Some(files)) = (oracle(), corpus_files()) else { return };
    let mut total = 0;
    for path in files {
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let log = read_log(&path);
        let want = oracle_events(&oracle, &log);
        let got = native_events(&log);
        for (i, (w, g)) in want.iter().zip(&got).enumerate() {
            assert_eq!(g, w, "{}: event {i} differs", path.display());
        }
        assert_eq!(got.len(), want.len(), "{}: event count", path.display());
        total += got.len();
    }
    for seed in 0..20 {
        let log = common::odd_log(seed);
        let (got, want) = (native_events(&log), oracle_events(&oracle, &log));
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "odd log {seed}: event {i} differs");
        }
        assert_eq!(got.len(), want.len(), "odd log {seed}: event count");
    }
    eprintln!("{total} corpus events identical to pt's parser and fingerprint");
    assert!(total > 10_000, "the corpus should hold thousands of events, got {total}");
}

/// Statements assembled from fragments that pt's regexes handle in surprising ways.
fn generated_statements(n: usize, seed: u64) -> Vec<Vec<u8>> {
    const FRAGS: &[&[u8]] = &[
        b"SELECT ",
        b"select ",
        b"INSERT INTO t VALUES ",
        b"insert ignore into t (a,b) values",
        b"REPLACE INTO x VALUES",
        b"(1,2)",
        b"(?, ?)",
        b" , ",
        b",",
        b"(",
        b")",
        b"'",
        b"\"",
        b"\\'",
        b"\\\"",
        b"\\\\",
        b"'it''s'",
        b"\"q\"",
        b"/*",
        b"*/",
        b"/*!40101 ",
        b"/**/",
        b"-- c\n",
        b"--",
        b"#",
        b"# x\n",
        b"\n",
        b"\r\n",
        b"\t",
        b"\x0b",
        b"\x0c",
        b"  ",
        b" ",
        b"1",
        b"-2",
        b"+3.5e-7",
        b"0x1F",
        b"0xff",
        b"x'AB'",
        b"b'01'",
        b".5",
        b"a-b",
        b"a - b",
        b"users_2009",
        b"db1.t_2",
        b"NULL",
        b"null",
        b"nullx",
        b"TRUE",
        b"false",
        b"True1",
        b"-false",
        b" in ",
        b"IN",
        b"in(",
        b" IN (1, 2 ,3)",
        b" IN (12345678, 23456789,\t3,4,5,6,7,8,9,10)",
        b"(1,2,3,4,5,6,7,8,9,10,11,12)",
        b"values (",
        b"VALUE(",
        b" UNION ",
        b"union all ",
        b"SELECT a",
        b" ORDER BY ",
        b" order by ",
        b" ASC",
        b" asc",
        b"ascending",
        b" LIMIT 1, 2",
        b" limit ? offset ?",
        b" limit 5 OFFSET 6",
        b"use db",
        b"USE `x`",
        b"CALL p(",
        b"call  q(1)(2)",
        b"administrator command: ",
        b"/*db.tbl:1/2*/",
        b"SELECT /*!40001 SQL_NO_CACHE */ * FROM `t`",
        b"\xc3\xa9",
        b"\xff\xfe",
        b"\x00",
        b"`a b`",
        b"@v",
        b"$1",
        b"t1",
        b"x?",
        b"b?",
        b"X?",
        b"?",
        b"??",
        b"=",
        b";",
    ];
    let mut state = seed;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..n)
        .map(|_| {
            let len = 1 + (next() % 14) as usize;
            let mut q = Vec::new();
            for _ in 0..len {
                q.extend_from_slice(FRAGS[(next() % FRAGS.len() as u64) as usize]);
            }
            q
        })
        .collect()
}

fn oracle_fingerprints(oracle: &Path, queries: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let mut child = Command::new("perl")
        .arg(oracle)
        .arg("fingerprint")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = Vec::new();
    for q in queries {
        input.extend_from_slice(q);
        input.push(0);
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&input).unwrap());
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    let mut fps: Vec<Vec<u8>> = out.stdout.split(|&b| b == 0).map(<[u8]>::to_vec).collect();
    fps.pop();
    fps
}

#[test]
fn generated_statements_fingerprint_like_pt() {
    let Some(oracle) = oracle() else { return };
    // Statements may not contain NUL: it separates them on the oracle's stdin.
    let queries: Vec<Vec<u8>> =
        generated_statements(30_000, 0x9E3779B97F4A7C15).into_iter().filter(|q| !q.contains(&0)).collect();
    let want = oracle_fingerprints(&oracle, &queries);
    assert_eq!(want.len(), queries.len());
    let mut fp = Fingerprinter::new();
    let mut mismatches = Vec::new();
    for (q, w) in queries.iter().zip(&want) {
        let g = fp.fingerprint(q);
        if g != &w[..] {
            mismatches.push(format!("{:?}\n  pt:     {:?}\n  native: {:?}", latin1(q), latin1(w), latin1(g)));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} differ; first:\n{}",
        mismatches.len(),
        queries.len(),
        mismatches[..mismatches.len().min(5)].join("\n")
    );
}

/// Lists after `in`/`values` in every neighbourhood the list rule cares about (the word and
/// the bytes before it, separators, list bodies of digits, commas and whitespace, with a byte
/// that ends the shortcut now and then): the fingerprint's integer-list shortcut against pt.
#[test]
fn integer_lists_fingerprint_like_pt() {
    let Some(oracle) = oracle() else { return };
    const BEFORE: &[&[u8]] = &[b"", b"x", b"_", b".", b"1", b" ", b"(", b"`", b"-", b"\n", b"null "];
    const WORDS: &[&[u8]] = &[b"in", b"IN", b"In", b"value", b"VALUES", b"values", b"join", b"xin", b"inx", b"valuesx"];
    const GAPS: &[&[u8]] = &[b"", b" ", b"  ", b",", b" , ", b"\x0b", b"\t", b"\n", b"(), "];
    const BODY: &[u8] = b"0123456789012345678901234567890123456789,,,,,,     \t\n\r\x0b\x0c";
    const ODD: &[u8] = b"-+.xbaeZ?'(";
    const AFTER: &[&[u8]] =
        &[b"", b")", b",(1,2)", b" and id in (3,4)", b" limit 5", b"x", b" union select 1 in (1,2)"];
    let mut state = 0x2545F4914F6CDD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut pick = |n: usize| (next() % n as u64) as usize;
    let queries: Vec<Vec<u8>> = (0..20_000)
        .map(|_| {
            let mut q = b"select * from t where a ".to_vec();
            q.extend_from_slice(BEFORE[pick(BEFORE.len())]);
            q.extend_from_slice(WORDS[pick(WORDS.len())]);
            q.extend_from_slice(GAPS[pick(GAPS.len())]);
            q.push(b'(');
            for _ in 0..pick(40) {
                q.push(BODY[pick(BODY.len())]);
            }
            if pick(4) == 0 {
                q.insert(q.len() - pick(3).min(q.len() - 1), ODD[pick(ODD.len())]);
            }
            if pick(8) != 0 {
                q.push(b')');
            }
            q.extend_from_slice(AFTER[pick(AFTER.len())]);
            q
        })
        .collect();
    let want = oracle_fingerprints(&oracle, &queries);
    assert_eq!(want.len(), queries.len());
    let mut fp = Fingerprinter::new();
    let mismatches: Vec<String> = queries
        .iter()
        .zip(&want)
        .filter_map(|(q, w)| {
            let g = fp.fingerprint(q);
            (g != &w[..]).then(|| format!("{:?}\n  pt:     {:?}\n  native: {:?}", latin1(q), latin1(w), latin1(g)))
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} of 20000 differ; first:\n{}",
        mismatches.len(),
        mismatches[..mismatches.len().min(5)].join("\n")
    );
}
