//! The in-memory vector set of one index and its top-k scans.
//!
//! This module owns:
//! - [`VectorSet`]: every chunk vector in one contiguous row-major `Vec<f32>`
//!   (the exact copy) plus an int8 copy of the same rows (one `f32` scale per
//!   row), kept in step on every push and remove;
//! - the two scans behind vector search ([`VectorScan`]): `Int8` (default)
//!   scores every row on the int8 copy, keeps a candidate pool of
//!   [`rerank_pool`]`(k)` rows and re-scores those exactly in f32; `Exact`
//!   scores every row in f32;
//! - the dot-product kernels, chosen once at run time: AVX2 + FMA on x86-64
//!   CPUs that have them (`is_x86_feature_detected!`), portable Rust
//!   elsewhere (no `target-cpu` needed, so one binary runs on any x86-64);
//! - [`bandwidth_baseline`], the memory-bandwidth floor the benchmark compares
//!   the scans with, split over the same threads as the scans.
//!
//! Memory per vector of `d` dimensions: `4 d` bytes (f32) + `d + 4` bytes
//! (int8 codes and scale) + 9 bytes (id, source tag), i.e. the int8 copy adds
//! about a quarter to the f32 mirror: 100,000 x 384 takes 154 MB + 39 MB.
//! Keeping the f32 rows in memory instead of reading the re-rank rows back
//! from SQLite is deliberate: re-scoring a pool of 200 candidates in memory
//! takes microseconds, whereas fetching 200 vectors through the embedding
//! cache costs about 10 us each (measured as the old per-row load: 98 ms for
//! 10,000 rows), i.e. ~2 ms on every search, more than the whole int8 scan
//! of 10,000 rows.
//!
//! Past [`EXACT_ROWS_MAX_BYTES`] of f32 rows (about 170,000 vectors of 384
//! dimensions) that trade turns: a million rows would take 1.5 GB. Such a
//! set is loaded without its f32 rows ([`VectorSet::codes_only`]); its scan
//! returns the int8 pool with approximate scores, and the caller re-scores
//! the pool from the stored vectors (the SQLite backend does, in one query),
//! so the results are the same as with the rows in memory. Such a set also
//! keeps a 4-bit copy of its rows ([`coarse`]): its scan first keeps the
//! best [`first_pass_pool`] rows of that copy, scores only those in int8,
//! and hands the best of them on, so a search reads half the bytes.

use std::collections::HashSet;

pub use mnemo_index::VectorScan;

mod coarse;

pub use coarse::kernel_name as first_pass_kernel_name;

/// Candidates re-scored exactly by the int8 scan for a top-`k` request: 4k,
/// at least 100. With 40 the recall@10 was already 1.0 on 100k random
/// vectors; the margin covers real embeddings, which cluster more.
pub fn rerank_pool(k: usize) -> usize {
    (4 * k).max(100)
}

/// Rows the 4-bit first pass of a codes-only set keeps for the int8 pass,
/// for an int8 pool of `keep`: 20 times as many, at least 4,000. Measured
/// at a million hash-embedder rows (docs/BENCHMARKS-LOG.md, item 32).
pub fn first_pass_pool(keep: usize) -> usize {
    (20 * keep).max(4_000)
}

/// Bytes scanned per thread below which a scan stays on the calling thread:
/// starting a thread (~20-50 us) costs more than it saves on small sets.
const PARALLEL_MIN_BYTES: usize = 4 << 20;

/// Rows scored into one buffer before candidates are picked out of it.
const BLOCK_ROWS: usize = 256;

/// Threads a scan over `bytes` bytes uses. The bandwidth baseline uses the
/// same rule, so the benchmark compares like with like.
pub fn scan_threads(bytes: usize) -> usize {
    if bytes < PARALLEL_MIN_BYTES {
        return 1;
    }
    std::thread::available_parallelism()
        .map(|p| p.get())
        .unwrap_or(1)
        .min(8)
        .min(bytes.div_ceil(PARALLEL_MIN_BYTES / 2))
        .max(1)
}

/// Runs `f` over `0..n` split into `threads` contiguous ranges and returns
/// the per-range results (in range order).
fn split<T: Send>(n: usize, threads: usize, f: impl Fn(usize, usize) -> T + Sync) -> Vec<T> {
    if threads <= 1 || n < 2 {
        return vec![f(0, n)];
    }
    let per = n.div_ceil(threads);
    std::thread::scope(|s| {
        let f = &f;
        let handles: Vec<_> = (1..threads)
            .map(|t| s.spawn(move || f((t * per).min(n), ((t + 1) * per).min(n))))
            .collect();
        // The calling thread takes the first range instead of idling.
        let mut out = vec![f(0, per.min(n))];
        for h in handles {
            match h.join() {
                Ok(v) => out.push(v),
                // A panicking scan thread is a bug; re-raise it here rather
                // than silently returning fewer rows.
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        out
    })
}

/// The dot-product kernels of the running CPU, picked once.
#[derive(Clone, Copy)]
struct Kernels {
    /// Scores of consecutive `d`-dimensional f32 rows against `q`.
    f32_rows: fn(&[f32], usize, &[f32], &mut [f32]),
    /// int8 dot products of consecutive rows against `q`.
    i8_rows: fn(&[i8], usize, &[i8], &mut [i32]),
    dot: fn(&[f32], &[f32]) -> f32,
    sum: fn(&[f32]) -> f32,
}

fn kernels() -> Kernels {
    static K: std::sync::OnceLock<Kernels> = std::sync::OnceLock::new();
    *K.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Kernels {
                    f32_rows: avx2::f32_rows_entry,
                    i8_rows: avx2::i8_rows_entry,
                    dot: avx2::dot_entry,
                    sum: avx2::sum_entry,
                };
            }
        }
        Kernels {
            f32_rows: portable::f32_rows,
            i8_rows: portable::i8_rows,
            dot: portable::dot,
            sum: portable::sum,
        }
    })
}

