//! A log that arrives in pieces (stdin, a decompressed file), digested as it comes.
//!
//! Bytes are buffered until a part's worth is there, then digested up to a record
//! boundary and merged; the bytes consumed are dropped, so memory is bounded by the
//! part size. If pt's reader would have read past what has arrived (a header-only
//! event near the cut), the part is dropped and digested again once more bytes are
//! in, so the result equals digesting the whole input at once.

use std::collections::VecDeque;

use crate::digest::{digest_window, Part};
use crate::records::find_record_sep;

pub struct Stream {
    buf: Vec<u8>,
    /// Input offset of `buf[0]`.
    base: u64,
    /// Reader position in `buf`, and what it has read ahead.
    pos: usize,
    pending: VecDeque<Vec<u8>>,
    acc: Part,
    part_size: usize,
}

impl Stream {
    pub fn new(max_classes: usize, part_size: usize) -> Self {
        Stream { buf: Vec::new(), base: 0, pos: 0, pending: VecDeque::new(), acc: Part::new(max_classes), part_size }
    }

    pub fn feed(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
        while self.buf.len() - self.pos >= self.part_size {
            if !self.step(false) {
                break;
            }
        }
    }

    /// The digest of everything fed.
    pub fn finish(mut self) -> Part {
        self.step(true);
        self.acc
    }

    /// Digest one part; `false` when more input is needed first.
    fn step(&mut self, last: bool) -> bool {
        let end = if last {
            self.buf.len()
        } else {
            // Cut at a record boundary half a part in.
            let from = self.pos + self.part_size / 2;
            match find_record_sep(&self.buf[from..]) {
                Some(i) => from + i + 3,
                None => return false,
            }
        };
        let (part, hit_end) = digest_window(&self.buf, self.base, self.pos, self.pending.clone(), end, usize::MAX);
        if hit_end && !last {
            // The reader needed bytes that have not arrived yet: redo with more.
            self.part_size = self.part_size.saturating_mul(2);
            return false;
        }
        self.pos = part.end_pos;
        self.pending = part.end_pending.clone();
        self.acc.merge(part);
        // Keep the byte before the reader: pt prefixes a record with the '#' before it.
        let keep_from = self.pos.saturating_sub(1);
        self.buf.drain(..keep_from);
        self.base += keep_from as u64;
        self.pos -= keep_from;
        true
    }
}
