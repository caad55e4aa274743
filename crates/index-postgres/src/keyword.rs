//! The keyword side: mnemo's own postings instead of `tsvector`, so that a
//! PostgreSQL index ranks exactly as the SQLite one does.
//!
//! SQLite indexes a chunk's pre-tokenised text ([`NewChunk::tokens`]) with
//! FTS5's `unicode61 remove_diacritics 2` tokenizer and ranks with FTS5's
//! BM25. PostgreSQL's text search would stem, drop stop words and rank
//! with `ts_rank`, another order. So this backend stores what BM25 needs
//! itself: a row per (token, chunk) with the term frequency, the chunk's
//! length and the token's positions (for phrases), and the number of
//! chunks and tokens of the index; [`words`] splits and folds the tokens
//! as unicode61 does, and [`bm25`] is FTS5's formula with the same
//! constants and operations.
//!
//! [`NewChunk::tokens`]: mnemo_index::backend::NewChunk::tokens

use std::collections::HashMap;

use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// FTS5's `k1`.
pub(crate) const K1: f64 = 1.2;
/// FTS5's `b`.
pub(crate) const B: f64 = 0.75;

/// The tokens FTS5's unicode61 tokenizer (with `remove_diacritics 2`)
/// makes of `text`: runs of letters and digits, lower-cased, with the
/// diacritics of Latin letters removed; everything else separates.
pub(crate) fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            for l in c.to_lowercase() {
                fold_into(l, &mut word);
            }
        } else if !word.is_empty() {
            out.push(std::mem::take(&mut word));
        }
    }
    if !word.is_empty() {
        out.push(word);
    }
    out
}

/// Pushes `c` without its diacritics when it is a Latin letter (unicode61
/// folds only those: `remove_diacritics` leaves other scripts alone).
fn fold_into(c: char, out: &mut String) {
    let latin = ('\u{00C0}'..='\u{024F}').contains(&c) || ('\u{1E00}'..='\u{1EFF}').contains(&c);
    if latin {
        out.extend(std::iter::once(c).nfd().filter(|d| !is_combining_mark(*d)));
    } else {
        out.push(c);
    }
}

/// The postings of one chunk: each distinct token with its positions, and
/// the chunk's length in tokens.
pub(crate) fn postings(tokens: &str) -> (Vec<(String, Vec<i32>)>, i32) {
    let ws = words(tokens);
    let mut at: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<(String, Vec<i32>)> = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let slot = *at.entry(w.as_str()).or_insert_with(|| {
            out.push((w.clone(), Vec::new()));
            out.len() - 1
        });
        out[slot].1.push(i as i32);
    }
    (out, ws.len() as i32)
}

/// FTS5's IDF of a phrase found in `hits` of `rows` chunks.
pub(crate) fn idf(rows: f64, hits: f64) -> f64 {
    let idf = ((rows - hits + 0.5) / (hits + 0.5)).ln();
    if idf <= 0.0 {
        1e-6
    } else {
        idf
    }
}

/// FTS5's BM25 of one chunk of `len` tokens (`avgdl` on average) holding
/// each phrase `freqs[i]` times, phrase `i` having IDF `idfs[i]`; positive
/// (FTS5's `bm25()` is its negation).
pub(crate) fn bm25(idfs: &[f64], freqs: &[f64], len: f64, avgdl: f64) -> f64 {
    let mut score = 0.0;
    for (idf, f) in idfs.iter().zip(freqs) {
        score += idf * ((f * (K1 + 1.0)) / (f + K1 * (1.0 - B + B * len / avgdl)));
    }
    score
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_and_fold_as_unicode61() {
        assert_eq!(
            words("err-4711 Café  naïve"),
            ["err", "4711", "cafe", "naive"]
        );
        assert_eq!(words("我们 去 北京"), ["我们", "去", "北京"]);
        assert!(words(" - ").is_empty());
    }

    #[test]
    fn postings_keep_positions() {
        let (p, len) = postings("a b a c");
        assert_eq!(len, 4);
        assert_eq!(p[0], ("a".to_string(), vec![0, 2]));
        assert_eq!(p[2], ("c".to_string(), vec![3]));
    }

    #[test]
    fn idf_is_floored() {
        assert_eq!(idf(4.0, 3.0), 1e-6);
        assert!((idf(8.0, 1.0) - (7.5f64 / 1.5).ln()).abs() < 1e-12);
    }
}
