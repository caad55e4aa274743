//! The x86-64 kernels, written once and compiled twice: for AVX2 (every
//! x86-64 CPU since Haswell / Zen 1) and for AVX-512 VNNI (Ice Lake, Zen 4
//! and later), which fuses each multiply-add with its accumulation.
//!
//! The two differ only in [`avx2::madd2_acc`] / [`avx2::dot_acc`] and their
//! VNNI twins, the integer multiply-accumulate steps: `vpmaddubsw` then
//! `vpmaddwd` then `vpaddd` on AVX2; `vpdpbusd` (then, for weighted sums,
//! one `vpdpwssd` per two) with VNNI. The integers are exact either way (no pair can
//! saturate: see each kernel), so both give the same bits as the portable
//! loops.

/// The kernels over `scale_pair`, `madd2_acc` and `dot_acc` as the invoking module
/// defines them, every function compiled for `$features`.
macro_rules! kernels {
    ($features:literal) => {
        use std::arch::x86_64::*;

        use crate::quant::{
            grouped, q4_1_combine, q4k_combine, ActRow, Acts, Format, QK, QK_K, TILE,
        };

        /// Rows of weights kept hot while every tile of tokens passes over
        /// them: 16 Q4_K rows of 1,536 columns are 14 KB (L1), 16 Q6_K rows of
        /// 8,960 columns 118 KB (L2).
        const ROW_BLOCK: usize = 16;

        /// # Safety
        /// The CPU has AVX2 and F16C; `rows` is whole rows of `row_bytes` in
        /// `format` for inputs of `acts.k` values, and `out` holds
        /// `rows × acts.rows`.
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
                                Format::Q4K => tile_q4k(row, a),
                                Format::Q6K => tile_q6k(row, a),
                                Format::Q8_0 => tile_q8_0(row, a),
                                Format::Q4_1 => tile_q4_1(row, a),
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
                                Format::Q4K => dot_q4k(row, a),
                                Format::Q6K => dot_q6k(row, a),
                                Format::Q8_0 => dot_q8_0(row, a),
                                Format::Q4_1 => dot_q4_1(row, a),
                            }
                        };
                    }
                }
            }
        }

        /// Grouped Q4_K or Q6_K rows (`data`: whole groups of
        /// [`grouped::ROWS`] rows of `row_bytes`) times every activation
        /// row: row `r`'s result for token `tok` goes to
        /// `out[tok * stride + r]`, eight rows with one store. Tokens go
        /// [`Q4K_TOKENS`] or [`Q6K_TOKENS`] at a time, then one by one: a
        /// token's results do not depend on the batch it came in.
        ///
        /// # Safety
        /// The CPU has the module's features; `data` is in the grouped
        /// layout for inputs of `acts.k` values; `out` has a cell at
        /// `tok * stride + r` for every token and row of `data`.
        #[target_feature(enable = $features)]
        pub(crate) unsafe fn product_groups(
            format: Format,
            data: &[u8],
            row_bytes: usize,
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
                // SAFETY (the stores): as the caller promised; every token
                // is below `t`.
                let put = |tok: usize, v: &[__m256]| {
                    for (i, v) in v.iter().enumerate() {
                        unsafe {
                            _mm256_storeu_ps(out.add((tok + i) * stride + g * grouped::ROWS), *v)
                        };
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
        /// sums per 32 are weighted by each row's scale (`vpmulld`), the
        /// minimums meet the activations' sums per 32 in pairs. The
        /// integers are the one-row kernels' and the floats are combined in
        /// their order: the same bits.
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
                            s0[i] = dot_acc(s0[i], lo, y0);
                            s1[i] = dot_acc(s1[i], hi, y1);
                        }
                    }
                    for i in 0..N {
                        let both = _mm256_add_epi32(
                            _mm256_mullo_epi32(s0[i], s_lo),
                            _mm256_mullo_epi32(s1[i], s_hi),
                        );
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
                    let (s32, ad) = unsafe {
                        (
                            acts.sums32.as_ptr().add(8 * at),
                            _mm256_set1_ps(*acts.d.as_ptr().add(at)),
                        )
                    };
                    let mut imin = _mm256_setzero_si256();
                    for (p, m) in mins.iter().enumerate() {
                        let s = unsafe { s32.add(2 * p).cast::<i32>().read_unaligned() };
                        imin = madd16_acc(imin, *m, _mm256_set1_epi32(s));
                    }
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
                    let (s16, ad) = unsafe {
                        (
                            acts.sums.as_ptr().add(16 * at),
                            _mm256_set1_ps(*acts.d.as_ptr().add(at)),
                        )
                    };
                    let mut off = _mm256_setzero_si256();
                    for (p, pair) in pairs.iter().enumerate() {
                        let s = unsafe { s16.add(2 * p).cast::<i32>().read_unaligned() };
                        off = madd16_acc(off, *pair, _mm256_set1_epi32(s));
                    }
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

        /// The 6-bit values of a Q6_K half (`ql0`, `ql1`: its 64 bytes of
        /// low bits, `qh`: its 32 of high bits), in four groups of 32: the
        /// low nibbles with each value's two high bits moved to bits 4, 5.
        #[inline]
        #[target_feature(enable = $features)]
        fn q6k_values(ql0: __m256i, ql1: __m256i, qh: __m256i) -> [__m256i; 4] {
            let m4 = _mm256_set1_epi8(0x0f);
            let m2 = _mm256_set1_epi8(3);
            let h0 = _mm256_slli_epi16::<4>(_mm256_and_si256(qh, m2));
            let h1 = _mm256_slli_epi16::<2>(_mm256_and_si256(qh, _mm256_slli_epi16::<2>(m2)));
            let h2 = _mm256_and_si256(qh, _mm256_slli_epi16::<4>(m2));
            let h3 = _mm256_srli_epi16::<2>(_mm256_and_si256(qh, _mm256_slli_epi16::<6>(m2)));
            [
                _mm256_or_si256(_mm256_and_si256(ql0, m4), h0),
                _mm256_or_si256(_mm256_and_si256(ql1, m4), h1),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16::<4>(ql0), m4), h2),
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16::<4>(ql1), m4), h3),
            ]
        }

        /// The scales of value groups 0..4 of a Q6_K half (`s8`: the
        /// block's sixteen): group g's bytes 0..16 are sub-block
        /// 8 half + 2g, bytes 16..32 the next, each scale widened to 16 bits
        /// and repeated over its bytes' pairs.
        #[inline]
        #[target_feature(enable = $features)]
        fn q6k_scales(s8: __m128i, half: usize) -> [__m256i; 4] {
            std::array::from_fn(|g| {
                let j = (8 * half + 2 * g) as i64;
                let pick =
                    _mm_set_epi64x((j + 1) * 0x0101_0101_0101_0101, j * 0x0101_0101_0101_0101);
                _mm256_cvtepi8_epi16(_mm_shuffle_epi8(s8, pick))
            })
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

        /// Same sums as [`crate::quant::dot_q4k`]: `vpmaddubsw` multiplies the
        /// unsigned nibbles by the signed activations (pairs at most
        /// 2 × 15 × 127, no saturation), `vpmaddwd` by the sub-block's scale.
        /// The scales and minimums are unpacked with ggml's 32-bit masks, and
        /// the minimums meet the activations' sums per 16 in one `vpmaddwd`.
        ///
        /// # Safety
        /// AVX2 and F16C; `row` whole Q4_K blocks for `a`.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn dot_q4k(row: &[u8], a: ActRow<'_>) -> f32 {
            const K1: u32 = 0x3f3f_3f3f;
            const K2: u32 = 0x0f0f_0f0f;
            const K3: u32 = 0x0303_0303;
            let mask = _mm256_set1_epi8(0x0f);
            let mut acc = 0f32;
            for (b, blk) in row.chunks_exact(144).enumerate() {
                let y = &a.qs[b * QK_K..(b + 1) * QK_K];
                let bs = &a.sums[b * 16..(b + 1) * 16];
                let word =
                    |i: usize| u32::from_le_bytes([blk[i], blk[i + 1], blk[i + 2], blk[i + 3]]);
                let (w0, w1, w2) = (word(4), word(8), word(12));
                // Bytes of u0, u1: the eight scales; of u2, u3: the eight mins.
                let u3 = ((w2 >> 4) & K2) | (((w1 >> 6) & K3) << 4);
                let u2 = w1 & K1;
                let u1 = (w2 & K2) | (((w0 >> 6) & K3) << 4);
                let u0 = w0 & K1;
                let ms =
                    _mm256_cvtepu8_epi16(_mm_set_epi32(u3 as i32, u2 as i32, u1 as i32, u0 as i32));
                // SAFETY: `bs` is 16 values, `blk` 144 bytes (d at 0, dmin at 2).
                let (bsum, d, dmin) = unsafe {
                    (
                        _mm256_loadu_si256(bs.as_ptr().cast()),
                        f16_at(blk.as_ptr()),
                        f16_at(blk.as_ptr().add(2)),
                    )
                };
                let pairs = _mm_hadd_epi16(
                    _mm256_castsi256_si128(bsum),
                    _mm256_extracti128_si256::<1>(bsum),
                );
                let imin = hsum128(_mm_madd_epi16(_mm256_extracti128_si256::<1>(ms), pairs));
                let scales = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(ms));
                let mut sum = _mm256_setzero_si256();
                for c in 0..4 {
                    // SAFETY: bytes 16 + 32c .. 48 + 32c of the 144 exist, and
                    // values 64c .. 64c + 64 of the 256.
                    let (q, y0, y1) = unsafe {
                        (
                            _mm256_loadu_si256(blk.as_ptr().add(16 + 32 * c).cast()),
                            _mm256_loadu_si256(y.as_ptr().add(64 * c).cast()),
                            _mm256_loadu_si256(y.as_ptr().add(64 * c + 32).cast()),
                        )
                    };
                    // Scale 2c (bytes 4c, 4c + 1) and 2c + 1 broadcast.
                    let pick = |j: usize| {
                        let lo = (2 * j) as i16;
                        _mm256_set1_epi16(lo | ((lo + 1) << 8))
                    };
                    let s0 = _mm256_shuffle_epi8(scales, pick(2 * c));
                    let s1 = _mm256_shuffle_epi8(scales, pick(2 * c + 1));
                    let lo = _mm256_and_si256(q, mask);
                    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(q), mask);
                    sum = madd2_acc(sum, lo, y0, hi, y1, scale_pair(s0, s1));
                }
                acc += q4k_combine(a.d[b], d, dmin, hsum(sum), imin);
            }
            acc
        }

        /// Same sums as [`crate::quant::dot_q6k`]: the 6-bit values (0..63, pairs at
        /// most 2 × 63 × 127) times the activations, each 16 by its scale; the
        /// stored +32 comes back out through the scales times the activations'
        /// sums per 16.
        ///
        /// # Safety
        /// AVX2 and F16C; `row` whole Q6_K blocks for `a`.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn dot_q6k(row: &[u8], a: ActRow<'_>) -> f32 {
            let mut acc = 0f32;
            for (b, blk) in row.chunks_exact(210).enumerate() {
                let y = &a.qs[b * QK_K..(b + 1) * QK_K];
                let bs = &a.sums[b * 16..(b + 1) * 16];
                // SAFETY: `blk` is 210 bytes (scales at 192..208, d at 208);
                // `bs` is 16 values.
                let (s8, bsum, d) = unsafe {
                    (
                        _mm_loadu_si128(blk.as_ptr().add(192).cast()),
                        _mm256_loadu_si256(bs.as_ptr().cast()),
                        f16_at(blk.as_ptr().add(208)),
                    )
                };
                let offset = hsum(_mm256_madd_epi16(_mm256_cvtepi8_epi16(s8), bsum)) * 32;
                let mut sum = _mm256_setzero_si256();
                for half in 0..2 {
                    // SAFETY: ql is bytes 0..128 and qh 128..192 of the 210;
                    // values 128 half .. 128 half + 128 of the 256.
                    let (ql0, ql1, qh, ys) = unsafe {
                        let yp = y.as_ptr().add(128 * half);
                        (
                            _mm256_loadu_si256(blk.as_ptr().add(64 * half).cast()),
                            _mm256_loadu_si256(blk.as_ptr().add(64 * half + 32).cast()),
                            _mm256_loadu_si256(blk.as_ptr().add(128 + 32 * half).cast()),
                            [
                                _mm256_loadu_si256(yp.cast()),
                                _mm256_loadu_si256(yp.add(32).cast()),
                                _mm256_loadu_si256(yp.add(64).cast()),
                                _mm256_loadu_si256(yp.add(96).cast()),
                            ],
                        )
                    };
                    let q = q6k_values(ql0, ql1, qh);
                    let sc = q6k_scales(s8, half);
                    for p in 0..2 {
                        let (g0, g1) = (2 * p, 2 * p + 1);
                        let pair = scale_pair(sc[g0], sc[g1]);
                        sum = madd2_acc(sum, q[g0], ys[g0], q[g1], ys[g1], pair);
                    }
                }
                acc += a.d[b] * (d * (hsum(sum) - offset) as f32);
            }
            acc
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
        /// The horizontal sum of each of a tile's four-lane vectors, in token
        /// order.
        #[inline]
        #[target_feature(enable = $features)]
        fn hsum_tile128(m: &[__m128i; TILE]) -> __m256i {
            let v = |i: usize| _mm256_set_m128i(m[i + 4], m[i]);
            _mm256_hadd_epi32(_mm256_hadd_epi32(v(0), v(1)), _mm256_hadd_epi32(v(2), v(3)))
        }

        /// [`dot_q4k`] for a tile of tokens: each 64 values of a block are
        /// unpacked once (nibbles, their two scales) and meet every token's
        /// activations; the float steps are the one-token kernel's, lane by
        /// lane.
        ///
        /// # Safety
        /// AVX2 and F16C; `row` whole Q4_K blocks for the tile `a`.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn tile_q4k(row: &[u8], a: Tile<'_>) -> __m256 {
            const K1: u32 = 0x3f3f_3f3f;
            const K2: u32 = 0x0f0f_0f0f;
            const K3: u32 = 0x0303_0303;
            let mask = _mm256_set1_epi8(0x0f);
            let mut acc = _mm256_setzero_ps();
            for (b, blk) in row.chunks_exact(144).enumerate() {
                let word =
                    |i: usize| u32::from_le_bytes([blk[i], blk[i + 1], blk[i + 2], blk[i + 3]]);
                let (w0, w1, w2) = (word(4), word(8), word(12));
                let u3 = ((w2 >> 4) & K2) | (((w1 >> 6) & K3) << 4);
                let u2 = w1 & K1;
                let u1 = (w2 & K2) | (((w0 >> 6) & K3) << 4);
                let u0 = w0 & K1;
                let ms =
                    _mm256_cvtepu8_epi16(_mm_set_epi32(u3 as i32, u2 as i32, u1 as i32, u0 as i32));
                let mins = _mm256_extracti128_si256::<1>(ms);
                let scales = _mm256_broadcastsi128_si256(_mm256_castsi256_si128(ms));
                // SAFETY: the tile holds TILE × 256 values per block.
                let y = unsafe { a.qs.as_ptr().add(b * TILE * QK_K) };
                let mut sum = [_mm256_setzero_si256(); TILE];
                for c in 0..4 {
                    // SAFETY: bytes 16 + 32c .. 48 + 32c of the 144 exist.
                    let q = unsafe { _mm256_loadu_si256(blk.as_ptr().add(16 + 32 * c).cast()) };
                    let pick = |j: usize| {
                        let lo = (2 * j) as i16;
                        _mm256_set1_epi16(lo | ((lo + 1) << 8))
                    };
                    let pair = scale_pair(
                        _mm256_shuffle_epi8(scales, pick(2 * c)),
                        _mm256_shuffle_epi8(scales, pick(2 * c + 1)),
                    );
                    let lo = _mm256_and_si256(q, mask);
                    let hi = _mm256_and_si256(_mm256_srli_epi16::<4>(q), mask);
                    for (i, s) in sum.iter_mut().enumerate() {
                        // SAFETY: token i's values 64c .. 64c + 64 of the block.
                        let (y0, y1) = unsafe {
                            let p = y.add(QK_K * i + 64 * c);
                            (
                                _mm256_loadu_si256(p.cast()),
                                _mm256_loadu_si256(p.add(32).cast()),
                            )
                        };
                        *s = madd2_acc(*s, lo, y0, hi, y1, pair);
                    }
                }
                let isum = hsum_tile(&sum);
                // SAFETY: the tile holds TILE × 16 sums per block.
                let bs = unsafe { a.sums.as_ptr().add(b * TILE * 16) };
                let m: [__m128i; TILE] = std::array::from_fn(|i| {
                    // SAFETY: token i's 16 sums.
                    let bsum = unsafe { _mm256_loadu_si256(bs.add(16 * i).cast()) };
                    let pairs = _mm_hadd_epi16(
                        _mm256_castsi256_si128(bsum),
                        _mm256_extracti128_si256::<1>(bsum),
                    );
                    _mm_madd_epi16(mins, pairs)
                });
                let imin = hsum_tile128(&m);
                // SAFETY: `blk` is 144 bytes (d at 0, dmin at 2); the tile
                // has TILE scales per block.
                let (d, dmin, ad) = unsafe {
                    (
                        _mm256_set1_ps(f16_at(blk.as_ptr())),
                        _mm256_set1_ps(f16_at(blk.as_ptr().add(2))),
                        _mm256_loadu_ps(a.d.as_ptr().add(b * TILE)),
                    )
                };
                // q4k_combine, lane by lane.
                let part = _mm256_mul_ps(
                    ad,
                    _mm256_sub_ps(
                        _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum)),
                        _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(imin)),
                    ),
                );
                acc = _mm256_add_ps(acc, part);
            }
            acc
        }

        /// [`dot_q6k`] for a tile of tokens: each 32 values of a block are
        /// rebuilt from their low and high bits once and meet every token.
        ///
        /// # Safety
        /// AVX2 and F16C; `row` whole Q6_K blocks for the tile `a`.
        #[inline]
        #[target_feature(enable = $features)]
        unsafe fn tile_q6k(row: &[u8], a: Tile<'_>) -> __m256 {
            let mut acc = _mm256_setzero_ps();
            for (b, blk) in row.chunks_exact(210).enumerate() {
                // SAFETY: `blk` is 210 bytes (scales at 192..208, d at 208);
                // the tile holds TILE × 256 values per block.
                let (s8, d, y) = unsafe {
                    (
                        _mm_loadu_si128(blk.as_ptr().add(192).cast()),
                        f16_at(blk.as_ptr().add(208)),
                        a.qs.as_ptr().add(b * TILE * QK_K),
                    )
                };
                let mut sum = [_mm256_setzero_si256(); TILE];
                for half in 0..2 {
                    // SAFETY: ql is bytes 0..128 and qh 128..192 of the 210.
                    let (ql0, ql1, qh) = unsafe {
                        (
                            _mm256_loadu_si256(blk.as_ptr().add(64 * half).cast()),
                            _mm256_loadu_si256(blk.as_ptr().add(64 * half + 32).cast()),
                            _mm256_loadu_si256(blk.as_ptr().add(128 + 32 * half).cast()),
                        )
                    };
                    let q = q6k_values(ql0, ql1, qh);
                    let sc = q6k_scales(s8, half);
                    for p in 0..2 {
                        let (g0, g1) = (2 * p, 2 * p + 1);
                        let pair = scale_pair(sc[g0], sc[g1]);
                        for (i, s) in sum.iter_mut().enumerate() {
                            // SAFETY: token i's values 128 half + 64p .. + 64.
                            let (y0, y1) = unsafe {
                                let p = y.add(QK_K * i + 128 * half + 64 * p);
                                (
                                    _mm256_loadu_si256(p.cast()),
                                    _mm256_loadu_si256(p.add(32).cast()),
                                )
                            };
                            *s = madd2_acc(*s, q[g0], y0, q[g1], y1, pair);
                        }
                    }
                }
                // The stored +32 back out, per token, before the one reduction.
                let sc16 = _mm256_cvtepi8_epi16(s8);
                // SAFETY: the tile holds TILE × 16 sums and TILE scales per block.
                let (bs, ad) = unsafe {
                    (
                        a.sums.as_ptr().add(b * TILE * 16),
                        _mm256_loadu_ps(a.d.as_ptr().add(b * TILE)),
                    )
                };
                for (i, s) in sum.iter_mut().enumerate() {
                    // SAFETY: token i's 16 sums.
                    let bsum = unsafe { _mm256_loadu_si256(bs.add(16 * i).cast()) };
                    *s =
                        _mm256_sub_epi32(*s, _mm256_slli_epi32::<5>(_mm256_madd_epi16(sc16, bsum)));
                }
                let isum = _mm256_cvtepi32_ps(hsum_tile(&sum));
                let part = _mm256_mul_ps(ad, _mm256_mul_ps(_mm256_set1_ps(d), isum));
                acc = _mm256_add_ps(acc, part);
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

    /// Two vectors of 16-bit weights, one per [`madd2_acc`] half.
    pub(crate) type Pair = (__m256i, __m256i);

    /// The weights of [`madd2_acc`]'s two halves (each 16-bit lane of
    /// `w0` weights the pair of products in the same place of the first
    /// half, `w1` of the second).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn scale_pair(w0: __m256i, w1: __m256i) -> Pair {
        (w0, w1)
    }

    /// `acc` plus, in each 32-bit lane, the products of unsigned bytes
    /// `u0` and signed bytes `s0` summed in pairs, the pairs weighted by
    /// the first scale of `pair`, and the same of `u1`, `s1` by the second.
    /// The weights must be the same over each four bytes of a 32-bit lane
    /// (what the VNNI twin relies on), and no pair of products may leave
    /// `i16` (no kernel's can).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn madd2_acc(
        acc: __m256i,
        u0: __m256i,
        s0: __m256i,
        u1: __m256i,
        s1: __m256i,
        pair: Pair,
    ) -> __m256i {
        let p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(u0, s0), pair.0);
        let p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(u1, s1), pair.1);
        _mm256_add_epi32(acc, _mm256_add_epi32(p0, p1))
    }

    /// `acc` plus, in each 32-bit lane, the four products of unsigned
    /// bytes `u` and signed bytes `s`.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn dot_acc(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        let p = _mm256_maddubs_epi16(u, s);
        _mm256_add_epi32(acc, _mm256_madd_epi16(p, _mm256_set1_epi16(1)))
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

    /// The two halves' weights in one vector, in the order `vpackssdw`
    /// leaves the halves' sums of four: per 128 bits, four lanes of the
    /// first half, then four of the second.
    pub(crate) type Pair = __m256i;

    /// [`super::avx2::scale_pair`]: `w0` and `w1` are the same over each
    /// four bytes, so one 16-bit weight per 32-bit lane of each is kept.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(crate) fn scale_pair(w0: __m256i, w1: __m256i) -> Pair {
        _mm256_blend_epi32::<0b1100_1100>(w0, w1)
    }

    /// [`super::avx2::madd2_acc`] with two `vpdpbusd` (the sums of four
    /// products of each half: at most 4 × 63 × 127, so `vpackssdw` keeps
    /// them exact) and one `vpdpwssd` for the weights: three multiplying
    /// instructions where AVX2 needs four, and no separate additions.
    #[inline]
    #[target_feature(enable = "avx2,avx512vnni,avx512vl")]
    pub(crate) fn madd2_acc(
        acc: __m256i,
        u0: __m256i,
        s0: __m256i,
        u1: __m256i,
        s1: __m256i,
        pair: Pair,
    ) -> __m256i {
        let zero = _mm256_setzero_si256();
        let quads = _mm256_packs_epi32(
            _mm256_dpbusd_epi32(zero, u0, s0),
            _mm256_dpbusd_epi32(zero, u1, s1),
        );
        _mm256_dpwssd_epi32(acc, quads, pair)
    }

    /// [`super::avx2::dot_acc`] in one `vpdpbusd`.
    #[inline]
    #[target_feature(enable = "avx2,avx512vnni,avx512vl")]
    pub(crate) fn dot_acc(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
        _mm256_dpbusd_epi32(acc, u, s)
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
