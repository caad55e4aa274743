//! The tool-result budget: oversized tool output is stored as its own file
//! beside the session and replaced in the log by a preview and the file's
//! path, before the message is ever written. Because the log holds the
//! replaced message, every later replay is byte-identical. Each file holds
//! one result and is written once: results whose call ids map to the same
//! file name (`call_1` twice, `call.2` and `call_2`) get names of their
//! own, and the same result appended again reuses its file.

use mnemo_core::{Content, Message, Role};
use serde_json::{json, Value};

use sha2::Digest;

use crate::error::{Error, Result};
use crate::storage::{Expect, Storage};

/// Limits of the tool-result budget.
#[derive(Debug, Clone, Copy)]
pub struct ToolResultBudget {
    /// A single result over this many characters is persisted (50,000).
    pub max_chars: usize,
    /// Bytes of the preview kept in the log (2,000).
    pub preview_bytes: usize,
    /// Characters of tool results allowed in one appended turn (200,000);
    /// the largest results are persisted first until the turn fits.
    pub per_turn_chars: usize,
}

/// Applies the budget to a batch of messages being appended. `dir` is the
/// workspace-relative folder of the persisted results in `storage`. With
/// `dry_run` nothing is written: the messages become what they would be,
/// naming the files their results would take.
pub fn apply(
    budget: ToolResultBudget,
    messages: &mut [Message],
    storage: &dyn Storage,
    dir: &str,
    dry_run: bool,
) -> Result<()> {
    let sizes: Vec<usize> = messages
        .iter()
        .map(|m| {
            if is_inline_tool_result(m) {
                m.content.as_ref().map_or(0, Content::char_len)
            } else {
                0
            }
        })
        .collect();
    let mut spill: Vec<bool> = messages
        .iter()
        .zip(&sizes)
        .map(|(m, &n)| {
            is_inline_tool_result(m) && (n > budget.max_chars || already_spilled(m, storage, dir))
        })
        .collect();
    let mut kept: usize = sizes
        .iter()
        .zip(&spill)
        .filter(|(_, s)| !**s)
        .map(|(n, _)| *n)
        .sum();
    if kept > budget.per_turn_chars {
        // Largest first.
        let mut order: Vec<(usize, usize)> = sizes
            .iter()
            .zip(&spill)
            .enumerate()
            .filter(|(_, (size, spilled))| **size > 0 && !**spilled)
            .map(|(i, (size, _))| (i, *size))
            .collect();
        order.sort_by_key(|&(_, size)| std::cmp::Reverse(size));
        for (i, size) in order {
            if kept <= budget.per_turn_chars {
                break;
            }
            if let Some(s) = spill.get_mut(i) {
                *s = true;
                kept -= size;
            }
        }
    }
    for (m, spilled) in messages.iter_mut().zip(&spill) {
        if *spilled {
            persist(budget, m, storage, dir, dry_run)?;
        }
    }
    Ok(())
}

fn is_inline_tool_result(m: &Message) -> bool {
    m.role == Role::Tool && !m.extra.contains_key("persisted_output")
}

/// True when this very result was persisted before (the same message
/// appended again): it keeps pointing at its file.
fn already_spilled(m: &Message, storage: &dyn Storage, dir: &str) -> bool {
    let rel = format!("{dir}/{}.txt", spill_stem(m));
    same_content(storage, &rel, &m.text())
}

/// File name of a persisted result: the call id made safe for a file name.
/// Results without an id are named by their content's hash.
pub fn spill_name(call_id: &str) -> String {
    format!("{}.txt", safe_id(call_id))
}

fn safe_id(call_id: &str) -> String {
    call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect()
}

fn spill_stem(m: &Message) -> String {
    match m.tool_call_id.as_deref() {
        Some(id) => safe_id(id),
        None => {
            let mut hash = hex::encode(sha2::Sha256::digest(m.text().as_bytes()));
            hash.truncate(16);
            format!("anon-{hash}")
        }
    }
}

fn same_content(storage: &dyn Storage, rel: &str, data: &str) -> bool {
    storage
        .read(rel)
        .is_ok_and(|d| d.is_some_and(|d| d.text == data))
}

/// Stores `data` as `<stem>.txt`, or `<stem>-2.txt`, `<stem>-3.txt`, …
/// when that name already holds another result; a name holding exactly
/// `data` is reused. Files are created exclusively, so two appenders never
/// take one name. Returns the file name. With `dry_run` nothing is written:
/// the name is the first that is free or holds `data`.
fn claim_file(
    storage: &dyn Storage,
    dir: &str,
    stem: &str,
    data: &str,
    dry_run: bool,
) -> Result<String> {
    for n in 1..=10_000u32 {
        let name = if n == 1 {
            format!("{stem}.txt")
        } else {
            format!("{stem}-{n}.txt")
        };
        let rel = format!("{dir}/{name}");
        if dry_run {
            match storage.read(&rel)? {
                None => return Ok(name),
                Some(d) if d.text == data => return Ok(name),
                Some(_) => continue,
            }
        }
        match storage.write(&rel, data, Expect::Absent) {
            Ok(_) => return Ok(name),
            Err(Error::Conflict(_)) if same_content(storage, &rel, data) => return Ok(name),
            Err(Error::Conflict(_)) => {}
            Err(e) => return Err(e),
        }
    }
    Err(Error::Invalid(format!(
        "10,000 persisted tool results already use the name {stem}: use distinct tool call ids"
    )))
}

fn persist(
    budget: ToolResultBudget,
    m: &mut Message,
    storage: &dyn Storage,
    dir: &str,
    dry_run: bool,
) -> Result<()> {
    let text = m.text();
    let name = claim_file(storage, dir, &spill_stem(m), &text, dry_run)?;
    let shown = format!("{dir}/{name}");
    let chars = text.chars().count();
    let preview = cut_at_byte_boundary(&text, budget.preview_bytes);
    m.content = Some(Content::Text(format!(
        "<persisted-output path=\"{shown}\" chars=\"{chars}\">\n\
         Output too large ({chars} characters); the full output is saved at {shown}.\n\
         Preview (first {} bytes):\n{preview}\n</persisted-output>",
        preview.len()
    )));
    m.extra.insert(
        "persisted_output".into(),
        json!({ "path": shown, "chars": chars }),
    );
    Ok(())
}

/// The longest prefix of `s` of at most `max` bytes ending on a char boundary.
pub fn cut_at_byte_boundary(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or_default()
}

/// The persisted path of a message, if its output was persisted.
pub fn persisted_path(m: &Message) -> Option<&str> {
    m.extra
        .get("persisted_output")
        .and_then(|v| v.get("path"))
        .and_then(Value::as_str)
}
