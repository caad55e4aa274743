//! Int8 matrix products for the fast forward pass (`engine = "int8"`).
//!
//! Why: on the embedding models' dense layers the `f32` product is two
//! thirds of the time, and CPUs with AVX-512 VNNI multiply-add 64 byte
//! pairs per instruction where `f32` FMA does 16. Weights are quantised
//! once, per output column (symmetric, 127 levels); activations per row as
//! they come (symmetric, shifted by 128 into unsigned bytes, which is what
//! `vpdpbusd` multiplies; the shift is taken back out with each column's
//! sum). Inputs that come out of a layer norm are smoothed first (see
//! [`QMatrix::smoothed`]). The integer sums are exact, so the VNNI kernel and
//! the portable one give the same bits, and the tests can compare them
//! directly.

use crate::buf::Buf;

/// Column blocks of 16 (one 512-bit register of `i32` sums).
const NB: usize = 16;

/// A weight matrix `[k, n]` in int8, packed for the kernels:
/// `packed[((cb * kq) + k4) * 64 + col * 4 + kk]` holds row `4 * k4 + kk`,
/// column `16 * cb + col` (`kq = kp / 4`), zero-padded in both directions.
pub(crate) struct QMatrix {
    k: usize,
    kp: usize,
    n: usize,
    np: usize,
    packed: Buf<i8>,
    /// Dequantisation scale of each column.
    scales: Buf<f32>,
    /// Sum of each column's int8 values (for the 128 shift of activations).
    colsum: Buf<i32>,
    /// Per input channel, what activations are multiplied by before they
    /// are quantised (the weights' rows were divided by it): empty when the
    /// matrix was quantised without smoothing.
    smooth: Buf<f32>,
}

/// A [`QMatrix`]'s parts, as [`crate::prepared`] stores them.
pub(crate) struct QParts {
    /// `[k, kp, n, np]`.
    pub dims: [usize; 4],
    pub packed: Buf<i8>,
    pub scales: Buf<f32>,
    pub colsum: Buf<i32>,
    pub smooth: Buf<f32>,
}

impl QMatrix {
    /// Quantises `w`, `[k, n]` row-major (input by output). With
    /// `act_range` (how large each input channel gets, one value per row of
    /// `w`) the spread of activations is first moved into the weights
    /// (SmoothQuant, alpha 0.5): channel `i` is divided by
    /// `sqrt(act_range[i] / max|w[i, :]|)` and row `i` of `w` multiplied by
    /// it. A few channels of a layer-normed input are many times larger than
    /// the rest; quantised per row as they are, they would leave the others
    /// a handful of levels.
    pub fn smoothed(w: &[f32], k: usize, n: usize, act_range: Option<&[f32]>) -> Self {
        let smooth: Vec<f32> = match act_range {
            Some(a) if a.len() == k => (0..k)
                .map(|i| {
                    let wmax = w[i * n..(i + 1) * n]
                        .iter()
                        .fold(0f32, |m, v| m.max(v.abs()));
                    if a[i] > 0.0 && wmax > 0.0 {
                        (wmax / a[i]).sqrt()
                    } else {
                        1.0
                    }
                })
                .collect(),
            _ => Vec::new(),
        };
        let scaled: Vec<f32>;
        let w = if smooth.is_empty() {
            w
        } else {
            scaled = (0..k * n).map(|x| w[x] / smooth[x / n]).collect();
            &scaled
        };
        let mut m = Self::quantize(w, k, n);
        m.smooth = smooth.into();
        m
    }

    /// `(k, n)`: inputs by outputs.
    pub fn dims(&self) -> (usize, usize) {
        (self.k, self.n)
    }

    /// The matrix's parts, borrowed.
    pub fn parts(&self) -> ([usize; 4], [&[u8]; 4]) {
        (
            [self.k, self.kp, self.n, self.np],
            [
                self.packed.as_bytes(),
                self.scales.as_bytes(),
                self.colsum.as_bytes(),
                self.smooth.as_bytes(),
            ],
        )
    }