/// Name of the kernels in use (`"avx2+fma"` or `"portable"`), for benchmarks.
pub fn kernel_name() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return "avx2+fma";
        }
    }
    "portable"
}

/// Dot product of two f32 slices (over the shorter length).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    (kernels().dot)(a, b)
}

/// Portable kernels: independent accumulators so the compiler vectorises
/// them (SSE2 on a default x86-64 build) without reassociating floats.
mod portable {
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

    pub fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
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

    pub fn f32_rows(data: &[f32], d: usize, q: &[f32], out: &mut [f32]) {
        for (row, o) in data.chunks_exact(d).zip(out.iter_mut()) {
            *o = dot(row, q);
        }
    }

    pub fn i8_rows(data: &[i8], d: usize, q: &[i8], out: &mut [i32]) {
        for (row, o) in data.chunks_exact(d).zip(out.iter_mut()) {
            *o = dot_i8(row, q);
        }
    }

    pub fn sum(data: &[f32]) -> f32 {
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
}

/// AVX2 + FMA kernels. The `*_entry` functions are plain `fn`s (so they fit
/// the [`Kernels`] table) that are only ever stored there after
/// `is_x86_feature_detected!` confirmed both features.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    pub fn dot_entry(a: &[f32], b: &[f32]) -> f32 {
        // SAFETY: only reachable through `kernels()`, which installs this
        // entry after detecting avx2 and fma on the running CPU.
        unsafe { dot(a, b) }
    }

    pub fn f32_rows_entry(data: &[f32], d: usize, q: &[f32], out: &mut [f32]) {
        // SAFETY: as in `dot_entry`.
        unsafe { f32_rows(data, d, q, out) }
    }

    pub fn i8_rows_entry(data: &[i8], d: usize, q: &[i8], out: &mut [i32]) {
        // SAFETY: as in `dot_entry`.
        unsafe { i8_rows(data, d, q, out) }
    }

    pub fn sum_entry(data: &[f32]) -> f32 {
        // SAFETY: as in `dot_entry`.
        unsafe { sum(data) }
    }

    #[target_feature(enable = "avx2,fma")]
    fn hsum(v: __m256) -> f32 {
        let lo = _mm256_castps256_ps128(v);
        let hi = _mm256_extractf128_ps::<1>(v);
        let s = _mm_add_ps(lo, hi);
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps::<0b01>(s, s));
        _mm_cvtss_f32(s)
    }

    /// Four independent FMA chains of 8 lanes hide the FMA latency.
    #[target_feature(enable = "avx2,fma")]
    fn dot(a: &[f32], b: &[f32]) -> f32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        // SAFETY: every load reads 8 floats at offsets `i..i + 8` with
        // `i + 8 <= n`, inside both slices; `loadu` has no alignment needs.
        unsafe {
            while i + 32 <= n {
                for (j, a) in acc.iter_mut().enumerate() {
                    let x = _mm256_loadu_ps(pa.add(i + 8 * j));
                    let y = _mm256_loadu_ps(pb.add(i + 8 * j));
                    *a = _mm256_fmadd_ps(x, y, *a);
                }
                i += 32;
            }
            while i + 8 <= n {
                let x = _mm256_loadu_ps(pa.add(i));
                let y = _mm256_loadu_ps(pb.add(i));
                acc[0] = _mm256_fmadd_ps(x, y, acc[0]);
                i += 8;
            }
        }
        let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        let mut s = hsum(s);
        while i < n {
            s += a[i] * b[i];
            i += 1;
        }
        s
    }

    /// Prefetches the row `AHEAD` rows on while scoring one: the dot of a
    /// row is far shorter than its trip from memory, so asking early keeps
    /// more cache-line fetches in flight.
    #[target_feature(enable = "avx2,fma")]
    fn f32_rows(data: &[f32], d: usize, q: &[f32], out: &mut [f32]) {
        const AHEAD: usize = 4;
        let p = data.as_ptr();
        for (r, (row, o)) in data.chunks_exact(d).zip(out.iter_mut()).enumerate() {
            let next = (r + AHEAD) * d;
            if next + d <= data.len() {
                let mut off = 0;
                while off < d {
                    // SAFETY: `next + off < data.len()`: the address is
                    // inside `data` (a prefetch never faults anyway).
                    unsafe { _mm_prefetch::<_MM_HINT_T0>(p.add(next + off) as *const i8) };
                    off += 16;
                }
            }
            *o = dot(row, q);
        }
    }

    /// i8 x i8 -> i32. `maddubs` multiplies unsigned by signed bytes, so the
    /// sign of `a` moves onto `b` (`|a| * (b * sign a)`). Codes are in
    /// -127..=127, so a pair sum is at most 2 * 127 * 127 = 32,258 and the
    /// i16 saturation of `maddubs` never triggers.
    #[target_feature(enable = "avx2,fma")]
    fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
        let n = a.len().min(b.len());
        let (pa, pb) = (a.as_ptr(), b.as_ptr());
        let ones = _mm256_set1_epi16(1);
        let mut acc0 = _mm256_setzero_si256();
        let mut acc1 = _mm256_setzero_si256();
        let mut i = 0;
        // SAFETY: every load reads 32 bytes at offsets `i..i + 32` with
        // `i + 32 <= n`, inside both slices; `loadu` has no alignment needs.
        unsafe {
            while i + 64 <= n {
                let x0 = _mm256_loadu_si256(pa.add(i) as *const __m256i);
                let y0 = _mm256_loadu_si256(pb.add(i) as *const __m256i);
                let x1 = _mm256_loadu_si256(pa.add(i + 32) as *const __m256i);
                let y1 = _mm256_loadu_si256(pb.add(i + 32) as *const __m256i);
                let p0 = _mm256_maddubs_epi16(_mm256_sign_epi8(x0, x0), _mm256_sign_epi8(y0, x0));
                let p1 = _mm256_maddubs_epi16(_mm256_sign_epi8(x1, x1), _mm256_sign_epi8(y1, x1));
                acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(p0, ones));
                acc1 = _mm256_add_epi32(acc1, _mm256_madd_epi16(p1, ones));
                i += 64;
            }
            while i + 32 <= n {
                let x = _mm256_loadu_si256(pa.add(i) as *const __m256i);
                let y = _mm256_loadu_si256(pb.add(i) as *const __m256i);
                let p = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
                acc0 = _mm256_add_epi32(acc0, _mm256_madd_epi16(p, ones));
                i += 32;
            }
        }
        let acc = _mm256_add_epi32(acc0, acc1);
        let s = _mm_add_epi32(
            _mm256_castsi256_si128(acc),
            _mm256_extracti128_si256::<1>(acc),
        );
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
        let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
        let mut total = _mm_cvtsi128_si32(s);
        while i < n {
            total += a[i] as i32 * b[i] as i32;
            i += 1;
        }
        total
    }

    #[target_feature(enable = "avx2,fma")]
    fn i8_rows(data: &[i8], d: usize, q: &[i8], out: &mut [i32]) {
        for (row, o) in data.chunks_exact(d).zip(out.iter_mut()) {
            *o = dot_i8(row, q);
        }
    }

    #[target_feature(enable = "avx2,fma")]
    fn sum(data: &[f32]) -> f32 {
        let n = data.len();
        let p = data.as_ptr();
        let mut acc = [_mm256_setzero_ps(); 4];
        let mut i = 0;
        // SAFETY: every load reads 8 floats at `i..i + 8` with `i + 8 <= n`.
        unsafe {
            while i + 32 <= n {
                for (j, a) in acc.iter_mut().enumerate() {
                    *a = _mm256_add_ps(*a, _mm256_loadu_ps(p.add(i + 8 * j)));
                }
                i += 32;
            }
            while i + 8 <= n {
                acc[0] = _mm256_add_ps(acc[0], _mm256_loadu_ps(p.add(i)));
                i += 8;
            }
        }
        let s = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
        hsum(s) + data[i..].iter().sum::<f32>()
    }
}

