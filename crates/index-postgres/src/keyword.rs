//! The keyword side: mnemo's own postings instead of `tsvector`, so that a
//! PostgreSQL index ranks exactly as the SQLite one does.
//!
//! SQLite indexes a chunk's pre-tokenised text ([`NewChunk::tokens`]) with
//! FTS5's `unicode61 remove_diacritics 2` tokenizer and ranks with FTS5's
//! BM25. PostgreSQL's text search would stem, drop stop words and rank
//! with `ts_rank`, another order. So this backend stores what BM25 needs
//! itself: a row per (word, file) listing the file's chunks that hold the
//! word, with the term frequency, the chunk's length and the word's
//! positions (for phrases) of each ([`WordLists`]), each word's number of
//! chunks, and the number of chunks and tokens of the index; [`words`]
//! splits and folds the tokens as unicode61 does, [`score`] ranks the
//! lists a search reads, and [`bm25`] is FTS5's formula with the same
//! constants and operations. A search reads whole only the lists whose
//! chunks it scores; a word that only adds to them is read for their
//! files alone, its number of chunks taken from the statistics
//! ([`List::docs`]).
//!
//! [`NewChunk::tokens`]: mnemo_index::backend::NewChunk::tokens

use std::collections::{BTreeMap, HashMap};

use rustc_hash::{FxHashMap, FxHashSet};

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

/// Each distinct word of a chunk with its positions.
pub(crate) type Postings = Vec<(String, Vec<i32>)>;

/// The postings of one chunk: each distinct token with its positions, and
/// the chunk's length in tokens.
pub(crate) fn postings(tokens: &str) -> (Postings, i32) {
    let ws = words(tokens);
    let mut at: HashMap<&str, usize> = HashMap::new();
    let mut out: Postings = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let slot = *at.entry(w.as_str()).or_insert_with(|| {
            out.push((w.clone(), Vec::new()));
            out.len() - 1
        });
        out[slot].1.push(i as i32);
    }
    (out, ws.len() as i32)
}

/// One word's postings: chunk ids with their term frequency, length and
/// (when read) positions, one chunk's after the other.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct List {
    pub ids: Vec<i64>,
    pub tfs: Vec<i32>,
    pub lens: Vec<i32>,
    pub positions: Vec<i32>,
    /// Each chunk's source, when read (a list row is one file's).
    pub sources: Vec<u32>,
    /// The word's number of chunks when the list holds only some files'
    /// rows (the files of the chunks a search scores): its BM25 IDF is
    /// the index's, not the list's.
    pub docs: Option<i64>,
}

impl List {
    /// Appends a `word_lists` row's entries: its packed `chunk_ids`,
    /// `tfs`, `lens` and `positions` (empty when not read); `source` is an
    /// index into the search's source names.
    pub fn extend(&mut self, packed: [&[u8]; 4], source: u32) {
        let [ids, tfs, lens, positions] = packed;
        let before = self.ids.len();
        self.ids.extend(unpack::<8>(ids).map(i64::from_be_bytes));
        self.tfs.extend(unpack::<4>(tfs).map(i32::from_be_bytes));
        self.lens.extend(unpack::<4>(lens).map(i32::from_be_bytes));
        self.positions
            .extend(unpack::<4>(positions).map(i32::from_be_bytes));
        let added = self.ids.len() - before;
        self.sources.extend(std::iter::repeat_n(source, added));
    }