    /// A matrix from stored parts; `None` when their sizes disagree (a
    /// damaged file), so the kernels never read out of bounds.
    pub fn from_parts(p: QParts) -> Option<Self> {
        let [k, kp, n, np] = p.dims;
        let ok = kp >= k
            && kp.is_multiple_of(4)
            && np >= n
            && np.is_multiple_of(NB)
            && p.packed.len() == np.checked_mul(kp)?
            && p.scales.len() == n
            && p.colsum.len() == np
            && (p.smooth.is_empty() || p.smooth.len() == k);
        ok.then_some(QMatrix {
            k,
            kp,
            n,
            np,
            packed: p.packed,
            scales: p.scales,
            colsum: p.colsum,
            smooth: p.smooth,
        })
    }

    fn quantize(w: &[f32], k: usize, n: usize) -> Self {
        let kp = k.div_ceil(4) * 4;
        let np = n.div_ceil(NB) * NB;
        let kq = kp / 4;
        let mut scales = vec![0f32; n];
        for (j, s) in scales.iter_mut().enumerate() {
            let amax = (0..k).map(|i| w[i * n + j].abs()).fold(0f32, f32::max);
            *s = if amax > 0.0 { amax / 127.0 } else { 1.0 };
        }
        let mut packed = vec![0i8; np * kp];
        let mut colsum = vec![0i32; np];
        for i in 0..k {
            let (k4, kk) = (i / 4, i % 4);
            for j in 0..n {
                let q = (w[i * n + j] / scales[j]).round().clamp(-127.0, 127.0) as i8;
                let (cb, col) = (j / NB, j % NB);
                packed[(cb * kq + k4) * 64 + col * 4 + kk] = q;
                colsum[j] += i32::from(q);
            }
        }
        QMatrix {
            k,
            kp,
            n,
            np,
            packed: packed.into(),
            scales: scales.into(),
            colsum: colsum.into(),
            smooth: Buf::default(),
        }
    }
}

/// Activations quantised per row: unsigned bytes (value + 128), `kp` per
/// row, and each row's scale.
#[derive(Default)]
pub(crate) struct QActs {
    data: Vec<u8>,
    scales: Vec<f32>,
    /// Smoothed activations, for matrices quantised with smoothing.
    smoothed: Vec<f32>,
}

impl QActs {
    /// Quantises `t` rows of `k` values from `x` for a product with `w`,
    /// with the vector width of `kernel` (the caller checked the CPU).
    fn fill(&mut self, x: &[f32], t: usize, w: &QMatrix, kernel: Kernel) {
        let mut smoothed = std::mem::take(&mut self.smoothed);
        let x = if w.smooth.is_empty() {
            x
        } else {
            smoothed.clear();
            for row in x[..t * w.k].chunks_exact(w.k) {
                smoothed.extend(row.iter().zip(&w.smooth).map(|(v, s)| v * s));
            }
            &smoothed
        };
        self.fill_plain(x, t, w, kernel);
        self.smoothed = smoothed;
    }

    /// Quantises `t` rows, sixteen or eight values per instruction with
    /// the AVX-512 or AVX-VNNI kernel (the caller checked the CPU).
    fn fill_plain(&mut self, x: &[f32], t: usize, w: &QMatrix, kernel: Kernel) {
        let (k, kp) = (w.k, w.kp);
        self.data.clear();
        self.data.resize(t * kp, 128);
        self.scales.clear();
        for (r, row) in x[..t * k].chunks_exact(k).enumerate() {
            let (scale, inv) = row_scale(row);
            self.scales.push(scale);
            let dst = &mut self.data[r * kp..r * kp + k];
            // SAFETY: `kernel()` names these kernels only on CPUs with
            // AVX-512 F and BW, or with AVX2; `dst` is as long as `row`.
            #[cfg(target_arch = "x86_64")]
            let done = match kernel {
                Kernel::Avx512 => unsafe { quantize_row_avx512(row, inv, dst) },
                Kernel::Avx256 => unsafe { quantize_row_avx2(row, inv, dst) },
                Kernel::Portable => 0,
            };
            #[cfg(not(target_arch = "x86_64"))]
            let done = {
                let _ = kernel;
                0
            };
            for (d, v) in dst[done..].iter_mut().zip(&row[done..]) {
                *d = quantize(*v, inv);
            }
        }
    }
}

