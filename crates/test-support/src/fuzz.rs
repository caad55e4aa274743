//! A mutational fuzzer that runs inside `cargo test` on stable Rust.
//!
//! Each target is a function of bytes. Inputs grow from seeds (real files,
//! real requests) by stacked mutations that matter for text parsers: bytes
//! flipped, characters of every UTF-8 width inserted at any byte offset
//! (so a byte-offset slice that lands inside a character is found), ranges
//! deleted or repeated (deep nesting, long lines), dictionary tokens
//! (`---`, `[09:00]`, `1e30`, …) and splices of two inputs. A target returns
//! a fingerprint of what the input did (which branch, which error); inputs
//! with a new fingerprint join the corpus, so the search keeps going deeper
//! without coverage instrumentation.
//!
//! A panic fails the test with the input, shrunk, written as a Rust byte
//! string, and the seed that reproduces the run. The budget comes from the
//! environment, so `cargo test` runs a quick pass and CI or a long run asks
//! for more:
//!
//! - `MNEMO_FUZZ_EXECS`: executions per target (default 2,000);
//! - `MNEMO_FUZZ_SECS`: seconds per target (overrides the count when set);
//! - `MNEMO_FUZZ_SEED`: the generator's seed (default: fixed per target, so
//!   a plain `cargo test` is reproducible).

use std::collections::HashSet;
use std::panic::{self, AssertUnwindSafe};
use std::time::{Duration, Instant};

use crate::random::XorShift;

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FuzzReport {
    /// The target's name.
    pub name: String,
    /// Inputs run.
    pub executions: u64,
    /// Distinct fingerprints seen.
    pub behaviours: usize,
    /// Inputs kept in the corpus at the end.
    pub corpus: usize,
    /// Wall time.
    pub elapsed: Duration,
    /// The generator's seed.
    pub seed: u64,
}

/// A fuzz target under construction: name, seeds, dictionary, budget.
#[derive(Debug, Clone)]
pub struct Fuzz {
    name: String,
    seeds: Vec<Vec<u8>>,
    dict: Vec<Vec<u8>>,
    max_len: usize,
}

/// Characters inserted at random byte offsets: every UTF-8 width, a
/// combining mark, a right-to-left letter, a BOM, NUL, controls and line
/// breaks of several kinds.
const CHARS: &[&str] = &[
    "é",
    "ü",
    "日",
    "本",
    "語",
    "😀",
    "\u{0301}",
    "\u{05D0}",
    "\u{FEFF}",
    "\0",
    "\u{7f}",
    "\r",
    "\n",
    "\r\n",
    "\t",
    "\u{2028}",
    "\u{85}",
    "ß",
    "İ",
    "ﬃ",
    "\u{10FFFF}",
];

/// Tokens every target gets besides its own dictionary.
const COMMON: &[&str] = &[
    "\"",
    "'",
    "\\",
    "[",
    "]",
    "{",
    "}",
    ":",
    ",",
    "#",
    "-",
    "- ",
    "*",
    "`",
    "```",
    "---",
    "...",
    "0",
    "-1",
    "1e30",
    "1e-30",
    "NaN",
    "inf",
    "18446744073709551616",
    "null",
    "true",
    "%",
    "%2F",
    "..",
    "/",
    "~",
    " ",
    "  ",
];

impl Fuzz {
    /// A target named `name` (used in messages and for the default seed).
    pub fn new(name: impl Into<String>) -> Self {
        Fuzz {
            name: name.into(),
            seeds: Vec::new(),
            dict: COMMON.iter().map(|t| t.as_bytes().to_vec()).collect(),
            max_len: 64 * 1024,
        }
    }

    /// Starting inputs: real examples of what the target reads.
    pub fn seeds<I, S>(mut self, seeds: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        self.seeds
            .extend(seeds.into_iter().map(|s| s.as_ref().to_vec()));
        self
    }

