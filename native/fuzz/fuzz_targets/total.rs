//! Any bytes as a slow log, digested whole and in ranges merged by `total.rs` (cut every
//! 1 to 4 records, as the first byte says; each range after the first with an unknown
//! context; its classes frozen after every merge): no panic, and the same events,
//! classes, counts, Query_time sums, runs and calls in runs, minutes, malformed and
//! filtered events; with no filter, `--since`, or conditions on db and fingerprint (the
//! second byte says).
#![no_main]

#[path = "../../tests/common/total_check.rs"]
mod total_check;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let step = 1 + data.first().map_or(0, |&b| b as usize % 4);
    let filtering = data.get(1).map_or(0, |&b| b % 3);
    total_check::check(data, step, filtering);
});