/// [`quantize`] on a row, sixteen values per instruction: the same product,
/// rounding and clamp, so the same bytes. Returns how many values it did
/// (whole chunks of 16); the caller quantises the rest.
///
/// # Safety
/// The CPU has AVX-512 F and BW; `dst` is as long as `row`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn quantize_row_avx512(row: &[f32], inv: f32, dst: &mut [u8]) -> usize {
    use std::arch::x86_64::*;
    let chunks = row.chunks_exact(16);
    let done = row.len() - chunks.remainder().len();
    // SAFETY: each load reads one 16-value chunk of `row`, each store writes
    // 16 bytes of `dst` at the same offset.
    unsafe {
        let vinv = _mm512_set1_ps(inv);
        let (lo, hi) = (_mm512_set1_ps(-127.0), _mm512_set1_ps(127.0));
        let shift = _mm512_set1_epi32(128);
        for (i, c) in chunks.enumerate() {
            let v = _mm512_mul_ps(_mm512_loadu_ps(c.as_ptr()), vinv);
            let v = _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
            let v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
            let q = _mm512_add_epi32(_mm512_cvtps_epi32(v), shift);
            _mm_storeu_si128(
                dst.as_mut_ptr().add(i * 16) as *mut __m128i,
                _mm512_cvtepi32_epi8(q),
            );
        }
    }
    done
}

/// [`quantize`] on a row, eight values per instruction (as
/// [`quantize_row_avx512`], whole chunks of 8).
///
/// # Safety
/// The CPU has AVX2; `dst` is as long as `row`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn quantize_row_avx2(row: &[f32], inv: f32, dst: &mut [u8]) -> usize {
    use std::arch::x86_64::*;
    let chunks = row.chunks_exact(8);
    let done = row.len() - chunks.remainder().len();
    // SAFETY: each load reads one 8-value chunk of `row`, each store writes
    // 4 bytes of `dst` at offsets 8i and 8i + 4.
    unsafe {
        let vinv = _mm256_set1_ps(inv);
        let (lo, hi) = (_mm256_set1_ps(-127.0), _mm256_set1_ps(127.0));
        let shift = _mm256_set1_epi32(128);
        for (i, c) in chunks.enumerate() {
            let v = _mm256_mul_ps(_mm256_loadu_ps(c.as_ptr()), vinv);
            let v = _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(v);
            let v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
            let q = _mm256_add_epi32(_mm256_cvtps_epi32(v), shift);
            // 0..=255 in each lane: pack to 16 then 8 bits (per 128-bit half).
            let q = _mm256_packus_epi16(_mm256_packus_epi32(q, q), _mm256_setzero_si256());
            let p = dst.as_mut_ptr().add(i * 8) as *mut i32;
            p.write_unaligned(_mm_cvtsi128_si32(_mm256_castsi256_si128(q)));
            p.add(1)
                .write_unaligned(_mm_cvtsi128_si32(_mm256_extracti128_si256::<1>(q)));
        }
    }
    done
}

/// A row's dequantisation scale and its inverse (0 for an all-zero row).
#[inline(always)]
fn row_scale(row: &[f32]) -> (f32, f32) {
    let amax = abs_max(row);
    if amax > 0.0 {
        (amax / 127.0, 127.0 / amax)
    } else {
        (1.0, 0.0)
    }
}

/// One activation as an unsigned byte: value * inv rounded to nearest
/// (ties to even), clamped to ±127, shifted by 128.
#[inline(always)]
fn quantize(v: f32, inv: f32) -> u8 {
    let q = round(v * inv).clamp(-127.0, 127.0);
    (q as i32 + 128) as u8
}

/// Largest magnitude, in lanes so the loop vectorises (a NaN is skipped).
fn abs_max(v: &[f32]) -> f32 {
    let mut m = [0f32; 16];
    let chunks = v.chunks_exact(16);
    let rest = chunks.remainder();
    for c in chunks {
        for (a, b) in m.iter_mut().zip(c) {
            let b = b.abs();
            *a = if b > *a { b } else { *a };
        }
    }
    let mut best = m.iter().fold(0f32, |a, &b| if b > a { b } else { a });
    for &b in rest {
        best = if b.abs() > best { b.abs() } else { best };
    }
    best
}

/// Round to nearest (ties to even) without a libm call, so the loop
/// vectorises: adding and removing 1.5 * 2^23 drops the fraction. Exact for
/// |x| < 2^22, far beyond the ±127 the caller clamps to.
#[inline(always)]
fn round(x: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    (x + MAGIC) - MAGIC
}

