//! Text analysis for keyword search: the pre-tokeniser that turns text into
//! the FTS5 column (lower-cased words, joined identifiers, CJK runs as
//! overlapping two-character pieces), query building, and identifier
//! detection for exact-hit protection.
//!
//! SQLite's `unicode61` tokenizer takes a whole CJK run as one token and
//! `trigram` cannot match two-character words, so the text is tokenised here
//! and FTS5 only splits on the spaces we put in.

// This module reads text a user or a model wrote: no byte-offset slicing of
// it, which could land inside a character. (Its indexing is into token and
// character vectors under explicit bounds checks; the fuzz targets cover it.)
#![cfg_attr(not(test), deny(clippy::string_slice))]

use std::collections::HashSet;
use std::sync::OnceLock;

use rust_stemmers::{Algorithm, Stemmer};

/// Version tag stored in the index meta; bump when tokens change.
pub(crate) const TOKENIZER_VERSION: &str = "mnemo-bigram-stem-v2";

/// English Snowball stemmer, applied to purely alphabetic ASCII words so
/// that "painted", "painting" and "paints" meet; identifiers, numbers and
/// other scripts are left as written.
fn stem(word: String) -> String {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    if word.len() < 4 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return word;
    }
    let stemmer = STEMMER.get_or_init(|| Stemmer::create(Algorithm::English));
    stemmer.stem(&word).into_owned()
}

/// True for characters written without spaces between words.
/// True when `text` ends by asking ("?" or "？"): in a conversation, the
/// next message is likely its answer.
pub(crate) fn asks(text: &str) -> bool {
    text.trim_end().ends_with(['?', '？'])
}

pub use mnemo_core::text::is_cjk;

/// True when at least half of the query's letters are CJK.
pub(crate) fn mostly_cjk(text: &str) -> bool {
    let (mut cjk, mut other) = (0usize, 0usize);
    for c in text.chars() {
        if is_cjk(c) {
            cjk += 1;
        } else if c.is_alphanumeric() {
            other += 1;
        }
    }
    // A CJK character carries about a word; Latin words take several letters.
    cjk > 0 && cjk * 4 >= other
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() && !is_cjk(c)
}

fn is_joiner(c: char) -> bool {
    matches!(c, '-' | '_' | '.' | '/' | ':' | '#')
}

/// Whether tokens are produced for a stored document or for a query.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Document,
    /// A query; `true` leaves out English function words.
    Query(bool),
}

/// English function words: in a question ("what did she say about the
/// trip?") they match nearly every chunk, and in a small workspace they
/// are not yet common enough for their IDF to fall to nothing.
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Chinese function characters: pronouns, particles, auxiliaries. A
/// two-character piece made of two of them ("我们", "什么", "曾经") says
/// nothing about the topic of a question.
const CJK_FUNCTION: &str = "的了我你他她它们是在和与吗呢吧啊么什这那个一也就都而过曾经会把被给对从到为以于之其或但还又很哪谁怎样";

fn is_cjk_function(c: char) -> bool {
    CJK_FUNCTION.contains(c)
}

fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

fn tokens(text: &str, mode: Mode, out: &mut Vec<String>) {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_cjk(c) {
            let start = i;
            while i < chars.len() && is_cjk(chars[i]) {
                i += 1;
            }
            let run = &chars[start..i];
            if run.len() == 1 {
                out.push(run[0].to_string());
                continue;
            }
            if mode == Mode::Document {
                // Unigrams let one-character queries match; queries of two or
                // more characters use only the pieces below.
                out.extend(run.iter().map(|c| c.to_string()));
            }
            let skip_function = mode == Mode::Query(true);
            out.extend(
                run.windows(2)
                    .filter(|w| !(skip_function && is_cjk_function(w[0]) && is_cjk_function(w[1])))
                    .map(|w| w.iter().collect::<String>()),
            );
        } else if is_word_char(c) {
            // A compound such as ERR-4711 or a1b2.c3: its words, plus the
            // joined form when it holds a digit, so the exact identifier
            // scores above documents that merely share one part.
            let mut parts: Vec<String> = Vec::new();
            let mut word = String::new();
            let mut has_digit = false;
            while i < chars.len() {
                let ch = chars[i];
                if is_word_char(ch) {
                    has_digit |= ch.is_ascii_digit();
                    word.extend(ch.to_lowercase());
                    i += 1;
                } else if is_joiner(ch)
                    && i + 1 < chars.len()
                    && is_word_char(chars[i + 1])
                    && !word.is_empty()
                {
                    parts.push(std::mem::take(&mut word));
                    i += 1;
                } else {
                    break;
                }
            }
            if !word.is_empty() {
                parts.push(word);
            }
            if mode == Mode::Query(true) && parts.len() == 1 && is_stopword(&parts[0]) {
                continue;
            }
            if parts.len() > 1 && has_digit {
                out.push(parts.concat());
            }
            out.extend(parts.into_iter().map(stem));
        } else {
            i += 1;
        }
    }
}

