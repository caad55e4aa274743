//! Q4_K and Q6_K weights stored eight rows together, so that a vector
//! kernel keeps one row in each 32-bit lane: four values of each of the
//! eight rows come in one load, one broadcast of four activations meets
//! all eight rows in one multiply-add, and the eight rows' results come out
//! side by side with no horizontal sums (ggml's repacked `q4_K_8x8` works
//! the same way). The bytes are the original blocks' bytes rearranged, no
//! more: the matrix is stored once, in this layout.
//!
//! A group's super-block `b` (256 columns of eight rows: eight of the
//! original blocks) is, for rows `r` in `0..8`, in Q4_K:
//! - `Q4K_D + 2r`: the row's `d` (`f16`); `Q4K_DMIN + 2r`: its `dmin`;
//! - `Q4K_WORDS + 32i + 4r`: word `i` (of three) of its packed 6-bit
//!   scales and minimums, as ggml stores them;
//! - `Q4K_QS + 256c + 32g + 4r`: bytes `32c + 4g ..+ 4` of its values: the
//!   low nibbles are values `64c + 4g ..` (sub-block `2c`), the high ones
//!   values `64c + 32 + 4g ..` (sub-block `2c + 1`).
//!
//! In Q6_K:
//! - `Q6K_D + 2r`: the row's `d`; `Q6K_SC + 8j + r`: its scale `j`;
//! - `Q6K_QL + 512h + 256p + 32g + 4r`: low-bit bytes `64h + 32p + 4g ..+ 4`;
//! - `Q6K_QH + 256h + 32g + 4r`: high-bit bytes `32h + 4g ..+ 4`.

use super::Format;

/// Rows stored together.
pub(crate) const ROWS: usize = 8;
pub(crate) const Q4K_D: usize = 0;
pub(crate) const Q4K_DMIN: usize = 16;
pub(crate) const Q4K_WORDS: usize = 32;
pub(crate) const Q4K_QS: usize = 128;
pub(crate) const Q6K_D: usize = 0;
pub(crate) const Q6K_SC: usize = 16;
pub(crate) const Q6K_Q: usize = 144;

/// Whether a matrix in `format` is stored grouped.
pub(crate) fn groups(format: Format) -> bool {
    matches!(format, Format::Q4K | Format::Q6K)
}

/// Where byte `i` of row `r`'s original block goes in the group's block.
fn place(format: Format, r: usize, i: usize) -> usize {
    match format {
        Format::Q6K => match i {
            0..128 => {
                let (h, p, l) = (i / 64, i % 64 / 32, i % 32);
                Q6K_Q + 96 * (8 * h + l / 4) + 32 * p + 4 * r + l % 4
            }
            128..192 => {
                let (h, l) = ((i - 128) / 32, (i - 128) % 32);
                Q6K_Q + 96 * (8 * h + l / 4) + 64 + 4 * r + l % 4
            }
            192..208 => Q6K_SC + 8 * (i - 192) + r,
            _ => Q6K_D + 2 * r + i - 208,
        },
        _ => match i {
            0..2 => Q4K_D + 2 * r + i,
            2..4 => Q4K_DMIN + 2 * r + i - 2,
            4..16 => Q4K_WORDS + 32 * ((i - 4) / 4) + 4 * r + (i - 4) % 4,
            _ => {
                let q = i - 16;
                Q4K_QS + 256 * (q / 32) + 32 * (q % 32 / 4) + 4 * r + q % 4
            }
        },
    }
}

/// Rows of `row_bytes` in `format` in the grouped layout, the last group
/// filled up with rows of zeros (which give zeros).
pub(crate) fn group(format: Format, plain: &[u8], row_bytes: usize) -> Vec<u8> {
    let bb = format.block_bytes();
    // `place` once per byte of a block, not once per byte of the model.
    let table: Vec<u16> = (0..ROWS * bb)
        .map(|ri| place(format, ri / bb, ri % bb) as u16)
        .collect();
    let rows = plain.len() / row_bytes;
    let mut out = vec![0u8; rows.next_multiple_of(ROWS) * row_bytes];
    for (r, row) in plain.chunks_exact(row_bytes).enumerate() {
        let dst = &mut out[r / ROWS * ROWS * row_bytes..];
        let places = &table[r % ROWS * bb..(r % ROWS + 1) * bb];
        for (to, blk) in dst.chunks_exact_mut(ROWS * bb).zip(row.chunks_exact(bb)) {
            for (&at, &v) in places.iter().zip(blk) {
                to[usize::from(at)] = v;
            }
        }
    }
    out
}

/// One group (`ROWS × row_bytes` bytes, grouped) back as plain rows.
pub(crate) fn ungroup(format: Format, group: &[u8], row_bytes: usize, rows: &mut [u8]) {
    let bb = format.block_bytes();
    for (r, row) in rows.chunks_exact_mut(row_bytes).enumerate().take(ROWS) {
        for (b, blk) in row.chunks_exact_mut(bb).enumerate() {
            let from = &group[b * ROWS * bb..(b + 1) * ROWS * bb];
            for (i, v) in blk.iter_mut().enumerate() {
                *v = from[place(format, r, i)];
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_has_one_place_and_comes_back() {
        for format in [Format::Q4K, Format::Q6K] {
            let bb = format.block_bytes();
            let mut seen = vec![false; ROWS * bb];
            for r in 0..ROWS {
                for i in 0..bb {
                    let p = place(format, r, i);
                    assert!(
                        !seen[p],
                        "{format:?} row {r} byte {i} lands on a taken byte {p}"
                    );
                    seen[p] = true;
                }
            }
            let row_bytes = 3 * bb;
            let plain: Vec<u8> = (0..2 * ROWS * row_bytes)
                .map(|i| (i * 7 % 251) as u8)
                .collect();
            let grouped = group(format, &plain, row_bytes);
            let mut back = vec![0u8; ROWS * row_bytes];
            for (g, grp) in grouped.chunks_exact(ROWS * row_bytes).enumerate() {
                ungroup(format, grp, row_bytes, &mut back);
                assert_eq!(
                    back,
                    plain[g * ROWS * row_bytes..(g + 1) * ROWS * row_bytes]
                );
            }
        }
    }
}
