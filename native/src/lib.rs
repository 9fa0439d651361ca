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
//! - `aggregate`: interned names and texts, numeric statistics;
//! - `attributes`: which attributes are measures, counted by value, or left out;
//! - `time`: event times as both engines keep them;
//! - `values`: the containers figures are kept in (capped value counts, bit sets,
//!   distinct-count sketches);
//! - `class`: a class's figures and how two merge (aggregate.py `ClassAgg`);
//! - `kinds`: statement kinds and multi-row INSERT row counts;
//! - `filemap`: files mapped read-only, the only memory whose pages are dropped;
//! - `range`: the digester: one byte range digested as the Python engine does;
//! - `hashes`: CRC-32 and splitmix64 for those aggregates;
//! - `total`: ranges merged in input order into the digest `govern digest` reports;
//! - `stored`: the history store's class states merged in bulk.
//! - `screen`: what the digest rules' screens learn of a sample without Python's lexer.
//!
//! The runner (govern/digest/runner.py, native_total.py) cuts the input at record
//! boundaries, digests ranges on threads with the GIL released, and hands them to a
//! `Total` in order.

pub mod aggregate;
pub mod attributes;
pub mod class;
pub mod document;
pub mod filemap;
pub mod fingerprint;
pub mod hashes;
pub mod kinds;
pub mod number;
pub mod perl;
pub mod range;
pub mod records;
pub mod screen;
pub mod sketch;
pub mod slowlog;
pub mod stored;
pub mod time;
pub mod total;
pub mod values;

#[cfg(feature = "python")]
mod python;
