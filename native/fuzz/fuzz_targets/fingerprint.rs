//! Any bytes as a statement: the fingerprint must not panic, and must be stable
//! (fingerprinting twice with reused buffers gives the same bytes).
#![no_main]

use govern_native::fingerprint::{query_id, Fingerprinter};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut f = Fingerprinter::new();
    let a = f.fingerprint(data).to_vec();
    let b = f.fingerprint(data).to_vec();
    assert_eq!(a, b);
    assert_eq!(query_id(&a).len(), 32);
});
