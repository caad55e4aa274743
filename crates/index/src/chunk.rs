//! Chunking: Markdown by lines (cut before headings where it can, overlap of
//! trailing lines, over-long lines split) and transcripts on message
//! boundaries, always within the embedding model's input limit.

// This module reads text a user or a model wrote: no byte-offset slicing
// or indexing that could land inside a character or past the end.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

use chrono::NaiveDate;

/// One chunk of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// First line, 1-based.
    pub start_line: usize,
    /// Last line, 1-based, inclusive.
    pub end_line: usize,
    /// The text (lines joined by `\n`).
    pub text: String,
    /// Message ordinals `(first, last)` for transcript chunks.
    pub messages: Option<(usize, usize)>,
    /// Where each message starts in `text`, for transcript chunks (empty
    /// for Markdown): search splits a chunk into message hits with them.
    pub parts: Vec<MessagePart>,
}

/// One message of a transcript chunk: its ordinal, its JSONL line and the
/// byte offset where its text starts in the chunk's text. A message runs to
/// the next part's offset (less the joining newline) or to the end. A
/// Markdown block ([`markdown_parts`]) uses the same form, its first line as
/// both `ordinal` and `line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessagePart {
    /// 0-based ordinal among the log's messages.
    pub ordinal: usize,
    /// 1-based line of the message in the JSONL file.
    pub line: usize,
    /// Byte offset of the message's first character in the chunk text.
    pub offset: usize,
    /// The day the message was written (its timestamp's date), when known.
    pub day: Option<NaiveDate>,
}

impl MessagePart {
    /// The text of part `i` of `parts` within `text`; empty when the offsets
    /// do not fit the text (a damaged record).
    pub fn text_of<'t>(parts: &[MessagePart], i: usize, text: &'t str) -> &'t str {
        let Some(p) = parts.get(i) else { return "" };
        let end = parts
            .get(i + 1)
            .map_or(text.len(), |n| n.offset.saturating_sub(1));
        text.get(p.offset..end.max(p.offset)).unwrap_or("")
    }

    /// `ordinal:line:offset[:YYYY-MM-DD]` entries joined by `,`, as the
    /// index stores them.
    pub fn encode(parts: &[MessagePart]) -> String {
        parts
            .iter()
            .map(|p| match p.day {
                Some(d) => format!("{}:{}:{}:{d}", p.ordinal, p.line, p.offset),
                None => format!("{}:{}:{}", p.ordinal, p.line, p.offset),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Reads [`MessagePart::encode`]'s form; anything malformed gives no
    /// parts (the chunk is then searched whole).
    pub fn decode(s: &str) -> Vec<MessagePart> {
        let parsed: Option<Vec<MessagePart>> = s
            .split(',')
            .filter(|e| !e.is_empty())
            .map(|e| {
                let mut it = e.split(':');
                let mut number = || it.next()?.parse::<usize>().ok();
                let (ordinal, line, offset) = (number()?, number()?, number()?);
                // Written before days were stored: none.
                let day = match it.next() {
                    Some(d) => Some(d.parse::<NaiveDate>().ok()?),
                    None => None,
                };
                Some(MessagePart {
                    ordinal,
                    line,
                    offset,
                    day,
                })
            })
            .collect();
        parsed.unwrap_or_default()
    }
}

/// Chunk size limits, in the embedding model's tokens.
pub struct ChunkLimits<'a> {
    /// Maximum tokens in one chunk (already capped by the model's limit).
    pub max_tokens: usize,
    /// Tokens of trailing lines repeated in the next chunk.
    pub overlap_tokens: usize,
    /// Token counter: the embedder's tokenizer, or an estimate.
    pub count: &'a dyn Fn(&str) -> usize,
}

/// Estimate used when the embedder cannot count: a CJK character is about one
/// word piece, other text about four characters per token.
pub fn estimate_tokens(text: &str) -> usize {
    let mut cjk = 0usize;
    let mut other = 0usize;
    for c in text.chars() {
        if crate::text::is_cjk(c) {
            cjk += 1;
        } else {
            other += 1;
        }
    }
    cjk + other.div_ceil(4)
}

#[derive(Debug, Clone)]
struct Piece {
    text: String,
    line: usize,
    msg: Option<usize>,
    day: Option<NaiveDate>,
    heading: bool,
    tokens: usize,
}

fn heading_flags(lines: &[&str]) -> Vec<bool> {
    let mut in_fence = false;
    lines
        .iter()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("```") || t.starts_with("~~~") {
                in_fence = !in_fence;
                return false;
            }
            !in_fence && is_heading(t)
        })
        .collect()
}