/// The integer kernel a product runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) enum Kernel {
    /// AVX-512 VNNI: 64 byte pairs per `vpdpbusd` (Intel server and
    /// Ice/Tiger Lake client CPUs, AMD Zen 4 and later).
    Avx512,
    /// AVX-VNNI: the same instruction on 256-bit registers (Intel Alder
    /// Lake and later client CPUs, which have no AVX-512).
    Avx256,
    /// Plain loops: the reference, and what other CPUs run.
    Portable,
}

impl Kernel {
    /// Whether this CPU has what the kernel needs.
    fn supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        match self {
            Kernel::Avx512 => {
                is_x86_feature_detected!("avx512f")
                    && is_x86_feature_detected!("avx512bw")
                    && is_x86_feature_detected!("avx512vnni")
            }
            Kernel::Avx256 => {
                is_x86_feature_detected!("avx2") && is_x86_feature_detected!("avxvnni")
            }
            Kernel::Portable => true,
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Kernel::Portable
        }
    }
}

/// The fastest kernel this CPU runs. `MNEMO_EMBED_NO_VNNI` forces the
/// portable one and `MNEMO_EMBED_NO_AVX512` skips the 512-bit one (to
/// measure or test the others on a CPU that has everything).
pub(crate) fn kernel() -> Kernel {
    let off = |v: &str| std::env::var_os(v).is_some();
    if off("MNEMO_EMBED_NO_VNNI") {
        Kernel::Portable
    } else if !off("MNEMO_EMBED_NO_AVX512") && Kernel::Avx512.supported() {
        Kernel::Avx512
    } else if Kernel::Avx256.supported() {
        Kernel::Avx256
    } else {
        Kernel::Portable
    }
}

/// True when int8 products are fast here (a VNNI kernel exists).
pub(crate) fn has_vnni() -> bool {
    kernel() != Kernel::Portable
}

/// `out[t, n] = x[t, k] · w + b` with int8 products. `acts` is scratch
/// reused across calls; `kernel` comes from [`kernel`] (or is
/// [`Kernel::Portable`]).
pub(crate) fn linear_i8(
    x: &[f32],
    w: &QMatrix,
    b: &[f32],
    out: &mut [f32],
    t: usize,
    acts: &mut QActs,
    kernel: Kernel,
) {
    if x.len() < t * w.k || out.len() < t * w.n || b.len() < w.n {
        // Unreachable by construction; refuse rather than read out of bounds.
        out.fill(f32::NAN);
        return;
    }
    acts.fill(x, t, w, kernel);
    #[cfg(target_arch = "x86_64")]
    match kernel {
        // SAFETY: `kernel` names a kernel only when `kernel()` found its
        // CPU features; the lengths were checked above and `fill` sized
        // `acts`.
        Kernel::Avx512 => return unsafe { vnni::product(acts, w, b, out, t) },
        Kernel::Avx256 => return unsafe { avx_vnni::product(acts, w, b, out, t) },
        Kernel::Portable => {}
    }
    portable(acts, w, b, out, t);
}

/// Output `j` of row `r` from its integer sum: the 128 shift taken back out,
/// scaled, biased. The vector kernels do the same operations in the same
/// order, so they give the same bits.
#[inline(always)]
fn dequantise(sum: i32, acts: &QActs, w: &QMatrix, b: &[f32], r: usize, j: usize) -> f32 {
    let v = (sum - 128 * w.colsum[j]) as f32;
    v * (acts.scales[r] * w.scales[j]) + b[j]
}

