//! The 4-bit first pass of a set that keeps codes only.
//!
//! This module owns [`Coarse`]: a second copy of a set's rows at 4 bits per
//! dimension, and its scan kernels (AVX-512 VNNI, AVX2, portable). At a
//! million rows the int8 pass reads 384 MB per search and is bound by memory
//! bandwidth (one thread and two threads scan it in the same time on the
//! project VM); this copy is half of that, so the first pass reads half the
//! bytes, and only the rows it keeps are scored in int8.
//!
//! Each dimension is quantised on its own range over the set (16 equal bins
//! between its minimum and maximum), not on the row's own scale. A row's
//! int8 codes are scaled by its largest value, so in a set whose rows share
//! a few dominant dimensions most codes are small, and their high four bits
//! carry almost nothing: that first pass kept the true top 10 for only
//! 0.80 of them at a million hash-embedder rows (docs/BENCHMARKS-LOG.md,
//! item 28). Per dimension, every bin is used wherever the values spread.
//!
//! Scoring: a value `x` in bin `h` of dimension `d` is about
//! `lo[d] + width[d] * (h + 0.5)`, so `q . x` is a constant of the query
//! (the same for every row) plus `sum_d q[d] * width[d] * h[d]`; the pass
//! ranks by that sum, with `q[d] * width[d]` quantised to int8 once per
//! query.
//!
//! Layout: row-major, `half` bytes a row; byte `j` holds dimension `j` in
//! its low nibble and dimension `half + j` in its high nibble. `half` is
//! `ceil(dims / 2)` rounded up to a multiple of 64, so the kernels never
//! need a tail (padding dimensions carry a zero weight).

use super::{split, Best, SourceFilter};

/// Bytes of one SIMD step; `half` is a multiple of it.
const LANE: usize = 64;

/// Rows scored into one buffer before candidates are picked out of it.
const BLOCK_ROWS: usize = 256;

/// A set's rows at 4 bits per dimension (see the module docs).
#[derive(Debug, Clone)]
pub(crate) struct Coarse {
    dims: usize,
    half: usize,
    width: Vec<f32>,
    packed: Vec<u8>,
}

impl Coarse {
    /// Builds the 4-bit copy of `rows` int8 rows (`codes`, one `scale` per
    /// row: a value is `scale * code`).
    pub(crate) fn build(codes: &[i8], scales: &[f32], dims: usize) -> Coarse {
        let rows = scales.len();
        let half = dims.div_ceil(2).next_multiple_of(LANE);
        let mut lo = vec![f32::INFINITY; dims];
        let mut hi = vec![f32::NEG_INFINITY; dims];
        for (row, s) in codes.chunks_exact(dims).zip(scales) {
            for ((c, l), h) in row.iter().zip(&mut lo).zip(&mut hi) {
                let x = *c as f32 * s;
                *l = l.min(x);
                *h = h.max(x);
            }
        }
        let width: Vec<f32> = lo
            .iter()
            .zip(&hi)
            .map(|(l, h)| if h > l { (h - l) / 16.0 } else { 1.0 })
            .collect();
        for l in lo.iter_mut().filter(|l| !l.is_finite()) {
            *l = 0.0;
        }
        let inv: Vec<f32> = width.iter().map(|w| 1.0 / w).collect();
        let mut packed = vec![0u8; rows * half];
        let per = rows.div_ceil(super::scan_threads(codes.len())).max(1);
        // Rows are independent: each thread fills its own rows of `packed`.
        std::thread::scope(|s| {
            for (t, mine) in packed.chunks_mut(per * half).enumerate() {
                let (lo, inv) = (&lo, &inv);
                s.spawn(move || {
                    for (i, out) in mine.chunks_exact_mut(half).enumerate() {
                        let r = t * per + i;
                        let row = &codes[r * dims..(r + 1) * dims];
                        let s = scales[r];
                        // `(x - lo) * inv` is at least 0 (up to rounding,
                        // which the clamp takes), so the cast truncates as
                        // `floor` would, without a call per value.
                        let bin = |d: usize| {
                            ((row[d] as f32 * s - lo[d]) * inv[d]).clamp(0.0, 15.0) as u8
                        };
                        let split = half.min(dims);
                        for (d, o) in out.iter_mut().enumerate().take(split) {
                            *o = bin(d);
                        }
                        for d in split..dims {
                            out[d - half] |= bin(d) << 4;
                        }
                    }
                });
            }
        });
        Coarse {
            dims,
            half,
            width,
            packed,
        }
    }

