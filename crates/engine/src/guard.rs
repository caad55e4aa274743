//! What is not memory. A small model asked to write memory often hands
//! back its input instead: the excerpt's messages copied (`**User:** …`,
//! `[2026-12-05 10:00] USER: …`, or a message word for word), sentences
//! of mnemo's own instructions ("The conversation has been compacted."),
//! or the fact lines of its prompt with their ids and dates (`Lives in
//! Berlin (f2; since 2026-12-05)`). This module recognises them with small
//! pure functions that every write path can share:
//!
//! - [`is_transcript_line`]: a line in the shape of a transcript (a role
//!   marker such as `**User:**`, `User:`, `USER:`, `[2026-12-05 10:00]
//!   USER:`);
//! - [`is_copy_of`]: such a line, or one that is one of the messages (or
//!   one of their sentences) nearly word for word;
//! - [`echoes_instructions`] and [`echoes_text`]: a line every content
//!   word of which is in one sentence of mnemo's prompts (or of a given
//!   prompt);
//! - [`strip_fact_meta`]: a fact's text without the `(f2; since …)` its
//!   list item carries.
//!
//! Consolidation in `memory_md` mode runs the model's MEMORY.md through
//! [`screen_update`]: new lines that copy the messages or echo the
//! instructions are dropped and counted, and an answer made mostly of them
//! is refused as a bad answer (one failed run, the cursor stays). The
//! flush drops the items that echo its instructions before they reach the
//! daily log.

use std::collections::HashSet;
use std::sync::OnceLock;

use mnemo_core::Message;

use crate::merge::line_key;
use crate::templates;

/// A message (or sentence) needs this many distinct words before a line
/// holding nearly all of them counts as its copy: "Thanks!" or "I live in
/// Berlin" may well be said in a memory too.
pub const MIN_COPY_WORDS: usize = 5;

/// The share of a message's (or sentence's) words a line must hold to be
/// its copy.
pub const COPY_SHARE: f64 = 0.8;

/// The share of a copy's own words that must come from the message (or
/// sentence) it copies: "The user's preferred airline is Lufthansa" holds
/// most of "My preferred airline is Lufthansa" but says it of the user, and
/// is memory.
pub const LINE_SHARE: f64 = 0.9;

/// A line echoes an instruction when it has at least this many content
/// words and all of them are in one sentence of the instructions.
pub const MIN_ECHO_WORDS: usize = 2;

/// The roles a transcript line is marked with.
const ROLES: &[&str] = &["user", "assistant", "system", "tool", "human"];

/// Words that say nothing on their own, left out when a line is compared
/// with the instructions.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "being",
    "but", "by", "can", "could", "did", "do", "does", "each", "every", "for", "from", "had", "has",
    "have", "he", "her", "here", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just",
    "may", "me", "might", "must", "my", "no", "not", "now", "of", "on", "only", "or", "our", "out",
    "she", "should", "so", "some", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "up", "very", "was", "we", "were", "what", "when",
    "where", "which", "who", "will", "with", "would", "you", "your",
];

/// The text of a list item: without its bullet (`- `, `* `, `+ `, `• `,
/// `1. `, `1) `) or quote marker.
fn item_text(line: &str) -> &str {
    let t = line.trim();
    for b in ["- ", "* ", "+ ", "• ", "> "] {
        if let Some(rest) = t.strip_prefix(b) {
            return rest.trim_start();
        }
    }
    if let Some((n, rest)) = t.split_once(['.', ')']) {
        if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) && rest.starts_with(' ') {
            return rest.trim_start();
        }
    }
    t
}

/// True for a fact id: `f12`, or `h` and a hash (`h3fa2c1`) for a line a
/// person wrote.
fn is_fact_id(s: &str) -> bool {
    if let Some(d) = s.strip_prefix('f') {
        return !d.is_empty() && d.chars().all(|c| c.is_ascii_digit());
    }
    if let Some(h) = s.strip_prefix('h') {
        return h.len() >= 4 && h.chars().all(|c| c.is_ascii_hexdigit());
    }
    false
}

