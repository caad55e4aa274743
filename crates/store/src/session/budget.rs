//! The tool-result budget: oversized tool output is stored as its own file
//! beside the session and replaced in the log by a preview and the file's
//! path, before the message is ever written. Because the log holds the
//! replaced message, every later replay is byte-identical (the decision is
//! frozen per `tool_call_id`).

use std::path::Path;

use mnemo_core::{Content, Message, Role};
use serde_json::{json, Value};

use crate::error::Result;
use crate::fsutil;

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

/// Applies the budget to a batch of messages being appended. `spill_dir` is
/// the folder for persisted results; `display_dir` is how that folder is
/// named in the preview (relative to the workspace).
pub fn apply(
    budget: ToolResultBudget,
    messages: &mut [Message],
    spill_dir: &Path,
    display_dir: &str,
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
            is_inline_tool_result(m) && (n > budget.max_chars || already_spilled(m, spill_dir))
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
            persist(budget, m, spill_dir, display_dir)?;
        }
    }
    Ok(())
}

fn is_inline_tool_result(m: &Message) -> bool {
    m.role == Role::Tool && !m.extra.contains_key("persisted_output")
}

fn already_spilled(m: &Message, spill_dir: &Path) -> bool {
    m.tool_call_id
        .as_deref()
        .is_some_and(|id| spill_dir.join(spill_name(id)).exists())
}

/// File name of a persisted result: the call id made safe for a file name.
pub fn spill_name(call_id: &str) -> String {
    let safe: String = call_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect();
    format!("{safe}.txt")
}

fn persist(
    budget: ToolResultBudget,
    m: &mut Message,
    spill_dir: &Path,
    display_dir: &str,
) -> Result<()> {
    let text = m.text();
    let call_id = m
        .tool_call_id
        .clone()
        .unwrap_or_else(|| format!("anon-{}", text.len()));
    let name = spill_name(&call_id);
    let file = spill_dir.join(&name);
    // The first decision for a call id wins: never overwrite a persisted result.
    if !file.exists() {
        fsutil::atomic_write(&file, text.as_bytes())?;
    }
    let shown = format!("{display_dir}/{name}");
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
