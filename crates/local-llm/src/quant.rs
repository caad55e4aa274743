//! Matrix products on the GGUF's quantized weights as the file stores them
//! (Q4_K, Q6_K, Q8_0, Q4_1), against activations quantized to 8 bits: the
//! kernels, the blocks' layouts, and the split of output rows across the
//! cores.
//!
//! Why not candle's `QMatMul`: for one token candle 0.11 reads a repacked
//! copy of the Q4_K weights (a third larger, kept beside the originals) and
//! keeps its own spinning thread pools; a token's generation is one read of
//! every weight, so its speed is the bytes read. These kernels keep one
//! copy of each matrix, the file's bytes (rearranged for Q4_K and Q6_K),
//! and make one pass for the matrices that share an input (q, k, v; gate,
//! up).
//!
//! Q4_K and Q6_K, the bulk of a K-quant model, are stored eight rows
//! together ([`grouped`]): a vector lane per row, so one broadcast of four
//! activations meets eight rows at once and eight results come out with
//! one store; a batch of tokens (a prompt) goes through several tokens at a
//! time while a block of weights sits in registers. Q8_0 and Q4_1 run on
//! rows: a batch on tile kernels that repack eight tokens' activations and
//! meet each decoded piece of a weight block with all eight.
//!
//! Activations are quantized per block the way ggml does for these types
//! (symmetric, 127 levels: 256 values with sums per 16 for the K types, 32
//! for the others). Each block's integer sum is exact, so the AVX2 kernel and
//! the portable one compute the same integers and combine them with the same
//! float operations in the same order: they give the same bits, and the tests
//! compare them directly.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use candle_core::quantized::{GgmlDType, QTensor};

/// Values in a K-type super-block.
const QK_K: usize = 256;
/// Values in a Q8_0 / Q4_1 block.
const QK: usize = 32;

/// The weight block types with kernels here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// 256 values: 8 sub-blocks of 32 with 6-bit scales and mins, 4-bit values.
    Q4K,
    /// 256 values: 16 sub-blocks of 16 with 8-bit scales, 6-bit values.
    Q6K,
    /// 32 values: one `f16` scale, 8-bit values.
    Q8_0,
    /// 32 values: `f16` scale and minimum, 4-bit values.
    Q4_1,
}

impl Format {
    /// The format of a GGML type, if there is a kernel for it.
    pub(crate) fn from_ggml(t: GgmlDType) -> Option<Self> {
        match t {
            GgmlDType::Q4K => Some(Format::Q4K),
            GgmlDType::Q6K => Some(Format::Q6K),
            GgmlDType::Q8_0 => Some(Format::Q8_0),
            GgmlDType::Q4_1 => Some(Format::Q4_1),
            _ => None,
        }
    }

    fn block_elems(self) -> usize {
        match self {
            Format::Q4K | Format::Q6K => QK_K,
            Format::Q8_0 | Format::Q4_1 => QK,
        }
    }

    fn block_bytes(self) -> usize {
        match self {
            Format::Q4K => 144,
            Format::Q6K => 210,
            Format::Q8_0 => 34,
            Format::Q4_1 => 20,
        }
    }

    fn acts(self) -> ActKind {
        match self {
            Format::Q4K | Format::Q6K => ActKind::K,
            Format::Q8_0 | Format::Q4_1 => ActKind::B32,
        }
    }
}

/// How activations are quantized for a weight format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ActKind {
    /// Blocks of 256, with the sum of each 16 (ggml's Q8_K).
    K,
    /// Blocks of 32, with their sum (ggml's Q8_0 / Q8_1).
    B32,
}

impl ActKind {
    fn block(self) -> usize {
        match self {
            ActKind::K => QK_K,
            ActKind::B32 => QK,
        }
    }

    fn sums_per_block(self) -> usize {
        match self {
            ActKind::K => QK_K / 16,
            ActKind::B32 => 1,
        }
    }
}

/// Rows of activations quantized to 8 bits for one [`ActKind`].
pub(crate) struct Acts {
    kind: ActKind,
    k: usize,
    rows: usize,
    /// Scale of each block, row after row.
    d: Vec<f32>,
    qs: Vec<i8>,
    /// Integer sums of each block's groups (see [`ActKind`]); at most
    /// 32 × 127, so `i16` (what the vector kernels load).
    sums: Vec<i16>,
    /// For [`ActKind::K`], the sums per 32 (each two of `sums`), eight per
    /// block: what a Q4_K minimum multiplies.
    sums32: Vec<i16>,
    /// For [`ActKind::B32`], the first `rows - rows % TILE` rows again,
    /// tile by tile, block by block, token by token
    /// (`[tile][block][token][values]`), so a tile kernel reaches every
    /// token's block from one pointer at fixed offsets; empty below one
    /// tile.
    tile_qs: Vec<i8>,
    /// `d` in the same order (`[tile][block][token]`).
    tile_d: Vec<f32>,
    /// `sums` in the same order (`[tile][block][token][group]`).
    tile_sums: Vec<i16>,
}