/// Best `keep` (score, row) pairs of a stream: scores at or below the
/// current cut-off are skipped without touching the buffer; the buffer is
/// cut back to `keep` when it doubles.
struct Best {
    keep: usize,
    floor: f32,
    items: Vec<(f32, u32)>,
}

impl Best {
    fn new(keep: usize) -> Self {
        Best {
            keep,
            floor: f32::NEG_INFINITY,
            items: Vec::with_capacity(2 * keep + 1),
        }
    }

    #[inline]
    fn offer(&mut self, score: f32, row: u32) {
        if score > self.floor {
            self.items.push((score, row));
            if self.items.len() >= 2 * self.keep {
                self.shrink();
            }
        }
    }

    fn shrink(&mut self) {
        if self.items.len() > self.keep {
            self.items
                .select_nth_unstable_by(self.keep - 1, |a, b| b.0.total_cmp(&a.0));
            self.items.truncate(self.keep);
            self.floor = self.items.iter().map(|x| x.0).fold(f32::INFINITY, f32::min);
        }
    }

    fn finish(mut self) -> Vec<(f32, u32)> {
        self.shrink();
        self.items
    }
}

/// Quantises `v` to int8 codes in -127..=127 with one scale (max |x| / 127);
/// returns the scale.
fn quantize(v: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    let inv = 1.0 / scale;
    out.extend(
        v.iter()
            .map(|x| (x * inv).round().clamp(-127.0, 127.0) as i8),
    );
    scale
}

/// Above this many bytes of f32 rows a loaded set keeps only its int8
/// codes (see the module docs).
pub const EXACT_ROWS_MAX_BYTES: usize = 256 << 20;

/// Source filter of a scan: `None` keeps every row.
pub type SourceFilter<'a> = Option<&'a (dyn Fn(u8) -> bool + Sync)>;

/// Vectors of one index, with their chunk ids and sources, in f32 and int8
/// (or int8 only, see [`VectorSet::codes_only`]).
#[derive(Debug, Clone)]
pub struct VectorSet {
    dims: usize,
    ids: Vec<i64>,
    sources: Vec<u8>,
    /// Empty unless `exact`.
    data: Vec<f32>,
    codes: Vec<i8>,
    scales: Vec<f32>,
    exact: bool,
    /// The 4-bit first pass of a codes-only set, built by
    /// [`VectorSet::finish_loading`]; dropped by any change to the rows.
    coarse: Option<coarse::Coarse>,
}

impl Default for VectorSet {
    fn default() -> Self {
        VectorSet::new(0)
    }
}

impl VectorSet {
    /// An empty set of `dims`-dimensional vectors.
    pub fn new(dims: usize) -> Self {
        VectorSet::with_capacity(dims, 0)
    }

    /// An empty set with room for `rows` vectors.
    pub fn with_capacity(dims: usize, rows: usize) -> Self {
        VectorSet {
            dims,
            ids: Vec::with_capacity(rows),
            sources: Vec::with_capacity(rows),
            data: Vec::with_capacity(rows * dims),
            codes: Vec::with_capacity(rows * dims),
            scales: Vec::with_capacity(rows),
            exact: true,
            coarse: None,
        }
    }

