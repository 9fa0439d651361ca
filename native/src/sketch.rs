//! A mergeable quantile sketch with bounded relative error (the DDSketch idea).
//!
//! Values fall into logarithmic buckets `γ^(i-1) < x ≤ γ^i` with γ = (1+α)/(1−α);
//! reporting a bucket as `2γ^i/(γ+1)` is within α of every value in it, so any
//! quantile is within α (1%) of the true value at that rank. Buckets are counts, so
//! two sketches merge by adding counts: a merged digest has valid percentiles.
//! Storage is sparse (sorted bucket, count pairs): a class seen once costs one pair.

/// Relative accuracy of every quantile.
pub const ALPHA: f64 = 0.01;

/// Values at or below this are counted in the zero bucket and reported as 0.
pub const MIN_VALUE: f64 = 1e-9;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sketch {
    /// (bucket index, count), sorted by index.
    buckets: Vec<(i32, u64)>,
    zeros: u64,
}

fn gamma() -> f64 {
    (1.0 + ALPHA) / (1.0 - ALPHA)
}

/// Bucket index of a positive value: `ceil(log_γ x)`.
#[inline]
pub fn bucket_of(x: f64) -> i32 {
    (x.ln() / gamma().ln()).ceil() as i32
}

/// The value reported for a bucket.
#[inline]
pub fn bucket_value(i: i32) -> f64 {
    let g = gamma();
    2.0 * g.powi(i) / (g + 1.0)
}

impl Sketch {
    pub fn add(&mut self, x: f64) {
        // Zero, tiny, negative and NaN values all count as zero.
        if x.is_nan() || x <= MIN_VALUE {
            self.zeros += 1;
            return;
        }
        self.add_bucket(bucket_of(x), 1);
    }

    fn add_bucket(&mut self, i: i32, n: u64) {
        // Most values of a class land in a few buckets near the end; search from there.
        match self.buckets.binary_search_by_key(&i, |&(b, _)| b) {
            Ok(k) => self.buckets[k].1 += n,
            Err(k) => self.buckets.insert(k, (i, n)),
        }
    }

    pub fn merge(&mut self, other: &Sketch) {
        self.zeros += other.zeros;
        for &(i, n) in &other.buckets {
            self.add_bucket(i, n);
        }
    }

    pub fn count(&self) -> u64 {
        self.zeros + self.buckets.iter().map(|&(_, n)| n).sum::<u64>()
    }

    /// The value at quantile `q` (0..=1): the bucket holding the value of rank
    /// `floor(q·(n−1))` in sorted order, as the nearest-rank method counts.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = (q.clamp(0.0, 1.0) * (n - 1) as f64).floor() as u64;
        if rank < self.zeros {
            return Some(0.0);
        }
        let mut seen = self.zeros;
        for &(i, c) in &self.buckets {
            seen += c;
            if rank < seen {
                return Some(bucket_value(i));
            }
        }
        None
    }

    /// Sparse contents, for serialisation: zero count and (bucket, count) pairs.
    pub fn parts(&self) -> (u64, &[(i32, u64)]) {
        (self.zeros, &self.buckets)
    }

    /// Heap bytes held, for memory accounting.
    pub fn heap_bytes(&self) -> usize {
        self.buckets.capacity() * std::mem::size_of::<(i32, u64)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_relative_error() {
        let mut s = Sketch::default();
        let values: Vec<f64> = (1..=10_000).map(|i| i as f64 * 0.000_137).collect();
        for &v in &values {
            s.add(v);
        }
        for q in [0.0, 0.5, 0.95, 0.99, 1.0] {
            let exact = values[(q * (values.len() - 1) as f64).floor() as usize];
            let got = s.quantile(q).unwrap();
            assert!((got - exact).abs() <= ALPHA * exact + 1e-15, "q={q}: {got} vs {exact}");
        }
    }

    #[test]
    fn merge_equals_adding_everything_to_one() {
        let (mut a, mut b, mut all) = (Sketch::default(), Sketch::default(), Sketch::default());
        for i in 0..1000 {
            let v = (i % 97) as f64 * 0.01;
            if i % 3 == 0 {
                a.add(v)
            } else {
                b.add(v)
            }
            all.add(v);
        }
        a.merge(&b);
        assert_eq!(a, all);
    }
}