/// The FTS5 column text for a chunk: tokens separated by spaces.
pub fn index_text(text: &str) -> String {
    let mut out = Vec::new();
    tokens(text, Mode::Document, &mut out);
    out.join(" ")
}

/// Distinct query tokens, in order of first appearance.
pub fn query_tokens(query: &str) -> Vec<String> {
    let mut out = Vec::new();
    tokens(query, Mode::Query(true), &mut out);
    if out.is_empty() {
        // Nothing but function words ("who are you?"): search for them.
        tokens(query, Mode::Query(false), &mut out);
    }
    let mut seen = HashSet::new();
    out.retain(|t| seen.insert(t.clone()));
    out.truncate(64);
    out
}

/// Adjacent pairs of the query's content words as FTS5 phrases ("ice
/// cream", "support group"), in query order, at most 16. Tokens come from
/// the same tokenizer as the index, so a pair matches where the two words
/// stand side by side in a chunk.
pub fn query_phrases(query: &str) -> Vec<String> {
    let mut all = Vec::new();
    tokens(query, Mode::Query(false), &mut all);
    let mut content = Vec::new();
    tokens(query, Mode::Query(true), &mut content);
    let content: HashSet<&String> = content.iter().collect();
    let mut seen = HashSet::new();
    all.windows(2)
        .filter(|w| w[0] != w[1] && content.contains(&w[0]) && content.contains(&w[1]))
        .map(|w| format!("{} {}", w[0], w[1]))
        .filter(|p| seen.insert(p.clone()))
        .take(16)
        .collect()
}

/// Query words that look like identifiers (a letter and a digit, at least 4
/// characters: `ERR-4711`, `a1b2c3d4`, `v2.3.1-rc`). A chunk that contains
/// one of them verbatim is protected from being buried by vectors or decay.
pub fn identifiers(query: &str) -> Vec<String> {
    let mut out = Vec::new();
    for raw in query
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | '"' | '\'' | '`'))
    {
        let w = raw.trim_matches(|c: char| !c.is_alphanumeric());
        if w.chars().count() >= 4
            && w.chars().any(|c| c.is_ascii_digit())
            && w.chars().any(|c| c.is_alphabetic())
        {
            let lower = w.to_lowercase();
            if !out.contains(&lower) {
                out.push(lower);
            }
        }
    }
    out
}

/// A query as a phrase to find word for word: lower-cased, with every run
/// of characters that are not letters or digits read as one space (so
/// punctuation and line breaks do not matter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Phrase(String);

fn phrase_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push(' ');
    for ch in text.chars() {
        if ch.is_alphanumeric() {
            out.extend(ch.to_lowercase());
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    if !out.ends_with(' ') {
        out.push(' ');
    }
    out
}

impl Phrase {
    /// The phrase of `query`: `None` for a single word (a word alone is no
    /// phrase; identifiers have their own rule).
    pub(crate) fn of(query: &str) -> Option<Phrase> {
        let p = phrase_text(query);
        let words = p.split_whitespace().count();
        let cjk = p.chars().filter(|c| is_cjk(*c)).count();
        (words >= 2 || cjk >= 2).then_some(Phrase(p))
    }

    /// Whether `text` holds the phrase, on word boundaries (CJK text,
    /// written without spaces, anywhere).
    pub(crate) fn is_in(&self, text: &str) -> bool {
        let hay = phrase_text(text);
        if self.0.chars().any(is_cjk) {
            hay.contains(self.0.trim())
        } else {
            hay.contains(&self.0)
        }
    }
}

/// Word set used by MMR's Jaccard similarity.
pub(crate) fn word_set(text: &str) -> HashSet<String> {
    let mut out = Vec::new();
    tokens(text, Mode::Query(true), &mut out);
    out.into_iter().collect()
}

/// Jaccard similarity of two word sets.
pub(crate) fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f32 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let inter = a.intersection(b).count();
    let union = a.len() + b.len() - inter;
    inter as f32 / union as f32
}