/// Tokens a tile kernel takes at once: each decoded piece of a weight
/// block meets this many activation rows while it sits in registers (eight
/// accumulators, the decoded weights and their scales fill most of the
/// sixteen AVX2 registers).
const TILE: usize = 8;

/// One row of [`Acts`].
#[derive(Clone, Copy)]
struct ActRow<'a> {
    d: &'a [f32],
    qs: &'a [i8],
    sums: &'a [i16],
}

impl Acts {
    /// Quantizes `rows` rows of `k` values (`k` a multiple of the block).
    fn quantize(kind: ActKind, x: &[f32], rows: usize, k: usize) -> Self {
        let bs = kind.block();
        let nb = k / bs;
        let spb = kind.sums_per_block();
        let group = bs / spb;
        let mut d = Vec::with_capacity(rows * nb);
        let mut qs = vec![0i8; rows * k];
        let mut sums = Vec::with_capacity(rows * nb * spb);
        for (src, dst) in x
            .chunks_exact(bs)
            .zip(qs.chunks_exact_mut(bs))
            .take(rows * nb)
        {
            let amax = src.iter().fold(0f32, |m, v| m.max(v.abs()));
            let inv = if amax > 0.0 { 127.0 / amax } else { 0.0 };
            for (q, v) in dst.iter_mut().zip(src) {
                *q = round_i8(v * inv);
            }
            d.push(amax / 127.0);
            for g in dst.chunks_exact(group) {
                sums.push(g.iter().map(|&q| i16::from(q)).sum());
            }
        }
        let sums32 = match kind {
            ActKind::K => sums.chunks_exact(2).map(|p| p[0] + p[1]).collect(),
            ActKind::B32 => Vec::new(),
        };
        // Only the row kernels (Q8_0, Q4_1) take tiles.
        let tiles = match kind {
            ActKind::K => 0,
            ActKind::B32 => rows / TILE,
        };
        let mut tile_qs = Vec::with_capacity(tiles * TILE * k);
        let mut tile_d = Vec::with_capacity(tiles * TILE * nb);
        let mut tile_sums = Vec::with_capacity(tiles * TILE * nb * spb);
        for tile in 0..tiles {
            for b in 0..nb {
                for r in tile * TILE..(tile + 1) * TILE {
                    let blk = r * nb + b;
                    tile_qs.extend_from_slice(&qs[blk * bs..(blk + 1) * bs]);
                    tile_d.push(d[blk]);
                    tile_sums.extend_from_slice(&sums[blk * spb..(blk + 1) * spb]);
                }
            }
        }
        Acts {
            kind,
            k,
            rows,
            d,
            qs,
            sums,
            sums32,
            tile_qs,
            tile_d,
            tile_sums,
        }
    }

    fn row(&self, r: usize) -> ActRow<'_> {
        let nb = self.k / self.kind.block();
        let spb = self.kind.sums_per_block();
        ActRow {
            d: &self.d[r * nb..(r + 1) * nb],
            qs: &self.qs[r * self.k..(r + 1) * self.k],
            sums: &self.sums[r * nb * spb..(r + 1) * nb * spb],
        }
    }
}

/// `v.round().clamp(-127.0, 127.0) as i8` (halves away from zero) without
/// the call to `roundf` that `f32::round` is on baseline x86-64: a prompt
/// batch quantizes millions of values, and this loop vectorizes.
#[inline(always)]
fn round_i8(v: f32) -> i8 {
    let v = v.clamp(-127.0, 127.0);
    // Truncation toward zero; the fraction is exact below 2^23.
    let i = v as i32;
    let frac = v - i as f32;
    (i + i32::from(frac >= 0.5) - i32::from(frac <= -0.5)) as i8
}

/// The code path the products run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) enum Kernel {
    /// 256-bit integer multiply-adds (`vpmaddubsw`) and F16C for the
    /// scales, on every x86-64 CPU since Haswell / Zen 1.
    Avx2,
    /// The AVX2 kernels with AVX-512 VNNI's fused multiply-accumulate
    /// (`vpdpbusd`, `vpdpwssd`) on 256-bit vectors: Ice Lake, Zen 4 and
    /// later.
    Avx512Vnni,
    /// Plain loops: the reference, and what other CPUs run.
    Portable,
}

