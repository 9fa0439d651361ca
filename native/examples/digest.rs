//! Digest one file and print what a benchmark needs: `cargo run --release --example
//! digest FILE [THREADS]`. The project's benchmark is benchmarks/digest_native.py.

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: digest FILE [THREADS]");
    let threads: usize = args.next().map_or(0, |t| t.parse().unwrap());
    let t0 = Instant::now();
    let part = govern_native::file::digest_file(path.as_ref(), threads, usize::MAX).unwrap();
    let secs = t0.elapsed().as_secs_f64();
    let bytes = std::fs::metadata(&path).unwrap().len() as f64;
    println!("{} events, {} classes, {:.2} s, {:.0} MB/s", part.events, part.classes.len(), secs, bytes / secs / 1e6);
}
