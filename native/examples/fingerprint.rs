//! Time the fingerprint alone over the statements of a log, read once into memory:
//! `cargo run --release --example fingerprint -- FILE [MB] [REPEAT]`. Prints ns per
//! statement and a checksum of the fingerprints (the same before and after a change).
use govern_native::fingerprint::Fingerprinter;
use govern_native::slowlog::Parser;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let data = std::fs::read(&args[1]).expect("read");
    let limit = args.get(2).map_or(data.len(), |m| (m.parse::<usize>().unwrap() << 20).min(data.len()));
    let repeat: usize = args.get(3).map_or(3, |r| r.parse().unwrap());
    let mut statements: Vec<Vec<u8>> = Vec::new();
    let mut p = Parser::new(&data[..limit], 0);
    while let Some(ev) = p.next_event() {
        if let Some(a) = ev.arg() {
            statements.push(a.to_vec());
        }
    }
    let mut fp = Fingerprinter::new();
    for _ in 0..repeat {
        let t = std::time::Instant::now();
        let mut check = 0u64;
        for s in &statements {
            let f = fp.fingerprint(s);
            check = check.wrapping_mul(31).wrapping_add(f.len() as u64 + f.iter().map(|&b| b as u64).sum::<u64>());
        }
        let ns = t.elapsed().as_nanos() as f64 / statements.len() as f64;
        let bytes: usize = statements.iter().map(Vec::len).sum();
        eprintln!(
            "{} statements ({} B avg): {ns:.0} ns each, checksum {check:x}",
            statements.len(),
            bytes / statements.len()
        );
    }
}