/// The reference kernel: the same integer sums and the same dequantisation
/// as the VNNI one, in plain loops.
fn portable(acts: &QActs, w: &QMatrix, b: &[f32], out: &mut [f32], t: usize) {
    let kq = w.kp / 4;
    for r in 0..t {
        let a = &acts.data[r * w.kp..(r + 1) * w.kp];
        for j in 0..w.n {
            let (cb, col) = (j / NB, j % NB);
            let mut acc = 0i32;
            for k4 in 0..kq {
                let p = &w.packed[(cb * kq + k4) * 64 + col * 4..][..4];
                for kk in 0..4 {
                    acc += i32::from(a[k4 * 4 + kk]) * i32::from(p[kk]);
                }
            }
            out[r * w.n + j] = dequantise(acc, acts, w, b, r, j);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod vnni {
    use std::arch::x86_64::*;

    use super::{QActs, QMatrix, NB};

    /// Rows and column blocks of one register tile.
    const R: usize = 4;
    const C: usize = 4;

    /// # Safety
    /// The CPU has AVX-512 F, BW and VNNI; `acts` holds `t` rows for `w`,
    /// `b` at least `w.n` values and `out` at least `t * w.n`.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    pub(super) unsafe fn product(acts: &QActs, w: &QMatrix, b: &[f32], out: &mut [f32], t: usize) {
        let blocks = w.np / NB;
        let mut cb = 0;
        while cb < blocks {
            let c = (blocks - cb).min(C);
            let mut r = 0;
            while r < t {
                let rows = (t - r).min(R);
                // SAFETY: as the caller promised; each tile stays within rows
                // r..r + rows <= t and column blocks cb..cb + c <= np / 16.
                unsafe {
                    match (rows, c) {
                        (4, 4) => tile::<4, 4>(acts, w, b, out, r, cb),
                        (3, 4) => tile::<3, 4>(acts, w, b, out, r, cb),
                        (2, 4) => tile::<2, 4>(acts, w, b, out, r, cb),
                        (1, 4) => tile::<1, 4>(acts, w, b, out, r, cb),
                        _ => {
                            for rr in r..r + rows {
                                for cc in cb..cb + c {
                                    tile::<1, 1>(acts, w, b, out, rr, cc);
                                }
                            }
                        }
                    }
                }
                r += rows;
            }
            cb += c;
        }
    }

    /// `RR` rows from `r0` by `CC` column blocks from `cb0`: sums in
    /// registers over all of `k`, then dequantised and stored.
    ///
    /// # Safety
    /// As [`product`], with rows `r0..r0 + RR` and column blocks
    /// `cb0..cb0 + CC` inside the matrices.
    #[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
    #[inline]
    unsafe fn tile<const RR: usize, const CC: usize>(
        acts: &QActs,
        w: &QMatrix,
        b: &[f32],
        out: &mut [f32],
        r0: usize,
        cb0: usize,
    ) {
        let kq = w.kp / 4;
        // SAFETY: every pointer below stays inside rows r0..r0 + RR of
        // `acts` (kp bytes each), column blocks cb0..cb0 + CC of `packed`
        // (kq * 64 bytes each) and the masked lanes (below `n`) of `colsum`,
        // `scales`, `b` and `out`.
        unsafe {
            let mut acc = [[_mm512_setzero_si512(); CC]; RR];
            let a0 = acts.data.as_ptr().add(r0 * w.kp);
            let p0 = w.packed.as_ptr().add(cb0 * kq * 64);
            for k4 in 0..kq {
                let mut bv = [_mm512_setzero_si512(); CC];
                for (c, v) in bv.iter_mut().enumerate() {
                    *v = _mm512_loadu_si512(p0.add((c * kq + k4) * 64) as *const _);
                }
                for (rr, row) in acc.iter_mut().enumerate() {
                    let a = (a0.add(rr * w.kp + k4 * 4) as *const i32).read_unaligned();
                    let av = _mm512_set1_epi32(a);
                    for (c, s) in row.iter_mut().enumerate() {
                        *s = _mm512_dpbusd_epi32(*s, av, bv[c]);
                    }
                }
            }
            for (rr, row) in acc.iter().enumerate() {
                let r = r0 + rr;
                let a_scale = _mm512_set1_ps(acts.scales[r]);
                for (c, s) in row.iter().enumerate() {
                    let j0 = (cb0 + c) * NB;
                    let live = w.n.saturating_sub(j0).min(NB);
                    if live == 0 {
                        continue;
                    }
                    let mask: __mmask16 = if live == NB {
                        0xFFFF
                    } else {
                        (1u16 << live) - 1
                    };
                    let colsum = _mm512_maskz_loadu_epi32(mask, w.colsum.as_ptr().add(j0));
                    let wsc = _mm512_maskz_loadu_ps(mask, w.scales.as_ptr().add(j0));
                    let bias = _mm512_maskz_loadu_ps(mask, b.as_ptr().add(j0));
                    let v = _mm512_sub_epi32(*s, _mm512_slli_epi32::<7>(colsum));
                    let scale = _mm512_mul_ps(a_scale, wsc);
                    let y = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(v), scale), bias);
                    _mm512_mask_storeu_ps(out.as_mut_ptr().add(r * w.n + j0), mask, y);
                }
            }
        }
    }
}

