//! CPU seconds of each step of `govern digest --format json` on one log, in the core
//! alone and on one thread (the ranges and merges in turn), segments cut as the native
//! engine cuts them: `cargo run --release --example steps -- FILE [documents threads]`.
//! CPU time, not wall time: the machine this is measured on is shared.

use govern_native::document::{class_runs, Context, Piece};
use govern_native::filemap::Bytes;
use govern_native::range::{digest_range, RangeOptions};
use govern_native::total::Total;

fn cpu() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 / 1e9
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let data = std::fs::read(&args[1]).expect("read");
    let (mut ranges, mut merges) = (0.0, 0.0);
    let mut total = Total::new(1_000_000);
    let (mut start, mut first) = (0, true);
    while start < data.len() {
        // govern/digest/native_engine.py `native_segment`.
        let segment = if total.classes.len() > 4096 { 1 << 20 } else { 8 << 20 };
        let mut stop = (start + segment).min(data.len());
        match memchr::memmem::find(&data[stop..], b";\n#") {
            Some(i) => stop += i + 2,
            None => stop = data.len(),
        }
        let options = RangeOptions { max_classes: 1_000_000, context_known: first, ..Default::default() };
        let t = cpu();
        let r = digest_range(Bytes::Memory(&data), start, stop, data.len(), &options);
        ranges += cpu() - t;
        start = r.end.max(stop);
        let t = cpu();
        total.add(r, 0, 0, None);
        merges += cpu() - t;
        first = false;
    }
    let t = cpu();
    total.finish();
    let finish = cpu() - t;
    let t = cpu();
    let all = total.totals();
    let totals = cpu() - t;
    let t = cpu();
    let (ranked, rest) = total.ranked(b"Query_time", "sum");
    let ranking = cpu() - t;
    let qt = total.num_id(b"Query_time").and_then(|i| all.nums.get(i as usize)).map_or(0, |s| s.sum());
    let ctx = Context::new(&total, qt, Some(3600.0), vec![Some("log".into())]);
    let indexes: Vec<usize> = ranked.iter().chain(&rest).map(|&i| i as usize).collect();
    let t = cpu();
    let (mut bytes, mut python) = (0usize, 0usize);
    for step in indexes.chunks(4096) {
        for piece in class_runs(&total, step, &ctx) {
            match piece {
                Piece::Run(text) => bytes += text.len(),
                Piece::Python(_) => python += 1,
            }
        }
    }
    let documents = cpu() - t;
    println!(
        "{} classes, {} events: ranges {ranges:.3}, merges {merges:.3}, finish {finish:.3}, totals {totals:.3}, \
         ranking {ranking:.3}, documents {documents:.3} CPU-s ({bytes} bytes, {python} left to Python)",
        total.classes.len(),
        total.events
    );
}