/// An ATX heading (`# Title`; `#hashtag` is not one), given the line
/// without its leading spaces.
fn is_heading(t: &str) -> bool {
    t.starts_with('#') && {
        let rest = t.trim_start_matches('#');
        rest.is_empty() || rest.starts_with(' ')
    }
}

/// Splits one over-long line into pieces within `max` tokens, at spaces when
/// there are any.
fn split_line(line: &str, max: usize, count: &dyn Fn(&str) -> usize) -> Vec<(String, usize)> {
    let mut atoms: Vec<String> = Vec::new();
    for word in line.split_inclusive(char::is_whitespace) {
        let chars: Vec<char> = word.chars().collect();
        for part in chars.chunks(24) {
            atoms.push(part.iter().collect());
        }
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut cur_tokens = 0usize;
    for atom in atoms {
        let t = count(&atom).max(1);
        if cur_tokens + t > max && !cur.is_empty() {
            out.push((std::mem::take(&mut cur), cur_tokens));
            cur_tokens = 0;
        }
        cur.push_str(&atom);
        cur_tokens += t;
    }
    if !cur.trim().is_empty() {
        out.push((cur, cur_tokens));
    }
    out
}

fn pieces_of(
    lines: &[(usize, Option<usize>, &str)],
    headings: &[bool],
    limits: &ChunkLimits<'_>,
) -> Vec<Piece> {
    let mut out = Vec::with_capacity(lines.len());
    for (i, (line, msg, text)) in lines.iter().enumerate() {
        let tokens = if text.trim().is_empty() {
            0
        } else {
            (limits.count)(text)
        };
        if tokens > limits.max_tokens {
            for (part, t) in split_line(text, limits.max_tokens, limits.count) {
                out.push(Piece {
                    text: part,
                    line: *line,
                    msg: *msg,
                    day: None,
                    heading: false,
                    tokens: t,
                });
            }
        } else {
            out.push(Piece {
                text: (*text).to_string(),
                line: *line,
                msg: *msg,
                day: None,
                heading: headings.get(i).copied().unwrap_or(false),
                tokens,
            });
        }
    }
    out
}

fn emit(pieces: &[Piece], limits: &ChunkLimits<'_>, out: &mut Vec<Chunk>) {
    // Blank lines at either end carry nothing, and a chunk's text must open
    // on its `start_line`: Markdown blocks count their lines from there.
    let blank = |p: &Piece| p.text.trim().is_empty();
    let Some(first) = pieces.iter().position(|p| !blank(p)) else {
        return;
    };
    let last = pieces.iter().rposition(|p| !blank(p)).unwrap_or(first);
    let pieces = pieces.get(first..=last).unwrap_or_default();
    let text = pieces
        .iter()
        .map(|p| p.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    // Per-line counts can drift from the count of the joined text; verify so
    // the model never truncates a chunk.
    if pieces.len() > 1 && (limits.count)(&text) > limits.max_tokens {
        let (head, tail) = pieces.split_at(pieces.len() / 2);
        emit(head, limits, out);
        emit(tail, limits, out);
        return;
    }
    let mut parts: Vec<MessagePart> = Vec::new();
    let mut offset = 0;
    for p in pieces {
        if let Some(ordinal) = p.msg {
            if parts.last().is_none_or(|l| l.ordinal != ordinal) {
                parts.push(MessagePart {
                    ordinal,
                    line: p.line,
                    offset,
                    day: p.day,
                });
            }
        }
        offset += p.text.len() + 1;
    }
    // Messages come in log order, so the first and last part span them.
    let messages = parts
        .first()
        .zip(parts.last())
        .map(|(a, b)| (a.ordinal, b.ordinal));
    let (Some(first), Some(last)) = (pieces.first(), pieces.last()) else {
        return;
    };
    out.push(Chunk {
        start_line: first.line,
        end_line: last.line,
        text,
        messages,
        parts,
    });
}

fn chunk_pieces(pieces: Vec<Piece>, limits: &ChunkLimits<'_>, out: &mut Vec<Chunk>) {
    let max = limits.max_tokens;
    let mut cur: Vec<Piece> = Vec::new();
    let mut cur_tokens = 0usize;
    for p in pieces {
        // Blank lines at the start of a chunk carry nothing.
        if cur.is_empty() && p.text.trim().is_empty() {
            continue;
        }
        while !cur.is_empty() && cur_tokens + p.tokens > max {
            // Prefer to cut before the last heading when that leaves a
            // reasonable first part; the heading then opens the next chunk.
            let mut cut_at_heading = None;
            let mut acc = 0usize;
            for (i, q) in cur.iter().enumerate() {
                if q.heading && i > 0 && acc >= max / 3 {
                    cut_at_heading = Some(i);
                }
                acc += q.tokens;
            }
            if let Some(h) = cut_at_heading {
                emit(cur.get(..h).unwrap_or_default(), limits, out);
                cur.drain(..h);
                cur_tokens = cur.iter().map(|q| q.tokens).sum();
                continue;
            }
            emit(&cur, limits, out);
            let mut tail: Vec<Piece> = Vec::new();
            let mut tail_tokens = 0usize;
            for q in cur.iter().rev() {
                // A question ending the chunk opens the next one whatever
                // its length, so its answer is read with it.
                let question =
                    tail.iter().all(|t| t.text.trim().is_empty()) && crate::text::asks(&q.text);
                if (tail_tokens + q.tokens > limits.overlap_tokens && !question) || q.heading {
                    break;
                }
                tail_tokens += q.tokens;
                tail.push(q.clone());
            }
            tail.reverse();
            while tail.first().is_some_and(|q| q.text.trim().is_empty()) {
                tail.remove(0);
            }
            if tail_tokens + p.tokens > max || tail.iter().all(|q| q.text.trim().is_empty()) {
                tail.clear();
                tail_tokens = 0;
            }
            cur = tail;
            cur_tokens = tail_tokens;
            break;
        }
        cur_tokens += p.tokens;
        cur.push(p);
    }
    emit(&cur, limits, out);
}

/// Chunks a Markdown (or plain text) file: lines up to the token budget,
/// cut before a heading where that leaves a reasonable first part; the
/// next chunk opens with the last lines that fit the overlap budget, or with
/// the last line whatever its length when it asks a question.
pub fn chunk_markdown(text: &str, limits: &ChunkLimits<'_>) -> Vec<Chunk> {
    let lines: Vec<&str> = text.lines().collect();
    let headings = heading_flags(&lines);
    let numbered: Vec<(usize, Option<usize>, &str)> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| (i + 1, None, *l))
        .collect();
    let mut out = Vec::new();
    chunk_pieces(pieces_of(&numbered, &headings, limits), limits, &mut out);
    out
}

/// One rendered transcript message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedMessage {
    /// 0-based ordinal among the log's messages.
    pub ordinal: usize,
    /// 1-based line of the message in the JSONL file.
    pub line: usize,
    /// `User: …` / `Assistant: …` text (may span several lines).
    pub text: String,
    /// The day of its timestamp, when it has one.
    pub day: Option<NaiveDate>,
}