impl Kernel {
    /// Whether this CPU has what the kernel needs.
    fn supported(self) -> bool {
        match self {
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx2 => {
                is_x86_feature_detected!("avx2")
                    && is_x86_feature_detected!("f16c")
                    && is_x86_feature_detected!("fma")
            }
            #[cfg(target_arch = "x86_64")]
            Kernel::Avx512Vnni => {
                Kernel::Avx2.supported()
                    && is_x86_feature_detected!("avx512vnni")
                    && is_x86_feature_detected!("avx512vl")
            }
            #[cfg(not(target_arch = "x86_64"))]
            Kernel::Avx2 | Kernel::Avx512Vnni => false,
            Kernel::Portable => true,
        }
    }
}

/// Whether AVX2 code runs (AVX2, F16C and FMA are there, and the portable
/// kernel was not asked for): the cache's conversions use it too.
pub(crate) fn has_avx2() -> bool {
    matches!(kernel(), Kernel::Avx2 | Kernel::Avx512Vnni)
}

/// The fastest kernel this CPU runs. `MNEMO_LLM_KERNEL` names another
/// (`portable`, `avx2`, `avx512vnni`: to measure or test one against the
/// other; a kernel the CPU lacks falls back to the next below it), and
/// `MNEMO_LLM_PORTABLE` set is `portable`.
pub(crate) fn kernel() -> Kernel {
    static K: OnceLock<Kernel> = OnceLock::new();
    *K.get_or_init(|| {
        let asked = std::env::var("MNEMO_LLM_KERNEL").ok();
        let ceiling = match asked.as_deref() {
            _ if std::env::var_os("MNEMO_LLM_PORTABLE").is_some() => Kernel::Portable,
            Some("portable") => Kernel::Portable,
            Some("avx2") => Kernel::Avx2,
            _ => Kernel::Avx512Vnni,
        };
        let order = [Kernel::Avx512Vnni, Kernel::Avx2, Kernel::Portable];
        order
            .into_iter()
            .skip_while(|k| *k != ceiling)
            .find(|k| k.supported())
            .unwrap_or(Kernel::Portable)
    })
}

/// A weight matrix `[rows, cols]` (output by input) in one of the
/// [`Format`]s, copied out of candle's tensor so that candle's copy can be
/// dropped: row `r` is the `row_bytes` bytes at `r * row_bytes`, except
/// for Q4_K and Q6_K, which are stored in groups of rows (see [`grouped`];
/// the last group padded with rows of zeros).
pub(crate) struct QWeight {
    data: Vec<u8>,
    format: Format,
    rows: usize,
    cols: usize,
    row_bytes: usize,
    /// `data` is in [`grouped`]'s layout.
    grouped: bool,
}

impl QWeight {
    /// The weights of `tensor`, if a kernel runs its type and shape.
    pub(crate) fn new(tensor: &QTensor) -> Option<Self> {
        let format = Format::from_ggml(tensor.dtype())?;
        let (rows, cols) = tensor.shape().dims2().ok()?;
        if cols == 0 || !cols.is_multiple_of(format.block_elems()) {
            return None;
        }
        let row_bytes = cols / format.block_elems() * format.block_bytes();
        let data = tensor.data().ok()?;
        if data.len() != rows * row_bytes {
            return None;
        }
        let grouped = grouped::groups(format);
        let data = match grouped {
            true => grouped::group(format, &data, row_bytes),
            false => data.into_owned(),
        };
        Some(QWeight {
            data,
            format,
            rows,
            cols,
            row_bytes,
            grouped,
        })
    }

    /// Rows an item of a product must take together.
    fn unit(&self) -> usize {
        if self.grouped {
            grouped::ROWS
        } else {
            1
        }
    }

    /// Rows stored: `rows`, and the padding of a grouped matrix.
    fn stored_rows(&self) -> usize {
        self.rows.next_multiple_of(self.unit())
    }
}

/// Why a product could not run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProductError {
    /// The weights given together do not share the input size, or the
    /// input is not whole rows.
    #[error("quantized product: inputs of {given} values do not fit weights of {cols} columns")]
    Shape {
        /// The input's length.
        given: usize,
        /// The weights' input size.
        cols: usize,
    },
}

