//! The byte-level reader under pt-query-digest's slow-log parser.
//!
//! pt reads a slow log with Perl's `<$fh>` and `$/ = ";\n#"`: a record is everything up
//! to and including the next `;\n#`, so the `#` that starts the next header belongs to
//! the previous record. When an event has no query line, pt reads ahead once with
//! `$/ = ";\n"` (see `slowlog.rs`). Reproducing both reads byte for byte is what makes
//! the event boundaries, and so the classes, identical to pt's.

use memchr::memmem;

/// The record separator pt uses for slow logs.
pub const RECORD_SEP: &[u8] = b";\n#";
/// The separator of pt's read-ahead for events without a query line.
pub const LINE_SEP: &[u8] = b";\n";

/// The first `;\n#` in `s`. A log has few semicolons (statement ends, `SET` and `use`
/// lines), so a one-byte search beats a three-byte one here.
#[inline]
pub fn find_record_sep(s: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b';', s).find(|&i| s.get(i + 1) == Some(&b'\n') && s.get(i + 2) == Some(&b'#'))
}

/// Finders built once: `memmem::Finder` precomputes its SIMD prefilter.
pub struct Separators {
    record: memmem::Finder<'static>,
    line: memmem::Finder<'static>,
}

impl Default for Separators {
    fn default() -> Self {
        Separators { record: memmem::Finder::new(RECORD_SEP), line: memmem::Finder::new(LINE_SEP) }
    }
}

impl Separators {
    /// Perl `<$fh>` with `$/` = `sep` on `data` from `pos`: the range read, or `None` at
    /// end of input. The range ends after the separator, or at the end of the data.
    #[inline]
    pub fn read(&self, data: &[u8], pos: usize, line: bool) -> Option<(usize, usize)> {
        if pos >= data.len() {
            return None;
        }
        let end = if line {
            self.line.find(&data[pos..]).map_or(data.len(), |i| pos + i + LINE_SEP.len())
        } else {
            find_record_sep(&data[pos..]).map_or(data.len(), |i| pos + i + RECORD_SEP.len())
        };
        Some((pos, end))
    }

    /// Position just after the next record separator at or after `pos` (a record
    /// boundary), or `None`.
    pub fn next_boundary(&self, data: &[u8], pos: usize) -> Option<usize> {
        let pos = pos.min(data.len());
        find_record_sep(&data[pos..]).map(|i| pos + i + RECORD_SEP.len())
    }

    /// Perl `split(/;\n#/, $s)`: fields between separators, trailing empty fields dropped.
    pub fn split_records<'a>(&self, s: &'a [u8]) -> Vec<&'a [u8]> {
        let mut out = Vec::new();
        let mut start = 0;
        for i in self.record.find_iter(s) {
            out.push(&s[start..i]);
            start = i + RECORD_SEP.len();
        }
        out.push(&s[start..]);
        while out.last().is_some_and(|f| f.is_empty()) {
            out.pop();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_like_perl_readline() {
        let s = Separators::default();
        let data = b"a;\n#b;\nc;\n#";
        assert_eq!(s.read(data, 0, false), Some((0, 4)));
        assert_eq!(s.read(data, 4, false), Some((4, 11)));
        assert_eq!(s.read(data, 11, false), None);
        assert_eq!(s.read(data, 4, true), Some((4, 7)));
        assert_eq!(s.read(b"tail", 0, false), Some((0, 4)));
    }

    #[test]
    fn split_drops_trailing_empty_fields_only() {
        let s = Separators::default();
        assert_eq!(s.split_records(b"a;\n#b;\n#"), vec![&b"a"[..], b"b"]);
        assert_eq!(s.split_records(b";\n#b"), vec![&b""[..], b"b"]);
        assert!(s.split_records(b"").is_empty());
    }
}