/// The blocks of a Markdown chunk, for block hits: a list item with the
/// lines under it, a paragraph, a heading with the block after it, a fenced
/// code block whole; a one-line paragraph underlined with `===` or `---`
/// is a (setext) heading; front matter at the top of a file joins the block
/// after it, as a heading does (a typed memory is one hit, not its fields
/// and its body apart). `ordinal` and `line` are a block's first line in the
/// file (so a block two overlapping chunks hold is one hit), `offset` its
/// byte offset in `text`; `start_line` is the chunk's first line.
pub fn markdown_parts(text: &str, start_line: usize) -> Vec<MessagePart> {
    let mut parts: Vec<MessagePart> = Vec::new();
    let mut offset = 0;
    let mut in_fence = false;
    let mut after_blank = false;
    // The current block holds only heading lines so far.
    let mut heading_only = false;
    // Its non-blank lines, and whether its first is paragraph text.
    let mut block_lines = 0usize;
    let mut block_plain = false;
    // Only the top of a file can hold front matter.
    let front = match front_matter(text) {
        FrontMatter::Lines(n) if start_line == 1 => n,
        _ => 0,
    };
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let at = offset;
        offset += line.len();
        let t = line.trim();
        if i < front {
            if i == 0 {
                parts.push(MessagePart {
                    ordinal: 1,
                    line: 1,
                    offset: 0,
                    day: None,
                });
            }
            heading_only = true;
            continue;
        }
        let fence = t.starts_with("```") || t.starts_with("~~~");
        if in_fence {
            // What follows a closing fence starts a block of its own.
            in_fence = !fence;
            after_blank = fence;
            continue;
        }
        if t.is_empty() {
            after_blank = true;
            continue;
        }
        let heading = is_heading(t);
        let item = is_list_item(line);
        let starts = parts.is_empty()
            || if heading_only {
                heading
            } else {
                after_blank || heading || fence || item
            };
        let underline = !starts && block_lines == 1 && block_plain && is_setext_underline(t);
        if starts {
            let l = start_line + i;
            parts.push(MessagePart {
                ordinal: l,
                line: l,
                offset: at,
                day: None,
            });
            block_lines = 0;
            block_plain = !heading && !fence && !item;
        }
        block_lines += 1;
        heading_only = underline || (heading && (starts || heading_only));
        in_fence = fence;
        after_blank = false;
    }
    parts
}

