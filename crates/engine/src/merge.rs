//! The merge guard of consolidation. The model answers with a complete new
//! MEMORY.md, but it may only drop lines that consolidation itself wrote
//! and that it was shown. Everything else is kept or re-added where it
//! was: the index lines of typed memories, sections written with
//! `memory_write`, lines people typed, and lines another writer added
//! while the model was thinking; lines another writer removed meanwhile
//! stay removed. An update that would drop most of
//! consolidation's own lines (a model that answers with the new facts
//! only) is refused: the old lines stay and the new ones are added.
//!
//! Which lines consolidation wrote is kept in
//! `.mnemo/engine/memory-lines.json`, as the SHA-256 of each line's key
//! ([`LineSet`]), never its text: a forgotten fact's words must not
//! outlive it there. Without the file every line counts as written by
//! someone else, so nothing is ever dropped. Each change is
//! also recorded in `memory/HISTORY.md` as a unified diff
//! ([`unified_diff`]), so any consolidation can be undone
//! ([`reverse_diff`], or `patch -R`).

use std::collections::HashSet;

use sha2::Digest;

/// What the guard compares a line by: `None` for blank lines and headings
/// (structure, not facts); else the text without its bullet, lower-cased.
pub fn line_key(line: &str) -> Option<String> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        return None;
    }
    Some(t.trim_start_matches(['-', '*', ' ']).trim().to_lowercase())
}

/// The MEMORY.md index line of a typed memory: `- [Name](memory/….md): …`.
pub fn is_index_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("- [") && t.contains("](memory/")
}

/// A set of line keys ([`line_key`]) held as their SHA-256 digests (hex):
/// which lines consolidation wrote is asked of lines at hand, so their
/// text never needs to be stored, and a line forgotten since (issue 43
/// N7) leaves only a digest behind, matching no line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LineSet(HashSet<String>);

impl LineSet {
    /// The digest a key is held as.
    pub fn digest(key: &str) -> String {
        hex::encode(sha2::Sha256::digest(key.as_bytes()))
    }

    /// A set of digests as stored ([`Self::digests`]).
    pub fn from_digests(digests: impl IntoIterator<Item = String>) -> Self {
        Self(digests.into_iter().collect())
    }

    /// True when the line key `key` is in the set.
    pub fn contains(&self, key: &str) -> bool {
        self.0.contains(&Self::digest(key))
    }

    /// Adds the line key `key`.
    pub fn insert(&mut self, key: &str) -> bool {
        self.0.insert(Self::digest(key))
    }

    /// The digests, sorted (a stable file).
    pub fn digests(&self) -> Vec<String> {
        let mut v: Vec<String> = self.0.iter().cloned().collect();
        v.sort();
        v
    }

    /// How many keys the set holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when the set holds no key.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl FromIterator<String> for LineSet {
    /// A set of the line keys given (not digests).
    fn from_iter<I: IntoIterator<Item = String>>(keys: I) -> Self {
        Self(keys.into_iter().map(|k| Self::digest(&k)).collect())
    }
}

impl<'a> FromIterator<&'a str> for LineSet {
    /// A set of the line keys given (not digests).
    fn from_iter<I: IntoIterator<Item = &'a str>>(keys: I) -> Self {
        Self(keys.into_iter().map(Self::digest).collect())
    }
}

fn keys(text: &str) -> HashSet<String> {
    text.lines().filter_map(line_key).collect()
}

/// The three texts a merge needs.
#[derive(Debug, Clone, Copy)]
pub struct MergeInput<'a> {
    /// MEMORY.md as the model was shown it.
    pub seen: &'a str,
    /// MEMORY.md now, read under the memory lock.
    pub current: &'a str,
    /// The model's complete new MEMORY.md.
    pub update: &'a str,
    /// Keys ([`line_key`]) of the lines earlier consolidations wrote.
    pub consolidated: &'a LineSet,
}

/// The merged MEMORY.md and what the guard did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merged {
    /// The text to write (before the line and byte caps).
    pub text: String,
    /// Lines the model left out that were re-added.
    pub kept: usize,
    /// Consolidation's own earlier lines the model left out (dropped).
    pub dropped: Vec<String>,
    /// True when the update was refused: every line stayed and the
    /// update's new lines were added.
    pub refused: bool,
    /// Keys of the lines of `text` that consolidation wrote, for the next
    /// merge.
    pub consolidated: LineSet,
}

/// An update may drop at most this share of consolidation's own lines,
/// however few there are. A MEMORY.md of one to three such lines is the
/// one a model answering with the new fact only would empty round after
/// round (issue 43 N15), so it is judged too: dropping its only line is
/// refused, and the old line stays beside the new one until a later round
/// (with two lines, one may go) or a person removes it. Keeping a stale
/// line costs less than losing a true one.
pub const MAX_DROP_SHARE: f64 = 0.5;

