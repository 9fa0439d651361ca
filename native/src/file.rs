//! A log file on disk, memory-mapped and digested on all cores.

use std::fs::File;
use std::io;
use std::path::Path;

use memmap2::{Advice, Mmap, UncheckedAdvice};

use crate::digest::Part;
use crate::parallel::{default_part_size, digest_parts, digest_parts_releasing, split_points};

/// Digest the file at `path` with `threads` threads (0: one per core).
pub fn digest_file(path: &Path, threads: usize, max_classes: usize) -> io::Result<Part> {
    let file = File::open(path)?;
    if file.metadata()?.len() == 0 {
        return Ok(digest_parts(&[], &[0, 0], 1, max_classes));
    }
    // SAFETY: the map is read-only and lives for this call. A log the server appends
    // to while we read only grows; one truncated under us would fault, which is why
    // `govern digest` reads files, not sockets or pipes, this way.
    let map = unsafe { Mmap::map(&file)? };
    // Each part is read once from front to back.
    let _ = map.advise(Advice::Sequential);
    let threads = thread_count(threads);
    let points = split_points(&map, default_part_size(map.len(), threads));
    // Drop a digested part's pages from this process (they stay in the page cache), so
    // resident memory is the parts in flight, not the whole file.
    let page = 4096;
    let release = |start: usize, end: usize| {
        let (a, b) = (start.div_ceil(page) * page, end / page * page);
        if a < b {
            // SAFETY: nothing borrows these bytes any more: the part that read them is
            // done, and a later read of them (pt's reader crossing back) faults them in again.
            let _ = unsafe { map.unchecked_advise_range(UncheckedAdvice::DontNeed, a, b - a) };
        }
    };
    Ok(digest_parts_releasing(&map, &points, threads, max_classes, &release))
}

fn thread_count(threads: usize) -> usize {
    if threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        threads
    }
}

/// Digest a log already in memory with `threads` threads (0: one per core).
pub fn digest_bytes(data: &[u8], threads: usize, max_classes: usize) -> Part {
    let threads = thread_count(threads);
    let points = split_points(data, default_part_size(data.len(), threads));
    digest_parts(data, &points, threads, max_classes)
}
