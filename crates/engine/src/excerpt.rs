//! How much of a session one consolidation round shows the model: each
//! message cut to a share of the round (a pasted log or a 40,000-character
//! message is not what memory comes from, and must not fill the window),
//! and the round itself ended where its messages stop fitting the window
//! the engine knows for the model. The session log keeps every message
//! whole: only the prompt is cut.

use std::borrow::Cow;

use mnemo_core::{Content, Message, Role, TokenCounter};

/// Most tokens one message shows in a consolidation prompt.
pub const MAX_MESSAGE_TOKENS: usize = 4_000;

/// A token is rarely longer than this many bytes, so a text longer than
/// `cap × MAX_TOKEN_BYTES` is cut for sure and only its head is counted
/// (a 16 MiB line is not tokenised to show 4,000 tokens of it).
const MAX_TOKEN_BYTES: usize = 16;

/// Per-message overhead of a shown line (`[YYYY-MM-DD HH:MM] ROLE: `).
const LINE_OVERHEAD: usize = 12;

/// `text` as a consolidation prompt shows it: whole when it has at most
/// `cap` tokens, else its longest prefix within `cap` tokens followed by a
/// note saying how much was cut and where the rest is. Returns the text
/// and whether it was cut.
pub fn cut_for_prompt<'a>(
    text: &'a str,
    cap: usize,
    counter: &dyn TokenCounter,
) -> (Cow<'a, str>, bool) {
    let head = &text[..floor_char_boundary(text, cap.saturating_mul(MAX_TOKEN_BYTES))];
    if head.len() == text.len() && counter.count_text(text) <= cap {
        return (Cow::Borrowed(text), false);
    }
    // The longest prefix (at a character boundary) within the cap.
    let ends: Vec<usize> = head
        .char_indices()
        .map(|(i, _)| i)
        .skip(1)
        .chain(std::iter::once(head.len()))
        .collect();
    let (mut lo, mut hi) = (0usize, ends.len());
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if counter.count_text(&head[..ends[mid - 1]]) <= cap {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let shown = if lo == 0 { "" } else { &head[..ends[lo - 1]] };
    let total = text.chars().count();
    let kept = shown.chars().count();
    (
        Cow::Owned(format!(
            "{} [… cut here for this summary: {kept} of {total} characters shown; the whole message stays in the session log]",
            shown.trim_end()
        )),
        true,
    )
}

fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

/// The messages of a round as its prompt shows them: each message's text
/// cut to `cap` tokens by [`cut_for_prompt`] (its calls, role and time
/// kept). Returns the messages and how many were cut.
pub fn cut_messages(
    messages: &[Message],
    cap: usize,
    counter: &dyn TokenCounter,
) -> (Vec<Message>, usize) {
    let mut cut = 0;
    let out = messages
        .iter()
        .map(|m| {
            let text = m.text();
            match cut_for_prompt(&text, cap, counter) {
                (Cow::Owned(short), true) => {
                    cut += 1;
                    Message {
                        content: Some(Content::Text(short)),
                        ..m.clone()
                    }
                }
                _ => m.clone(),
            }
        })
        .collect();
    (out, cut)
}

/// Tokens of `m` as a round shows it (cut to `cap`); 0 for a message the
/// excerpt leaves out (no text, no calls).
pub fn shown_tokens(m: &Message, cap: usize, counter: &dyn TokenCounter) -> usize {
    let text = m.text();
    let calls: usize = m
        .tool_calls
        .iter()
        .flatten()
        .map(|c| counter.count_text(&c.function.name) + 1)
        .sum();
    if text.trim().is_empty() && calls == 0 {
        return 0;
    }
    let (shown, _) = cut_for_prompt(&text, cap, counter);
    counter.count_text(&shown) + calls + LINE_OVERHEAD
}

/// Where a round that starts at `from` ends, so that its messages (each
/// as [`shown_tokens`] counts it) take at most `budget` tokens: `to` when
/// all fit; else before the last user message that fits (a round ends
/// before a user turn, as [`crate::consolidate::pick_boundary`]'s do);
/// else, in one turn longer than the budget, before the last message that
/// is not a tool result (a call keeps its results); else where the budget
/// runs out. A round holds at least one message.
pub fn round_end(
    messages: &[Message],
    from: usize,
    to: usize,
    budget: usize,
    cap: usize,
    counter: &dyn TokenCounter,
) -> usize {
    let to = to.min(messages.len());
    let (mut user, mut other) = (None, None);
    let mut used = 0usize;
    for (i, m) in messages.iter().enumerate().take(to).skip(from) {
        let n = shown_tokens(m, cap, counter);
        if i > from {
            if m.role == Role::User {
                user = Some(i);
            }
            if m.role != Role::Tool {
                other = Some(i);
            }
            if used + n > budget {
                return user.or(other).unwrap_or(i);
            }
        }
        used += n;
    }
    to
}

#[cfg(test)]
#[path = "excerpt_tests.rs"]
mod tests;