    /// An empty set with room for `rows` vectors that keeps only their int8
    /// codes: a quarter of the memory. Its [`VectorSet::search`] returns the
    /// int8 candidate pool with approximate scores, for the caller to
    /// re-score exactly.
    pub fn codes_only(dims: usize, rows: usize) -> Self {
        VectorSet {
            dims,
            ids: Vec::with_capacity(rows),
            sources: Vec::with_capacity(rows),
            data: Vec::new(),
            codes: Vec::with_capacity(rows * dims),
            scales: Vec::with_capacity(rows),
            exact: false,
            coarse: None,
        }
    }

    /// The set [`VectorSet::with_capacity`] or [`VectorSet::codes_only`]
    /// gives for `rows` rows: codes only past [`EXACT_ROWS_MAX_BYTES`].
    pub fn sized_for(dims: usize, rows: usize) -> Self {
        if rows.saturating_mul(dims).saturating_mul(4) > EXACT_ROWS_MAX_BYTES {
            VectorSet::codes_only(dims, rows)
        } else {
            VectorSet::with_capacity(dims, rows)
        }
    }

    /// Whether the f32 rows are kept (scores from [`VectorSet::search`] are
    /// then exact cosines).
    pub fn has_exact_rows(&self) -> bool {
        self.exact
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

    /// The raw row-major f32 buffer (for benchmarks).
    pub fn data(&self) -> &[f32] {
        &self.data
    }

    /// Bytes held (f32 rows, int8 rows, scales, ids, tags, the 4-bit copy).
    pub fn memory_bytes(&self) -> usize {
        self.data.len() * 4
            + self.codes.len()
            + self.scales.len() * 4
            + self.ids.len() * 9
            + self.coarse.as_ref().map_or(0, |c| c.memory_bytes())
    }

    /// Builds what the scans need besides the rows once a set is loaded:
    /// the 4-bit copy of a codes-only set (about 0.2 s and half the codes'
    /// memory at a million rows of 384 dimensions). A set with its f32 rows
    /// needs nothing. Any later push or removal drops the copy again (the
    /// scan then scores every row in int8) until this is called again.
    pub fn finish_loading(&mut self) {
        if !self.exact && !self.is_empty() {
            self.coarse = Some(coarse::Coarse::build(&self.codes, &self.scales, self.dims));
        }
    }

    /// Whether a 4-bit first pass is in place (see [`VectorSet::finish_loading`]).
    pub fn has_first_pass(&self) -> bool {
        self.coarse.is_some()
    }

    /// Adds one vector; `source` is a small tag used by filters. A vector of
    /// the wrong dimension is ignored and `false` returned.
    pub fn push(&mut self, id: i64, source: u8, v: &[f32]) -> bool {
        if v.len() != self.dims || self.dims == 0 {
            return false;
        }
        self.coarse = None;
        self.ids.push(id);
        self.sources.push(source);
        if self.exact {
            self.data.extend_from_slice(v);
        }
        let scale = quantize(v, &mut self.codes);
        self.scales.push(scale);
        true
    }

    /// Adds one vector stored as little-endian f32 bytes (the SQLite blob
    /// format), decoding straight into the buffer. `false` when the blob
    /// does not hold exactly `dims` floats.
    pub fn push_le_bytes(&mut self, id: i64, source: u8, blob: &[u8]) -> bool {
        if blob.len() != self.dims * 4 || self.dims == 0 {
            return false;
        }
        self.coarse = None;
        let decoded = blob
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
        let scale = if self.exact {
            let start = self.data.len();
            self.data.extend(decoded);
            quantize(&self.data[start..], &mut self.codes)
        } else {
            let row: Vec<f32> = decoded.collect();
            quantize(&row, &mut self.codes)
        };
        self.scales.push(scale);
        self.ids.push(id);
        self.sources.push(source);
        true
    }

    /// Bytes of [`VectorSet::write_to`]'s output for `rows` rows (`exact`:
    /// with the f32 rows).
    pub fn encoded_len(dims: usize, rows: usize, exact: bool) -> usize {
        rows * (8 + 1 + 4 + dims + if exact { 4 * dims } else { 0 })
    }

    /// Writes the set in the layout [`VectorSet::from_bytes`] reads: ids
    /// (i64 LE), source tags, scales (f32 LE), int8 codes, f32 rows (LE,
    /// only when the set keeps them), each as one run. Used for the on-disk
    /// vector cache.
    pub fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
        let flush = |buf: &mut Vec<u8>, w: &mut dyn std::io::Write| {
            let r = w.write_all(buf);
            buf.clear();
            r
        };
        for id in &self.ids {
            buf.extend_from_slice(&id.to_le_bytes());
            if buf.len() >= 1 << 16 {
                flush(&mut buf, w)?;
            }
        }
        flush(&mut buf, w)?;
        w.write_all(&self.sources)?;
        for x in &self.scales {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        flush(&mut buf, w)?;
        // In pieces: one buffer of every code would double the set's memory
        // while the cache is written (384 MB more at a million rows).
        for part in self.codes.chunks(1 << 16) {
            buf.extend(part.iter().map(|c| *c as u8));
            flush(&mut buf, w)?;
        }
        for x in &self.data {
            buf.extend_from_slice(&x.to_le_bytes());
            if buf.len() >= 1 << 16 {
                flush(&mut buf, w)?;
            }
        }
        flush(&mut buf, w)
    }

    /// A checksum of every id, tag, scale, code and float (four independent
    /// multiply-xor lanes, so it runs near memory speed). The vector cache
    /// stores it to catch a torn or damaged file whose length is right.
    pub fn checksum(&self) -> u64 {
        const K: u64 = 0x9E37_79B9_7F4A_7C15;
        #[inline(always)]
        fn step(h: u64, v: u64) -> u64 {
            (h ^ v).wrapping_mul(K).rotate_left(23)
        }
        fn words(b: &[u8]) -> u64 {
            b.iter()
                .enumerate()
                .fold(0u64, |w, (j, x)| w | ((*x as u64) << (8 * j)))
        }
        let mut h = [
            self.dims as u64,
            self.ids.len() as u64,
            K,
            K.rotate_left(17),
        ];
        for ((id, src), scale) in self.ids.iter().zip(&self.sources).zip(&self.scales) {
            h[0] = step(h[0], *id as u64);
            h[1] = step(h[1], *src as u64 | ((scale.to_bits() as u64) << 8));
        }
        let codes = self.codes.chunks_exact(32);
        let rest = codes.remainder();
        for c in codes {
            for (j, lane) in h.iter_mut().enumerate() {
                let w = c[8 * j..8 * j + 8]
                    .iter()
                    .enumerate()
                    .fold(0u64, |w, (i, x)| w | ((*x as u8 as u64) << (8 * i)));
                *lane = step(*lane, w);
            }
        }
        let rest: Vec<u8> = rest.iter().map(|x| *x as u8).collect();
        // Eight bytes per word: a longer remainder (a set of fewer than 32
        // codes, e.g. a few rows of 8 dimensions) overflowed the shift. An
        // empty one steps once with 0, as before, so existing caches match.
        if rest.is_empty() {
            h[2] = step(h[2], 0);
        }
        for c in rest.chunks(8) {
            h[2] = step(h[2], words(c));
        }
        let data = self.data.chunks_exact(8);
        let rest = data.remainder();
        for c in data {
            for (j, lane) in h.iter_mut().enumerate() {
                let w = c[2 * j].to_bits() as u64 | ((c[2 * j + 1].to_bits() as u64) << 32);
                *lane = step(*lane, w);
            }
        }
        for x in rest {
            h[3] = step(h[3], x.to_bits() as u64);
        }
        h.iter().fold(0u64, |a, x| step(a, *x))
    }

    /// Reads what [`VectorSet::write_to`] wrote for `rows` rows of `dims`
    /// dimensions, decoding 64 KiB at a time straight into the set (no copy
    /// of the whole file in memory). Fails unless the reader holds exactly
    /// that many bytes.
    pub fn read_from(
        r: &mut impl std::io::Read,
        dims: usize,
        rows: usize,
        exact: bool,
    ) -> std::io::Result<Self> {
        fn section(
            r: &mut impl std::io::Read,
            buf: &mut [u8],
            len: usize,
            mut f: impl FnMut(&[u8]),
        ) -> std::io::Result<()> {
            let mut left = len;
            while left > 0 {
                // `buf.len()` is a multiple of 8: chunks never split a value.
                let m = left.min(buf.len());
                r.read_exact(&mut buf[..m])?;
                f(&buf[..m]);
                left -= m;
            }
            Ok(())
        }
        let mut set = if exact {
            VectorSet::with_capacity(dims, rows)
        } else {
            VectorSet::codes_only(dims, rows)
        };
        let mut buf = vec![0u8; 1 << 16];
        section(r, &mut buf, rows * 8, |b| {
            set.ids.extend(
                b.chunks_exact(8)
                    .map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])),
            )
        })?;
        section(r, &mut buf, rows, |b| set.sources.extend_from_slice(b))?;
        section(r, &mut buf, rows * 4, |b| {
            set.scales.extend(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            )
        })?;
        section(r, &mut buf, rows * dims, |b| {
            set.codes.extend(b.iter().map(|x| *x as i8))
        })?;
        let f32_bytes = if exact { rows * dims * 4 } else { 0 };
        section(r, &mut buf, f32_bytes, |b| {
            set.data.extend(
                b.chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            )
        })?;
        if r.read(&mut buf[..1])? != 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "trailing bytes after the vectors",
            ));
        }
        set.finish_loading();
        Ok(set)
    }

    /// Reads what [`VectorSet::write_to`] wrote for `rows` rows of `dims`
    /// dimensions; `None` unless `bytes` has exactly that length.
    pub fn from_bytes(dims: usize, rows: usize, exact: bool, bytes: &[u8]) -> Option<VectorSet> {
        if dims == 0 || bytes.len() != Self::encoded_len(dims, rows, exact) {
            return None;
        }
        Self::read_from(&mut &bytes[..], dims, rows, exact).ok()
    }

    /// Removes the vectors of these chunk ids, compacting in place.
    pub fn remove(&mut self, ids: &HashSet<i64>) {
        if ids.is_empty() {
            return;
        }
        self.coarse = None;
        let d = self.dims;
        let mut w = 0usize;
        for r in 0..self.ids.len() {
            if ids.contains(&self.ids[r]) {
                continue;
            }
            if w != r {
                self.ids[w] = self.ids[r];
                self.sources[w] = self.sources[r];
                self.scales[w] = self.scales[r];
                if self.exact {
                    self.data.copy_within(r * d..(r + 1) * d, w * d);
                }
                self.codes.copy_within(r * d..(r + 1) * d, w * d);
            }
            w += 1;
        }
        self.ids.truncate(w);
        self.sources.truncate(w);
        self.scales.truncate(w);
        if self.exact {
            self.data.truncate(w * d);
        }
        self.codes.truncate(w * d);
    }

    /// Top `k` with the given scan; the `Int8` scan re-ranks
    /// [`rerank_pool`]`(k)` candidates. A set without its f32 rows returns
    /// that pool instead, best first with approximate (int8) scores, for
    /// the caller to re-score (see [`VectorSet::codes_only`]).
    pub fn search(
        &self,
        scan: VectorScan,
        query: &[f32],
        k: usize,
        allow: SourceFilter<'_>,
    ) -> Vec<(i64, f32)> {
        if !self.exact {
            let keep = rerank_pool(k).max(k);
            let mut pool = match &self.coarse {
                Some(c) if scan != VectorScan::FullInt8 && first_pass_pool(keep) < self.len() => {
                    let first = c.pool(query, first_pass_pool(keep), &self.sources, allow);
                    self.refine_int8(query, first, keep)
                }
                _ => self.pool_int8(query, keep, allow),
            };
            pool.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let q_scale = quantize(query, &mut Vec::with_capacity(self.dims));
            return pool
                .into_iter()
                .map(|(s, r)| (self.ids[r as usize], s * q_scale))
                .collect();
        }
        match scan {
            VectorScan::Exact => self.top_k(query, k, allow),
            VectorScan::Int8 | VectorScan::FullInt8 => {
                self.top_k_int8(query, k, rerank_pool(k), allow)
            }
        }
    }

    /// The `k` rows with the highest dot product with `query` (cosine, since
    /// vectors are unit length), best first, scored exactly in f32. `allow`
    /// filters by source tag.
    pub fn top_k(&self, query: &[f32], k: usize, allow: SourceFilter<'_>) -> Vec<(i64, f32)> {
        let n = self.ids.len();
        if k == 0 || n == 0 || query.len() != self.dims {
            return Vec::new();
        }
        let d = self.dims;
        let kern = kernels();
        let parts = split(n, scan_threads(self.data.len() * 4), |lo, hi| {
            let mut best = Best::new(k);
            let mut buf = [0f32; BLOCK_ROWS];
            let mut r = lo;
            while r < hi {
                let m = (hi - r).min(BLOCK_ROWS);
                (kern.f32_rows)(&self.data[r * d..(r + m) * d], d, query, &mut buf[..m]);
                self.offer_block(&mut best, r, &buf[..m], allow, |s| s);
                r += m;
            }
            best.finish()
        });
        self.finish(parts.into_iter().flatten().collect(), k)
    }

    /// Top `k`: an int8 pass over every row keeps the best `rerank` (at
    /// least `k`) candidates, which are then re-scored exactly in f32, so
    /// the returned scores are exact cosines.
    pub fn top_k_int8(
        &self,
        query: &[f32],
        k: usize,
        rerank: usize,
        allow: SourceFilter<'_>,
    ) -> Vec<(i64, f32)> {
        let n = self.ids.len();
        if k == 0 || n == 0 || query.len() != self.dims {
            return Vec::new();
        }
        let d = self.dims;
        let keep = rerank.max(k);
        if keep >= n {
            return self.top_k(query, k, allow);
        }
        let kern = kernels();
        let pool = self.pool_int8(query, keep, allow);
        let exact: Vec<(f32, u32)> = pool
            .into_iter()
            .map(|(_, r)| {
                let r = r as usize;
                ((kern.dot)(&self.data[r * d..(r + 1) * d], query), r as u32)
            })
            .collect();
        self.finish(exact, k)
    }

    /// The best `keep` rows by their int8 scores `(score, row)`, in no
    /// order; a score times the query's own int8 scale approximates the
    /// cosine.
    fn pool_int8(&self, query: &[f32], keep: usize, allow: SourceFilter<'_>) -> Vec<(f32, u32)> {
        let n = self.ids.len();
        if keep == 0 || n == 0 || query.len() != self.dims {
            return Vec::new();
        }
        let d = self.dims;
        let mut q = Vec::with_capacity(d);
        quantize(query, &mut q);
        let kern = kernels();
        let parts = split(n, scan_threads(self.codes.len()), |lo, hi| {
            let mut best = Best::new(keep);
            let mut buf = [0i32; BLOCK_ROWS];
            let mut r = lo;
            while r < hi {
                let m = (hi - r).min(BLOCK_ROWS);
                (kern.i8_rows)(&self.codes[r * d..(r + m) * d], d, &q, &mut buf[..m]);
                let scales = &self.scales[r..r + m];
                let mut i = 0;
                self.offer_block(&mut best, r, &buf[..m], allow, |s| {
                    // `offer_block` visits the block in order.
                    let v = s as f32 * scales[i];
                    i += 1;
                    v
                });
                r += m;
            }
            best.finish()
        });
        parts.into_iter().flatten().collect()
    }

    /// The best `keep` of the first pass's rows by their int8 scores, as
    /// [`VectorSet::pool_int8`] gives them.
    fn refine_int8(&self, query: &[f32], rows: Vec<(f32, u32)>, keep: usize) -> Vec<(f32, u32)> {
        let d = self.dims;
        let mut q = Vec::with_capacity(d);
        quantize(query, &mut q);
        let kern = kernels();
        let mut best = Best::new(keep);
        let mut out = [0i32; 1];
        for (_, r) in rows {
            let r = r as usize;
            (kern.i8_rows)(&self.codes[r * d..(r + 1) * d], d, &q, &mut out);
            best.offer(out[0] as f32 * self.scales[r], r as u32);
        }
        best.finish()
    }

    /// Offers a block of scores (rows `lo..lo + scores.len()`) to `best`.
    #[inline]
    fn offer_block<S: Copy>(
        &self,
        best: &mut Best,
        lo: usize,
        scores: &[S],
        allow: SourceFilter<'_>,
        mut score: impl FnMut(S) -> f32,
    ) {
        match allow {
            None => {
                for (i, s) in scores.iter().enumerate() {
                    best.offer(score(*s), (lo + i) as u32);
                }
            }
            Some(f) => {
                for (i, s) in scores.iter().enumerate() {
                    let v = score(*s);
                    if f(self.sources[lo + i]) {
                        best.offer(v, (lo + i) as u32);
                    }
                }
            }
        }
    }

    fn finish(&self, mut best: Vec<(f32, u32)>, k: usize) -> Vec<(i64, f32)> {
        // Ties broken by row, so both scans order equal scores alike.
        best.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        best.truncate(k);
        best.into_iter()
            .map(|(s, r)| (self.ids[r as usize], s))
            .collect()
    }
}

