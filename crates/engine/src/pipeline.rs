//! The compaction pipeline's levels, cheapest first, each a pure function
//! over the working history that says what it would change (so the engine
//! can record it in the log and replay rebuilds the same prompt):
//! tool-result budget, snip, microcompact, collapse, and the split of
//! autocompact into a summarised head and a verbatim tail.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use mnemo_core::{Message, Role, TokenCounter};

use crate::history::{CollapsedSpan, Entry, CLEARED};

/// Markers of a tool result that reports a refusal or an error.
const ERROR_PREFIXES: &[&str] = &[
    "error",
    "[error",
    "tool call rejected",
    "the user rejected",
    "user rejected",
    "permission denied",
    "rejected by user",
    "command not allowed",
];

/// Index of the first entry of the last `keep_turns` user turns (the
/// protected recent part); `entries.len()` when `keep_turns` is 0.
pub fn recent_turns_start(entries: &[Entry], keep_turns: usize) -> usize {
    if keep_turns == 0 {
        return entries.len();
    }
    let users: Vec<usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.message.role == Role::User && e.ordinal.is_some())
        .map(|(i, _)| i)
        .collect();
    if users.len() <= keep_turns {
        return 0;
    }
    users[users.len() - keep_turns]
}

/// Level 2, snip: ordinals of low-value messages before the recent turns:
/// empty tool results, results that report an error or a refusal, and
/// empty assistant messages. Only results are named: replay then removes
/// the call that lost its result from its assistant message (and the
/// message if nothing is left), so a call never survives without its
/// result or the other way round.
pub fn snip(entries: &[Entry], keep_turns: usize) -> Vec<usize> {
    let end = recent_turns_start(entries, keep_turns);
    let mut out = Vec::new();
    for e in &entries[..end] {
        let Some(ord) = e.ordinal else { continue };
        let m = &e.message;
        let text = m.text();
        let t = text.trim();
        let low_value = match m.role {
            Role::Tool => {
                let lower: String = t.chars().take(40).collect::<String>().to_lowercase();
                t.is_empty() || ERROR_PREFIXES.iter().any(|p| lower.starts_with(p))
            }
            Role::Assistant => m.is_empty(),
            _ => false,
        };
        if low_value {
            out.push(ord);
        }
    }
    out
}

/// Minutes since the last assistant message, if it has a readable
/// timestamp.
pub fn minutes_since_last_assistant(entries: &[Entry], now: DateTime<Utc>) -> Option<i64> {
    let last = entries
        .iter()
        .rev()
        .find(|e| e.message.role == Role::Assistant && e.message.timestamp.is_some())?;
    let ts = parse_ts(last.message.timestamp.as_deref()?)?;
    Some((now - ts).num_minutes())
}

/// Parses RFC 3339, or a naive `YYYY-MM-DDTHH:MM:SS[.f]` taken as UTC (as
/// nanobot writes them).
pub fn parse_ts(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|n| n.and_utc())
}

/// Settings of microcompact.
#[derive(Debug, Clone)]
pub struct MicrocompactRule<'a> {
    /// Minutes since the last assistant message before anything is cleared.
    pub gap_minutes: i64,
    /// Newest covered results left alone.
    pub keep: usize,
    /// Tools whose results may be cleared (they can be fetched again).
    pub tools: &'a [String],
    /// Tools never cleared (sub-agents).
    pub protected: &'a [String],
}

/// Level 3, microcompact: call ids of re-fetchable tool results to clear
/// once the gap has passed (the cache is cold anyway), all but the newest
/// `keep`. Results already cleared are not named again. `force` ignores the
/// gap (an explicit `compact --level 3`).
pub fn microcompact(
    entries: &[Entry],
    now: DateTime<Utc>,
    rule: &MicrocompactRule<'_>,
    force: bool,
) -> Vec<String> {
    if !force {
        match minutes_since_last_assistant(entries, now) {
            Some(m) if m >= rule.gap_minutes => {}
            _ => return Vec::new(),
        }
    }
    let covered = |name: &str| {
        let n = name.to_ascii_lowercase();
        rule.tools.iter().any(|t| t.eq_ignore_ascii_case(&n))
            && !rule.protected.iter().any(|t| t.eq_ignore_ascii_case(&n))
    };
    let results: Vec<&Entry> = entries
        .iter()
        .filter(|e| {
            e.message.role == Role::Tool
                && e.message.name.as_deref().is_some_and(covered)
                && e.message.tool_call_id.is_some()
        })
        .collect();
    let cut = results.len().saturating_sub(rule.keep);
    results[..cut]
        .iter()
        .filter(|e| e.message.text() != CLEARED)
        .filter_map(|e| e.message.tool_call_id.clone())
        .collect()
}