    /// Bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.packed.len() + 8 * self.dims
    }

    /// The query's int8 weights in the packed layout (two halves of `half`).
    fn weights(&self, query: &[f32]) -> Vec<i8> {
        let w: Vec<f32> = query.iter().zip(&self.width).map(|(q, w)| q * w).collect();
        let max = w.iter().fold(0f32, |m, x| m.max(x.abs()));
        let inv = if max > 0.0 { 127.0 / max } else { 1.0 };
        let mut out = vec![0i8; 2 * self.half];
        // Dimension `d` is the low nibble of byte `d` for `d < half` and the
        // high nibble of byte `d - half` otherwise: either way its weight
        // sits at `d` of the two halves laid end to end.
        for (o, x) in out.iter_mut().zip(&w) {
            *o = (x * inv).round().clamp(-127.0, 127.0) as i8;
        }
        out
    }

    /// The best `keep` rows by the 4-bit score, in no order, as
    /// `(score, row)`; `sources[row]` is offered to `allow`.
    pub(crate) fn pool(
        &self,
        query: &[f32],
        keep: usize,
        sources: &[u8],
        allow: SourceFilter<'_>,
    ) -> Vec<(f32, u32)> {
        let rows = self.packed.len() / self.half.max(1);
        if keep == 0 || rows == 0 || query.len() != self.dims {
            return Vec::new();
        }
        let w = self.weights(query);
        let kernel = kernel();
        let half = self.half;
        let parts = split(rows, super::scan_threads(self.packed.len()), |a, b| {
            let mut best = Best::new(keep);
            let mut buf = [0i32; BLOCK_ROWS];
            let mut r = a;
            while r < b {
                let m = (b - r).min(BLOCK_ROWS);
                kernel(
                    &self.packed[r * half..(r + m) * half],
                    half,
                    &w,
                    &mut buf[..m],
                );
                for (i, s) in buf[..m].iter().enumerate() {
                    if allow.is_none_or(|f| f(sources[r + i])) {
                        best.offer(*s as f32, (r + i) as u32);
                    }
                }
                r += m;
            }
            best.finish()
        });
        parts.into_iter().flatten().collect()
    }

    /// The bin of one value (for tests).
    #[cfg(test)]
    pub(crate) fn bin_of(&self, row: usize, d: usize) -> u8 {
        let b = self.packed[row * self.half + if d < self.half { d } else { d - self.half }];
        if d < self.half {
            b & 15
        } else {
            b >> 4
        }
    }
}

/// Scores of consecutive packed rows of `half` bytes against `w`.
type Kernel = fn(&[u8], usize, &[i8], &mut [i32]);

/// The kernel of the running CPU and its name, picked once.
fn kernel_and_name() -> (Kernel, &'static str) {
    static K: std::sync::OnceLock<(Kernel, &'static str)> = std::sync::OnceLock::new();
    *K.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vnni")
            {
                return (x86::vnni_entry as Kernel, "avx512-vnni");
            }
            if std::arch::is_x86_feature_detected!("avx2") {
                return (x86::avx2_entry as Kernel, "avx2");
            }
        }
        (portable as Kernel, "portable")
    })
}

fn kernel() -> Kernel {
    kernel_and_name().0
}

/// Name of the 4-bit kernel in use, for benchmarks.
pub fn kernel_name() -> &'static str {
    kernel_and_name().1
}

