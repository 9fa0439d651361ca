//! govern's native slow-log digest core.
//!
//! The hot loop of `govern digest` in Rust: read a slow log (memory-mapped), split it
//! into events exactly where pt-query-digest does, parse their header attributes,
//! fingerprint each statement the way pt does, and aggregate per class on every core.
//! Python (the `govern.digest` package) keeps everything else and receives finished
//! aggregates. The pure-Python engine stays the reference: both must produce the same
//! JSON on the whole corpus.
//!
//! Modules, one concern each:
//! - `perl`: Perl's byte-string character classes, which pt's regexes use;
//! - `records`: pt's record reader (`$/ = ";\n#"`);
//! - `slowlog`: pt's event parser on top of it;
//! - `fingerprint`: pt's fingerprint and query ID;
//! - `number`: attribute values as numbers, with exact sums;
//! - `sketch`: the mergeable quantile sketch;
//! - `aggregate`: per-class statistics and their merge;
//! - `digest`: pt's event pipeline into a `Part`, and the merge of parts;
//! - `range`: one byte range digested as the Python engine does (every aggregate);
//! - `hashes`: BLAKE2b-8, CRC-32 and splitmix64 for those aggregates;
//! - `parallel`: one log split at record boundaries and digested on all cores;
//! - `file`: a log file, memory-mapped;
//! - `stream`: a log arriving in pieces (stdin, decompressed files);
//! - `total`: ranges merged in input order into the digest `govern digest` reports.

pub mod aggregate;
pub mod digest;
pub mod file;
pub mod fingerprint;
pub mod hashes;
pub mod number;
pub mod parallel;
pub mod perl;
pub mod range;
pub mod records;
pub mod sketch;
pub mod slowlog;
pub mod stream;
pub mod total;

#[cfg(feature = "python")]
mod python;
