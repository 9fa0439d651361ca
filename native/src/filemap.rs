//! The bytes a range is digested from, and who may drop them from memory.
//!
//! A digest of a 5 GB file reads each page once: keeping them mapped would make the
//! digest's resident memory the size of the log. Pages of a read-only file mapping can
//! be dropped (`madvise(MADV_DONTNEED)`) and are read again from the file if touched;
//! the same call on heap memory would zero it. So only a `FileMap`, which this module
//! maps itself, ever has pages dropped: the decision is the type's, and no caller can
//! ask for it on other memory (docs/design/digest-engines.md, "The boundary").

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;

/// A whole file mapped read-only (an empty file maps to no memory).
pub struct FileMap {
    ptr: *const u8,
    len: usize,
}

// SAFETY: the mapping is read-only and lives as long as the `FileMap`; reading it from
// several threads at once is safe, and `madvise(MADV_DONTNEED)` on a read-only file
// mapping only makes the kernel read the pages again.
unsafe impl Send for FileMap {}
unsafe impl Sync for FileMap {}

impl FileMap {
    /// Map `path` read-only.
    pub fn open(path: &Path) -> io::Result<FileMap> {
        let file = File::open(path)?;
        let len = usize::try_from(file.metadata()?.len()).map_err(|_| io::Error::other("file too large to map"))?;
        if len == 0 {
            return Ok(FileMap { ptr: std::ptr::NonNull::dangling().as_ptr(), len: 0 });
        }
        // SAFETY: a fresh shared read-only mapping of an open file; the kernel keeps it
        // valid after the descriptor closes. A file truncated by someone else while
        // mapped raises SIGBUS on access, as with Python's mmap.
        let ptr =
            unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0) };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(FileMap { ptr: ptr as *const u8, len })
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until `drop` (or is dangling with len 0).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Drop the whole pages of `[from, to)` from resident memory; returns where the
    /// dropped part ends (`from` when no whole page lies inside).
    pub fn drop_pages(&self, from: usize, to: usize) -> usize {
        const PAGE: usize = 4096;
        let base = self.ptr as usize;
        let to = to.min(self.len);
        let a = (base + from).div_ceil(PAGE) * PAGE;
        let b = (base + to) / PAGE * PAGE;
        if b <= a {
            return from;
        }
        // SAFETY: [a, b) lies inside this read-only file mapping: dropped pages are read
        // again from the file if touched.
        unsafe {
            libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_DONTNEED);
        }
        b - base
    }
}

impl Drop for FileMap {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmaps exactly what `open` mapped; no slice of it outlives `self`.
            unsafe {
                libc::munmap(self.ptr as *mut libc::c_void, self.len);
            }
        }
    }
}

/// What a range is digested from: memory its owner keeps as it is, or a file mapping
/// whose digested pages may be dropped.
#[derive(Clone, Copy)]
pub enum Bytes<'a> {
    Memory(&'a [u8]),
    Mapped(&'a FileMap),
}

impl<'a> Bytes<'a> {
    pub fn as_slice(&self) -> &'a [u8] {
        match self {
            Bytes::Memory(data) => data,
            Bytes::Mapped(map) => map.as_slice(),
        }
    }

    /// Give back `[from, to)`, read to the end: a mapping drops those pages, memory is
    /// left alone. Returns where the given-back part ends.
    pub fn release(&self, from: usize, to: usize) -> usize {
        match self {
            Bytes::Memory(_) => from,
            Bytes::Mapped(map) => map.drop_pages(from, to),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident kB of this process's mapping of `map` (/proc/self/smaps).
    fn resident_kb(map: &FileMap) -> u64 {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let start = format!("{:x}-", map.ptr as usize);
        let entry = smaps.split_once(&format!("\n{start}")).map(|(_, rest)| rest).expect("the mapping is listed");
        let rss = entry.lines().find_map(|l| l.strip_prefix("Rss:")).expect("an Rss line");
        rss.trim().trim_end_matches("kB").trim().parse().unwrap()
    }

    #[test]
    fn dropped_pages_leave_memory_and_read_again_from_the_file() {
        let path = std::env::temp_dir().join(format!("govern-filemap-{}", std::process::id()));
        let content: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        let map = FileMap::open(&path).unwrap();
        assert_eq!(map.as_slice(), &content[..]);
        assert_eq!(resident_kb(&map), 1024);
        // Not the first page: 100 is inside it.
        assert_eq!(map.drop_pages(100, 1 << 20), 1 << 20);
        assert_eq!(resident_kb(&map), 4);
        assert_eq!(map.as_slice(), &content[..]);
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn memory_is_never_released() {
        let data = vec![7u8; 3 << 20];
        let input = Bytes::Memory(&data);
        assert_eq!(input.release(0, data.len()), 0);
        assert!(data.iter().all(|&b| b == 7));
    }

    #[test]
    fn an_empty_file_maps_to_nothing() {
        let path = std::env::temp_dir().join(format!("govern-filemap-empty-{}", std::process::id()));
        std::fs::write(&path, b"").unwrap();
        let map = FileMap::open(&path).unwrap();
        assert!(map.as_slice().is_empty());
        assert_eq!(map.drop_pages(0, 10), 0);
        std::fs::remove_file(&path).unwrap();
    }
}