    /// Each chunk's entry: id, term frequency, length and positions
    /// (empty when not read).
    fn entries(&self) -> impl Iterator<Item = (i64, i32, i32, &[i32])> + '_ {
        let mut at = 0usize;
        self.ids
            .iter()
            .zip(&self.tfs)
            .zip(&self.lens)
            .map(move |((id, tf), len)| {
                let end = (at + (*tf).max(0) as usize).min(self.positions.len());
                let positions = &self.positions[at.min(end)..end];
                at = end;
                (*id, *tf, *len, positions)
            })
    }

    /// Adds a chunk's entry at the end.
    fn push(&mut self, id: i64, tf: i32, len: i32, positions: &[i32]) {
        self.ids.push(id);
        self.tfs.push(tf);
        self.lens.push(len);
        self.positions.extend_from_slice(positions);
    }

    /// Puts the entries in chunk id order (a list row's order), when they
    /// are not.
    fn sort_by_id(&mut self) {
        if self.ids.is_sorted() {
            return;
        }
        let mut entries: Vec<(i64, i32, i32, Vec<i32>)> = self
            .entries()
            .map(|(id, tf, len, p)| (id, tf, len, p.to_vec()))
            .collect();
        entries.sort_by_key(|e| e.0);
        *self = List::default();
        for (id, tf, len, p) in entries {
            self.push(id, tf, len, &p);
        }
    }

    /// The positions of each chunk `keep` takes, by id (empty slices when
    /// none were read).
    fn positions_by_chunk(&self, keep: impl Fn(i64) -> bool) -> FxHashMap<i64, &[i32]> {
        let mut at = 0usize;
        let mut out = FxHashMap::default();
        for (id, tf) in self.ids.iter().zip(&self.tfs) {
            let end = (at + *tf as usize).min(self.positions.len());
            if keep(*id) {
                out.insert(*id, &self.positions[at.min(end)..end]);
            }
            at = end;
        }
        out
    }
}

/// What a keyword search's plan reads before the lists: the index's
/// number of chunks and tokens and each word's number of chunks, kept for
/// one revision of the index, as SQLite's backend keeps them (`fts.rs`).
/// The revision is the version of the `totals` row (its `xmin`): every
/// write transaction updates that row, so a new version means the words'
/// counts may have changed. A search checks the revision in the statement
/// that reads the lists (one round trip instead of two), and reads the
/// counts again when it changed.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub rev: Option<String>,
    pub chunks: i64,
    pub tokens: i64,
    pub docs: FxHashMap<String, i64>,
}

/// Words a [`Stats`] keeps at most: a long-lived reader of an index that
/// is never written would otherwise keep every word ever searched.
pub(crate) const STATS_WORDS_MAX: usize = 50_000;

impl Stats {
    /// The revision, the index's chunks and each of `words`' counts,
    /// when all are known.
    pub fn docs_of(&self, words: &[&str]) -> Option<(String, i64, FxHashMap<String, i64>)> {
        let rev = self.rev.clone()?;
        let docs = words
            .iter()
            .map(|w| self.docs.get(*w).map(|d| (w.to_string(), *d)))
            .collect::<Option<_>>()?;
        Some((rev, self.chunks, docs))
    }

    /// Takes in counts read at revision `rev` (a word without a row has
    /// 0): the counts of another revision are forgotten.
    pub fn update(&mut self, rev: &str, chunks: i64, tokens: i64, docs: &FxHashMap<String, i64>) {
        if self.rev.as_deref() != Some(rev) || self.docs.len() + docs.len() > STATS_WORDS_MAX {
            self.docs.clear();
        }
        self.rev = Some(rev.to_string());
        self.chunks = chunks;
        self.tokens = tokens;
        self.docs.extend(docs.iter().map(|(w, d)| (w.clone(), *d)));
    }

    /// Forgets everything: the index moved past the revision.
    pub fn forget(&mut self) {
        *self = Stats::default();
    }
}

/// The `N`-byte values packed in `bytes` (a `word_lists` column: big
/// endian, as PostgreSQL's `int8send` / `int4send` write them); a torn
/// tail is ignored.
fn unpack<const N: usize>(bytes: &[u8]) -> impl Iterator<Item = [u8; N]> + '_ {
    bytes
        .chunks_exact(N)
        .map(|c| <[u8; N]>::try_from(c).unwrap_or([0; N]))
}

/// A file's postings grouped by word, in word order: the rows it adds to
/// `word_lists`.
pub(crate) struct WordLists(BTreeMap<String, List>);