/// `outs[i] = x · ws[i]ᵀ` for `t` rows of `x` (each `cols` long): each
/// output `[t, ws[i].rows]` row-major. The input is quantized once per
/// activation kind and the rows of all the weights are split across the
/// cores together, so matrices sharing an input are one pass.
pub(crate) fn matmul_many(
    ws: &[&QWeight],
    x: &[f32],
    kernel: Kernel,
) -> Result<Vec<Vec<f32>>, ProductError> {
    let Some(cols) = ws.first().map(|w| w.cols) else {
        return Ok(Vec::new());
    };
    if ws.iter().any(|w| w.cols != cols) || !x.len().is_multiple_of(cols) {
        return Err(ProductError::Shape {
            given: x.len(),
            cols,
        });
    }
    let t = x.len() / cols;
    let need = |kind: ActKind| ws.iter().any(|w| w.format.acts() == kind);
    let acts_k = need(ActKind::K).then(|| Acts::quantize(ActKind::K, x, t, cols));
    let acts_32 = need(ActKind::B32).then(|| Acts::quantize(ActKind::B32, x, t, cols));

    // Work items: a range of rows of one weight, about a sixteenth of a
    // thread's share of the bytes, taken by whichever thread is free: a
    // core slowed down (a neighbour on the host, a format that costs more
    // per byte) no longer leaves the other waiting at the end.
    let total: usize = ws.iter().map(|w| w.rows * w.row_bytes).sum();
    let pool = crate::pool::pool();
    let n_threads = if total * t < 1 << 16 {
        1
    } else {
        pool.threads()
    };
    let piece = (total / (n_threads * 16)).max(1);
    let mut items: Vec<(usize, usize, usize)> = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let (unit, rows) = (w.unit(), w.stored_rows());
        let n = (piece / (w.row_bytes * unit)).max(1) * unit;
        items.extend((0..rows).step_by(n).map(|r| (i, r, (r + n).min(rows))));
    }
    let next = AtomicUsize::new(0);
    // Zeroed lazily by the system (no pass over them here); each item
    // writes the cells of its own rows, token-major.
    let mut outs: Vec<Vec<f32>> = ws.iter().map(|w| vec![0f32; t * w.rows]).collect();
    let dst = Cells(outs.iter_mut().map(|o| o.as_mut_ptr()).collect());
    let run = || {
        let mut scratch = Vec::new();
        while let Some(&(i, r0, r1)) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
            let w = ws[i];
            let acts = match w.format.acts() {
                ActKind::K => acts_k.as_ref(),
                ActKind::B32 => acts_32.as_ref(),
            };
            let Some(acts) = acts else { continue };
            if w.grouped {
                let data = &w.data[r0 * w.row_bytes..r1 * w.row_bytes];
                // SAFETY: rows r0..r1 of weight i are this item's alone, and
                // `outs[i]` holds `t × rows` cells, alive until `pool.run`
                // returns.
                unsafe { product_groups(w, data, r0, acts, dst.0[i], kernel) };
                continue;
            }
            for b0 in (r0..r1).step_by(SCRATCH_ROWS) {
                let b1 = (b0 + SCRATCH_ROWS).min(r1);
                scratch.clear();
                scratch.resize((b1 - b0) * t, 0f32);
                let rows = &w.data[b0 * w.row_bytes..b1 * w.row_bytes];
                product_rows(w.format, rows, w.row_bytes, acts, &mut scratch, kernel);
                for tok in 0..t {
                    for (r, v) in (b0..b1).zip(scratch[tok..].iter().step_by(t)) {
                        // SAFETY: `outs[i]` holds `t × rows` cells, alive
                        // until `pool.run` returns; rows r0..r1 of weight i
                        // are this item's alone, so no other item writes
                        // this cell.
                        unsafe { dst.write(i, tok * w.rows + r, *v) };
                    }
                }
            }
        }
    };
    // A part that panicked leaves every output NaN rather than taking the
    // process down.
    if pool.run(n_threads, &|_| run()).is_err() {
        outs.iter_mut().for_each(|o| o.fill(f32::NAN));
    }
    Ok(outs)
}

/// Rows of a weight a part computes at once into its scratch buffer (at a
/// 512-token batch, 128 KB: it stays in cache until it is copied out).
const SCRATCH_ROWS: usize = 64;

/// The outputs of a product, written by all its items at once.
struct Cells(Vec<*mut f32>);

// SAFETY: the items of a product write disjoint cells (their own rows) of
// buffers that outlive them, and nothing reads the cells until every item
// has returned.
unsafe impl Sync for Cells {}

impl Cells {
    /// # Safety
    /// Cell `at` of output `i` exists, and no other thread touches it.
    unsafe fn write(&self, i: usize, at: usize, v: f32) {
        // SAFETY: as the caller promised.
        unsafe { self.0[i].add(at).write(v) }
    }
}