/// True for the inside of a fact's metadata: `f2`, `f2; since
/// 2026-12-05; …`, `since 2026-12-05`, `superseded by f3`, `retracted`.
fn is_fact_meta(inner: &str) -> bool {
    let parts: Vec<&str> = inner.split(';').map(str::trim).collect();
    let first = parts.first().copied().unwrap_or("");
    let dated = ["since ", "until ", "recorded "].iter().any(|p| {
        first
            .strip_prefix(p)
            .is_some_and(|d| d.starts_with(|c: char| c.is_ascii_digit()))
    });
    parts.iter().any(|p| is_fact_id(p))
        || dated
        || first.strip_prefix("superseded by ").is_some_and(is_fact_id)
        || first == "retracted"
        || first.starts_with("retracted by ")
}

/// A fact's text without the metadata its list item carries: every
/// trailing `(f2)`, `(f2; since 2026-12-05; …)` or `(since 2026-12-05)`,
/// and the strike-through of an ended one. `Rui is vegetarian now (f3)
/// (f6; since 2026-12-05)` gives `Rui is vegetarian now`; a parenthesis
/// that is not metadata (`near the river (by the bridge)`) stays.
pub fn strip_fact_meta(text: &str) -> String {
    let mut t = text.trim();
    while let Some(body) = t.strip_suffix(')') {
        let Some(open) = body.rfind('(') else { break };
        if !is_fact_meta(&body[open + 1..]) {
            break;
        }
        t = body[..open].trim_end();
    }
    let t = t
        .strip_prefix("~~")
        .and_then(|x| x.strip_suffix("~~"))
        .unwrap_or(t);
    t.trim().to_string()
}

/// True when `line` is in the shape of a transcript: a role marker
/// (`User:`, `**User:**`, `**Assistant**:`, `USER:`, `TOOL read_file:`,
/// `ASSISTANT [tools: memory_search]:`), after a list bullet and a
/// timestamp such as `[2026-12-05 10:00]` if any, then the message. What
/// the user said belongs in the session log, not in memory: a memory line
/// says what holds ("Rui lives in Berlin"), not who said what.
pub fn is_transcript_line(line: &str) -> bool {
    let mut t = item_text(line);
    if let Some(rest) = t.strip_prefix('[') {
        if let Some(end) = rest.find(']') {
            if rest.starts_with(|c: char| c.is_ascii_digit() || c == '?') {
                t = rest[end + 1..].trim_start();
            }
        }
    }
    let t = t.trim_start_matches(['*', '_']);
    let len: usize = t
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .map(char::len_utf8)
        .sum();
    let role = &t[..len];
    if !ROLES.iter().any(|r| r.eq_ignore_ascii_case(role)) {
        return false;
    }
    let mut rest = t[len..].trim_start_matches(['*', '_']);
    if let Some(tools) = rest.strip_prefix(" [tools:") {
        match tools.find(']') {
            Some(end) => rest = &tools[end + 1..],
            None => return false,
        }
    } else if role.eq_ignore_ascii_case("tool") {
        // `TOOL read_file: …`, as the excerpt names a tool's result.
        if let Some(name) = rest.strip_prefix(' ') {
            let end = name.find([':', ' ']).unwrap_or(name.len());
            rest = &name[end..];
        }
    }
    rest.trim_start_matches(['*', '_'])
        .strip_prefix(':')
        .is_some_and(|said| !said.trim_matches(['*', '_', ' ']).is_empty())
}

use mnemo_core::text::is_cjk;

/// The distinct words of `text`, lower-cased; a run of CJK characters
/// gives its pairs of neighbours (a lone one itself).
fn word_set(text: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    for run in text.split(|c: char| !c.is_alphanumeric()) {
        let mut word = String::new();
        let mut cjk: Vec<char> = Vec::new();
        let flush_cjk = |cjk: &mut Vec<char>, out: &mut HashSet<String>| {
            match cjk.len() {
                0 => {}
                1 => {
                    out.insert(cjk[0].to_string());
                }
                _ => out.extend(cjk.windows(2).map(|w| w.iter().collect::<String>())),
            }
            cjk.clear();
        };
        for c in run.chars() {
            if is_cjk(c) {
                if !word.is_empty() {
                    out.insert(std::mem::take(&mut word));
                }
                cjk.push(c);
            } else {
                flush_cjk(&mut cjk, &mut out);
                word.extend(c.to_lowercase());
            }
        }
        flush_cjk(&mut cjk, &mut out);
        if !word.is_empty() {
            out.insert(word);
        }
    }
    out
}