/// The YAML front matter a Markdown file opens with (a `---` line, fields,
/// a closing `---` or `...` line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontMatter {
    /// The file does not open with `---`.
    Absent,
    /// Opened and closed: this many lines, both rules included.
    Lines(usize),
    /// Opened and never closed: the file is plain text.
    Unclosed,
}

/// How `text` opens: with closed front matter (and how many lines it
/// takes), unclosed, or none.
pub fn front_matter(text: &str) -> FrontMatter {
    let t = text.trim_start_matches('\u{feff}');
    if !(t.starts_with("---\n") || t.starts_with("---\r\n")) {
        return FrontMatter::Absent;
    }
    t.lines()
        .skip(1)
        .position(|l| matches!(l.trim_end(), "---" | "..."))
        .map_or(FrontMatter::Unclosed, |i| FrontMatter::Lines(i + 2))
}

/// The rule under a setext heading: `==` or longer, `---` or longer.
fn is_setext_underline(t: &str) -> bool {
    (t.len() >= 2 && t.bytes().all(|b| b == b'=')) || (t.len() >= 3 && t.bytes().all(|b| b == b'-'))
}

/// A list item at the top level (`- `, `* `, `+ `, `1. `, `1) `); a nested
/// item belongs to its parent's block.
fn is_list_item(line: &str) -> bool {
    let t = line.trim_start();
    if line.len() - t.len() >= 2 {
        return false;
    }
    if t.starts_with("- ") || t.starts_with("* ") || t.starts_with("+ ") {
        return true;
    }
    let rest = t.trim_start_matches(|c: char| c.is_ascii_digit());
    rest.len() < t.len() && (rest.starts_with(". ") || rest.starts_with(") "))
}

