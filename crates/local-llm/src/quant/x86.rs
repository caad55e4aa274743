//! The x86-64 kernels, written once and compiled twice: for AVX2 (every
//! x86-64 CPU since Haswell / Zen 1) and for AVX-512 VNNI (Ice Lake, Zen 4
//! and later), which fuses each multiply-add with its accumulation.
//!
//! The two differ only in [`avx2::dot_acc`], [`avx2::nibble_acc`],
//! [`avx2::nibble_weigh`], [`avx2::madd16_acc`] and their VNNI twins, the
//! integer multiply-accumulate steps: `vpmaddubsw` then `vpmaddwd` then
//! `vpaddd` on AVX2 (or sums kept in 16 bits over the few steps where they
//! cannot overflow), one `vpdpbusd` or `vpdpwssd` with VNNI; and in how many
//! tokens a grouped kernel takes at once (the registers it has). The integers are exact either way (no pair can
//! saturate: see each kernel), so both give the same bits as the portable
//! loops.
//!
//! Q4_K and Q6_K (the bulk of a K-quant model) run on the grouped layout
//! ([`crate::quant::grouped`]); Q8_0 and Q4_1 on rows, one token at a time
//! or in tiles of [`TILE`] tokens.

/// The kernels over `dot_acc`, `nibble_acc`, `nibble_weigh`, `madd16_acc`,
/// `Q4K_TOKENS` and `Q6K_TOKENS` as the invoking module defines them, every
/// function compiled for `$features`.
macro_rules! kernels {
    ($features:literal) => {
        use std::arch::x86_64::*;

        use crate::quant::{grouped, q4_1_combine, ActRow, Acts, Format, QK, QK_K, TILE};

        /// Rows of weights kept hot while every tile of tokens passes over
        /// them: 16 Q4_1 rows of 2,048 columns are 20 KB (L1).
        const ROW_BLOCK: usize = 16;

        /// # Safety
        /// The CPU has the module's features; `format` is Q8_0 or Q4_1;
        /// `rows` is whole rows of `row_bytes` in `format` for inputs of
        /// `acts.k` values, and `out` holds `rows × acts.rows`.
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn product_rows(
            format: Format,
            rows: &[u8],
            row_bytes: usize,
            acts: &Acts,
            out: &mut [f32],
        ) {
            let t = acts.rows;
            let n_rows = rows.len() / row_bytes;
            let nb = acts.k / acts.kind.block();
            let spb = acts.kind.sums_per_block();
            // A batch of tokens goes through the tile kernels: a block of rows,
            // then each tile of TILE tokens over those rows, so the rows are
            // read from cache and each decoded weight is used TILE times. The
            // tile kernels sum the same integers and combine them with the
            // same float operations in the same order as the one-token ones:
            // a token's outputs do not depend on the batch it came in.
            let tiled = if t >= TILE { t - t % TILE } else { 0 };
            for rb in (0..n_rows).step_by(ROW_BLOCK) {
                let re = (rb + ROW_BLOCK).min(n_rows);
                for tok in (0..tiled).step_by(TILE) {
                    // The tile's packed activations (see `Acts::tile_qs`).
                    let a = Tile {
                        qs: &acts.tile_qs[tok * acts.k..(tok + TILE) * acts.k],
                        d: &acts.tile_d[tok * nb..(tok + TILE) * nb],
                        sums: &acts.tile_sums[tok * nb * spb..(tok + TILE) * nb * spb],
                    };
                    for r in rb..re {
                        let row = &rows[r * row_bytes..(r + 1) * row_bytes];
                        let o = &mut out[r * t + tok..r * t + tok + TILE];
                        // SAFETY: as the caller promised; `a` is whole blocks
                        // of TILE tokens for the row's blocks, `o` TILE floats.
                        unsafe {
                            let v = match format {
                                Format::Q8_0 => tile_q8_0(row, a),
                                _ => tile_q4_1(row, a),
                            };
                            _mm256_storeu_ps(o.as_mut_ptr(), v);
                        }
                    }
                }
                for r in rb..re {
                    let row = &rows[r * row_bytes..(r + 1) * row_bytes];
                    for tok in tiled..t {
                        let a = acts.row(tok);
                        // SAFETY: as the caller promised.
                        out[r * t + tok] = unsafe {
                            match format {
                                Format::Q8_0 => dot_q8_0(row, a),
                                _ => dot_q4_1(row, a),
                            }
                        };
                    }
                }
            }
        }

        /// Grouped Q4_K or Q6_K rows (`data`: whole groups of
        /// [`grouped::ROWS`] rows of `row_bytes`, the first `rows` of them
        /// wanted) times every activation row: row `r`'s result for token
        /// `tok` goes to `out[tok * stride + r]`, eight rows with one
        /// store. Tokens go [`Q4K_TOKENS`] or [`Q6K_TOKENS`] at a time, then
        /// one by one: a token's results do not depend on the batch it came
        /// in.
        ///
        /// # Safety
        /// The CPU has the module's features; `data` is in the grouped
        /// layout for inputs of `acts.k` values; `out` has a cell at
        /// `tok * stride + r` for every token and every row below `rows`.
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn product_groups(
            format: Format,
            data: &[u8],
            row_bytes: usize,
            rows: usize,
            stride: usize,
            acts: &Acts,
            out: *mut f32,
        ) {
            let t = acts.rows;
            let n = match format {
                Format::Q6K => Q6K_TOKENS,
                _ => Q4K_TOKENS,
            };
            let tiled = t - t % n;
            for (g, grp) in data.chunks_exact(grouped::ROWS * row_bytes).enumerate() {
                let r0 = g * grouped::ROWS;
                let valid = rows.saturating_sub(r0).min(grouped::ROWS);
                // SAFETY (the stores): as the caller promised; every token
                // is below `t`, and only rows below `rows` are written.
                let put = |tok: usize, v: &[__m256]| {
                    for (i, v) in v.iter().enumerate() {
                        let at = unsafe { out.add((tok + i) * stride + r0) };
                        if valid == grouped::ROWS {
                            unsafe { _mm256_storeu_ps(at, *v) };
                        } else {
                            // The padding rows of a matrix's last group.
                            let mut lanes = [0f32; grouped::ROWS];
                            unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), *v) };
                            for (r, x) in lanes.iter().take(valid).enumerate() {
                                unsafe { at.add(r).write(*x) };
                            }
                        }
                    }
                };
                // SAFETY (the kernels): as the caller promised.
                for tok in (0..tiled).step_by(n) {
                    match format {
                        Format::Q6K => {
                            put(tok, &unsafe { group_q6k::<Q6K_TOKENS>(grp, acts, tok) })
                        }
                        _ => put(tok, &unsafe { group_q4k::<Q4K_TOKENS>(grp, acts, tok) }),
                    }
                }
                for tok in tiled..t {
                    match format {
                        Format::Q6K => put(tok, &unsafe { group_q6k::<1>(grp, acts, tok) }),
                        _ => put(tok, &unsafe { group_q4k::<1>(grp, acts, tok) }),
                    }
                }
            }
        }

        /// One group of eight grouped Q4_K rows times activation rows
        /// `tok .. tok + N`: each token's eight results in one vector. Lane
        /// `r` sums row `r`'s products: a broadcast of four activations
        /// meets four values of all eight rows in one multiply-add, the
        /// sums per 32 are weighted by each row's scale (`nibble_weigh`),
        /// the minimums meet the activations' sums per 32 in pairs. The
        /// integers are [`crate::quant::dot_q4k`]'s and the floats are
        /// combined in its order: the same bits.
        ///
        /// # Safety
        /// The CPU has the module's features; `grp` is one whole group for
        /// inputs of `acts.k` values; tokens `tok .. tok + N` exist.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn group_q4k<const N: usize>(grp: &[u8], acts: &Acts, tok: usize) -> [__m256; N] {
            let k = acts.k;
            let nb = k / QK_K;
            let mask = _mm256_set1_epi8(0x0f);
            let (k1, k2, k3) = (
                _mm256_set1_epi32(0x3f3f_3f3f),
                _mm256_set1_epi32(0x0f0f_0f0f),
                _mm256_set1_epi32(0x0303_0303),
            );
            // `vpshufb` picks within each 128 bits: dword p's bytes are
            // 4p .. 4p + 4 there; a pick of 0x80 or more gives zero.
            let lane = _mm256_setr_epi8(
                0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0, 0, 0, 0, 4, 4, 4, 4, 8, 8,
                8, 8, 12, 12, 12, 12,
            );
            let pick = |p: u32| _mm256_add_epi8(_mm256_set1_epi32(p as i32), lane);
            // Byte j of each dword, widened to 32 bits: a scale.
            let scale: [__m256i; 4] = std::array::from_fn(|j| pick(0x8080_8000 | j as u32));
            // Bytes 2i and 2i + 1 of each dword, each widened to 16 bits: two
            // minimums, a pair for `vpdpwssd`.
            let pair: [__m256i; 2] = std::array::from_fn(|i| {
                pick(0x8000_8000 | (2 * i as u32) | ((2 * i as u32 + 1) << 16))
            });
            // SAFETY (this function's reads): `grp` holds `nb` blocks of
            // `8 × 144` bytes; each token has `k` values, `nb` scales
            // and `8 nb` sums per 32.
            let qs = |i: usize| unsafe { acts.qs.as_ptr().add((tok + i) * k) };
            let mut acc = [_mm256_setzero_ps(); N];
            for b in 0..nb {
                let blk = unsafe { grp.as_ptr().add(b * grouped::ROWS * 144) };
                let word = |i: usize| unsafe {
                    _mm256_loadu_si256(blk.add(grouped::Q4K_WORDS + 32 * i).cast())
                };
                let (w0, w1, w2) = (word(0), word(1), word(2));
                // ggml's unpacking, a row per lane: bytes of u0, u1 are the
                // eight scales, of u2, u3 the eight minimums.
                let u0 = _mm256_and_si256(w0, k1);
                let u1 = _mm256_or_si256(
                    _mm256_and_si256(w2, k2),
                    _mm256_slli_epi32::<4>(_mm256_and_si256(_mm256_srli_epi32::<6>(w0), k3)),
                );
                let u2 = _mm256_and_si256(w1, k1);
                let u3 = _mm256_or_si256(
                    _mm256_and_si256(_mm256_srli_epi32::<4>(w2), k2),
                    _mm256_slli_epi32::<4>(_mm256_and_si256(_mm256_srli_epi32::<6>(w1), k3)),
                );
                let mut isum = [_mm256_setzero_si256(); N];
                for c in 0..4 {
                    let u = if c < 2 { u0 } else { u1 };
                    let s_lo = _mm256_shuffle_epi8(u, scale[(2 * c) % 4]);
                    let s_hi = _mm256_shuffle_epi8(u, scale[(2 * c + 1) % 4]);
                    let mut s0 = [_mm256_setzero_si256(); N];
                    let mut s1 = [_mm256_setzero_si256(); N];
                    // Eight steps: what `nibble_acc` may take.
                    for g in 0..8 {
                        let q = unsafe {
                            _mm256_loadu_si256(blk.add(grouped::Q4K_QS + 256 * c + 32 * g).cast())
                        };
                        let lo = _mm256_and_si256(q, mask);
                        let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(q), mask);
                        for i in 0..N {
                            let (y0, y1) = unsafe {
                                let y = qs(i).add(QK_K * b + 64 * c + 4 * g);
                                (
                                    _mm256_set1_epi32(y.cast::<i32>().read_unaligned()),
                                    _mm256_set1_epi32(y.add(32).cast::<i32>().read_unaligned()),
                                )
                            };
                            s0[i] = nibble_acc(s0[i], lo, y0);
                            s1[i] = nibble_acc(s1[i], hi, y1);
                        }
                    }
                    for i in 0..N {
                        let both =
                            _mm256_add_epi32(nibble_weigh(s0[i], s_lo), nibble_weigh(s1[i], s_hi));
                        isum[i] = _mm256_add_epi32(isum[i], both);
                    }
                }
                let mins = [
                    _mm256_shuffle_epi8(u2, pair[0]),
                    _mm256_shuffle_epi8(u2, pair[1]),
                    _mm256_shuffle_epi8(u3, pair[0]),
                    _mm256_shuffle_epi8(u3, pair[1]),
                ];
                let (d, dmin) = unsafe {
                    (
                        _mm256_cvtph_ps(_mm_loadu_si128(blk.add(grouped::Q4K_D).cast())),
                        _mm256_cvtph_ps(_mm_loadu_si128(blk.add(grouped::Q4K_DMIN).cast())),
                    )
                };
                for i in 0..N {
                    let at = (tok + i) * nb + b;
                    let (imin, ad) = unsafe {
                        (
                            pair_sums(&mins, acts.sums32.as_ptr().add(8 * at)),
                            _mm256_set1_ps(*acts.d.as_ptr().add(at)),
                        )
                    };
                    // q4k_combine, lane by lane.
                    let part = _mm256_mul_ps(
                        ad,
                        _mm256_sub_ps(
                            _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum[i])),
                            _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(imin)),
                        ),
                    );
                    acc[i] = _mm256_add_ps(acc[i], part);
                }
            }
            acc
        }

        /// Per 32-bit lane, the sum over `p` of the two 16-bit halves of
        /// `pairs[p]` times a token's `sums[2p]` and `sums[2p + 1]`: a
        /// grouped row's minimums (Q4_K) or scales (Q6_K) against the
        /// activations' sums.
        ///
        /// # Safety
        /// The CPU has the module's features; `sums` has `2P` values.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn pair_sums<const P: usize>(pairs: &[__m256i; P], sums: *const i16) -> __m256i {
            let mut acc = _mm256_setzero_si256();
            for (p, pair) in pairs.iter().enumerate() {
                // SAFETY: as the caller promised.
                let s = unsafe { sums.add(2 * p).cast::<i32>().read_unaligned() };
                acc = madd16_acc(acc, *pair, _mm256_set1_epi32(s));
            }
            acc
        }

        /// [`group_q4k`] for grouped Q6_K rows: each four values of the
        /// eight rows are put together from their low and high bits once
        /// and meet every token; the sums per 16 are weighted by each row's
        /// scale, and the stored +32 comes back out through the scales (in
        /// pairs) times the activations' sums per 16. The integers are
        /// [`crate::quant::dot_q6k`]'s and the floats its order: the same
        /// bits.
        ///
        /// # Safety
        /// As [`group_q4k`].
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn group_q6k<const N: usize>(grp: &[u8], acts: &Acts, tok: usize) -> [__m256; N] {
            let k = acts.k;
            let nb = k / QK_K;
            let m4 = _mm256_set1_epi8(0x0f);
            // SAFETY (this function's reads): `grp` holds `nb` blocks of
            // `8 × 210` bytes; each token has `k` values, `nb` scales and
            // `16 nb` sums per 16.
            let qs = |i: usize| unsafe { acts.qs.as_ptr().add((tok + i) * k) };
            let mut acc = [_mm256_setzero_ps(); N];
            for b in 0..nb {
                let blk = unsafe { grp.as_ptr().add(b * grouped::ROWS * 210) };
                // Scale j of the eight rows, widened to 32 bits.
                let scale = |j: usize| unsafe {
                    _mm256_cvtepi8_epi32(_mm_loadl_epi64(blk.add(grouped::Q6K_SC + 8 * j).cast()))
                };
                let mut isum = [_mm256_setzero_si256(); N];
                let bits = |m: u8| _mm256_set1_epi8(m as i8);
                for h in 0..2 {
                    for gh in 0..2 {
                        // Sums of values 128h + 32v + 16gh .. + 16 (sub-block
                        // 8h + 2v + gh) for v in 0..4.
                        let mut s = [[_mm256_setzero_si256(); N]; 4];
                        for g in 4 * gh..4 * gh + 4 {
                            let (ql0, ql1, qh) = unsafe {
                                let at = blk.add(grouped::Q6K_Q + 96 * (8 * h + g));
                                (
                                    _mm256_loadu_si256(at.cast()),
                                    _mm256_loadu_si256(at.add(32).cast()),
                                    _mm256_loadu_si256(at.add(64).cast()),
                                )
                            };
                            // The low nibbles, each value's two high bits
                            // moved to bits 4, 5.
                            let val = [
                                _mm256_or_si256(
                                    _mm256_and_si256(ql0, m4),
                                    _mm256_slli_epi16::<4>(_mm256_and_si256(qh, bits(0x03))),
                                ),
                                _mm256_or_si256(
                                    _mm256_and_si256(ql1, m4),
                                    _mm256_slli_epi16::<2>(_mm256_and_si256(qh, bits(0x0c))),
                                ),
                                _mm256_or_si256(
                                    _mm256_and_si256(_mm256_srli_epi16::<4>(ql0), m4),
                                    _mm256_and_si256(qh, bits(0x30)),
                                ),
                                _mm256_or_si256(
                                    _mm256_and_si256(_mm256_srli_epi16::<4>(ql1), m4),
                                    _mm256_srli_epi16::<2>(_mm256_and_si256(qh, bits(0xc0))),
                                ),
                            ];
                            for i in 0..N {
                                let y = unsafe { qs(i).add(QK_K * b + 128 * h + 4 * g) };
                                for (v, s) in s.iter_mut().enumerate() {
                                    let y = unsafe { y.add(32 * v).cast::<i32>().read_unaligned() };
                                    s[i] = dot_acc(s[i], val[v], _mm256_set1_epi32(y));
                                }
                            }
                        }
                        for (v, s) in s.iter().enumerate() {
                            let sc = scale(8 * h + 2 * v + gh);
                            for i in 0..N {
                                isum[i] = _mm256_add_epi32(isum[i], _mm256_mullo_epi32(s[i], sc));
                            }
                        }
                    }
                }
                // Scales 2p and 2p + 1 as the two 16-bit halves of a lane.
                let low16 = _mm256_set1_epi32(0xffff);
                let pairs: [__m256i; 8] = std::array::from_fn(|p| {
                    _mm256_or_si256(
                        _mm256_and_si256(scale(2 * p), low16),
                        _mm256_slli_epi32::<16>(scale(2 * p + 1)),
                    )
                });
                let d = unsafe { _mm256_cvtph_ps(_mm_loadu_si128(blk.add(grouped::Q6K_D).cast())) };
                for i in 0..N {
                    let at = (tok + i) * nb + b;
                    let (off, ad) = unsafe {
                        (
                            pair_sums(&pairs, acts.sums.as_ptr().add(16 * at)),
                            _mm256_set1_ps(*acts.d.as_ptr().add(at)),
                        )
                    };
                    let isum = _mm256_sub_epi32(isum[i], _mm256_slli_epi32::<5>(off));
                    let part = _mm256_mul_ps(ad, _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum)));
                    acc[i] = _mm256_add_ps(acc[i], part);
                }
            }
            acc
        }

        /// A tile's packed activations: `[block][token][values]` and the
        /// matching scales and sums.
        #[derive(Clone, Copy)]
        struct Tile<'a> {
            qs: &'a [i8],
            d: &'a [f32],
            sums: &'a [i16],
        }

        /// The horizontal sum of each of a tile's accumulators, in token
        /// order (exact: integers).
        #[inline]
        #[target_feature(enable = $features)]
        fn hsum_tile(s: &[__m256i; TILE]) -> __m256i {
            let h0 =
                _mm256_hadd_epi32(_mm256_hadd_epi32(s[0], s[1]), _mm256_hadd_epi32(s[2], s[3]));
            let h1 =
                _mm256_hadd_epi32(_mm256_hadd_epi32(s[4], s[5]), _mm256_hadd_epi32(s[6], s[7]));
            _mm256_add_epi32(
                _mm256_permute2x128_si256::<0x20>(h0, h1),
                _mm256_permute2x128_si256::<0x31>(h0, h1),
            )
        }

        #[inline]
        #[target_feature(enable = $features)]
        fn hsum128(s: __m128i) -> i32 {
            let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01_00_11_10>(s));
            let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b10_11_00_01>(s));
            _mm_cvtsi128_si32(s)
        }

        #[inline]
        #[target_feature(enable = $features)]
        fn hsum(v: __m256i) -> i32 {
            hsum128(_mm_add_epi32(
                _mm256_castsi256_si128(v),
                _mm256_extracti128_si256::<1>(v),
            ))
        }

        /// The half float at `p` (exact, as the portable conversion).
        ///
        /// # Safety
        /// F16C; `p` has two readable bytes.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn f16_at(p: *const u8) -> f32 {
            // SAFETY: as the caller promised.
            let h = unsafe { p.cast::<u16>().read_unaligned() };
            _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(h))))
        }

        /// Same sums as [`crate::quant::dot_q8_0`]: `vpmaddubsw` wants one unsigned
        /// side, so the weights' signs move onto the activations (pairs at most
        /// 2 × 128 × 127).
        ///
        /// # Safety
        /// AVX2 and F16C; `row` whole Q8_0 blocks for `a`.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn dot_q8_0(row: &[u8], a: ActRow<'_>) -> f32 {
            let mut acc = 0f32;
            for (b, blk) in row.chunks_exact(34).enumerate() {
                let y = &a.qs[b * QK..(b + 1) * QK];
                // SAFETY: `blk` is 34 bytes (32 after the scale), `y` 32 values.
                let (w, y, d) = unsafe {
                    (
                        _mm256_loadu_si256(blk.as_ptr().add(2).cast()),
                        _mm256_loadu_si256(y.as_ptr().cast()),
                        f16_at(blk.as_ptr()),
                    )
                };
                let isum = hsum(dot_acc(
                    _mm256_setzero_si256(),
                    _mm256_sign_epi8(w, w),
                    _mm256_sign_epi8(y, w),
                ));
                acc += a.d[b] * (d * isum as f32);
            }
            acc
        }

        /// Same sums as [`crate::quant::dot_q4_1`].
        ///
        /// # Safety
        /// AVX2 and F16C; `row` whole Q4_1 blocks for `a`.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn dot_q4_1(row: &[u8], a: ActRow<'_>) -> f32 {
            let mask = _mm_set1_epi8(0x0f);
            let mut acc = 0f32;
            for (b, blk) in row.chunks_exact(20).enumerate() {
                let y = &a.qs[b * QK..(b + 1) * QK];
                // SAFETY: `blk` is 20 bytes (d, m, then 16), `y` 32 values.
                let (q, y, d, m) = unsafe {
                    (
                        _mm_loadu_si128(blk.as_ptr().add(4).cast()),
                        _mm256_loadu_si256(y.as_ptr().cast()),
                        f16_at(blk.as_ptr()),
                        f16_at(blk.as_ptr().add(2)),
                    )
                };
                let w = _mm256_set_m128i(
                    _mm_and_si128(_mm_srli_epi16::<4>(q), mask),
                    _mm_and_si128(q, mask),
                );
                let isum = hsum(dot_acc(_mm256_setzero_si256(), w, y));
                acc += q4_1_combine(a.d[b], d, m, isum, a.sums[b]);
            }
            acc
        }
        /// [`dot_q8_0`] for a tile of tokens.
        ///
        /// # Safety
        /// AVX2 and F16C; `row` whole Q8_0 blocks for the tile `a`.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn tile_q8_0(row: &[u8], a: Tile<'_>) -> __m256 {
            let mut acc = _mm256_setzero_ps();
            for (b, blk) in row.chunks_exact(34).enumerate() {
                // SAFETY: `blk` is 34 bytes (the scale, then 32 values); the
                // tile holds TILE × 32 values and TILE scales per block.
                let (w, d, y, ad) = unsafe {
                    (
                        _mm256_loadu_si256(blk.as_ptr().add(2).cast()),
                        f16_at(blk.as_ptr()),
                        a.qs.as_ptr().add(b * TILE * QK),
                        _mm256_loadu_ps(a.d.as_ptr().add(b * TILE)),
                    )
                };
                let aw = _mm256_sign_epi8(w, w);
                let sum: [__m256i; TILE] = std::array::from_fn(|i| {
                    // SAFETY: token i's 32 values.
                    let y = unsafe { _mm256_loadu_si256(y.add(QK * i).cast()) };
                    dot_acc(_mm256_setzero_si256(), aw, _mm256_sign_epi8(y, w))
                });
                let isum = _mm256_cvtepi32_ps(hsum_tile(&sum));
                let part = _mm256_mul_ps(ad, _mm256_mul_ps(_mm256_set1_ps(d), isum));
                acc = _mm256_add_ps(acc, part);
            }
            acc
        }

        /// [`dot_q4_1`] for a tile of tokens.
        ///
        /// # Safety
        /// AVX2 and F16C; `row` whole Q4_1 blocks for the tile `a`.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn tile_q4_1(row: &[u8], a: Tile<'_>) -> __m256 {
            let mask = _mm_set1_epi8(0x0f);
            let mut acc = _mm256_setzero_ps();
            for (b, blk) in row.chunks_exact(20).enumerate() {
                // SAFETY: `blk` is 20 bytes (d, m, then 16); the tile holds
                // TILE × 32 values, TILE scales and TILE sums per block.
                let (q, d, m, y, ad, asum) = unsafe {
                    (
                        _mm_loadu_si128(blk.as_ptr().add(4).cast()),
                        f16_at(blk.as_ptr()),
                        f16_at(blk.as_ptr().add(2)),
                        a.qs.as_ptr().add(b * TILE * QK),
                        _mm256_loadu_ps(a.d.as_ptr().add(b * TILE)),
                        _mm_loadu_si128(a.sums.as_ptr().add(b * TILE).cast()),
                    )
                };
                let w = _mm256_set_m128i(
                    _mm_and_si128(_mm_srli_epi16::<4>(q), mask),
                    _mm_and_si128(q, mask),
                );
                let sum: [__m256i; TILE] = std::array::from_fn(|i| {
                    // SAFETY: token i's 32 values.
                    let y = unsafe { _mm256_loadu_si256(y.add(QK * i).cast()) };
                    dot_acc(_mm256_setzero_si256(), w, y)
                });
                let isum = _mm256_cvtepi32_ps(hsum_tile(&sum));
                let asum = _mm256_cvtepi32_ps(_mm256_cvtepi16_epi32(asum));
                // q4_1_combine, lane by lane.
                let part = _mm256_mul_ps(
                    ad,
                    _mm256_add_ps(
                        _mm256_mul_ps(_mm256_set1_ps(d), isum),
                        _mm256_mul_ps(_mm256_set1_ps(m), asum),
                    ),
                );
                acc = _mm256_add_ps(acc, part);
            }
            acc
        }
    };
}