/// Sum of the buffer: the memory-bandwidth floor a scan is compared with in
/// the benchmark. Same kernel family (AVX2 when present) and the same number
/// of threads ([`scan_threads`]) as [`VectorSet::top_k`] over that buffer.
pub fn bandwidth_baseline(data: &[f32]) -> f32 {
    let kern = kernels();
    split(data.len(), scan_threads(data.len() * 4), |lo, hi| {
        (kern.sum)(&data[lo..hi])
    })
    .into_iter()
    .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: Vec<f32>) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.into_iter().map(|x| x / n).collect()
    }

    pub(super) fn rng(seed: u64) -> impl FnMut() -> f32 {
        let mut seed = seed;
        move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        }
    }

    #[test]
    fn kernels_agree_with_portable_code() {
        let mut rnd = rng(3);
        for n in [0, 1, 7, 8, 31, 32, 33, 63, 64, 65, 384, 385, 1000] {
            let a: Vec<f32> = (0..n).map(|_| rnd()).collect();
            let b: Vec<f32> = (0..n).map(|_| rnd()).collect();
            let want = portable::dot(&a, &b);
            assert!((dot(&a, &b) - want).abs() < 1e-4, "dot n={n}");
            let want = portable::sum(&a);
            assert!((bandwidth_baseline(&a) - want).abs() < 1e-3, "sum n={n}");
            let ia: Vec<i8> = (0..n).map(|_| (rnd() * 254.0) as i8).collect();
            let ib: Vec<i8> = (0..n).map(|_| (rnd() * 254.0) as i8).collect();
            let mut out = [0i32; 1];
            if n > 0 {
                (kernels().i8_rows)(&ia, n, &ib, &mut out);
                assert_eq!(out[0], portable::dot_i8(&ia, &ib), "dot_i8 n={n}");
            }
            // Extremes: the sign trick and i16 pair sums at their limit.
            let full = vec![127i8; n];
            let neg = vec![-127i8; n];
            if n > 0 {
                (kernels().i8_rows)(&full, n, &neg, &mut out);
                assert_eq!(out[0], -127 * 127 * n as i32);
                (kernels().i8_rows)(&neg, n, &neg, &mut out);
                assert_eq!(out[0], 127 * 127 * n as i32);
            }
        }
    }

    #[test]
    fn top_k_matches_brute_force_and_parallel_path() {
        let d = 64;
        let n = (PARALLEL_MIN_BYTES / (d * 4)) * 3 + 500; // forces the threaded path
        let mut set = VectorSet::new(d);
        let mut rnd = rng(7);
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
            .map(|(i, r)| (i as i64 * 10, portable::dot(r, &q)))
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
        assert_eq!(set.top_k_int8(&q, 5, 100, Some(even)), filtered);

        let drop: HashSet<i64> = got.iter().take(3).map(|x| x.0).collect();
        set.remove(&drop);
        assert_eq!(set.len(), n - 3);
        let again = set.top_k(&q, 7, None);
        assert_eq!(
            again.iter().map(|x| x.0).collect::<Vec<_>>(),
            got[3..].iter().map(|x| x.0).collect::<Vec<_>>()
        );
        assert!(!set.push(1, 0, &[1.0]));

        // The int8 copy stayed in step with the removal.
        let approx = set.search(VectorScan::Int8, &q, 10, None);
        let exact = set.search(VectorScan::Exact, &q, 10, None);
        assert_eq!(approx, exact);
    }

    #[test]
    fn blob_push_equals_slice_push() {
        let mut rnd = rng(11);
        let v: Vec<f32> = (0..16).map(|_| rnd()).collect();
        let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let mut a = VectorSet::new(16);
        let mut b = VectorSet::new(16);
        assert!(a.push(1, 0, &v));
        assert!(b.push_le_bytes(1, 0, &blob));
        assert_eq!(
            (a.data(), &a.codes, &a.scales),
            (b.data(), &b.codes, &b.scales)
        );
        assert!(!b.push_le_bytes(2, 0, &blob[..60]));
        let mut bytes = Vec::new();
        a.write_to(&mut bytes).unwrap();
        assert_eq!(bytes.len(), VectorSet::encoded_len(16, 1, true));
        let c = VectorSet::from_bytes(16, 1, true, &bytes).unwrap();
        assert_eq!(
            (
                c.ids.as_slice(),
                c.sources.as_slice(),
                c.data(),
                &c.codes,
                &c.scales
            ),
            (
                a.ids.as_slice(),
                a.sources.as_slice(),
                a.data(),
                &a.codes,
                &a.scales
            )
        );
        assert!(VectorSet::from_bytes(16, 2, true, &bytes).is_none());
        assert!(VectorSet::from_bytes(16, 1, true, &bytes[1..]).is_none());
        assert_eq!(b.len(), 1);
        assert!(a.memory_bytes() > 16 * 5);
    }

    /// A set without its f32 rows holds the same codes, round-trips through
    /// the cache layout without them, and returns the same int8 pool as the
    /// full set, scored on the cosine scale.
    #[test]
    fn a_codes_only_set_returns_the_int8_pool() {
        let d = 32;
        let mut rnd = rng(5);
        let mut full = VectorSet::new(d);
        let mut lean = VectorSet::codes_only(d, 0);
        for i in 0..400 {
            let v = unit((0..d).map(|_| rnd()).collect());
            let blob: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            full.push(i, 0, &v);
            lean.push_le_bytes(i, 0, &blob);
        }
        assert!(!lean.has_exact_rows() && lean.data().is_empty());
        assert_eq!((&full.codes, &full.scales), (&lean.codes, &lean.scales));
        assert!(lean.memory_bytes() * 4 < full.memory_bytes() * 2);
        let mut bytes = Vec::new();
        lean.write_to(&mut bytes).unwrap();
        assert_eq!(bytes.len(), VectorSet::encoded_len(d, 400, false));
        let back = VectorSet::from_bytes(d, 400, false, &bytes).unwrap();
        assert_eq!(back.checksum(), lean.checksum());
        let q = unit((0..d).map(|_| rnd()).collect());
        let pool = lean.search(VectorScan::Int8, &q, 10, None);
        assert_eq!(pool.len(), rerank_pool(10));
        // Re-scored exactly, the pool's best ten are the full set's.
        let mut rescored: Vec<(i64, f32)> = pool
            .iter()
            .map(|(id, approx)| {
                let exact = full
                    .top_k(&q, 400, None)
                    .into_iter()
                    .find(|x| x.0 == *id)
                    .unwrap()
                    .1;
                assert!((approx - exact).abs() < 0.05, "{approx} vs {exact}");
                (*id, exact)
            })
            .collect();
        rescored.sort_by(|a, b| b.1.total_cmp(&a.1));
        rescored.truncate(10);
        assert_eq!(rescored, full.search(VectorScan::Int8, &q, 10, None));
        lean.remove(&[3, 4].into());
        assert_eq!(lean.len(), 398);
        assert!(!VectorSet::sized_for(384, 1_000_000).has_exact_rows());
        assert!(VectorSet::sized_for(384, 10_000).has_exact_rows());
    }

    /// A codes-only set past the first pass's pool narrows with its 4-bit
    /// copy, and its pool, re-scored exactly, gives the full set's top 10;
    /// any change to the rows drops the copy, and the scan then scores
    /// every row in int8 (the same pool as `FullInt8`).
    #[test]
    fn the_first_pass_keeps_the_top_rows() {
        let d = 96;
        let n = first_pass_pool(rerank_pool(10)) * 3;
        let mut rnd = rng(21);
        let mut full = VectorSet::with_capacity(d, n);
        let mut lean = VectorSet::codes_only(d, n);
        for i in 0..n {
            // A few dominant dimensions shared by every row, as in the
            // hash embedder's vectors, where per-row codes failed.
            let mut v: Vec<f32> = (0..d).map(|_| rnd() * 0.2).collect();
            v[3] += 2.0;
            v[40] -= 1.5;
            let v = unit(v);
            full.push(i as i64, (i % 2) as u8, &v);
            lean.push(i as i64, (i % 2) as u8, &v);
        }
        assert!(!lean.has_first_pass());
        lean.finish_loading();
        assert!(lean.has_first_pass());
        assert!(lean.memory_bytes() > full.memory_bytes() / 5 + n * d / 2);
        let rescore = |pool: Vec<(i64, f32)>, q: &[f32]| {
            let mut exact: Vec<(i64, f32)> = pool
                .into_iter()
                .map(|(id, _)| {
                    let r = id as usize;
                    (id, dot(&full.data()[r * d..(r + 1) * d], q))
                })
                .collect();
            exact.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            exact.truncate(10);
            exact
        };
        let odd: &(dyn Fn(u8) -> bool + Sync) = &|s| s == 1;
        let (mut hit, queries) = (0, 40);
        for i in 0..queries {
            let q = unit((0..d).map(|_| rnd()).collect());
            let allow = if i % 4 == 0 { Some(odd) } else { None };
            let want = full.search(VectorScan::Exact, &q, 10, allow);
            let pool = lean.search(VectorScan::Int8, &q, 10, allow);
            assert_eq!(pool.len(), rerank_pool(10));
            if let Some(f) = allow {
                assert!(pool.iter().all(|(id, _)| f((*id % 2) as u8)));
            }
            let got = rescore(pool, &q);
            hit += got
                .iter()
                .filter(|g| want.iter().any(|w| w.0 == g.0))
                .count();
        }
        let recall = hit as f64 / (queries * 10) as f64;
        assert!(recall >= 0.98, "recall@10 = {recall}");

        let q = unit((0..d).map(|_| rnd()).collect());
        let everything = lean.search(VectorScan::FullInt8, &q, 10, None);
        lean.remove(&[0].into());
        assert!(!lean.has_first_pass());
        let after: Vec<(i64, f32)> = lean.search(VectorScan::Int8, &q, 10, None);
        let before: Vec<(i64, f32)> = everything.into_iter().filter(|x| x.0 != 0).collect();
        assert_eq!(after[..10], before[..10]);
    }

    #[test]
    fn int8_recall_on_random_vectors() {
        // Small enough for an unoptimised test build; the benchmark checks
        // 100,000 rows.
        let d = 384;
        let n = 5_000;
        let mut rnd = rng(5);
        let mut set = VectorSet::with_capacity(d, n);
        for i in 0..n {
            set.push(i as i64, 0, &unit((0..d).map(|_| rnd()).collect()));
        }
        let (mut hit, queries) = (0, 100);
        for _ in 0..queries {
            let q = unit((0..d).map(|_| rnd()).collect());
            let exact = set.search(VectorScan::Exact, &q, 10, None);
            let approx = set.search(VectorScan::Int8, &q, 10, None);
            hit += approx
                .iter()
                .filter(|a| exact.iter().any(|e| e.0 == a.0))
                .count();
        }
        let recall = hit as f64 / (queries * 10) as f64;
        assert!(recall >= 0.99, "recall@10 = {recall}");
    }
}