/// Up to `max_chars` characters of `text` around the lines that share the
/// most query tokens.
pub fn snippet(text: &str, query_tokens: &[String], max_chars: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    if text.chars().count() <= max_chars || lines.is_empty() {
        return text.to_string();
    }
    let qset: HashSet<&str> = query_tokens.iter().map(String::as_str).collect();
    let mut best = 0usize;
    let mut best_score = 0usize;
    for (i, line) in lines.iter().enumerate() {
        let mut t = Vec::new();
        tokens(line, Mode::Document, &mut t);
        let score = t
            .iter()
            .filter(|x| qset.contains(x.as_str()))
            .collect::<HashSet<_>>()
            .len();
        if score > best_score {
            best_score = score;
            best = i;
        }
    }
    let len = |s: &str| s.chars().count();
    if len(lines[best]) >= max_chars {
        return cut_around(lines[best], query_tokens, max_chars);
    }
    let (mut lo, mut hi) = (best, best + 1);
    let mut total = len(lines[best]);
    loop {
        let mut grew = false;
        if hi < lines.len() && total + 1 + len(lines[hi]) <= max_chars {
            total += 1 + len(lines[hi]);
            hi += 1;
            grew = true;
        }
        if lo > 0 && total + 1 + len(lines[lo - 1]) <= max_chars {
            total += 1 + len(lines[lo - 1]);
            lo -= 1;
            grew = true;
        }
        if !grew {
            break;
        }
    }
    lines[lo..hi].join("\n")
}

/// `max_chars` of one long line (a paragraph without line breaks): the
/// stretch holding the most different query words, with some of what
/// comes before. The first match alone would do for one word, but a
/// common word early in a paragraph would hide the sentence that holds
/// the others.
fn cut_around(line: &str, query_tokens: &[String], max_chars: usize) -> String {
    let lower = line.to_lowercase();
    // Every match of every query word: (char position, which word).
    // Lower-casing can change byte lengths; positions are counted in chars.
    let mut found: Vec<(usize, usize)> = Vec::new();
    for (k, t) in query_tokens.iter().enumerate() {
        if t.is_empty() {
            continue;
        }
        for (byte, _) in lower.match_indices(t.as_str()) {
            let at = lower.get(..byte).map_or(0, |s| s.chars().count());
            found.push((at, k));
        }
    }
    found.sort_unstable();
    // A window over the matches no wider than most of the snippet (the
    // rest is context): the one with the most different words, earliest
    // first on a tie.
    let reach = max_chars - max_chars / 4;
    let mut counts = vec![0usize; query_tokens.len()];
    let (mut distinct, mut lo) = (0usize, 0usize);
    let mut best: Option<(usize, usize, usize)> = None;
    for hi in 0..found.len() {
        let k = found[hi].1;
        counts[k] += 1;
        if counts[k] == 1 {
            distinct += 1;
        }
        while found[hi].0 - found[lo].0 > reach {
            let gone = found[lo].1;
            counts[gone] -= 1;
            if counts[gone] == 0 {
                distinct -= 1;
            }
            lo += 1;
        }
        if best.is_none_or(|(n, ..)| distinct > n) {
            best = Some((distinct, found[lo].0, found[hi].0));
        }
    }
    let start = best.map_or(0, |(_, first, last)| {
        first.saturating_sub((max_chars - (last - first).min(max_chars)) / 3)
    });
    line.chars().skip(start).take(max_chars).collect()
}

#[cfg(test)]
#[path = "text_tests.rs"]
mod tests;