impl WordLists {
    /// The lists of `chunks` (id, length in tokens, postings).
    pub fn of<'a>(chunks: impl Iterator<Item = (i64, i32, &'a [(String, Vec<i32>)])>) -> Self {
        let mut chunks: Vec<_> = chunks.collect();
        chunks.sort_by_key(|c| c.0);
        let mut out: BTreeMap<String, List> = BTreeMap::new();
        for (id, len, postings) in chunks {
            for (word, positions) in postings {
                let l = out.entry(word.clone()).or_default();
                l.ids.push(id);
                l.tfs.push(positions.len() as i32);
                l.lens.push(len);
                l.positions.extend(positions);
            }
        }
        WordLists(out)
    }

    /// The rows as columns: words, then chunk ids, frequencies, lengths
    /// and positions, each packed (one statement takes them all).
    #[allow(clippy::type_complexity)]
    pub fn columns(
        &self,
    ) -> (
        Vec<&str>,
        Vec<Vec<u8>>,
        Vec<Vec<u8>>,
        Vec<Vec<u8>>,
        Vec<Vec<u8>>,
    ) {
        let mut cols = (vec![], vec![], vec![], vec![], vec![]);
        for (w, l) in &self.0 {
            cols.0.push(w.as_str());
            cols.1
                .push(l.ids.iter().flat_map(|v| v.to_be_bytes()).collect());
            cols.2
                .push(l.tfs.iter().flat_map(|v| v.to_be_bytes()).collect());
            cols.3
                .push(l.lens.iter().flat_map(|v| v.to_be_bytes()).collect());
            cols.4
                .push(l.positions.iter().flat_map(|v| v.to_be_bytes()).collect());
        }
        cols
    }

    /// The words, in the order of [`Self::columns`].
    pub fn words(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// Each word's number of chunks, in the order of [`Self::columns`].
    pub fn docs(&self) -> Vec<i64> {
        self.0.values().map(|l| l.ids.len() as i64).collect()
    }
}

/// A file's lists of some words with some of its chunks taken out (see
/// [`WordLists::remaining`]): what is left of each list, and how many
/// chunks each word lost.
#[derive(Debug, Default)]
pub(crate) struct Remaining {
    lists: BTreeMap<String, List>,
    removed: FxHashMap<String, i64>,
}

impl WordLists {
    /// The file's rows `stored` (by word: every word of the chunks `gone`,
    /// and maybe others) without the `gone` chunks' entries (`gone`: each
    /// chunk's id and postings, as [`postings`] makes them of its
    /// tokens). `None` when a row disagrees with them (a gone chunk's word
    /// missing from its row, or at another frequency; a gone chunk in the
    /// row of a word it lacks): the rows were not written from these
    /// tokens, and the caller writes the file whole instead.
    pub fn remaining(stored: HashMap<String, List>, gone: &[(i64, Postings)]) -> Option<Remaining> {
        let mut leaving: FxHashMap<&str, FxHashMap<i64, i32>> = FxHashMap::default();
        for (id, postings) in gone {
            for (word, positions) in postings {
                leaving
                    .entry(word.as_str())
                    .or_default()
                    .insert(*id, positions.len() as i32);
            }
        }
        let ids: FxHashSet<i64> = gone.iter().map(|g| g.0).collect();
        let mut out = Remaining::default();
        let mut found = 0usize;
        for (word, list) in stored {
            let want = leaving.get(word.as_str());
            let mut left = List::default();
            let mut removed = 0i64;
            for (id, tf, len, positions) in list.entries() {
                match want.and_then(|w| w.get(&id)) {
                    Some(t) if *t == tf => removed += 1,
                    Some(_) => return None,
                    None if ids.contains(&id) => return None,
                    None => left.push(id, tf, len, positions),
                }
            }
            found += removed as usize;
            if removed > 0 {
                out.removed.insert(word.clone(), removed);
            }
            out.lists.insert(word, left);
        }
        let expected: usize = leaving.values().map(|m| m.len()).sum();
        (found == expected).then_some(out)
    }

    /// These lists (of chunks written now) merged into what `rest` left:
    /// the rows that replace those read, in word order (a word no chunk
    /// holds any more has none), and each changed word's change in its
    /// number of chunks.
    pub fn merged(self, rest: Remaining) -> (WordLists, Vec<(String, i64)>) {
        let Remaining { mut lists, removed } = rest;
        let mut delta: BTreeMap<String, i64> = removed.into_iter().map(|(w, n)| (w, -n)).collect();
        for (word, new) in self.0 {
            *delta.entry(word.clone()).or_default() += new.ids.len() as i64;
            let list = lists.entry(word).or_default();
            for (id, tf, len, positions) in new.entries() {
                list.push(id, tf, len, positions);
            }
            list.sort_by_id();
        }
        lists.retain(|_, l| !l.ids.is_empty());
        let delta = delta.into_iter().filter(|(_, d)| *d != 0).collect();
        (WordLists(lists), delta)
    }
}