/// Merges the model's update into MEMORY.md (see the module docs).
pub fn merge(input: MergeInput<'_>) -> Merged {
    let MergeInput {
        seen,
        current,
        update,
        consolidated,
    } = input;
    let seen_keys = keys(seen);
    let current_keys = keys(current);
    // What another writer removed while the model thought (a forgotten
    // memory's index line, a replaced section's old body) stays removed.
    let removed: HashSet<&String> = seen_keys.difference(&current_keys).collect();
    let update: String = update
        .lines()
        .filter(|l| line_key(l).is_none_or(|k| !removed.contains(&k)))
        .map(|l| format!("{l}\n"))
        .collect();
    let update = update.as_str();
    let update_keys = keys(update);
    let protected = |line: &str| match line_key(line) {
        None => false,
        Some(k) => is_index_line(line) || !consolidated.contains(&k) || !seen_keys.contains(&k),
    };
    let droppable: Vec<&str> = current
        .lines()
        .filter(|l| line_key(l).is_some() && !protected(l))
        .collect();
    let dropped: Vec<String> = droppable
        .iter()
        .filter(|l| line_key(l).is_some_and(|k| !update_keys.contains(&k)))
        .map(|l| l.trim().to_string())
        .collect();
    let wipes = update_keys.is_empty() && !current_keys.is_empty();
    let refused = wipes
        || (!droppable.is_empty()
            && dropped.len() as f64 > droppable.len() as f64 * MAX_DROP_SHARE);
    let (text, kept, dropped) = if refused {
        let added = insert_missing(current, update, &|l| {
            line_key(l).is_some_and(|k| !current_keys.contains(&k))
        });
        (added.0, 0, Vec::new())
    } else {
        let (text, kept) = insert_missing(update, current, &|l| {
            protected(l) && line_key(l).is_some_and(|k| !update_keys.contains(&k))
        });
        (text, kept, dropped)
    };
    // People's lines stay people's even when the model repeats them.
    let others: HashSet<String> = current
        .lines()
        .filter(|l| !is_index_line(l))
        .filter_map(line_key)
        .filter(|k| !consolidated.contains(k))
        .collect();
    let now_consolidated = text
        .lines()
        .filter(|l| !is_index_line(l))
        .filter_map(line_key)
        .filter(|k| consolidated.contains(k) || (update_keys.contains(k) && !others.contains(k)))
        .collect();
    Merged {
        text,
        kept,
        dropped,
        refused,
        consolidated: now_consolidated,
    }
}

fn same_line(a: &str, b: &str) -> bool {
    match (line_key(a), line_key(b)) {
        (Some(x), Some(y)) => x == y,
        (None, None) => {
            let (a, b) = (a.trim(), b.trim());
            !a.is_empty() && a.eq_ignore_ascii_case(b)
        }
        _ => false,
    }
}

fn is_heading(line: &str) -> bool {
    line.trim_start().starts_with('#')
}

/// `base` with the lines of `donor` that `wanted` picks inserted where they
/// stood in `donor`: after the nearest line of their section that `base`
/// holds (or under its heading); a section `base` lacks comes back whole at
/// the end. Returns the text and the number of lines inserted.
fn insert_missing(base: &str, donor: &str, wanted: &dyn Fn(&str) -> bool) -> (String, usize) {
    let donor: Vec<&str> = donor.lines().collect();
    let mut out: Vec<String> = base.lines().map(str::to_string).collect();
    let mut inserted = 0;
    for (i, line) in donor.iter().enumerate() {
        if line.trim().is_empty() || is_heading(line) || !wanted(line) {
            continue;
        }
        let mut at = None;
        let mut section = None;
        let mut first_in_section = true;
        for d in donor[..i].iter().rev().filter(|d| !d.trim().is_empty()) {
            if let Some(p) = out.iter().position(|o| same_line(o, d)) {
                at = Some(if is_heading(d) {
                    under_heading(&out, p, first_in_section)
                } else {
                    p + 1
                });
                break;
            }
            if is_heading(d) {
                section = Some(*d);
                break;
            }
            first_in_section = false;
        }
        match (at, section) {
            (Some(p), _) => out.insert(p, line.to_string()),
            (None, Some(heading)) => {
                while out.last().is_some_and(|l| l.trim().is_empty()) {
                    out.pop();
                }
                if !out.is_empty() {
                    out.push(String::new());
                }
                out.extend([heading.to_string(), String::new(), line.to_string()]);
            }
            (None, None) => out.insert(top_of(&out), line.to_string()),
        }
        inserted += 1;
    }
    (tidy(&out), inserted)
}

/// The lines as a Markdown text: one blank line before each heading, no
/// runs of blank lines, none at the end.
fn tidy(lines: &[String]) -> String {
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    for line in lines {
        let blank = line.trim().is_empty();
        if blank && out.last().is_none_or(|l| l.trim().is_empty()) {
            continue;
        }
        if is_heading(line) && out.last().is_some_and(|l| !l.trim().is_empty()) {
            out.push("");
        }
        out.push(line);
    }
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    let mut text = out.join("\n");
    text.push('\n');
    text
}