/// The parts of a message a copy may be of: sentences, lines and (in
/// Chinese and Japanese, whose sentences run long) clauses.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split(['.', '!', '?', ';', '\n', '。', '！', '？', '；', '，'])
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// True when the words `piece` are those of `of` (which has at least
/// [`MIN_COPY_WORDS`]): at least [`COPY_SHARE`] of `of`'s, and of its own
/// at least [`LINE_SHARE`] from `of`.
fn copies(piece: &HashSet<String>, of: &HashSet<String>) -> bool {
    if of.len() < MIN_COPY_WORDS || piece.is_empty() {
        return false;
    }
    let shared = piece.intersection(of).count() as f64;
    shared >= COPY_SHARE * of.len() as f64 && shared >= LINE_SHARE * piece.len() as f64
}

/// True when `line` copies `messages` rather than saying what holds: a
/// transcript line ([`is_transcript_line`]), or a line that is one of the
/// messages or one of their sentences nearly word for word (of at least
/// [`MIN_COPY_WORDS`] words), or a line whose every sentence is. Fact
/// metadata (`(f2; …)`) is left out before comparing. "I live in Berlin
/// now, near the zoo." is a copy of that message; "The user lives in
/// Berlin" is not, nor "用户住在柏林" of "我住在柏林了".
pub fn is_copy_of(line: &str, messages: &[Message]) -> bool {
    if is_transcript_line(line) {
        return true;
    }
    let text = strip_fact_meta(item_text(line));
    let said: Vec<HashSet<String>> = messages
        .iter()
        .flat_map(|m| {
            let text = m.text();
            let mut parts: Vec<HashSet<String>> = sentences(&text).map(word_set).collect();
            parts.push(word_set(&text));
            parts
        })
        .filter(|p| p.len() >= MIN_COPY_WORDS)
        .collect();
    let copied = |piece: &HashSet<String>| said.iter().any(|s| copies(piece, s));
    if copied(&word_set(&text)) {
        return true;
    }
    let pieces: Vec<HashSet<String>> = sentences(&text)
        .map(word_set)
        .filter(|p| !p.is_empty())
        .collect();
    pieces.len() > 1 && pieces.iter().all(copied)
}

/// The content words of `text`: its words ([`word_set`]) less stopwords
/// and numbers, a plural `s` cut off, so "older turns" meets "Older turn".
fn content_words(text: &str) -> HashSet<String> {
    word_set(text)
        .into_iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()) && !w.chars().all(|c| c.is_ascii_digit()))
        .map(|w| match w.strip_suffix('s') {
            Some(stem) if w.len() > 3 && !stem.ends_with('s') => stem.to_string(),
            _ => w,
        })
        .collect()
}

/// The sentences of `text` as sets of content words (placeholders such as
/// `{{max_lines}}` left out).
fn instruction_sentences(text: &str) -> Vec<HashSet<String>> {
    let mut plain = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        plain.push_str(&rest[..start]);
        match rest[start..].find("}}") {
            Some(end) => rest = &rest[start + end + 2..],
            None => {
                rest = "";
            }
        }
    }
    plain.push_str(rest);
    plain
        .split(['.', '!', '?', ':', ';', '\n'])
        .map(content_words)
        .filter(|s| !s.is_empty())
        .collect()
}

/// The sentences of mnemo's instructions to the models that write memory:
/// consolidation, the flush, the compaction summary's and restoration's
/// messages (a flush reads them in its history), the agent's identity.
/// Not the fact extraction's prompt: its examples are facts ("The user
/// lives in Porto.") that a conversation may well say too.
fn mnemo_instructions() -> &'static [HashSet<String>] {
    static SENTENCES: OnceLock<Vec<HashSet<String>>> = OnceLock::new();
    SENTENCES.get_or_init(|| {
        [
            templates::CONSOLIDATION_PROMPT,
            templates::CONSOLIDATION_USER,
            templates::FLUSH_PROMPT,
            templates::FLUSH_USER,
            templates::SUMMARY_MESSAGE,
            templates::RESTORE_MESSAGE,
            templates::IDENTITY,
        ]
        .iter()
        .flat_map(|t| instruction_sentences(t))
        .collect()
    })
}