/// The best `limit` chunks for `terms` (each a phrase of one or more
/// words), by FTS5's BM25 over the index's `chunks` chunks of `avgdl`
/// tokens on average: `lists` holds every word's postings (positions read
/// for the words of phrases); only the chunks holding one of the first
/// `rare` terms are ranked (all terms for an exact plan, the rare ones of
/// a bounded plan), and only those whose source `source_ok` takes.
pub(crate) fn score(
    terms: &[&[String]],
    lists: &HashMap<String, List>,
    rare: usize,
    chunks: f64,
    avgdl: f64,
    limit: usize,
    source_ok: impl Fn(u32) -> bool,
) -> Vec<(i64, f64)> {
    let empty = List::default();
    let list = |w: &String| lists.get(w).unwrap_or(&empty);
    // Each term's frequency in each chunk holding it. The chunks of the
    // first `rare` terms are those scored; the others only add to them.
    // Chunk ids are keys of these maps: Fx, not SipHash (a fifth of a
    // search's time at 100,000 chunks).
    let mut lens: FxHashMap<i64, (i32, u32)> = FxHashMap::default();
    let mut freqs: Vec<FxHashMap<i64, f64>> = Vec::with_capacity(terms.len());
    // Each term's number of chunks (all of them: the IDF is the index's).
    let mut docs: Vec<f64> = Vec::with_capacity(terms.len());
    for (t, words) in terms.iter().enumerate() {
        let first = list(&words[0]);
        let mut freq = FxHashMap::default();
        let mut hits = 0usize;
        let mut found = |i: usize, n: f64, lens: &mut FxHashMap<i64, (i32, u32)>| {
            hits += 1;
            let id = first.ids[i];
            if t < rare {
                lens.entry(id).or_insert((first.lens[i], first.sources[i]));
            } else if !lens.contains_key(&id) {
                return;
            }
            freq.insert(id, n);
        };
        if words.len() == 1 {
            for i in 0..first.ids.len() {
                found(i, first.tfs[i] as f64, &mut lens);
            }
        } else {
            // A phrase: its words side by side, counted from each of its
            // first word's positions.
            // Only the chunks of its rarest word can hold it: the other
            // words' positions are kept for those alone.
            let rarest = words.iter().map(list).min_by_key(|l| l.ids.len());
            let can: FxHashSet<i64> = rarest
                .map(|l| l.ids.iter().copied().collect())
                .unwrap_or_default();
            let others: Vec<FxHashMap<i64, &[i32]>> = words[1..]
                .iter()
                .map(|w| list(w).positions_by_chunk(|id| can.contains(&id)))
                .collect();
            let mine = first.positions_by_chunk(|id| can.contains(&id));
            for i in 0..first.ids.len() {
                let id = first.ids[i];
                let Some(rest) = others
                    .iter()
                    .map(|o| o.get(&id))
                    .collect::<Option<Vec<_>>>()
                else {
                    continue;
                };
                let Some(mine) = mine.get(&id) else {
                    continue;
                };
                let n = mine
                    .iter()
                    .filter(|&&a| {
                        rest.iter()
                            .enumerate()
                            .all(|(j, p)| p.contains(&(a + j as i32 + 1)))
                    })
                    .count();
                if n > 0 {
                    found(i, n as f64, &mut lens);
                }
            }
        }
        freqs.push(freq);
        // A phrase's count is exact from a part of its words' lists: only
        // the chunks of its rarest word, read whole, can hold it.
        let whole = match words {
            [_] => first.docs,
            _ => None,
        };
        docs.push(whole.map_or(hits as f64, |d| d as f64));
    }
    let idfs: Vec<f64> = docs.iter().map(|&d| idf(chunks, d)).collect();
    let mut out: Vec<(i64, f64)> = lens
        .iter()
        .filter(|(_, (_, s))| source_ok(*s))
        .map(|(&id, &(len, _))| {
            let f: Vec<f64> = freqs
                .iter()
                .map(|m| m.get(&id).copied().unwrap_or(0.0))
                .collect();
            (id, bm25(&idfs, &f, len as f64, avgdl))
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    out.truncate(limit);
    out
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
#[allow(clippy::unwrap_used)]
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
    fn stats_hold_one_revision() {
        let mut s = Stats::default();
        assert!(s.docs_of(&["a"]).is_none());
        let docs: FxHashMap<String, i64> = [("a".to_string(), 3), ("b".to_string(), 0)]
            .into_iter()
            .collect();
        s.update("7", 10, 40, &docs);
        let (rev, chunks, got) = s.docs_of(&["a", "b"]).unwrap();
        assert_eq!((rev.as_str(), chunks, got["a"], got["b"]), ("7", 10, 3, 0));
        // A word not read at this revision: all must be read again.
        assert!(s.docs_of(&["a", "c"]).is_none());
        // Another revision's counts replace, never mix with, the old ones.
        let c: FxHashMap<String, i64> = [("c".to_string(), 1)].into_iter().collect();
        s.update("8", 11, 44, &c);
        assert!(s.docs_of(&["a"]).is_none());
        assert_eq!(s.docs_of(&["c"]).unwrap().0, "8");
        s.forget();
        assert!(s.docs_of(&["c"]).is_none());
    }

    /// The lists of chunks (id, tokens).
    fn lists_of(chunks: &[(i64, &str)]) -> WordLists {
        let posted: Vec<(i64, (Postings, i32))> =
            chunks.iter().map(|(id, t)| (*id, postings(t))).collect();
        WordLists::of(
            posted
                .iter()
                .map(|(id, (p, len))| (*id, *len, p.as_slice())),
        )
    }

    /// Rows as a search reads them back: packed, then unpacked.
    fn read_back(lists: &WordLists) -> HashMap<String, List> {
        let (words, ids, tfs, lens, pos) = lists.columns();
        (0..words.len())
            .map(|i| {
                let mut l = List::default();
                l.extend([&ids[i], &tfs[i], &lens[i], &pos[i]], 0);
                (words[i].to_string(), l)
            })
            .collect()
    }

    #[test]
    fn a_file_updated_chunk_by_chunk_has_the_lists_of_one_written_whole() {
        let before = lists_of(&[(1, "red fox"), (2, "the red hen"), (3, "a fox a hen")]);
        let stored = read_back(&before);
        // Chunk 3 goes; chunks 4 and 5 come; 1 and 2 stay.
        let gone = vec![(3, postings("a fox a hen").0)];
        let new = lists_of(&[(4, "a fox a hen and a cat"), (5, "red cat")]);
        let mut words: Vec<&str> = vec!["a", "fox", "hen", "and", "cat", "red"];
        words.sort();
        let read: HashMap<String, List> = stored
            .into_iter()
            .filter(|(w, _)| words.contains(&w.as_str()))
            .collect();
        let rest = WordLists::remaining(read, &gone).unwrap();
        let (rows, delta) = new.merged(rest);
        let whole = lists_of(&[
            (1, "red fox"),
            (2, "the red hen"),
            (4, "a fox a hen and a cat"),
            (5, "red cat"),
        ]);
        let expect: HashMap<String, List> = read_back(&whole)
            .into_iter()
            .filter(|(w, _)| words.contains(&w.as_str()))
            .collect();
        assert_eq!(read_back(&rows), expect);
        let delta: HashMap<String, i64> = delta.into_iter().collect();
        let want: HashMap<String, i64> = [("and", 1), ("cat", 2), ("red", 1)]
            .into_iter()
            .map(|(w, d)| (w.to_string(), d))
            .collect();
        assert_eq!(delta, want);
    }

    #[test]
    fn rows_that_disagree_with_the_gone_chunks_are_refused() {
        let stored = read_back(&lists_of(&[(1, "red fox"), (2, "red hen")]));
        // Chunk 2 said to hold "red" twice: the row says once.
        assert!(WordLists::remaining(stored.clone(), &[(2, postings("red red hen").0)]).is_none());
        // A word of chunk 2 no row holds.
        assert!(WordLists::remaining(stored.clone(), &[(2, postings("red owl").0)]).is_none());
        // Chunk 2 in a row of a word it is said not to hold.
        assert!(WordLists::remaining(stored.clone(), &[(2, postings("hen").0)]).is_none());
        let rest = WordLists::remaining(stored, &[(2, postings("red hen").0)]).unwrap();
        let (rows, delta) = lists_of(&[]).merged(rest);
        assert_eq!(rows.docs(), [1, 1]);
        assert_eq!(delta.len(), 2);
    }

    #[test]
    fn idf_is_floored() {
        assert_eq!(idf(4.0, 3.0), 1e-6);
        assert!((idf(8.0, 1.0) - (7.5f64 / 1.5).ln()).abs() < 1e-12);
    }
}
