//! Profile the range digest (the engine's path):
//! `cargo run --release --example range -- FILE [MB] [REPEAT]`. The file is read into
//! memory first, and the digest repeated, so a profiler sees the digest, not the read.
use govern_native::filemap::Bytes;
use govern_native::range::{digest_range, RangeOptions};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let data = std::fs::read(&args[1]).expect("read");
    let limit = args.get(2).map_or(data.len(), |m| (m.parse::<usize>().unwrap() << 20).min(data.len()));
    let repeat: usize = args.get(3).map_or(1, |r| r.parse().unwrap());
    let options = RangeOptions { context_known: true, ..Default::default() };
    for _ in 0..repeat {
        let t = std::time::Instant::now();
        let r = digest_range(Bytes::Memory(&data[..limit]), 0, limit, limit, &options);
        let secs = t.elapsed().as_secs_f64();
        eprintln!(
            "{} events, {} classes, {:.2} s, {:.0} MB/s",
            r.events,
            r.classes.len(),
            secs,
            limit as f64 / secs / 1e6
        );
    }
}