    /// Tokens of the target's format, inserted and swapped in by mutations.
    pub fn dict<I, S>(mut self, tokens: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<[u8]>,
    {
        self.dict
            .extend(tokens.into_iter().map(|s| s.as_ref().to_vec()));
        self
    }

    /// Longest input generated (64 KiB unless set).
    pub fn max_len(mut self, n: usize) -> Self {
        self.max_len = n.max(1);
        self
    }

    /// Runs `target` within the budget (see the module documentation) and
    /// panics with the shrunk input when it panics. `target` returns a
    /// fingerprint of what the input did.
    pub fn run(self, mut target: impl FnMut(&[u8]) -> u64) -> FuzzReport {
        let budget = Budget::from_env();
        let seed = env_u64("MNEMO_FUZZ_SEED").unwrap_or_else(|| name_seed(&self.name));
        let mut rng = XorShift::new(seed);
        let mut corpus: Vec<Vec<u8>> = if self.seeds.is_empty() {
            vec![Vec::new()]
        } else {
            self.seeds.clone()
        };
        let mut seen: HashSet<u64> = HashSet::new();
        let started = Instant::now();
        let mut executions = 0u64;
        // The seeds run first, as they are.
        let mut queue: Vec<Vec<u8>> = corpus.clone();
        loop {
            if budget.done(executions, started) && queue.is_empty() {
                break;
            }
            let input = match queue.pop() {
                Some(i) => i,
                None => self.mutate(&corpus, &mut rng),
            };
            executions += 1;
            match panic::catch_unwind(AssertUnwindSafe(|| target(&input))) {
                Ok(fp) => {
                    if seen.insert(fp) && corpus.len() < 4096 {
                        corpus.push(input);
                    } else if rng.below(64) == 0 && corpus.len() < 4096 {
                        // Some plain inputs join too, so mutations stack.
                        corpus.push(input);
                    }
                }
                Err(_) => {
                    let small = shrink(&input, &mut target);
                    panic!(
                        "fuzz target `{}` panicked after {executions} executions (MNEMO_FUZZ_SEED={seed}).\n\
                         Smallest input found ({} bytes):\n{}\nOriginal input ({} bytes):\n{}",
                        self.name,
                        small.len(),
                        rust_bytes(&small),
                        input.len(),
                        rust_bytes(&input)
                    );
                }
            }
        }
        let report = FuzzReport {
            name: self.name,
            executions,
            behaviours: seen.len(),
            corpus: corpus.len(),
            elapsed: started.elapsed(),
            seed,
        };
        eprintln!(
            "fuzz {}: {} executions in {:.1} s, {} behaviours, corpus {}, 0 crashes (seed {})",
            report.name,
            report.executions,
            report.elapsed.as_secs_f64(),
            report.behaviours,
            report.corpus,
            report.seed
        );
        report
    }

    fn mutate(&self, corpus: &[Vec<u8>], rng: &mut XorShift) -> Vec<u8> {
        let mut data = corpus
            .get(rng.below(corpus.len()))
            .cloned()
            .unwrap_or_default();
        let rounds = 1 + rng.below(8);
        for _ in 0..rounds {
            self.mutate_once(&mut data, corpus, rng);
        }
        data.truncate(self.max_len);
        data
    }

    fn mutate_once(&self, data: &mut Vec<u8>, corpus: &[Vec<u8>], rng: &mut XorShift) {
        let at = |rng: &mut XorShift, data: &Vec<u8>| rng.below(data.len() + 1);
        match rng.below(11) {
            0 if !data.is_empty() => {
                let i = rng.below(data.len());
                if let Some(b) = data.get_mut(i) {
                    *b ^= 1 << rng.below(8);
                }
            }
            1 if !data.is_empty() => {
                let i = rng.below(data.len());
                if let Some(b) = data.get_mut(i) {
                    *b = *b"\0\xff\n\"[]{}:-# \\\xc3\xa9"
                        .get(rng.below(16))
                        .unwrap_or(&0);
                }
            }
            2 | 3 => {
                let i = at(rng, data);
                let c = CHARS.get(rng.below(CHARS.len())).copied().unwrap_or("é");
                splice_in(data, i, c.as_bytes());
            }
            4 if !data.is_empty() => {
                let i = rng.below(data.len());
                let n = 1 + rng.below((data.len() - i).min(64));
                data.drain(i..i + n);
            }
            5 if !data.is_empty() => {
                // Repeat a range: long lines, deep nesting.
                let i = rng.below(data.len());
                let n = 1 + rng.below((data.len() - i).min(16));
                let piece: Vec<u8> = data.get(i..i + n).map(<[u8]>::to_vec).unwrap_or_default();
                let most = if rng.below(8) == 0 { 2000 } else { 8 };
                let times = 1 + rng.below(most);
                let mut rep = Vec::with_capacity(piece.len() * times);
                for _ in 0..times {
                    rep.extend_from_slice(&piece);
                }
                splice_in(data, i, &rep);
            }
            6 | 7 => {
                let i = at(rng, data);
                if let Some(tok) = self.dict.get(rng.below(self.dict.len())) {
                    splice_in(data, i, tok);
                }
            }
            8 if !corpus.is_empty() => {
                // Splice: the head of this input, the tail of another.
                if let Some(other) = corpus.get(rng.below(corpus.len())) {
                    let cut = at(rng, data);
                    let from = rng.below(other.len() + 1);
                    data.truncate(cut);
                    data.extend_from_slice(other.get(from..).unwrap_or_default());
                }
            }
            9 if !data.is_empty() => {
                let n = rng.below(data.len());
                data.truncate(n);
            }
            _ => {
                // Replace a run of digits or letters with a token.
                if let Some(tok) = self.dict.get(rng.below(self.dict.len())) {
                    let i = at(rng, data);
                    let end = data
                        .iter()
                        .skip(i)
                        .position(|b| !b.is_ascii_alphanumeric())
                        .map_or(data.len(), |p| i + p);
                    data.splice(i..end, tok.iter().copied());
                }
            }
        }
    }
}

fn splice_in(data: &mut Vec<u8>, at: usize, piece: &[u8]) {
    let at = at.min(data.len());
    data.splice(at..at, piece.iter().copied());
}

/// Removes ranges while the input still panics (bounded), so the report
/// shows what matters.
fn shrink(input: &[u8], target: &mut impl FnMut(&[u8]) -> u64) -> Vec<u8> {
    let mut best = input.to_vec();
    let mut tries = 0;
    let mut chunk = best.len().div_ceil(2).max(1);
    while chunk >= 1 && tries < 2000 {
        let mut i = 0;
        let mut progressed = false;
        while i < best.len() && tries < 2000 {
            let mut cand = best.clone();
            let end = (i + chunk).min(cand.len());
            cand.drain(i..end);
            tries += 1;
            if panic::catch_unwind(AssertUnwindSafe(|| target(&cand))).is_err() {
                best = cand;
                progressed = true;
            } else {
                i += chunk;
            }
        }
        if !progressed {
            if chunk == 1 {
                break;
            }
            chunk /= 2;
        }
    }
    best
}

/// `bytes` as a Rust byte string literal.
fn rust_bytes(bytes: &[u8]) -> String {
    let shown: String = bytes
        .iter()
        .take(4096)
        .flat_map(|b| std::ascii::escape_default(*b))
        .map(char::from)
        .collect();
    if bytes.len() > 4096 {
        format!("b\"{shown}\" (… {} more bytes)", bytes.len() - 4096)
    } else {
        format!("b\"{shown}\"")
    }
}

/// Search queries the query-text targets start from (mnemo-index's
/// tokens and snippets, mnemo-index-sqlite's FTS5 builder): identifiers,
/// dates, FTS5's own syntax, Chinese, and a question with no content word.
pub const QUERY_SEEDS: [&str; 6] = [
    "where does the deploy key live?",
    "ERR-4711 in v2.3.1-rc",
    "what did we decide on 3 June 2023?",
    "\"quoted\" AND OR NOT NEAR(a b) col:x ^start *",
    "东京的会议 我们什么时候去",
    "who are you?",
];

/// A fingerprint of any value's `Debug` text, for targets whose outcome is
/// easiest to describe that way.
pub fn fingerprint(value: &impl std::fmt::Debug) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{value:?}").hash(&mut h);
    h.finish()
}