/// AVX2 and F16C.
pub(super) mod avx2 {
    kernels!("avx2,f16c");

    /// `acc` plus, in each 32-bit lane, the four products of unsigned
    /// bytes `u` and signed bytes `s`.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn dot_acc(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        let p = _mm256_maddubs_epi16(u, s);
        _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)))
    }

    /// `acc` plus the products of unsigned 4-bit values `u` (at most 15)
    /// and signed bytes `s`, kept as sums of pairs in 16-bit lanes: each
    /// step adds at most 2 × 15 × 127 = 3,810 to a lane, so eight steps
    /// from zero stay exact. [`nibble_weigh`] finishes the sums.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn nibble_acc(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        _mm256_add_epi16(acc, _mm256_maddubs_epi16(u, s))
    }

    /// The sums of [`nibble_acc`] per 32-bit lane, times `scale` (a
    /// 32-bit lane each, below 2^15): one `vpmaddwd` against the scale in
    /// both halves of the lane.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn nibble_weigh(acc: __m256i, scale: __m256i) -> __m256i {
        _mm256_madd_epi16(acc, _mm256_or_si256(scale, _mm256_slli_epi32::<16>(scale)))
    }

    /// `acc` plus, in each 32-bit lane, the two products of its 16-bit
    /// halves in `a` and `b`.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn madd16_acc(acc: __m256i, a: __m256i, b: __m256i) -> __m256i {
        _mm256_add_epi32(acc, _mm256_madd_epi16(a, b))
    }

    /// Tokens [`product_groups`] takes at once for Q4_K: with sixteen
    /// registers, four tokens' two sums each, and the decoded weights.
    pub(crate) const Q4K_TOKENS: usize = 4;
    /// The same for Q6_K: two tokens' four sums each.
    pub(crate) const Q6K_TOKENS: usize = 2;
}