/// `out[tok * w.rows + r]` = row `r` of `w` · activation row `tok`, for
/// the rows in `data`: whole groups of `w`'s, from row `r0`.
///
/// # Safety
/// `out` is an output of `acts.rows × w.rows` cells, and no other thread
/// touches the cells of `data`'s rows.
unsafe fn product_groups(
    w: &QWeight,
    data: &[u8],
    r0: usize,
    acts: &Acts,
    out: *mut f32,
    kernel: Kernel,
) {
    debug_assert!(w.grouped);
    let rows = w.rows.saturating_sub(r0);
    // SAFETY (all): as the caller promised.
    let out = unsafe { out.add(r0) };
    // `kernel()` names a kernel only on CPUs that have what it needs.
    #[cfg(target_arch = "x86_64")]
    match kernel {
        Kernel::Avx2 => {
            return unsafe {
                x86::avx2::product_groups(w.format, data, w.row_bytes, rows, w.rows, acts, out)
            }
        }
        Kernel::Avx512Vnni => {
            return unsafe {
                x86::vnni::product_groups(w.format, data, w.row_bytes, rows, w.rows, acts, out)
            }
        }
        Kernel::Portable => {}
    }
    let _ = kernel;
    let mut plain = vec![0u8; grouped::ROWS * w.row_bytes];
    for (g, grp) in data.chunks_exact(plain.len()).enumerate() {
        grouped::ungroup(w.format, grp, w.row_bytes, &mut plain);
        let valid = plain
            .chunks_exact(w.row_bytes)
            .take(rows.saturating_sub(g * grouped::ROWS));
        for (r, row) in valid.enumerate() {
            for tok in 0..acts.rows {
                let a = acts.row(tok);
                let v = match w.format {
                    Format::Q6K => dot_q6k(row, a),
                    _ => dot_q4k(row, a),
                };
                unsafe { out.add(tok * w.rows + g * grouped::ROWS + r).write(v) };
            }
        }
    }
}

/// `out[r * t + tok]` = row `r` of `rows` · activation row `tok`.
fn product_rows(
    format: Format,
    rows: &[u8],
    row_bytes: usize,
    acts: &Acts,
    out: &mut [f32],
    kernel: Kernel,
) {
    // SAFETY (both): `kernel()` names a kernel only on CPUs that have
    // what it needs; the kernels read whole blocks of `rows` and of
    // `acts`, whose lengths `QWeight::new` and `Acts::quantize` made agree.
    #[cfg(target_arch = "x86_64")]
    match kernel {
        Kernel::Avx2 => {
            return unsafe { x86::avx2::product_rows(format, rows, row_bytes, acts, out) }
        }
        Kernel::Avx512Vnni => {
            return unsafe { x86::vnni::product_rows(format, rows, row_bytes, acts, out) }
        }
        Kernel::Portable => {}
    }
    let _ = kernel;
    let t = acts.rows;
    for (row, o) in rows.chunks_exact(row_bytes).zip(out.chunks_exact_mut(t)) {
        for (tok, v) in o.iter_mut().enumerate() {
            let a = acts.row(tok);
            *v = match format {
                Format::Q4K => dot_q4k(row, a),
                Format::Q6K => dot_q6k(row, a),
                Format::Q8_0 => dot_q8_0(row, a),
                Format::Q4_1 => dot_q4_1(row, a),
            };
        }
    }
}

/// IEEE half to single precision (the blocks' scales).
pub(crate) fn f16(lo: u8, hi: u8) -> f32 {
    let h = u16::from_le_bytes([lo, hi]);
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let bits = match exp {
        0 if man == 0 => sign,
        0 => {
            // Subnormal: shift the mantissa up to an implicit leading one.
            let (mut e, mut m) = (113u32, man);
            while m & 0x400 == 0 {
                m <<= 1;
                e -= 1;
            }
            sign | (e << 23) | ((m & 0x3ff) << 13)
        }
        0x1f => sign | 0x7f80_0000 | (man << 13),
        _ => sign | ((exp + 112) << 23) | (man << 13),
    };
    f32::from_bits(bits)
}

/// Scale and minimum of sub-block `j` of a Q4_K block (ggml's
/// `get_scale_min_k4`: eight 6-bit pairs packed in 12 bytes).
#[inline(always)]
fn scale_min_k4(j: usize, s: &[u8]) -> (i32, i32) {
    let (sc, m) = if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        (
            (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4),
            (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
        )
    };
    (i32::from(sc), i32::from(m))
}

/// The part of a Q4_K block's sum that needs no vector work: its scales
/// and the minimums times the activations' sums per 32.
#[inline(always)]
fn q4k_scales(blk: &[u8], sums: &[i16]) -> ([i32; 8], i32) {
    let mut sc = [0i32; 8];
    let mut imin = 0;
    for (j, s) in sc.iter_mut().enumerate() {
        let (a, m) = scale_min_k4(j, &blk[4..16]);
        *s = a;
        imin += m * (i32::from(sums[2 * j]) + i32::from(sums[2 * j + 1]));
    }
    (sc, imin)
}

