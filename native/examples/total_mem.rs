//! Memory of a merged digest: `cargo run --release --example total_mem -- FILE [segment MB]`.
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use govern_native::filemap::Bytes;
use govern_native::range::{digest_range, RangeOptions};
use govern_native::total::Total;

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        ALLOCS.fetch_sub(1, Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static A: Counting = Counting;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let data = std::fs::read(&args[1]).expect("read");
    let segment = args.get(2).map_or(2, |m| m.parse::<usize>().unwrap()) << 20;
    let base = LIVE.load(Ordering::Relaxed);
    let mut total = Total::new(usize::MAX);
    let mut start = 0;
    let mut first = true;
    while start < data.len() {
        let mut stop = (start + segment).min(data.len());
        if let Some(i) = memchr::memmem::find(&data[stop..], b";\n#") {
            stop += i + 2;
        } else {
            stop = data.len();
        }
        let options = RangeOptions {
            max_classes: usize::MAX,
            context_ts: None,
            context_db: None,
            context_known: first,
            server_salt: 0,
            ..Default::default()
        };
        let r = digest_range(Bytes::Memory(&data), start, stop, data.len(), &options);
        start = r.end.max(stop);
        total.add(r, 0, 0, None);
        first = false;
    }
    total.finish();
    let live = LIVE.load(Ordering::Relaxed) - base;
    let n = total.classes.len();
    let c = &*total.classes[0].1.get();
    eprintln!(
        "per class: nums {}x{}, strings {}x{}, flags {}, sample {:?}, varied? ts {}, runs {}, Values {}, Sample {}",
        c.nums.capacity(),
        std::mem::size_of::<govern_native::aggregate::NumStats>(),
        c.strings.capacity(),
        std::mem::size_of::<govern_native::values::Values>(),
        c.flags.capacity(),
        c.sample.as_ref().map(|s| s.query.capacity()),
        std::mem::size_of::<Option<govern_native::time::Ts>>(),
        std::mem::size_of::<govern_native::class::Runs>(),
        std::mem::size_of::<govern_native::values::Values>(),
        std::mem::size_of::<govern_native::class::Sample>(),
    );
    eprintln!(
        "{n} classes: {:.1} MB live in {} allocations, {:.0} B and {:.1} allocations per class; Class {} B",
        live as f64 / 1e6,
        ALLOCS.load(Ordering::Relaxed),
        live as f64 / n as f64,
        ALLOCS.load(Ordering::Relaxed) as f64 / n as f64,
        std::mem::size_of::<govern_native::class::Class>()
    );
}