/// Level 4, collapse: folds the tool activity of each old turn (the
/// assistant and tool messages between two user messages, when there are
/// at least two of them) into one assistant message naming the tools used
/// and keeping the turn's last answer. The user messages stay verbatim.
/// Turns among the newest `keep_turns` are left alone.
pub fn collapse(entries: &[Entry], keep_turns: usize) -> Vec<CollapsedSpan> {
    let end = recent_turns_start(entries, keep_turns);
    let mut spans = Vec::new();
    let mut i = 0;
    while i < end {
        if entries[i].message.role == Role::User {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < end && entries[j].message.role != Role::User {
            j += 1;
        }
        let run = &entries[i..j];
        let contiguous = run.windows(2).all(|w| match (w[0].ordinal, w[1].ordinal) {
            (Some(a), Some(b)) => b > a,
            _ => false,
        });
        if run.len() >= 2 && contiguous {
            if let (Some(first), Some(last)) = (run[0].ordinal, run[run.len() - 1].ordinal) {
                spans.push(CollapsedSpan {
                    first,
                    last,
                    text: fold_text(run),
                });
            }
        }
        i = j;
    }
    spans
}

fn fold_text(run: &[Entry]) -> String {
    let mut tools: BTreeMap<String, usize> = BTreeMap::new();
    for e in run {
        for c in e.message.tool_calls.iter().flatten() {
            *tools.entry(c.function.name.clone()).or_default() += 1;
        }
    }
    let tools = if tools.is_empty() {
        "none".to_string()
    } else {
        tools
            .iter()
            .map(|(k, v)| format!("{k}×{v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let answer = run
        .iter()
        .rev()
        .find(|e| e.message.role == Role::Assistant && !e.message.text().trim().is_empty())
        .map(|e| clip(e.message.text().trim(), 600))
        .unwrap_or_default();
    let mut text = format!(
        "[collapsed: {} messages of tool activity; tools used: {tools}]",
        run.len()
    );
    if !answer.is_empty() {
        text.push('\n');
        text.push_str(&answer);
    }
    text
}

/// The first `max` characters of `s`, with `…` when cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}

/// Where autocompact splits the history: the index of the first entry of
/// the verbatim tail, which holds the newest messages within
/// `tail_tokens`. The tail never starts with a tool result (a call and its
/// result stay together) and the head keeps at least one logged message;
/// `None` when there is nothing to fold.
pub fn split_tail(
    entries: &[Entry],
    counter: &dyn TokenCounter,
    tail_tokens: usize,
) -> Option<usize> {
    if entries.len() < 2 {
        return None;
    }
    let mut used = 0usize;
    let mut split = entries.len();
    for (i, e) in entries.iter().enumerate().rev() {
        let t = counter.count_message(&e.message);
        if used + t > tail_tokens {
            break;
        }
        used += t;
        split = i;
    }
    // Move the split forward past tool results so none loses its call.
    while split < entries.len() && entries[split].message.role == Role::Tool {
        split += 1;
    }
    // Always fold at least the first message when the tail took everything
    // but it still has to shrink: callers ask only when over the threshold.
    if split == 0 {
        split = 1;
        while split < entries.len() && entries[split].message.role == Role::Tool {
            split += 1;
        }
    }
    let head_has_logged = entries[..split].iter().any(|e| e.ordinal.is_some());
    if split >= entries.len() || !head_has_logged || entries[split].ordinal.is_none() {
        return None;
    }
    Some(split)
}

/// Reactive fallback when no summary can be made: the index of the first
/// entry kept after dropping the oldest `fraction` of the entries, moved
/// to the next user message so whole turns go.
pub fn drop_oldest(entries: &[Entry], fraction: f64) -> Option<usize> {
    let n = entries.len();
    if n < 2 {
        return None;
    }
    let mut k = ((n as f64) * fraction).ceil() as usize;
    k = k.clamp(1, n - 1);
    while k < n && (entries[k].message.role != Role::User || entries[k].ordinal.is_none()) {
        k += 1;
    }
    if k >= n {
        // No later user turn: cut before any non-tool logged message.
        k = ((n as f64) * fraction).ceil() as usize;
        k = k.clamp(1, n - 1);
        while k < n && (entries[k].message.role == Role::Tool || entries[k].ordinal.is_none()) {
            k += 1;
        }
    }
    (k < n).then_some(k)
}

/// Files read by read-tool calls, newest first, without repeats: the
/// `path` / `file_path` / `file` argument of each call.
pub fn recently_read_files(entries: &[Entry], read_tools: &[String]) -> Vec<String> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for e in entries.iter().rev() {
        for c in e.message.tool_calls.iter().flatten().rev() {
            if !read_tools
                .iter()
                .any(|t| t.eq_ignore_ascii_case(&c.function.name))
            {
                continue;
            }
            let args = c.function.arguments_value();
            let path = ["path", "file_path", "file", "filename"]
                .iter()
                .find_map(|k| args.get(*k).and_then(|v| v.as_str()))
                .map(str::to_string);
            if let Some(p) = path {
                if seen.insert(p.clone()) {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// Tokens of a list of entries.
pub fn entries_tokens(entries: &[Entry], counter: &dyn TokenCounter) -> usize {
    entries
        .iter()
        .map(|e| counter.count_message(&e.message))
        .sum()
}

/// Plain messages of entries.
pub fn messages_of(entries: &[Entry]) -> Vec<Message> {
    entries.iter().map(|e| e.message.clone()).collect()
}

#[cfg(test)]
#[path = "pipeline_tests.rs"]
mod tests;