fn echo_of(line: &str, sentences: &[HashSet<String>]) -> bool {
    let words = content_words(&strip_fact_meta(item_text(line)));
    words.len() >= MIN_ECHO_WORDS && sentences.iter().any(|s| words.is_subset(s))
}

/// True when `line` repeats mnemo's own instructions instead of saying
/// anything about the conversation: it has at least [`MIN_ECHO_WORDS`]
/// content words and all of them are in one sentence of mnemo's prompts
/// ("The conversation has been compacted.", "Older turns will be replaced
/// by a summary", "Save the durable memories of this conversation now").
pub fn echoes_instructions(line: &str) -> bool {
    echo_of(line, mnemo_instructions())
}

/// [`echoes_instructions`] against the sentences of `instructions` (a
/// prompt as it was sent, with its filled-in parts).
pub fn echoes_text(line: &str, instructions: &str) -> bool {
    echo_of(line, &instruction_sentences(instructions))
}

/// A model's MEMORY.md with what is not memory taken out
/// ([`screen_update`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screened {
    /// The update without those lines, the fact metadata of the others
    /// stripped.
    pub text: String,
    /// Lines of the update that are not in MEMORY.md (headings and blank
    /// lines aside).
    pub new_lines: usize,
    /// New lines that copied the messages ([`is_copy_of`]).
    pub copied: usize,
    /// New lines that echoed mnemo's instructions ([`echoes_instructions`]).
    pub echoed: usize,
}

impl Screened {
    /// Why the whole answer is refused: most of its new lines copied the
    /// messages or echoed the instructions. `None` when it is memory.
    pub fn refusal(&self) -> Option<String> {
        let junk = self.copied + self.echoed;
        (junk > 0 && junk * 2 > self.new_lines).then(|| {
            format!(
                "save_memory: {junk} of the {} new lines of its MEMORY.md are not memory \
                 ({} copy the conversation's messages, as `**User:** …` lines or word for word; \
                 {} repeat mnemo's instructions): a transcript is not memory, and the messages \
                 stay in the session log",
                self.new_lines, self.copied, self.echoed
            )
        })
    }
}

/// Screens a model's complete new MEMORY.md (`update`) against MEMORY.md
/// as the model was shown it (`known`) and the excerpt's `messages`: the
/// lines it adds that copy a message or echo mnemo's instructions are
/// taken out and counted, and the fact metadata (`(f2; since …)`) of the
/// others is stripped. Lines that were there before, headings and blank
/// lines pass as they are: only what the model wrote now is judged.
pub fn screen_update(known: &str, update: &str, messages: &[Message]) -> Screened {
    let known: HashSet<String> = known.lines().filter_map(line_key).collect();
    let mut out = Screened {
        text: String::with_capacity(update.len()),
        new_lines: 0,
        copied: 0,
        echoed: 0,
    };
    for line in update.lines() {
        let kept = match line_key(line) {
            Some(key) if !known.contains(&key) => {
                out.new_lines += 1;
                if echoes_instructions(line) {
                    out.echoed += 1;
                    None
                } else if is_copy_of(line, messages) {
                    out.copied += 1;
                    None
                } else {
                    Some(without_meta(line))
                }
            }
            _ => Some(line.to_string()),
        };
        if let Some(l) = kept {
            out.text.push_str(&l);
            out.text.push('\n');
        }
    }
    out
}

/// `line` with its item's fact metadata stripped, its bullet and indent
/// kept.
fn without_meta(line: &str) -> String {
    let text = item_text(line);
    let stripped = strip_fact_meta(text);
    if stripped == text.trim() || stripped.is_empty() {
        return line.to_string();
    }
    let at = line.len() - line.trim_start().len() + (line.trim().len() - text.len());
    format!("{}{stripped}", &line[..at])
}

#[cfg(test)]
#[path = "guard_tests.rs"]
mod tests;
