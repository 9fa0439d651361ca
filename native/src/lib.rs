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
//! - `fingerprint`: pt's fingerprint and query ID.

pub mod fingerprint;
pub mod perl;
pub mod records;
pub mod slowlog;