/// Version of the chunking rules, kept in the index's metadata: a change
/// rebuilds indexes made by the old rules. 2: a question ending a chunk
/// opens the next one. 3: no blank lines at either end of a chunk. 4: the
/// files of [`ITEM_FILES`] one block per chunk.
pub(crate) const CHUNKER_VERSION: &str = "4";

/// Files whose every block is a chunk of its own ([`chunk_items`]): the
/// facts file (mnemo-store's `FACTS_FILE`), one fact per list item.
pub const ITEM_FILES: &[&str] = &["memory/facts.md"];

/// Chunks a file of items, such as the facts file: every block of
/// [`markdown_parts`] (a list item with the lines under it, a paragraph, a
/// heading with the block after it) is a chunk of its own, so each fact is
/// embedded and scored on its own words rather than with its neighbours'
/// (where "Berlin is my home" would share a vector with the job and the
/// diet). A block over the limit is chunked as Markdown.
pub fn chunk_items(text: &str, limits: &ChunkLimits<'_>) -> Vec<Chunk> {
    let parts = markdown_parts(text, 1);
    let mut out = Vec::new();
    for i in 0..parts.len() {
        let Some(p) = parts.get(i) else { continue };
        let block = MessagePart::text_of(&parts, i, text);
        for mut c in chunk_markdown(block, limits) {
            c.start_line += p.line - 1;
            c.end_line += p.line - 1;
            out.push(c);
        }
    }
    out
}

/// Chunks a transcript: whole messages per chunk, a message longer than the
/// limit split by lines; overlap is the previous chunk's last message when it
/// fits in the overlap budget, or when it asks a question (whatever its
/// length, as long as it fits with the next message).
pub fn chunk_transcript(messages: &[RenderedMessage], limits: &ChunkLimits<'_>) -> Vec<Chunk> {
    let mut out = Vec::new();
    let mut cur: Vec<(&RenderedMessage, usize)> = Vec::new();
    let mut cur_tokens = 0usize;
    let flush = |cur: &[(&RenderedMessage, usize)], out: &mut Vec<Chunk>| {
        if cur.is_empty() {
            return;
        }
        let pieces: Vec<Piece> = cur
            .iter()
            .map(|(m, t)| Piece {
                text: m.text.clone(),
                line: m.line,
                msg: Some(m.ordinal),
                day: m.day,
                heading: false,
                tokens: *t,
            })
            .collect();
        emit(&pieces, limits, out);
    };
    for m in messages {
        if m.text.trim().is_empty() {
            continue;
        }
        let t = (limits.count)(&m.text);
        if t > limits.max_tokens {
            flush(&cur, &mut out);
            cur.clear();
            cur_tokens = 0;
            let lines: Vec<(usize, Option<usize>, &str)> = m
                .text
                .lines()
                .map(|l| (m.line, Some(m.ordinal), l))
                .collect();
            let mut pieces = pieces_of(&lines, &[], limits);
            pieces.iter_mut().for_each(|p| p.day = m.day);
            chunk_pieces(pieces, limits, &mut out);
            continue;
        }
        if cur_tokens + t > limits.max_tokens && !cur.is_empty() {
            flush(&cur, &mut out);
            let last = cur.last().copied();
            cur.clear();
            cur_tokens = 0;
            if let Some((lm, lt)) = last {
                // A question opens the next chunk whatever its length, so
                // its answer is read (and embedded) with it.
                let carry = lt <= limits.overlap_tokens || crate::text::asks(&lm.text);
                if carry && lt + t <= limits.max_tokens {
                    cur.push((lm, lt));
                    cur_tokens = lt;
                }
            }
        }
        cur.push((m, t));
        cur_tokens += t;
    }
    flush(&cur, &mut out);
    out
}

#[cfg(test)]
#[path = "chunk_tests.rs"]
mod tests;
