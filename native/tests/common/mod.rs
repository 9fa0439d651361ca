//! Shared by the integration tests: where the corpus and pt are.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub fn repo_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// pt-query-digest, or `None` after saying why the test does not run.
pub fn pt_query_digest() -> Option<PathBuf> {
    let pt = Path::new("/usr/bin/pt-query-digest");
    if pt.exists() {
        Some(pt.to_path_buf())
    } else {
        eprintln!("SKIP: pt-query-digest is not installed (apt-get install percona-toolkit)");
        None
    }
}

/// The corpus logs (../shared/corpus beside the repository), or `None` after saying why.
pub fn corpus_files() -> Option<Vec<PathBuf>> {
    let dir = repo_dir().parent().unwrap().join("shared/corpus");
    if !dir.is_dir() {
        eprintln!("SKIP: no slow-log corpus at {}", dir.display());
        return None;
    }
    let mut files = Vec::new();
    for sub in std::fs::read_dir(&dir).unwrap() {
        let sub = sub.unwrap().path();
        if sub.is_dir() {
            for f in std::fs::read_dir(&sub).unwrap() {
                files.push(f.unwrap().path());
            }
        }
    }
    files.sort();
    Some(files)
}

/// The file's bytes, gunzipped when it ends in .gz (pt reads those decompressed).
pub fn read_log(path: &Path) -> Vec<u8> {
    if path.extension().is_some_and(|e| e == "gz") {
        Command::new("gzip").arg("-dc").arg(path).output().unwrap().stdout
    } else {
        std::fs::read(path).unwrap()
    }
}

/// The log as pt must read it to find govern's events: MariaDB's banner line made one
/// that pt's pattern knows (`mariadbd,` -> `xxmysqld,`, same length, so offsets stay).
/// govern reads MariaDB's banner as a record boundary on purpose; pt glues across it.
pub fn pt_view(log: &[u8]) -> Vec<u8> {
    let mut out = log.to_vec();
    let needle = b"mariadbd, Version";
    let mut at = 0;
    while let Some(i) = out[at..].windows(needle.len()).position(|w| w == needle) {
        out[at + i..at + i + 9].copy_from_slice(b"xxmysqld,");
        at += i + needle.len();
    }
    out
}

pub fn latin1(b: &[u8]) -> String {
    b.iter().map(|&c| c as char).collect()
}

/// A log of events that make pt's reader misbehave: header-only events (pt reads the
/// next record's head as their query), banners mid-file, admin commands, both time
/// formats. Different `seed`s give different orders.
pub fn odd_log(seed: u64) -> Vec<u8> {
    let pieces: &[&[u8]] = &[
        b"# Time: 071218 11:48:27\n# User@Host: a[a] @ h [1.2.3.4]\n# Query_time: 1.5  Lock_time: 0  Rows_sent: 0  Rows_examined: 3\nuse db2;\n",
        b"# User@Host: b[b] @ h []\n# Query_time: 0.25  Lock_time: 0  Rows_sent: 1  Rows_examined: 0\nSET timestamp=5;\nSELECT 1;\n",
        b"# User@Host: c[c] @ h []\n# Query_time: 0.5  Lock_time: 0  Rows_sent: 2  Rows_examined: 0\nSELECT c FROM t WHERE id = 7;\n",
        b"# Query_time: 0.75  Lock_time: 0  Rows_sent: 0  Rows_examined: 0\n# administrator command: Quit;\n",
        b"# User@Host: d[d] @ h []\n# Thread_id: 4  Schema: shop  QC_hit: No\n# Query_time: 2  Lock_time: 0  Rows_sent: 0  Rows_examined: 0\nSET timestamp=6;\n",
        b"/usr/sbin/mysqld, Version: 8.0.1 (x). started with:\nTcp port: 3306  Unix socket: /s\nTime                 Id Command    Argument\n",
        b"# Time: 2007-12-18T11:49:00\n# User@Host: e[e] @ h []\n# Query_time: 3  Lock_time: 0  Rows_sent: 0  Rows_examined: 0\nuse shop;\nINSERT INTO t VALUES (1),(2);\n",
        b"# User@Host: f[f] @ h []\n# Query_time: 0.1  Lock_time: 0  Rows_sent: 0  Rows_examined: 0\n# just a comment\n",
        b"# Query_time: 0.2  Lock_time: 0  Rows_sent: 0  Rows_examined: 0\nSELECT 'a;\n#b' FROM t;\n",
        // Header shapes the one-pass attribute reader hands back to the general one:
        // pt's `Schema:` edit, a value ending in a colon, a digit in a name, a line over
        // 128 bytes, `# User@Host:` inside a line.
        b"# Thread_id: 9  Schema:   QC_hit: No\n# Query_time: 0.1  Lock_time: 0  Rows_sent: 0  Note: a:  Schema: x\n# Rows2_x: 1  Ok: 2\n# Long_attribute_name_past_the_mask_width: 1  Another_long_attribute_name: 2  Yet_another_attribute_name: 3  And_one_more_to_pass_it: 4\n# Query_time: 0.2 # User@Host: i[i] @ h []\nSELECT 3;\n",
    ];
    // An event with more attributes (some repeated) than the parser's key table holds.
    let mut many = b"# User@Host: g[g] @ h []\n# Query_time: 0.3  Lock_time: 0".to_vec();
    for i in 0..130 {
        many.extend_from_slice(format!("  Key_{}: {i}", i % 110).as_bytes());
    }
    many.extend_from_slice(b"\n# Lock_time: 9\nSELECT 2;\n");
    // Lines the one-pass reader reads through a 64-byte window of its masks: a line of
    // exactly 128 bytes whose last value runs to its end, pairs across byte 64 (a colon
    // at 62 to 66), a value longer than the window, a word run of 70 bytes before a
    // colon, 60 spaces between pairs.
    let mut window = b"# User@Host: j[j] @ h []\n".to_vec();
    let head = b"# Query_time: 1  Lock_time: 2  Runs_to_the_end: ";
    window.extend_from_slice(head);
    window.extend(std::iter::repeat_n(b'a', 128 - head.len()));
    window.push(b'\n');
    for pad in 0..5 {
        let v = "7".repeat(12 + pad);
        window.extend_from_slice(
            format!("# Query_time: 0.000316  Rows_sent: {v}  Rows_examined: 61  Rows_affected: 0\n").as_bytes(),
        );
    }
    window.extend_from_slice(format!("# Long_value: {}  Lock_time: 3\n", "v".repeat(70)).as_bytes());
    window.extend_from_slice(format!("# Query_time: 1  {}: 5  Next: 6\n", "w".repeat(70)).as_bytes());
    window.extend_from_slice(format!("# Query_time: 1{}Lock_time: 2\nSELECT 4;\n", " ".repeat(60)).as_bytes());
    let mut pieces = pieces.to_vec();
    pieces.push(&many);
    pieces.push(&window);
    let mut state = 0x2545F4914F6CDD1Du64 ^ seed.wrapping_mul(0x9E3779B97F4A7C15);
    let mut log = Vec::new();
    for _ in 0..60 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        log.extend_from_slice(pieces[(state % pieces.len() as u64) as usize]);
    }
    // pt dies (a fatal warning) when its read-ahead for a header-only event meets the
    // end of the file right after a `Key: value` line; end with a plain event.
    log.extend_from_slice(pieces[2]);
    log
}

/// Inputs the fuzzer found wrong once (tests/regressions/), by name.
pub fn regressions() -> Vec<(String, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/regressions");
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
        .collect();
    v.sort();
    v
}