/// The VNNI kernel on 256-bit registers: each 16-column block of the packed
/// matrix is two registers of eight columns.
#[cfg(target_arch = "x86_64")]
mod avx_vnni {
    use std::arch::x86_64::*;

    use super::{dequantise, QActs, QMatrix, NB};

    /// Rows of one register tile (by one 16-column block: 12 sums, 2 weight
    /// registers and a broadcast of the 16 there are).
    const R: usize = 6;

    /// # Safety
    /// The CPU has AVX2 and AVX-VNNI; `acts` holds `t` rows for `w`, `b` at
    /// least `w.n` values and `out` at least `t * w.n`.
    #[target_feature(enable = "avx2,avxvnni")]
    pub(super) unsafe fn product(acts: &QActs, w: &QMatrix, b: &[f32], out: &mut [f32], t: usize) {
        for cb in 0..w.np / NB {
            let mut r = 0;
            while r < t {
                let rows = (t - r).min(R);
                // SAFETY: as the caller promised; rows r..r + rows <= t and
                // column block cb < np / 16.
                unsafe {
                    match rows {
                        6 => tile::<6>(acts, w, b, out, r, cb),
                        5 => tile::<5>(acts, w, b, out, r, cb),
                        4 => tile::<4>(acts, w, b, out, r, cb),
                        3 => tile::<3>(acts, w, b, out, r, cb),
                        2 => tile::<2>(acts, w, b, out, r, cb),
                        _ => tile::<1>(acts, w, b, out, r, cb),
                    }
                }
                r += rows;
            }
        }
    }

