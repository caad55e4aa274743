//! The in-memory vector set: every chunk vector in one contiguous row-major
//! `Vec<f32>`, searched by an exact top-k scan split across threads.

use std::collections::HashSet;

/// Rows below which the scan stays on the calling thread (thread start-up
/// costs more than it saves on small sets).
const PARALLEL_MIN_FLOATS: usize = 1 << 20;

/// Dot product with eight independent accumulators, so the compiler can keep
/// them in SIMD registers without reassociating floats.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s = (acc[0] + acc[4]) + (acc[1] + acc[5]) + (acc[2] + acc[6]) + (acc[3] + acc[7]);
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// Vectors of one index, with their chunk ids and sources.
#[derive(Debug, Clone, Default)]
pub struct VectorSet {
    dims: usize,
    ids: Vec<i64>,
    sources: Vec<u8>,
    data: Vec<f32>,
}

impl VectorSet {
    /// An empty set of `dims`-dimensional vectors.
    pub fn new(dims: usize) -> Self {
        VectorSet {
            dims,
            ..Default::default()
        }
    }

    /// Dimension of the vectors.
    pub fn dims(&self) -> usize {
        self.dims
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The raw row-major buffer (for benchmarks).
    pub fn data(&self) -> &[f32] {
        &self.data
    }

    /// Adds one vector; `source` is a small tag used by filters. A vector of
    /// the wrong dimension is ignored and `false` returned.
    pub fn push(&mut self, id: i64, source: u8, v: &[f32]) -> bool {
        if v.len() != self.dims {
            return false;
        }
        self.ids.push(id);
        self.sources.push(source);
        self.data.extend_from_slice(v);
        true
    }

    /// Removes the vectors of these chunk ids, compacting in place.
    pub fn remove(&mut self, ids: &HashSet<i64>) {
        if ids.is_empty() {
            return;
        }
        let d = self.dims;
        let mut w = 0usize;
        for r in 0..self.ids.len() {
            if ids.contains(&self.ids[r]) {
                continue;
            }
            if w != r {
                self.ids[w] = self.ids[r];
                self.sources[w] = self.sources[r];
                self.data.copy_within(r * d..(r + 1) * d, w * d);
            }
            w += 1;
        }
        self.ids.truncate(w);
        self.sources.truncate(w);
        self.data.truncate(w * d);
    }

    /// The `k` rows with the highest dot product with `query` (cosine, since
    /// vectors are unit length), best first. `allow` filters by source tag.
    pub fn top_k(
        &self,
        query: &[f32],
        k: usize,
        allow: Option<&(dyn Fn(u8) -> bool + Sync)>,
    ) -> Vec<(i64, f32)> {
        let n = self.ids.len();
        if k == 0 || n == 0 || query.len() != self.dims {
            return Vec::new();
        }
        let threads = if self.data.len() >= PARALLEL_MIN_FLOATS {
            std::thread::available_parallelism()
                .map(|p| p.get())
                .unwrap_or(1)
                .min(8)
        } else {
            1
        };
        let mut best: Vec<(f32, u32)> = if threads <= 1 {
            self.scan(query, 0, n, k, allow)
        } else {
            let per = n.div_ceil(threads);
            std::thread::scope(|s| {
                let handles: Vec<_> = (0..threads)
                    .map(|t| {
                        let lo = (t * per).min(n);
                        let hi = ((t + 1) * per).min(n);
                        s.spawn(move || self.scan(query, lo, hi, k, allow))
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().unwrap_or_default())
                    .collect()
            })
        };
        best.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
        best.truncate(k);
        best.into_iter()
            .map(|(s, r)| (self.ids[r as usize], s))
            .collect()
    }

    fn scan(
        &self,
        query: &[f32],
        lo: usize,
        hi: usize,
        k: usize,
        allow: Option<&(dyn Fn(u8) -> bool + Sync)>,
    ) -> Vec<(f32, u32)> {
        let d = self.dims;
        let mut scores: Vec<(f32, u32)> = Vec::with_capacity(hi - lo);
        let rows = self.data[lo * d..hi * d].chunks_exact(d);
        match allow {
            None => {
                for (i, row) in rows.enumerate() {
                    scores.push((dot(row, query), (lo + i) as u32));
                }
            }
            Some(f) => {
                for (i, row) in rows.enumerate() {
                    if f(self.sources[lo + i]) {
                        scores.push((dot(row, query), (lo + i) as u32));
                    }
                }
            }
        }
        if scores.len() > k {
            scores.select_nth_unstable_by(k - 1, |a, b| b.0.total_cmp(&a.0));
            scores.truncate(k);
        }
        scores
    }
}

/// Integer dot product with sixteen i32 accumulators (auto-vectorised).
#[inline]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    let mut acc = [0i32; 16];
    let ca = a.chunks_exact(16);
    let cb = b.chunks_exact(16);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for i in 0..16 {
            acc[i] += x[i] as i32 * y[i] as i32;
        }
    }
    let mut s: i32 = acc.iter().sum();
    for (x, y) in ra.iter().zip(rb) {
        s += *x as i32 * *y as i32;
    }
    s
}

fn quantize(v: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    out.extend(
        v.iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
    );
    scale
}

