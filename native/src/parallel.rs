//! One log on all cores: split at record boundaries, digest the parts concurrently,
//! merge them in order.
//!
//! pt's reader is a state machine, and a part may start where it would not stand: the
//! event before a boundary can have no query line, and then pt reads across the
//! boundary. Each part therefore reports where its reader stopped; when that is not
//! exactly the next part's start, the next part is digested again from the reader's
//! real state before it is merged. Normal logs never take that path; when one does, the
//! result is still exactly the serial one.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Condvar, Mutex};

use crate::digest::{digest_range, Part};
use crate::records::Separators;

/// Part boundaries: `0`, record boundaries about `part_size` apart, `data.len()`.
pub fn split_points(data: &[u8], part_size: usize) -> Vec<usize> {
    let seps = Separators::default();
    let mut points = vec![0];
    let mut at = part_size.max(1);
    while at < data.len() {
        match seps.next_boundary(data, at) {
            Some(b) if b < data.len() => {
                points.push(b);
                at = b + part_size.max(1);
            }
            _ => break,
        }
    }
    points.push(data.len());
    points
}

/// A part size that gives every thread several parts (so a slow part does not leave
/// a core idle) and bounds memory: the parts in flight and their class tables.
pub fn default_part_size(len: usize, threads: usize) -> usize {
    (len / (threads.max(1) * 8)).clamp(1 << 20, 4 << 20)
}

/// Digest `data` split at `points` on `threads` threads; equal to the serial digest.
pub fn digest_parts(data: &[u8], points: &[usize], threads: usize, max_classes: usize) -> Part {
    digest_parts_releasing(data, points, threads, max_classes, &|_, _| {})
}

/// `digest_parts`, calling `release(start, end)` when a part's bytes are no longer
/// needed (a memory-mapped file drops its pages there: resident memory stays small).
pub fn digest_parts_releasing(
    data: &[u8],
    points: &[usize],
    threads: usize,
    max_classes: usize,
    release: &(dyn Fn(usize, usize) + Sync),
) -> Part {
    let n = points.len().saturating_sub(1);
    if n == 0 {
        return digest_range(data, 0, VecDeque::new(), 0, max_classes);
    }
    // Parts are unbounded in classes; the cap applies while merging, in log order.
    let part_classes = usize::MAX;
    let threads = threads.clamp(1, n);
    let next = AtomicUsize::new(0);
    // Workers stay at most `window` parts ahead of the merge, bounding memory.
    let window = threads + 1;
    let merged = (Mutex::new(0usize), Condvar::new());
    let (tx, rx) = mpsc::channel::<(usize, Part)>();
    std::thread::scope(|s| {
        for _ in 0..threads {
            let tx = tx.clone();
            let (next, merged) = (&next, &merged);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                {
                    let mut m = merged.0.lock().unwrap();
                    while i >= *m + window {
                        m = merged.1.wait(m).unwrap();
                    }
                }
                let part = digest_range(data, points[i], VecDeque::new(), points[i + 1], part_classes);
                release(points[i], part.end_pos.max(points[i + 1]));
                if tx.send((i, part)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut waiting = BTreeMap::new();
        let mut acc = Part::new(max_classes);
        acc.end_pos = 0;
        let mut expect = 0;
        for (i, part) in rx {
            waiting.insert(i, part);
            while let Some(mut part) = waiting.remove(&expect) {
                if acc.end_pos != points[expect] || !acc.end_pending.is_empty() {
                    // The previous part's reader ran past this part's start: redo it
                    // from that reader's real state.
                    let pending = std::mem::take(&mut acc.end_pending);
                    part = digest_range(data, acc.end_pos, pending, points[expect + 1], part_classes);
                }
                acc.merge(part);
                expect += 1;
                *merged.0.lock().unwrap() = expect;
                merged.1.notify_all();
            }
        }
        acc
    })
}