/// Where a line goes in the section under the heading at `p`: first when
/// it was first in its section, else last (its neighbours are gone).
fn under_heading(out: &[String], p: usize, first: bool) -> usize {
    if first {
        let mut q = p + 1;
        while out.get(q).is_some_and(|l| l.trim().is_empty()) {
            q += 1;
        }
        return q;
    }
    let mut end = out[p + 1..]
        .iter()
        .position(|l| is_heading(l))
        .map_or(out.len(), |q| p + 1 + q);
    while end > p + 1 && out[end - 1].trim().is_empty() {
        end -= 1;
    }
    end
}

/// Where a line without an anchor goes: after a leading `# title` (and the
/// blank line under it), else at the top.
fn top_of(lines: &[String]) -> usize {
    match lines.first() {
        Some(first) if first.starts_with("# ") => {
            if lines.get(1).is_some_and(|l| l.trim().is_empty()) {
                2
            } else {
                1
            }
        }
        _ => 0,
    }
}

/// A unified diff of `old` into `new` with no context lines (`diff -U0`),
/// headed `--- MEMORY.md` / `+++ MEMORY.md`; empty when they are equal.
/// It holds no blank line, so it stays one history entry.
pub fn unified_diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let mut out = String::new();
    for (si, i, sj, j) in changed_runs(&a, &b) {
        if out.is_empty() {
            out.push_str("--- MEMORY.md\n+++ MEMORY.md\n");
        }
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(si, i - si),
            range(sj, j - sj)
        ));
        for l in &a[si..i] {
            out.push_str(&format!("-{l}\n"));
        }
        for l in &b[sj..j] {
            out.push_str(&format!("+{l}\n"));
        }
    }
    out
}

/// The runs where `a` and `b` differ, as `(a_start, a_end, b_start,
/// b_end)`: a longest common subsequence of the lines between their
/// common prefix and suffix (or, past four million cells, that middle as
/// one run).
fn changed_runs(a: &[&str], b: &[&str]) -> Vec<(usize, usize, usize, usize)> {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (ma, mb) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    if ma.is_empty() && mb.is_empty() {
        return Vec::new();
    }
    if ma.len().saturating_mul(mb.len()) > 4_000_000 {
        return vec![(prefix, prefix + ma.len(), prefix, prefix + mb.len())];
    }
    let mut lcs = vec![vec![0u32; mb.len() + 1]; ma.len() + 1];
    for i in (0..ma.len()).rev() {
        for j in (0..mb.len()).rev() {
            lcs[i][j] = if ma[i] == mb[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut runs = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < ma.len() || j < mb.len() {
        if i < ma.len() && j < mb.len() && ma[i] == mb[j] {
            i += 1;
            j += 1;
            continue;
        }
        let (si, sj) = (i, j);
        while (i < ma.len() || j < mb.len()) && !(i < ma.len() && j < mb.len() && ma[i] == mb[j]) {
            if j < mb.len() && (i == ma.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
                j += 1;
            } else {
                i += 1;
            }
        }
        runs.push((prefix + si, prefix + i, prefix + sj, prefix + j));
    }
    runs
}

/// A hunk range as `diff` writes it: `start,len` (1-based; for an empty
/// range the line before it).
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        n => format!("{},{n}", start + 1),
    }
}

/// Undoes a change recorded by [`unified_diff`]: `new` (the text the diff
/// led to) back to the old text. Errors when `new` is not what the diff
/// led to (it changed since).
pub fn reverse_diff(new: &str, diff: &str) -> Result<String, String> {
    let lines: Vec<&str> = new.lines().collect();
    let mut out: Vec<String> = Vec::new();
    let mut next = 0; // next line of `new` not yet copied
    let mut hunks = diff.lines().peekable();
    while let Some(h) = hunks.next() {
        let Some(spec) = h.strip_prefix("@@ ") else {
            continue;
        };
        let plus = spec
            .split_whitespace()
            .find_map(|p| p.strip_prefix('+'))
            .ok_or_else(|| format!("bad hunk header {h:?}"))?;
        let (start, len) = parse_range(plus).ok_or_else(|| format!("bad hunk header {h:?}"))?;
        let begin = if len == 0 { start } else { start - 1 };
        if begin < next || begin > lines.len() {
            return Err(format!("hunk {h:?} does not fit the text"));
        }
        out.extend(lines[next..begin].iter().map(|l| l.to_string()));
        let mut removed = Vec::new();
        let mut added = Vec::new();
        while let Some(l) = hunks.peek() {
            if let Some(r) = l.strip_prefix('-') {
                removed.push(r.to_string());
            } else if let Some(a) = l.strip_prefix('+') {
                added.push(a);
            } else {
                break;
            }
            hunks.next();
        }
        if added.len() != len || lines.get(begin..begin + len) != Some(&added[..]) {
            return Err(format!(
                "the lines of hunk {h:?} are not in MEMORY.md any more: it changed since"
            ));
        }
        out.extend(removed);
        next = begin + len;
    }
    out.extend(lines[next.min(lines.len())..].iter().map(|l| l.to_string()));
    let mut text = out.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    Ok(text)
}

fn parse_range(s: &str) -> Option<(usize, usize)> {
    match s.split_once(',') {
        Some((a, b)) => Some((a.parse().ok()?, b.parse().ok()?)),
        None => Some((s.parse().ok()?, 1)),
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
