//! The KV cache, kept as half floats, and attention over it.
//!
//! A layer's keys and values are stored token after token
//! (`[position][key/value head][head size]`), so a token's are appended
//! with one push and a shared prefix is kept by truncating; nothing is
//! copied when the cache grows or is read. Half floats (as llama.cpp keeps
//! its cache by default) halve what a long context holds: the 1.5B model's
//! 8,192-token window is 235 MB of cache instead of 470 MB.
//!
//! Each query's scores over every position it sees, softmax and weighted
//! sum of the values are computed in a fixed order that does not depend on
//! the other queries (the heads of one group share only the reads), so a token's
//! output has the same bits whether it ran alone or in a batch, and a
//! prompt that reuses a cached prefix answers exactly as one run from the
//! start.

use std::sync::Mutex;

/// The shape of attention in a model.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Heads {
    /// Query heads.
    pub(crate) n_head: usize,
    /// Key/value heads (each shared by `n_head / n_kv_head` query heads).
    pub(crate) n_kv_head: usize,
    /// Values per head.
    pub(crate) head_dim: usize,
}

/// One layer's keys and values.
#[derive(Default)]
pub(crate) struct LayerCache {
    k: Vec<u16>,
    v: Vec<u16>,
}

impl LayerCache {
    /// Positions held, for rows of `kv_dim` values.
    #[cfg(test)]
    pub(crate) fn len(&self, kv_dim: usize) -> usize {
        self.k.len() / kv_dim.max(1)
    }

    /// Keeps the first `len` positions.
    pub(crate) fn truncate(&mut self, len: usize, kv_dim: usize) {
        self.k.truncate(len * kv_dim);
        self.v.truncate(len * kv_dim);
    }

    /// The keys and values of the first `len` positions, as stored.
    pub(crate) fn raw(&self, len: usize, kv_dim: usize) -> (&[u16], &[u16]) {
        let n = (len * kv_dim).min(self.k.len());
        (&self.k[..n], &self.v[..n])
    }

    /// Appends keys and values as [`LayerCache::raw`] gave them.
    pub(crate) fn push_raw(&mut self, k: &[u16], v: &[u16]) {
        self.k.extend_from_slice(k);
        self.v.extend_from_slice(v);
    }

    /// Appends the keys and values of some tokens (`[token][kv_dim]`).
    pub(crate) fn push(&mut self, k: &[f32], v: &[f32]) {
        push_half(&mut self.k, k);
        push_half(&mut self.v, v);
    }
}

/// Attention of `n` queries (`q`: `[token][n_head][head_dim]`, rotated),
/// the first at position `pos`, over `cache`, which holds their keys and
/// values already: query `i` sees positions `0 ..= pos + i`. Returns
/// `[token][n_head][head_dim]`, split by (token, key/value head) across
/// the pool: the query heads that share a key/value head are computed
/// together, so each key and value is read and widened once for all of
/// them (six query heads to one for Qwen2.5-1.5B).
pub(crate) fn attend(
    q: &[f32],
    cache: &LayerCache,
    heads: Heads,
    pos: usize,
    n: usize,
) -> Vec<f32> {
    let d = heads.head_dim;
    let kv_dim = heads.n_kv_head * d;
    let rep = heads.n_head / heads.n_kv_head.max(1);
    let span = rep * d;
    let scale = 1.0 / (d as f32).sqrt();
    let units = n * heads.n_kv_head;
    let mut out = vec![0f32; units * span];
    let pool = crate::pool::pool();
    // Small jobs are not worth waking a worker for.
    let parts = if (pos + n) * n * heads.n_head < 4096 {
        1
    } else {
        pool.threads().min(units)
    };
    let per = units.div_ceil(parts.max(1)).max(1);
    let chunks: Vec<Mutex<&mut [f32]>> = out.chunks_mut(per * span).map(Mutex::new).collect();
    let _ = pool.run(chunks.len(), &|part| {
        let mut o = chunks[part].lock().unwrap_or_else(|e| e.into_inner());
        // `[query head][position]`: the scores, then the weights.
        let mut scores = Vec::new();
        let mut row = vec![0f32; d];
        for (u, dst) in (part * per..).zip(o.chunks_exact_mut(span)) {
            let (i, g) = (u / heads.n_kv_head, u % heads.n_kv_head);
            // The group's query heads of token i, one after the other.
            let qs = &q[u * span..(u + 1) * span];
            let seen = pos + i + 1;
            scores.clear();
            scores.resize(rep * seen, 0f32);
            let (keys, values) = (&cache.k[g * d..], &cache.v[g * d..]);
            if !group_scores(qs, keys, kv_dim, seen, scale, &mut scores) {
                for j in 0..seen {
                    widen(&keys[j * kv_dim..j * kv_dim + d], &mut row);
                    for (r, qv) in qs.chunks_exact(d).enumerate() {
                        scores[r * seen + j] = dot(qv, &row) * scale;
                    }
                }
            }
            for s in scores.chunks_exact_mut(seen) {
                let max = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let mut sum = 0f32;
                for v in s.iter_mut() {
                    *v = (*v - max).exp();
                    sum += *v;
                }
                let inv = 1.0 / sum;
                s.iter_mut().for_each(|v| *v *= inv);
            }
            dst.fill(0.0);
            if !group_values(&scores, values, kv_dim, seen, dst) {
                for j in 0..seen {
                    widen(&values[j * kv_dim..j * kv_dim + d], &mut row);
                    for (r, o) in dst.chunks_exact_mut(d).enumerate() {
                        axpy(o, scores[r * seen + j], &row);
                    }
                }
            }
        }
    });
    out
}