/// AVX2, F16C and AVX-512 VNNI on 256-bit vectors (AVX-512 VL).
pub(super) mod vnni {
    kernels!("avx2,f16c,avx512vnni,avx512vl");

    /// [`super::avx2::dot_acc`] in one `vpdpbusd`.
    #[inline]
    #[target_feature(enable = "avx2,avx512vnni,avx512vl")]
    pub(crate) fn dot_acc(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        _mm256_dpbusd_epi32(acc, u, s)
    }

    /// [`super::avx2::nibble_acc`]: the sums of four in 32-bit lanes
    /// (`vpdpbusd`), for any number of steps.
    #[inline]
    #[target_feature(enable = "avx2,avx512vnni,avx512vl")]
    pub(crate) fn nibble_acc(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        _mm256_dpbusd_epi32(acc, u, s)
    }

    /// [`super::avx2::nibble_weigh`]: the 32-bit sums times the scale
    /// (`vpmulld`).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn nibble_weigh(acc: __m256i, scale: __m256i) -> __m256i {
        _mm256_mullo_epi32(acc, scale)
    }

    /// [`super::avx2::madd16_acc`] in one `vpdpwssd`.
    #[inline]
    #[target_feature(enable = "avx2,avx512vnni,avx512vl")]
    pub(crate) fn madd16_acc(acc: __m256i, a: __m256i, b: __m256i) -> __m256i {
        _mm256_dpwssd_epi32(acc, a, b)
    }

    /// Tokens [`product_groups`] takes at once for Q4_K: AVX-512 has 32
    /// registers for eight tokens' two sums each.
    pub(crate) const Q4K_TOKENS: usize = 8;
    /// The same for Q6_K: four tokens' four sums each.
    pub(crate) const Q6K_TOKENS: usize = 4;
}