/// Layout (ggml `block_q4_K`): `d`, `dmin` (`f16`), 12 bytes of scales,
/// 128 bytes of values: bytes `32c..32c+32` hold sub-block `2c` in their low
/// nibbles and `2c + 1` in their high ones.
fn dot_q4k(row: &[u8], a: ActRow<'_>) -> f32 {
    let mut acc = 0f32;
    for (b, blk) in row.chunks_exact(144).enumerate() {
        let (sc, imin) = q4k_scales(blk, &a.sums[b * 16..]);
        let y = &a.qs[b * QK_K..(b + 1) * QK_K];
        let mut isum = 0i32;
        for c in 0..4 {
            let q = &blk[16 + 32 * c..16 + 32 * (c + 1)];
            let (mut lo, mut hi) = (0i32, 0i32);
            for l in 0..32 {
                lo += i32::from(q[l] & 0xf) * i32::from(y[64 * c + l]);
                hi += i32::from(q[l] >> 4) * i32::from(y[64 * c + 32 + l]);
            }
            isum += sc[2 * c] * lo + sc[2 * c + 1] * hi;
        }
        let (d, dmin) = (f16(blk[0], blk[1]), f16(blk[2], blk[3]));
        acc += q4k_combine(a.d[b], d, dmin, isum, imin);
    }
    acc
}

/// A Q4_K block's share of a dot product from its integer sums (the vector
/// kernel ends each block with the same operations).
#[inline(always)]
fn q4k_combine(ad: f32, d: f32, dmin: f32, isum: i32, imin: i32) -> f32 {
    ad * (d * isum as f32 - dmin * imin as f32)
}

/// Σ scale × (sum of the activations) over a Q6_K block's 16 sub-blocks:
/// the values are stored plus 32, and this takes the 32 back out.
#[inline(always)]
fn q6k_offset(blk: &[u8], sums: &[i16]) -> i32 {
    let sc = &blk[192..208];
    (0..16)
        .map(|j| i32::from(sc[j] as i8) * i32::from(sums[j]))
        .sum::<i32>()
        * 32
}

/// Layout (ggml `block_q6_K`): 128 bytes of low nibbles, 64 of high bit
/// pairs, 16 `i8` scales (one per 16 values), `d` (`f16`). Each half of 128
/// values takes 64 low-nibble bytes and 32 high-bit bytes.
fn dot_q6k(row: &[u8], a: ActRow<'_>) -> f32 {
    let mut acc = 0f32;
    for (b, blk) in row.chunks_exact(210).enumerate() {
        let y = &a.qs[b * QK_K..(b + 1) * QK_K];
        let sc = &blk[192..208];
        let mut isum = 0i32;
        for half in 0..2 {
            let ql = &blk[64 * half..64 * half + 64];
            let qh = &blk[128 + 32 * half..128 + 32 * half + 32];
            let y = &y[128 * half..];
            let sc = &sc[8 * half..];
            let mut s = [0i32; 8];
            for l in 0..32 {
                let is = l / 16;
                let q1 = (ql[l] & 0xf) | ((qh[l] & 3) << 4);
                let q2 = (ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4);
                let q3 = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
                let q4 = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
                s[is] += i32::from(q1) * i32::from(y[l]);
                s[is + 2] += i32::from(q2) * i32::from(y[l + 32]);
                s[is + 4] += i32::from(q3) * i32::from(y[l + 64]);
                s[is + 6] += i32::from(q4) * i32::from(y[l + 96]);
            }
            for (j, v) in s.iter().enumerate() {
                isum += i32::from(sc[j] as i8) * v;
            }
        }
        isum -= q6k_offset(blk, &a.sums[b * 16..]);
        acc += a.d[b] * (f16(blk[208], blk[209]) * isum as f32);
    }
    acc
}

/// Layout (ggml `block_q8_0`): `d` (`f16`), 32 `i8` values.
fn dot_q8_0(row: &[u8], a: ActRow<'_>) -> f32 {
    let mut acc = 0f32;
    for (b, blk) in row.chunks_exact(34).enumerate() {
        let y = &a.qs[b * QK..(b + 1) * QK];
        let isum: i32 = blk[2..]
            .iter()
            .zip(y)
            .map(|(&w, &y)| i32::from(w as i8) * i32::from(y))
            .sum();
        acc += a.d[b] * (f16(blk[0], blk[1]) * isum as f32);
    }
    acc
}