/// Calls `avx2::$kernel::<R>(args)` with `R` the group's `$rep` heads
/// (1 to 8, what `group_shape` admits). Unsafe as the kernels are: the
/// caller checked the CPU and the lengths.
#[cfg(target_arch = "x86_64")]
macro_rules! by_heads {
    ($rep:expr, $kernel:ident $args:tt) => {
        by_heads!(@ $rep, $kernel $args, 1 2 3 4 5 6 7 8)
    };
    (@ $rep:expr, $kernel:ident $args:tt, $($r:literal)*) => {
        match $rep {
            $($r => unsafe { avx2::$kernel::<$r> $args },)*
            _ => unreachable!("group_shape admits 1 to 8 heads"),
        }
    };
}

/// The query heads of a group at once, on AVX2: `scores[r * seen + j]` =
/// query head `r` (of `qs`, heads of `d` values) · the key at `keys[j *
/// stride..][..d]`, times `scale`, each dot with `dot`'s operations in
/// `dot`'s order (so the same bits), every key widened once for all the
/// heads, in registers. False, with nothing written, where it does not
/// apply (no AVX2, a head size not a multiple of 16, more than eight heads
/// to a group, too little input).
fn group_scores(
    qs: &[f32],
    keys: &[u16],
    stride: usize,
    seen: usize,
    scale: f32,
    scores: &mut [f32],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let Some((rep, d)) = group_shape(qs.len(), scores.len(), seen, keys.len(), stride) {
        // SAFETY: AVX2, FMA and F16C are present and the lengths fit
        // (`group_shape`).
        by_heads!(rep, group_scores(qs, keys, stride, d, seen, scale, scores));
        return true;
    }
    let _ = (qs, keys, stride, seen, scale, scores);
    false
}

