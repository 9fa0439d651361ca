//! A log file on disk, memory-mapped and digested on all cores.

use std::fs::File;
use std::io;
use std::path::Path;

use memmap2::{Advice, Mmap, UncheckedAdvice};

use crate::digest::Part;
use crate::parallel::{default_part_size, digest_parts, digest_parts_releasing, split_points};
use crate::records::find_record_sep;

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
    let points = split_points_by_reading(&file, map.len(), default_part_size(map.len(), threads))?;
    // Drop a digested part's pages from this process (they stay in the page cache), so
    // resident memory is the parts in flight, not the whole file. Only whole pages
    // inside the part: a page shared with a neighbour goes with the neighbour's.
    let page = 4096;
    let release = |start: usize, end: usize| {
        let (a, b) = (start.div_ceil(page) * page, end / page * page);
        if a < b {
            // SAFETY: the mapping is private and read-only: dropped pages read the file
            // again on the next access, so no byte any thread sees can change.
            let _ = unsafe { map.unchecked_advise_range(UncheckedAdvice::DontNeed, a, b - a) };
        }
    };
    Ok(digest_parts_releasing(&map, &points, threads, max_classes, &release))
}

/// `split_points`, reading a few kilobytes at each with `pread` rather than touching the
/// map: a touch maps a whole page, 2 MB when the page cache holds the log in huge pages,
/// which would put half of a 1 GB log in this process's resident memory.
fn split_points_by_reading(file: &File, len: usize, part_size: usize) -> io::Result<Vec<usize>> {
    use std::os::unix::fs::FileExt;
    let mut points = vec![0];
    let mut at = part_size.max(1);
    let mut buf = vec![0u8; 64 << 10];
    'next: while at < len {
        let mut from = at;
        while from < len {
            let n = file.read_at(&mut buf, from as u64)?;
            if n == 0 {
                break;
            }
            // A separator may straddle two reads: keep two bytes of overlap.
            if let Some(i) = find_record_sep(&buf[..n]) {
                let b = from + i + 3;
                if b < len {
                    points.push(b);
                    at = b + part_size.max(1);
                    continue 'next;
                }
                break;
            }
            from += n.saturating_sub(2).max(1);
        }
        break;
    }
    points.push(len);
    Ok(points)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_points_read_equal_split_points_mapped() {
        let mut log = Vec::new();
        for i in 0..20_000 {
            log.extend_from_slice(format!("# Query_time: 0.{i:06}\nSELECT {i};\n").as_bytes());
        }
        let path = std::env::temp_dir().join(format!("govern-native-split-{}", std::process::id()));
        std::fs::write(&path, &log).unwrap();
        let file = File::open(&path).unwrap();
        for size in [1, 7, 1000, 65_536, 100_000, 1 << 20] {
            assert_eq!(split_points_by_reading(&file, log.len(), size).unwrap(), split_points(&log, size), "{size}");
        }
        std::fs::remove_file(&path).unwrap();
    }
}