/// An int8 copy of a [`VectorSet`] (one scale per row): a quarter of the
/// memory traffic for the first pass, then the best `rerank` rows are
/// re-scored exactly in f32. Not used by search yet: measured in the
/// benchmark (recall@10 against the exact scan and speed).
#[derive(Debug, Clone, Default)]
pub struct Int8Set {
    dims: usize,
    codes: Vec<i8>,
    scales: Vec<f32>,
}

impl Int8Set {
    /// Quantises every row of `set`.
    pub fn from_set(set: &VectorSet) -> Self {
        let d = set.dims;
        let mut codes = Vec::with_capacity(set.data.len());
        let scales = set
            .data
            .chunks_exact(d.max(1))
            .map(|row| quantize(row, &mut codes))
            .collect();
        Int8Set {
            dims: d,
            codes,
            scales,
        }
    }

    /// Top `k` of `set` (the set this was built from) for `query`: an int8
    /// pass keeps `rerank` candidates, re-scored exactly.
    pub fn top_k(
        &self,
        set: &VectorSet,
        query: &[f32],
        k: usize,
        rerank: usize,
    ) -> Vec<(i64, f32)> {
        let n = self.scales.len();
        if k == 0 || n == 0 || query.len() != self.dims || n != set.len() {
            return Vec::new();
        }
        let d = self.dims;
        let mut q = Vec::with_capacity(d);
        quantize(query, &mut q);
        let keep = rerank.max(k);
        let scan = |lo: usize, hi: usize| -> Vec<(f32, u32)> {
            let mut scores: Vec<(f32, u32)> = self.codes[lo * d..hi * d]
                .chunks_exact(d)
                .enumerate()
                .map(|(i, row)| {
                    (
                        dot_i8(row, &q) as f32 * self.scales[lo + i],
                        (lo + i) as u32,
                    )
                })
                .collect();
            if scores.len() > keep {
                scores.select_nth_unstable_by(keep - 1, |a, b| b.0.total_cmp(&a.0));
                scores.truncate(keep);
            }
            scores
        };
        let threads = if self.codes.len() >= PARALLEL_MIN_FLOATS * 4 {
            std::thread::available_parallelism()
                .map(|p| p.get())
                .unwrap_or(1)
                .min(8)
        } else {
            1
        };
        let cands: Vec<(f32, u32)> = if threads <= 1 {
            scan(0, n)
        } else {
            let per = n.div_ceil(threads);
            std::thread::scope(|s| {
                let hs: Vec<_> = (0..threads)
                    .map(|t| {
                        let scan = &scan;
                        s.spawn(move || scan((t * per).min(n), ((t + 1) * per).min(n)))
                    })
                    .collect();
                hs.into_iter()
                    .flat_map(|h| h.join().unwrap_or_default())
                    .collect()
            })
        };
        let mut exact: Vec<(f32, u32)> = cands
            .into_iter()
            .map(|(_, r)| {
                (
                    dot(&set.data[r as usize * d..(r as usize + 1) * d], query),
                    r,
                )
            })
            .collect();
        exact.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
        exact.truncate(k);
        exact
            .into_iter()
            .map(|(s, r)| (set.ids[r as usize], s))
            .collect()
    }
}

/// Sum of the buffer with eight accumulators: the memory-bandwidth floor a
/// scan is compared with in the benchmark.
pub fn bandwidth_baseline(data: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let c = data.chunks_exact(8);
    let r = c.remainder();
    for x in c {
        for i in 0..8 {
            acc[i] += x[i];
        }
    }
    acc.iter().sum::<f32>() + r.iter().sum::<f32>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    #[test]
    fn top_k_matches_brute_force_and_parallel_path() {
        let d = 64;
        let n = (PARALLEL_MIN_FLOATS / d) + 500; // forces the threaded path
        let mut set = VectorSet::new(d);
        let mut seed = 7u64;
        let mut rnd = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let rows: Vec<Vec<f32>> = (0..n)
            .map(|_| unit((0..d).map(|_| rnd()).collect()))
            .collect();
        for (i, r) in rows.iter().enumerate() {
            assert!(set.push(i as i64 * 10, (i % 2) as u8, r));
        }
        let q = unit((0..d).map(|_| rnd()).collect());
        let mut brute: Vec<(i64, f32)> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (i as i64 * 10, dot(r, &q)))
            .collect();
        brute.sort_by(|a, b| b.1.total_cmp(&a.1));
        let got = set.top_k(&q, 10, None);
        assert_eq!(
            got.iter().map(|x| x.0).collect::<Vec<_>>(),
            brute[..10].iter().map(|x| x.0).collect::<Vec<_>>()
        );
        let even: &(dyn Fn(u8) -> bool + Sync) = &|s| s == 0;
        let filtered = set.top_k(&q, 5, Some(even));
        assert!(filtered.iter().all(|(id, _)| (id / 10) % 2 == 0));

        let drop: HashSet<i64> = got.iter().take(3).map(|x| x.0).collect();
        set.remove(&drop);
        assert_eq!(set.len(), n - 3);
        let again = set.top_k(&q, 7, None);
        assert_eq!(
            again.iter().map(|x| x.0).collect::<Vec<_>>(),
            got[3..].iter().map(|x| x.0).collect::<Vec<_>>()
        );
        assert!(!set.push(1, 0, &[1.0]));

        let q8 = Int8Set::from_set(&set);
        let approx = q8.top_k(&set, &q, 10, 100);
        let exact = set.top_k(&q, 10, None);
        assert_eq!(approx, exact);
    }
}