/// The weighted sums of a group's heads on AVX2: `dst[r * d..][..d]` +=
/// `w[r * seen + j]` × the value at `values[j * stride..][..d]` for every
/// position `j` in order, each element with `axpy`'s operations in its
/// order (the same bits), every value widened once for all the heads.
/// False, with nothing written, where it does not apply (as
/// [`group_scores`]).
fn group_values(w: &[f32], values: &[u16], stride: usize, seen: usize, dst: &mut [f32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if let Some((rep, d)) = group_shape(dst.len(), w.len(), seen, values.len(), stride) {
        // SAFETY: as in `group_scores`.
        by_heads!(rep, group_values(w, values, stride, d, seen, dst));
        return true;
    }
    let _ = (w, values, stride, seen, dst);
    false
}

/// Heads per group and head size for the grouped kernels, given the
/// length of the heads' rows (`rep × d`), of their scores (`rep × seen`)
/// and of the cache from the group's first value on; `None` where they do
/// not apply.
#[cfg(target_arch = "x86_64")]
fn group_shape(
    heads_len: usize,
    scores_len: usize,
    seen: usize,
    cache_len: usize,
    stride: usize,
) -> Option<(usize, usize)> {
    if !crate::quant::has_avx2() || seen == 0 {
        return None;
    }
    let rep = scores_len / seen;
    let d = heads_len / rep.max(1);
    let fits = (1..=8).contains(&rep)
        && rep * seen == scores_len
        && rep * d == heads_len
        && d.is_multiple_of(16)
        && d <= stride
        && (seen - 1) * stride + d <= cache_len;
    fits.then_some((rep, d))
}

fn push_half(dst: &mut Vec<u16>, src: &[f32]) {
    dst.extend(src.iter().map(|&x| f32_to_f16(x)));
}

/// Half floats widened to `f32` (`dst` as long as `src`).
fn widen(src: &[u16], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if crate::quant::has_avx2() && src.len() == dst.len() {
        // SAFETY: AVX2, FMA and F16C are present (checked), the lengths agree.
        return unsafe { avx2::widen(src, dst) };
    }
    for (d, &h) in dst.iter_mut().zip(src) {
        *d = f16_to_f32(h);
    }
}

/// `a · b`.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if crate::quant::has_avx2() && a.len() == b.len() {
        // SAFETY: as in `widen`.
        return unsafe { avx2::dot(a, b) };
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// `acc += w · v`.
fn axpy(acc: &mut [f32], w: f32, v: &[f32]) {
    #[cfg(target_arch = "x86_64")]
    if crate::quant::has_avx2() && acc.len() == v.len() {
        // SAFETY: as in `widen`.
        return unsafe { avx2::axpy(acc, w, v) };
    }
    for (a, b) in acc.iter_mut().zip(v) {
        *a += w * b;
    }
}

/// IEEE half to single precision.
fn f16_to_f32(h: u16) -> f32 {
    let [lo, hi] = h.to_le_bytes();
    crate::quant::f16(lo, hi)
}

/// Single precision to IEEE half, rounded to nearest even (as F16C does).
pub(crate) fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        // Infinity, or NaN kept quiet.
        return sign
            | 0x7c00
            | if man != 0 {
                0x200 | (man >> 13) as u16
            } else {
                0
            };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        // Subnormal half: shift the full mantissa, round to nearest even.
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = m >> shift;
        let rest = m & ((1 << shift) - 1);
        let mid = 1 << (shift - 1);
        let round = u32::from(rest > mid || (rest == mid && half & 1 == 1));
        return sign | (half + round) as u16;
    }
    let half = ((e as u32) << 10) | (man >> 13);
    let rest = man & 0x1fff;
    let round = u32::from(rest > 0x1000 || (rest == 0x1000 && half & 1 == 1));
    // A carry out of the mantissa rounds up into the exponent, as it should.
    sign | (half + round) as u16
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// # Safety
    /// F16C; `src.len() == dst.len()`.
    #[target_feature(enable = "avx2,f16c")]
    pub(super) unsafe fn widen(src: &[u16], dst: &mut [f32]) {
        let n = src.len() - src.len() % 8;
        for i in (0..n).step_by(8) {
            // SAFETY: `i + 8 <= n <= len` for both.
            unsafe {
                let h = _mm_loadu_si128(src.as_ptr().add(i).cast());
                _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
            }
        }
        for i in n..src.len() {
            dst[i] = super::f16_to_f32(src[i]);
        }
    }

    /// # Safety
    /// AVX2 and FMA; `a.len() == b.len()`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len() - a.len() % 8;
        let mut acc = _mm256_setzero_ps();
        for i in (0..n).step_by(8) {
            // SAFETY: `i + 8 <= n <= len` for both.
            let (x, y) = unsafe {
                (
                    _mm256_loadu_ps(a.as_ptr().add(i)),
                    _mm256_loadu_ps(b.as_ptr().add(i)),
                )
            };
            acc = _mm256_fmadd_ps(x, y, acc);
        }
        let mut sum = hsum(acc);
        for i in n..a.len() {
            sum += a[i] * b[i];
        }
        sum
    }

    /// The sum of `acc`'s lanes, in `dot`'s order.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn hsum(acc: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps::<1>(acc));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        _mm_cvtss_f32(s)
    }

    /// [`super::group_scores`] for groups of `R` heads.
    ///
    /// # Safety
    /// AVX2, FMA and F16C; the lengths as `group_shape` checks them.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn group_scores<const R: usize>(
        qs: &[f32],
        keys: &[u16],
        stride: usize,
        d: usize,
        seen: usize,
        scale: f32,
        scores: &mut [f32],
    ) {
        for j in 0..seen {
            // SAFETY: the key at `j * stride` has `d` values (checked).
            let key = unsafe { keys.as_ptr().add(j * stride) };
            let mut acc = [_mm256_setzero_ps(); R];
            for c in (0..d).step_by(8) {
                // SAFETY: `c + 8 <= d` for the key and for each head.
                unsafe {
                    let k = _mm256_cvtph_ps(_mm_loadu_si128(key.add(c).cast()));
                    for (r, a) in acc.iter_mut().enumerate() {
                        *a = _mm256_fmadd_ps(_mm256_loadu_ps(qs.as_ptr().add(r * d + c)), k, *a);
                    }
                }
            }
            for (r, a) in acc.iter().enumerate() {
                scores[r * seen + j] = hsum(*a) * scale;
            }
        }
    }

    /// [`super::group_values`] for groups of `R` heads: sixteen values of
    /// every head at a time, summed over all the positions in registers.
    ///
    /// # Safety
    /// AVX2, FMA and F16C; the lengths as `group_shape` checks them.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn group_values<const R: usize>(
        w: &[f32],
        values: &[u16],
        stride: usize,
        d: usize,
        seen: usize,
        dst: &mut [f32],
    ) {
        for c in (0..d).step_by(16) {
            // SAFETY: `c + 16 <= d` for each head of `dst`.
            let mut acc: [[__m256; 2]; R] = std::array::from_fn(|r| unsafe {
                let p = dst.as_ptr().add(r * d + c);
                [_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))]
            });
            for j in 0..seen {
                // SAFETY: the value at `j * stride` has `d` values (checked).
                let (v0, v1) = unsafe {
                    let p = values.as_ptr().add(j * stride + c);
                    (
                        _mm256_cvtph_ps(_mm_loadu_si128(p.cast())),
                        _mm256_cvtph_ps(_mm_loadu_si128(p.add(8).cast())),
                    )
                };
                for (r, a) in acc.iter_mut().enumerate() {
                    let wr = _mm256_set1_ps(w[r * seen + j]);
                    a[0] = _mm256_fmadd_ps(wr, v0, a[0]);
                    a[1] = _mm256_fmadd_ps(wr, v1, a[1]);
                }
            }
            for (r, a) in acc.iter().enumerate() {
                // SAFETY: as above.
                unsafe {
                    let p = dst.as_mut_ptr().add(r * d + c);
                    _mm256_storeu_ps(p, a[0]);
                    _mm256_storeu_ps(p.add(8), a[1]);
                }
            }
        }
    }

    /// # Safety
    /// AVX2 and FMA; `acc.len() == v.len()`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn axpy(acc: &mut [f32], w: f32, v: &[f32]) {
        let n = acc.len() - acc.len() % 8;
        let wv = _mm256_set1_ps(w);
        for i in (0..n).step_by(8) {
            // SAFETY: `i + 8 <= n <= len` for both.
            unsafe {
                let p = acc.as_mut_ptr().add(i);
                let b = _mm256_loadu_ps(v.as_ptr().add(i));
                _mm256_storeu_ps(p, _mm256_fmadd_ps(wv, b, _mm256_loadu_ps(p)));
            }
        }
        for i in n..acc.len() {
            acc[i] += w * v[i];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_floats_round_trip_and_round_to_nearest_even() {
        // Every half converts to a float and back to itself (NaNs stay NaN).
        for h in 0..=u16::MAX {
            let f = f16_to_f32(h);
            if f.is_nan() {
                assert!(f16_to_f32(f32_to_f16(f)).is_nan());
            } else {
                assert_eq!(f32_to_f16(f), h, "{h:#06x} -> {f}");
            }
        }
        // Halfway between 1 and the next half (1 + 2^-10): ties go even.
        assert_eq!(f32_to_f16(1.0 + 2f32.powi(-11)), 0x3c00);
        assert_eq!(f32_to_f16(1.0 + 3.0 * 2f32.powi(-11)), 0x3c02);
        assert_eq!(f32_to_f16(65520.0), 0x7c00, "past the largest half");
        assert_eq!(f32_to_f16(1e-9), 0);
    }

    #[test]
    fn attention_matches_a_plain_softmax_over_the_positions_seen() {
        let heads = Heads {
            n_head: 4,
            n_kv_head: 2,
            head_dim: 16,
        };
        let kv_dim = heads.n_kv_head * heads.head_dim;
        let value = |i: usize| ((i * 7919 % 211) as f32 / 211.0 - 0.5) * 2.0;
        let (pos, n) = (5, 3);
        let total = pos + n;
        // Values that are exact in half floats, so the reference can use them as they are.
        let kf: Vec<f32> = (0..total * kv_dim)
            .map(|i| f16_to_f32(f32_to_f16(value(i))))
            .collect();
        let vf: Vec<f32> = (0..total * kv_dim)
            .map(|i| f16_to_f32(f32_to_f16(value(i + 99))))
            .collect();
        let q: Vec<f32> = (0..n * heads.n_head * heads.head_dim)
            .map(|i| value(i + 7))
            .collect();
        let mut cache = LayerCache::default();
        cache.push(&kf, &vf);
        let got = attend(&q, &cache, heads, pos, n);
        let d = heads.head_dim;
        for i in 0..n {
            for h in 0..heads.n_head {
                let g = h / 2;
                let qv = &q[(i * heads.n_head + h) * d..][..d];
                let s: Vec<f32> = (0..=pos + i)
                    .map(|j| {
                        qv.iter()
                            .zip(&kf[j * kv_dim + g * d..][..d])
                            .map(|(a, b)| a * b)
                            .sum::<f32>()
                            / (d as f32).sqrt()
                    })
                    .collect();
                let m = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let e: Vec<f32> = s.iter().map(|x| (x - m).exp()).collect();
                let z: f32 = e.iter().sum();
                for c in 0..d {
                    let want: f32 = (0..=pos + i)
                        .map(|j| e[j] / z * vf[j * kv_dim + g * d + c])
                        .sum();
                    let have = got[(i * heads.n_head + h) * d + c];
                    assert!(
                        (want - have).abs() < 1e-4,
                        "token {i} head {h} [{c}]: {have} vs {want}"
                    );
                }
            }
        }
        // A query's output does not depend on the others in its batch.
        let last = attend(
            &q[(n - 1) * heads.n_head * d..],
            &cache,
            heads,
            pos + n - 1,
            1,
        );
        assert_eq!(last, got[(n - 1) * heads.n_head * d..]);
    }

    #[test]
    fn grouped_heads_give_the_bits_of_one_head_at_a_time() {
        let value = |i: usize| ((i * 7919 % 211) as f32 / 211.0 - 0.5) * 2.0;
        for (rep, d, seen) in [(6, 128, 37), (3, 64, 5), (2, 16, 1), (8, 32, 70)] {
            // The second of two key/value heads, as `attend` reads it.
            let stride = 2 * d;
            let cache: Vec<u16> = (0..seen * stride).map(|i| f32_to_f16(value(i))).collect();
            let group = &cache[d..];
            let qs: Vec<f32> = (0..rep * d).map(|i| value(i + 5)).collect();
            let mut row = vec![0f32; d];
            let mut want = vec![0f32; rep * seen];
            let mut want_out = vec![0f32; rep * d];
            for j in 0..seen {
                widen(&group[j * stride..][..d], &mut row);
                for r in 0..rep {
                    want[r * seen + j] = dot(&qs[r * d..][..d], &row) * 0.3;
                }
            }
            for j in 0..seen {
                widen(&group[j * stride..][..d], &mut row);
                for r in 0..rep {
                    axpy(&mut want_out[r * d..][..d], want[r * seen + j], &row);
                }
            }
            let mut scores = vec![0f32; rep * seen];
            let mut out = vec![0f32; rep * d];
            let grouped = group_scores(&qs, group, stride, seen, 0.3, &mut scores);
            assert_eq!(grouped, group_values(&want, group, stride, seen, &mut out));
            assert_eq!(grouped, crate::quant::has_avx2(), "{rep} heads of {d}");
            if grouped {
                assert_eq!(scores, want, "{rep} heads of {d}");
                assert_eq!(out, want_out, "{rep} heads of {d}");
            }
        }
        // Shapes the grouped kernels leave to the loops.
        let mut s = vec![0f32; 9 * 2];
        assert!(!group_scores(&[0.0; 9 * 16], &[0; 64], 32, 2, 1.0, &mut s));
        let mut s = vec![0f32; 2];
        assert!(!group_scores(&[0.0; 24], &[0; 64], 24, 2, 1.0, &mut s));
    }

    #[test]
    fn the_cache_keeps_a_prefix() {
        let mut c = LayerCache::default();
        c.push(&[1.0; 8], &[2.0; 8]);
        assert_eq!(c.len(4), 2);
        c.truncate(1, 4);
        assert_eq!(c.len(4), 1);
        c.push(&[3.0; 4], &[4.0; 4]);
        assert_eq!(c.len(4), 2);
        assert_eq!(f16_to_f32(c.k[4]), 3.0);
    }
}