#[inline(always)]
fn q4_1_combine(ad: f32, d: f32, m: f32, isum: i32, asum: i16) -> f32 {
    ad * (d * isum as f32 + m * f32::from(asum))
}

/// Layout (ggml `block_q4_1`): `d`, `m` (`f16`), 16 bytes: values `0..16`
/// in the low nibbles, `16..32` in the high ones; a value is `d * q + m`.
fn dot_q4_1(row: &[u8], a: ActRow<'_>) -> f32 {
    let mut acc = 0f32;
    for (b, blk) in row.chunks_exact(20).enumerate() {
        let y = &a.qs[b * QK..(b + 1) * QK];
        let mut isum = 0i32;
        for l in 0..16 {
            isum += i32::from(blk[4 + l] & 0xf) * i32::from(y[l]);
            isum += i32::from(blk[4 + l] >> 4) * i32::from(y[l + 16]);
        }
        let (d, m) = (f16(blk[0], blk[1]), f16(blk[2], blk[3]));
        acc += q4_1_combine(a.d[b], d, m, isum, a.sums[b]);
    }
    acc
}

mod grouped;
#[cfg(target_arch = "x86_64")]
mod x86;

/// A quantized tensor's values, for the tests' references.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(crate) fn dequantized(tensor: &QTensor) -> Vec<f32> {
    tensor
        .dequantize(&candle_core::Device::Cpu)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Module, Tensor};

    fn available() -> Vec<Kernel> {
        [Kernel::Avx512Vnni, Kernel::Avx2, Kernel::Portable]
            .into_iter()
            .filter(|k| k.supported())
            .collect()
    }

    /// Deterministic values in roughly [-1, 1).
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// Random weights quantized by candle (ggml's own quantizers), with
    /// candle's tensor.
    fn weight_and_tensor(
        dtype: GgmlDType,
        rows: usize,
        cols: usize,
        seed: u64,
    ) -> (QWeight, QTensor) {
        let w = Tensor::from_vec(values(rows * cols, seed), (rows, cols), &Device::Cpu).unwrap();
        let q = QTensor::quantize(&w, dtype).unwrap();
        (QWeight::new(&q).unwrap(), q)
    }

    fn weight(dtype: GgmlDType, rows: usize, cols: usize, seed: u64) -> QWeight {
        weight_and_tensor(dtype, rows, cols, seed).0
    }

    /// Dequantize the weights and the quantized activations, then dot in
    /// `f64`: what the kernels compute, without their integer tricks.
    fn reference(w: &QWeight, tensor: &QTensor, x: &[f32]) -> Vec<f32> {
        let wf = dequantized(tensor);
        let kind = w.format.acts();
        let t = x.len() / w.cols;
        let acts = Acts::quantize(kind, x, t, w.cols);
        let mut out = vec![0f32; t * w.rows];
        for tok in 0..t {
            let a = acts.row(tok);
            let xf: Vec<f64> = (0..w.cols)
                .map(|i| f64::from(a.qs[i]) * f64::from(a.d[i / kind.block()]))
                .collect();
            for r in 0..w.rows {
                let s: f64 = (0..w.cols)
                    .map(|i| f64::from(wf[r * w.cols + i]) * xf[i])
                    .sum();
                out[tok * w.rows + r] = s as f32;
            }
        }
        out
    }

    #[test]
    fn rounding_to_eight_bits_matches_round() {
        let mut v = vec![
            0.5f32,
            -0.5,
            1.5,
            -2.5,
            0.499_999_97,
            -0.499_999_97,
            126.5,
            127.4,
            -300.0,
            300.0,
        ];
        v.extend(values(10_000, 21).iter().map(|x| x * 130.0));
        for x in v {
            assert_eq!(round_i8(x), x.round().clamp(-127.0, 127.0) as i8, "{x}");
        }
    }

    #[test]
    fn half_floats_convert() {
        for (bits, v) in [
            (0x3c00u16, 1.0f32),
            (0xc000, -2.0),
            (0x3555, 0.333_251_95),
            (0x0001, 5.960_464_5e-8),
            (0x03ff, 6.097_555e-5),
            (0x7bff, 65504.0),
            (0x0000, 0.0),
        ] {
            let [lo, hi] = bits.to_le_bytes();
            assert_eq!(f16(lo, hi), v, "{bits:#06x}");
        }
        assert!(f16(0x00, 0x7c).is_infinite());
    }

    #[test]
    fn every_format_and_kernel_matches_the_dequantized_reference() {
        for dtype in [
            GgmlDType::Q4K,
            GgmlDType::Q6K,
            GgmlDType::Q8_0,
            GgmlDType::Q4_1,
        ] {
            // 9 and 17 tokens: whole tiles of the batched kernels and a
            // remainder; 37 rows: more than one block of rows; 8, 16 and 40
            // rows: Q4_K in groups of rows.
            for (rows, cols, t) in [
                (7, 256, 1),
                (33, 512, 3),
                (5, 1536, 2),
                (37, 512, 9),
                (3, 256, 17),
                (8, 256, 1),
                (16, 512, 9),
                (40, 768, 19),
            ] {
                let (w, tensor) = weight_and_tensor(dtype, rows, cols, rows as u64);
                let x: Vec<f32> = values(t * cols, 99)
                    .iter()
                    .enumerate()
                    // Uneven magnitudes, like real activations.
                    .map(|(i, v)| v * if i % 37 == 0 { 8.0 } else { 1.0 })
                    .collect();
                let want = reference(&w, &tensor, &x);
                let mut first: Option<Vec<f32>> = None;
                for k in available() {
                    let got = matmul_many(&[&w], &x, k).unwrap().remove(0);
                    for (g, r) in got.iter().zip(&want) {
                        let tol = 1e-4 * (1.0 + r.abs()) * (cols as f32).sqrt();
                        assert!(
                            (g - r).abs() <= tol,
                            "{dtype:?} {k:?} {rows}x{cols}: {g} vs {r}"
                        );
                    }
                    // The integer sums are exact and combined in the same
                    // order: every kernel gives the same bits.
                    match &first {
                        None => first = Some(got),
                        Some(f) => assert_eq!(f, &got, "{dtype:?} {k:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn a_token_gets_the_same_bits_alone_and_in_a_batch() {
        // The batched kernels sum the same integers and round the same
        // floats as the one-token ones: a prompt token's outputs do not
        // depend on how the prompt was cut into batches.
        for dtype in [
            GgmlDType::Q4K,
            GgmlDType::Q6K,
            GgmlDType::Q8_0,
            GgmlDType::Q4_1,
        ] {
            for (rows, cols, t) in [(37, 768, 21), (24, 512, 19)] {
                let w = weight(dtype, rows, cols, 4);
                let x = values(t * cols, 8);
                for k in available() {
                    let batch = matmul_many(&[&w], &x, k).unwrap().remove(0);
                    for tok in 0..t {
                        let alone = matmul_many(&[&w], &x[tok * cols..(tok + 1) * cols], k)
                            .unwrap()
                            .remove(0);
                        assert_eq!(
                            alone,
                            batch[tok * rows..(tok + 1) * rows],
                            "{dtype:?} {k:?} {tok}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn several_weights_share_one_pass_and_threads_change_nothing() {
        let ws = [
            weight(GgmlDType::Q4K, 304, 512, 1),
            weight(GgmlDType::Q4K, 300, 512, 6),
            weight(GgmlDType::Q6K, 40, 512, 2),
            weight(GgmlDType::Q8_0, 90, 512, 3),
        ];
        let refs: Vec<&QWeight> = ws.iter().collect();
        let x = values(2 * 512, 5);
        for k in available() {
            let together = matmul_many(&refs, &x, k).unwrap();
            for (w, got) in ws.iter().zip(&together) {
                let alone = matmul_many(&[w], &x, k).unwrap().remove(0);
                assert_eq!(&alone, got);
                assert!(got.iter().all(|v| v.is_finite()));
            }
        }
    }

    #[test]
    fn kernels_agree_with_candle_on_its_own_product() {
        // candle quantizes activations its own way (ggml's Q8_K rounding),
        // so only closeness is expected.
        let (w, tensor) = weight_and_tensor(GgmlDType::Q4K, 64, 1024, 11);
        let x = values(1024, 3);
        let xt = Tensor::from_vec(x.clone(), (1, 1024), &Device::Cpu).unwrap();
        let want = candle_core::quantized::QMatMul::QTensor(std::sync::Arc::new(tensor))
            .forward(&xt)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let got = matmul_many(&[&w], &x, kernel()).unwrap().remove(0);
        for (g, c) in got.iter().zip(&want) {
            assert!((g - c).abs() < 0.05 * (1.0 + c.abs()), "{g} vs {c}");
        }
    }

    #[test]
    fn mismatched_shapes_are_refused() {
        let a = weight(GgmlDType::Q8_0, 4, 64, 1);
        let b = weight(GgmlDType::Q8_0, 4, 96, 1);
        assert!(matmul_many(&[&a, &b], &values(64, 1), Kernel::Portable).is_err());
        assert!(matmul_many(&[&a], &values(65, 1), Kernel::Portable).is_err());
    }
}
