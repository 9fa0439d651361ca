//! Time the stages of the hot loop on one file, single-threaded:
//! `cargo run --release --example stages FILE`.

use std::time::Instant;

use govern_native::fingerprint::Fingerprinter;
use govern_native::slowlog::Parser;

fn main() {
    let path = std::env::args().nth(1).expect("usage: stages FILE");
    let data = std::fs::read(&path).unwrap();
    let mb = data.len() as f64 / 1e6;
    let t = Instant::now();
    let mut p = Parser::new(&data, 0);
    let mut n = 0u64;
    while let Some(_ev) = p.next_event() {
        n += 1;
    }
    println!("parse:        {:.0} MB/s ({n} events)", mb / t.elapsed().as_secs_f64());
    let t = Instant::now();
    let mut p = Parser::new(&data, 0);
    let mut fp = Fingerprinter::new();
    let mut len = 0usize;
    while let Some(ev) = p.next_event() {
        if let Some(a) = ev.arg() {
            len += fp.fingerprint(a).len();
        }
    }
    println!("+fingerprint: {:.0} MB/s ({len})", mb / t.elapsed().as_secs_f64());
    let t = Instant::now();
    let options = govern_native::range::RangeOptions { context_known: true, ..Default::default() };
    let r = govern_native::range::digest_range(
        govern_native::filemap::Bytes::Memory(&data),
        0,
        data.len(),
        data.len(),
        &options,
    );
    println!("+aggregate:   {:.0} MB/s ({} classes)", mb / t.elapsed().as_secs_f64(), r.classes.len());
}