    /// `RR` rows from `r0` by column block `cb`: sums in registers over
    /// all of `k`, then dequantised as the portable kernel does (same
    /// operations, same order, so the same bits).
    ///
    /// # Safety
    /// As [`product`], with rows `r0..r0 + RR` and block `cb` inside the
    /// matrices.
    #[target_feature(enable = "avx2,avxvnni")]
    #[inline]
    unsafe fn tile<const RR: usize>(
        acts: &QActs,
        w: &QMatrix,
        b: &[f32],
        out: &mut [f32],
        r0: usize,
        cb: usize,
    ) {
        let kq = w.kp / 4;
        // SAFETY: the pointers stay inside rows r0..r0 + RR of `acts` (kp
        // bytes each) and block cb of `packed` (kq * 64 bytes); the
        // epilogue reads and writes columns below `n` only.
        unsafe {
            let mut acc = [[_mm256_setzero_si256(); 2]; RR];
            let a0 = acts.data.as_ptr().add(r0 * w.kp);
            let p0 = w.packed.as_ptr().add(cb * kq * 64);
            for k4 in 0..kq {
                let lo = _mm256_loadu_si256(p0.add(k4 * 64) as *const __m256i);
                let hi = _mm256_loadu_si256(p0.add(k4 * 64 + 32) as *const __m256i);
                for (rr, row) in acc.iter_mut().enumerate() {
                    let a = (a0.add(rr * w.kp + k4 * 4) as *const i32).read_unaligned();
                    let av = _mm256_set1_epi32(a);
                    row[0] = _mm256_dpbusd_avx_epi32(row[0], av, lo);
                    row[1] = _mm256_dpbusd_avx_epi32(row[1], av, hi);
                }
            }
            for (rr, row) in acc.iter().enumerate() {
                let r = r0 + rr;
                for (h, s) in row.iter().enumerate() {
                    let j0 = cb * NB + h * 8;
                    let live = w.n.saturating_sub(j0).min(8);
                    if live == 8 {
                        let colsum =
                            _mm256_loadu_si256(w.colsum.as_ptr().add(j0) as *const __m256i);
                        let wsc = _mm256_loadu_ps(w.scales.as_ptr().add(j0));
                        let bias = _mm256_loadu_ps(b.as_ptr().add(j0));
                        let v = _mm256_sub_epi32(*s, _mm256_slli_epi32::<7>(colsum));
                        let scale = _mm256_mul_ps(_mm256_set1_ps(acts.scales[r]), wsc);
                        let y = _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(v), scale), bias);
                        _mm256_storeu_ps(out.as_mut_ptr().add(r * w.n + j0), y);
                    } else if live > 0 {
                        let mut sums = [0i32; 8];
                        _mm256_storeu_si256(sums.as_mut_ptr() as *mut __m256i, *s);
                        for (l, sum) in sums.iter().enumerate().take(live) {
                            out[r * w.n + j0 + l] = dequantise(*sum, acts, w, b, r, j0 + l);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast kernels this CPU runs (each is compared with the portable
    /// one; a CPU without them still tests the portable kernel).
    fn available() -> Vec<Kernel> {
        [Kernel::Avx512, Kernel::Avx256]
            .into_iter()
            .filter(|k| k.supported())
            .collect()
    }

    /// Deterministic pseudo-random values in [-1, 1).
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn int8_products_are_close_to_f32_and_all_kernels_agree() {
        // Odd sizes: k not a multiple of 4, n not of 16, t not of 4.
        for (t, k, n) in [(7, 37, 50), (4, 64, 64), (1, 384, 1152), (9, 30, 3)] {
            let x = values(t * k, 1 + t as u64);
            let w = values(k * n, 2 + k as u64);
            let b = values(n, 3);
            let q = QMatrix::smoothed(&w, k, n, None);
            let mut acts = QActs::default();
            let mut got = vec![0f32; t * n];
            linear_i8(&x, &q, &b, &mut got, t, &mut acts, Kernel::Portable);
            for r in 0..t {
                for j in 0..n {
                    let exact: f32 =
                        (0..k).map(|i| x[r * k + i] * w[i * n + j]).sum::<f32>() + b[j];
                    // Two 127-level roundings: error well under 2% of the
                    // largest possible magnitude of the sum.
                    let bound = 0.02 * (k as f32).sqrt() + 1e-3;
                    assert!(
                        (got[r * n + j] - exact).abs() < bound,
                        "({t},{k},{n}) row {r} col {j}: {} vs {exact}",
                        got[r * n + j]
                    );
                }
            }
            for kernel in available() {
                let mut fast = vec![0f32; t * n];
                linear_i8(&x, &q, &b, &mut fast, t, &mut acts, kernel);
                assert_eq!(
                    fast, got,
                    "({t},{k},{n}): {kernel:?} and portable kernels differ"
                );
            }
        }
    }

    #[test]
    fn smoothing_keeps_small_channels_when_one_is_large() {
        let (t, k, n) = (6, 64, 32);
        let mut x = values(t * k, 7);
        for r in 0..t {
            x[r * k + 5] *= 60.0; // one outlier channel, as layer norms make
        }
        let w = values(k * n, 8);
        let b = vec![0f32; n];
        let mut range = vec![1f32; k];
        range[5] = 60.0;
        let err = |q: &QMatrix| {
            let mut out = vec![0f32; t * n];
            linear_i8(&x, q, &b, &mut out, t, &mut QActs::default(), kernel());
            let mut worst = 0f32;
            for r in 0..t {
                for j in 0..n {
                    let exact: f32 = (0..k).map(|i| x[r * k + i] * w[i * n + j]).sum();
                    worst = worst.max((out[r * n + j] - exact).abs());
                }
            }
            worst
        };
        let plain = err(&QMatrix::smoothed(&w, k, n, None));
        let smooth = err(&QMatrix::smoothed(&w, k, n, Some(&range)));
        assert!(smooth < plain * 0.6, "smoothed {smooth} vs plain {plain}");
    }

    #[test]
    fn zero_rows_and_columns_stay_finite() {
        let (t, k, n) = (3, 8, 16);
        let x = vec![0f32; t * k];
        let w = vec![0f32; k * n];
        let b = vec![0.5f32; n];
        let q = QMatrix::smoothed(&w, k, n, None);
        let mut out = vec![0f32; t * n];
        linear_i8(&x, &q, &b, &mut out, t, &mut QActs::default(), kernel());
        assert!(out.iter().all(|v| *v == 0.5));
    }
}