fn portable(data: &[u8], half: usize, w: &[i8], out: &mut [i32]) {
    let (wa, wb) = w.split_at(half);
    for (row, o) in data.chunks_exact(half).zip(out.iter_mut()) {
        let mut acc = [0i32; 16];
        for ((b, x), y) in row
            .chunks_exact(16)
            .zip(wa.chunks_exact(16))
            .zip(wb.chunks_exact(16))
        {
            for i in 0..16 {
                acc[i] += (b[i] & 15) as i32 * x[i] as i32 + (b[i] >> 4) as i32 * y[i] as i32;
            }
        }
        *o = acc.iter().sum();
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    pub fn vnni_entry(data: &[u8], half: usize, w: &[i8], out: &mut [i32]) {
        // SAFETY: only installed by `kernel()` after detecting avx512f,
        // avx512bw and avx512vnni on the running CPU.
        unsafe { vnni(data, half, w, out) }
    }

    pub fn avx2_entry(data: &[u8], half: usize, w: &[i8], out: &mut [i32]) {
        // SAFETY: only installed by `kernel()` after detecting avx2.
        unsafe { avx2(data, half, w, out) }
    }

    /// `vpdpbusd` multiplies unsigned bytes (the nibbles, 0..=15) by signed
    /// bytes (the weights) and adds each group of four into an i32 lane: no
    /// sign trick and no saturation.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    fn vnni(data: &[u8], half: usize, w: &[i8], out: &mut [i32]) {
        let mask = _mm512_set1_epi8(15);
        let rows = out.len().min(data.len() / half);
        let (pd, pw) = (data.as_ptr(), w.as_ptr());
        // SAFETY: row `r < rows` spans `r * half..(r + 1) * half` of `data`;
        // each load reads 64 bytes at `j..j + 64` of it with `j + 64 <=
        // half` (a multiple of 64), and of `w` (length `2 * half`) at `j`
        // and `half + j`.
        unsafe {
            for (r, o) in out.iter_mut().enumerate().take(rows) {
                let row = pd.add(r * half);
                let mut acc = _mm512_setzero_si512();
                let mut j = 0;
                while j < half {
                    let b = _mm512_loadu_si512(row.add(j) as *const _);
                    let low = _mm512_and_si512(b, mask);
                    let high = _mm512_and_si512(_mm512_srli_epi16::<4>(b), mask);
                    let wa = _mm512_loadu_si512(pw.add(j) as *const _);
                    let wb = _mm512_loadu_si512(pw.add(half + j) as *const _);
                    acc = _mm512_dpbusd_epi32(acc, low, wa);
                    acc = _mm512_dpbusd_epi32(acc, high, wb);
                    j += 64;
                }
                *o = _mm512_reduce_add_epi32(acc);
            }
        }
    }

    /// `maddubs` (unsigned nibble x signed weight, pairs summed to i16: at
    /// most 2 * 15 * 127, no saturation), then `madd` by ones to i32.
    #[target_feature(enable = "avx2")]
    fn avx2(data: &[u8], half: usize, w: &[i8], out: &mut [i32]) {
        let mask = _mm256_set1_epi8(15);
        let ones = _mm256_set1_epi16(1);
        let rows = out.len().min(data.len() / half);
        let (pd, pw) = (data.as_ptr(), w.as_ptr());
        // SAFETY: as in `vnni`, with 32-byte loads (`half` is a multiple of
        // 64, so of 32).
        unsafe {
            for (r, o) in out.iter_mut().enumerate().take(rows) {
                let row = pd.add(r * half);
                let mut acc = _mm256_setzero_si256();
                let mut j = 0;
                while j < half {
                    let b = _mm256_loadu_si256(row.add(j) as *const __m256i);
                    let low = _mm256_and_si256(b, mask);
                    let high = _mm256_and_si256(_mm256_srli_epi16::<4>(b), mask);
                    let wa = _mm256_loadu_si256(pw.add(j) as *const __m256i);
                    let wb = _mm256_loadu_si256(pw.add(half + j) as *const __m256i);
                    let p = _mm256_add_epi16(
                        _mm256_maddubs_epi16(low, wa),
                        _mm256_maddubs_epi16(high, wb),
                    );
                    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, ones));
                    j += 32;
                }
                let s = _mm_add_epi32(
                    _mm256_castsi256_si128(acc),
                    _mm256_extracti128_si256::<1>(acc),
                );
                let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
                let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
                *o = _mm_cvtsi128_si32(s);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vectors::tests::rng;

    fn random_codes(rows: usize, dims: usize, seed: u64) -> (Vec<i8>, Vec<f32>) {
        let mut rnd = rng(seed);
        let codes = (0..rows * dims).map(|_| (rnd() * 254.0) as i8).collect();
        let scales = (0..rows).map(|_| 0.001 + (rnd() + 0.5) * 0.01).collect();
        (codes, scales)
    }

    /// Every kernel gives the portable kernel's integers, at the extremes
    /// too (nibble 15 against weight -127 / 127 in every lane).
    #[test]
    fn kernels_agree_with_portable_code() {
        for dims in [1, 64, 127, 128, 129, 384, 768] {
            let (codes, scales) = random_codes(37, dims, dims as u64);
            let c = Coarse::build(&codes, &scales, dims);
            let mut rnd = rng(9);
            let q: Vec<f32> = (0..dims).map(|_| rnd()).collect();
            let w = c.weights(&q);
            let mut want = vec![0i32; 37];
            let mut got = vec![0i32; 37];
            portable(&c.packed, c.half, &w, &mut want);
            kernel()(&c.packed, c.half, &w, &mut got);
            assert_eq!(got, want, "dims {dims}, kernel {}", kernel_name());
            let full = vec![0xffu8; c.half * 3];
            for v in [-127i8, 127] {
                let w = vec![v; 2 * c.half];
                portable(&full, c.half, &w, &mut want[..3]);
                kernel()(&full, c.half, &w, &mut got[..3]);
                assert_eq!(got[..3], want[..3]);
                assert_eq!(want[0], 15 * v as i32 * 2 * c.half as i32);
            }
        }
    }

    /// Each value lands in the bin of its own dimension's range: the
    /// minimum in bin 0, the maximum in bin 15, and the bin's edges
    /// around the value.
    #[test]
    fn values_land_in_their_dimensions_bins() {
        let dims = 130;
        let (codes, scales) = random_codes(200, dims, 4);
        let c = Coarse::build(&codes, &scales, dims);
        for d in [0, 1, 64, 65, 66, 129] {
            let values: Vec<f32> = (0..200)
                .map(|r| codes[r * dims + d] as f32 * scales[r])
                .collect();
            let min = values.iter().cloned().fold(f32::INFINITY, f32::min);
            let max = values.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
            let (lo, width) = (min, (max - min) / 16.0);
            assert_eq!(width, c.width[d]);
            for (r, x) in values.iter().enumerate() {
                let bin = c.bin_of(r, d) as f32;
                assert!(bin <= 15.0);
                assert!(*x >= lo + width * bin - 1e-5, "dim {d} row {r}");
                assert!(*x <= lo + width * (bin + 1.0) + 1e-5, "dim {d} row {r}");
            }
            let at = |v: f32| values.iter().position(|x| *x == v).unwrap();
            assert_eq!(c.bin_of(at(min), d), 0);
            assert_eq!(c.bin_of(at(max), d), 15);
        }
    }
}
