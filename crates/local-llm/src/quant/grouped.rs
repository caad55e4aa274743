//! Q4_K weights stored eight rows together, so that a vector kernel keeps
//! one row in each 32-bit lane: four values of each of the eight rows come
//! in one load, one broadcast of four activations meets all eight rows in
//! one multiply-add, and the eight rows' results come out side by side
//! with no horizontal sums (ggml's repacked `q4_K_8x8` works the same way).
//! The bytes are the original blocks' bytes rearranged, no more: the
//! matrix is stored once, in this layout.
//!
//! A group's super-block `b` (256 columns of eight rows, 1,152 bytes, as
//! eight of the original 144-byte blocks) is, for rows `r` in `0..8`:
//! - `D + 2r`: the row's `d` (`f16`); `DMIN + 2r`: its `dmin`;
//! - `WORDS + 32i + 4r`: word `i` (of three) of its packed 6-bit scales
//!   and minimums, as ggml stores them;
//! - `QS + 256c + 32g + 4r`: bytes `32c + 4g .. 32c + 4g + 4` of its
//!   values: the low nibbles are values `64c + 4g ..` (sub-block `2c`),
//!   the high ones values `64c + 32 + 4g ..` (sub-block `2c + 1`).

/// Rows stored together.
pub(crate) const ROWS: usize = 8;
/// Bytes of a group's super-block.
pub(crate) const BLOCK: usize = ROWS * 144;
pub(crate) const D: usize = 0;
pub(crate) const DMIN: usize = 16;
pub(crate) const WORDS: usize = 32;
pub(crate) const QS: usize = 128;

/// Where byte `i` of row `r`'s original block goes in the group's block.
fn place(r: usize, i: usize) -> usize {
    match i {
        0..2 => D + 2 * r + i,
        2..4 => DMIN + 2 * r + i - 2,
        4..16 => WORDS + 32 * ((i - 4) / 4) + 4 * r + (i - 4) % 4,
        _ => {
            let q = i - 16;
            QS + 256 * (q / 32) + 32 * (q % 32 / 4) + 4 * r + q % 4
        }
    }
}

/// Q4_K rows of `row_bytes` (whole groups of [`ROWS`]) in the grouped
/// layout.
pub(crate) fn group_q4k(plain: &[u8], row_bytes: usize) -> Vec<u8> {
    let mut out = vec![0u8; plain.len()];
    for (src, dst) in plain
        .chunks_exact(ROWS * row_bytes)
        .zip(out.chunks_exact_mut(ROWS * row_bytes))
    {
        for (r, row) in src.chunks_exact(row_bytes).enumerate() {
            for (b, blk) in row.chunks_exact(144).enumerate() {
                let to = &mut dst[b * BLOCK..(b + 1) * BLOCK];
                for (i, &v) in blk.iter().enumerate() {
                    to[place(r, i)] = v;
                }
            }
        }
    }
    out
}

/// One group (`ROWS × row_bytes` bytes, grouped) back as plain rows.
pub(crate) fn ungroup_q4k(group: &[u8], row_bytes: usize, rows: &mut [u8]) {
    for (r, row) in rows.chunks_exact_mut(row_bytes).enumerate().take(ROWS) {
        for (b, blk) in row.chunks_exact_mut(144).enumerate() {
            let from = &group[b * BLOCK..(b + 1) * BLOCK];
            for (i, v) in blk.iter_mut().enumerate() {
                *v = from[place(r, i)];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_has_one_place_and_comes_back() {
        let mut seen = vec![false; BLOCK];
        for r in 0..ROWS {
            for i in 0..144 {
                let p = place(r, i);
                assert!(!seen[p], "row {r} byte {i} lands on a taken byte {p}");
                seen[p] = true;
            }
        }
        let row_bytes = 3 * 144;
        let plain: Vec<u8> = (0..2 * ROWS * row_bytes)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let grouped = group_q4k(&plain, row_bytes);
        let mut back = vec![0u8; ROWS * row_bytes];
        for (g, grp) in grouped.chunks_exact(ROWS * row_bytes).enumerate() {
            ungroup_q4k(grp, row_bytes, &mut back);
            assert_eq!(
                back,
                plain[g * ROWS * row_bytes..(g + 1) * ROWS * row_bytes]
            );
        }
    }
}