/// Bytes as text the way a reader of a file would see them (invalid UTF-8
/// replaced), so text targets also get the odd bytes.
pub fn text(data: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(data)
}

enum Budget {
    Execs(u64),
    Time(Duration),
}

impl Budget {
    fn from_env() -> Self {
        if let Some(secs) = std::env::var("MNEMO_FUZZ_SECS")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
        {
            return Budget::Time(Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX));
        }
        Budget::Execs(env_u64("MNEMO_FUZZ_EXECS").unwrap_or(2_000))
    }

    fn done(&self, executions: u64, started: Instant) -> bool {
        match self {
            Budget::Execs(n) => executions >= *n,
            Budget::Time(d) => started.elapsed() >= *d,
        }
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name)
        .ok()?
        .trim()
        .replace('_', "")
        .parse()
        .ok()
}

fn name_seed(name: &str) -> u64 {
    // FNV-1a: stable across runs and Rust versions (unlike DefaultHasher).
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The driver finds a byte-offset slice inside a character from an
    /// ASCII seed, and reports it shrunk.
    #[test]
    fn finds_a_slice_inside_a_character() {
        let found = std::panic::catch_unwind(|| {
            Fuzz::new("self-test").seeds(["[09:00] text"]).run(|data| {
                let s = text(data);
                if s.len() > 8 && s.starts_with('[') {
                    let _ = &s[..8];
                }
                0
            })
        });
        let msg = match found {
            Err(e) => e.downcast_ref::<String>().cloned().unwrap_or_default(),
            Ok(r) => panic!("no panic found in {} executions", r.executions),
        };
        assert!(msg.contains("Smallest input found"), "{msg}");
    }

    #[test]
    fn runs_the_budget_and_keeps_new_behaviours() {
        let r = Fuzz::new("count")
            .seeds(["a", "bb"])
            .run(|data| data.len().min(50) as u64);
        assert!(r.executions >= 2_000);
        assert!(r.behaviours > 10, "{r:?}");
    }
}
