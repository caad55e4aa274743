//! The conversation as a search query: what an agent's automatic recall
//! searches with. The latest turns are written one per line with their
//! speaker (`User: …`, `Assistant: …`), the shape the index reads as
//! dialogue (a focus on the latest turn, the earlier turns as context).
//! One function builds it, so the engine and the retrieval benchmark ask
//! the same queries.

use crate::message::{Message, Role};

/// Turns of the conversation a recall query holds by default, the new
/// message included.
pub const RECALL_TURNS: usize = 4;
/// An earlier turn is cut to this many characters: its start says what it
/// was about.
const EARLIER_TURN_CHARS: usize = 300;
/// The newest turn is cut to this many characters.
const LATEST_TURN_CHARS: usize = 1_000;

/// A speaker-tagged turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn<'a> {
    /// Who spoke (`User`, `Assistant`, or a name).
    pub speaker: &'a str,
    /// What they said.
    pub text: &'a str,
}

/// The last `max_turns` of `turns` (oldest first), one `Speaker: text` line
/// each. A single turn is returned as its bare text: a lone message is a
/// question, not dialogue.
pub fn conversation_query(turns: &[Turn<'_>], max_turns: usize) -> String {
    let turns: Vec<&Turn<'_>> = turns.iter().filter(|t| !t.text.trim().is_empty()).collect();
    let keep = max_turns.max(1).min(turns.len());
    let recent = turns.get(turns.len() - keep..).unwrap_or_default();
    match recent {
        [] => String::new(),
        [only] => clip(only.text, LATEST_TURN_CHARS),
        _ => {
            let last = recent.len() - 1;
            recent
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let limit = if i == last {
                        LATEST_TURN_CHARS
                    } else {
                        EARLIER_TURN_CHARS
                    };
                    // One turn, one line: the index reads lines as turns.
                    let text = clip(t.text, limit)
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ");
                    format!("{}: {text}", t.speaker)
                })
                .collect::<Vec<_>>()
                .join("\n")
        }
    }
}

/// [`conversation_query`] over a session's messages and the new user
/// message: user and assistant text only (tool calls and results, system
/// prompts and empty messages say nothing about what the user needs now).
pub fn query_from_messages(history: &[Message], new_message: &str, max_turns: usize) -> String {
    let texts: Vec<(&str, String)> = history
        .iter()
        .filter_map(|m| match m.role {
            Role::User => Some(("User", m.text())),
            Role::Assistant if m.tool_calls.as_ref().is_none_or(|c| c.is_empty()) => {
                Some(("Assistant", m.text()))
            }
            _ => None,
        })
        .chain(std::iter::once(("User", new_message.to_string())))
        .collect();
    let turns: Vec<Turn<'_>> = texts
        .iter()
        .map(|(speaker, text)| Turn { speaker, text })
        .collect();
    conversation_query(&turns, max_turns)
}

/// `text` trimmed and cut to `chars` characters, at a character boundary.
fn clip(text: &str, chars: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", text.get(..at).unwrap_or(text).trim_end()),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_message_stays_a_question() {
        let q = query_from_messages(&[], "where does the deploy key live?", RECALL_TURNS);
        assert_eq!(q, "where does the deploy key live?");
    }

    #[test]
    fn the_latest_turns_are_tagged_lines_oldest_first() {
        let history = vec![
            Message::user("first, long gone"),
            Message::assistant("hello"),
            Message::user("We threw a party at the lake last June.\nIt rained."),
            Message::assistant("Sounds fun!"),
        ];
        let q = query_from_messages(&history, "My birthday is coming up next week", 3);
        assert_eq!(
            q,
            "User: We threw a party at the lake last June. It rained.\nAssistant: Sounds fun!\nUser: My birthday is coming up next week"
        );
    }

    #[test]
    fn tool_traffic_is_left_out_and_long_turns_are_cut() {
        let mut call = Message::assistant("");
        let tool_call: crate::message::ToolCall = serde_json::from_value(serde_json::json!({
            "id": "c1", "type": "function", "function": {"name": "exec", "arguments": "{}"}
        }))
        .unwrap();
        call.tool_calls = Some(vec![tool_call]);
        let long = "word ".repeat(200);
        let history = vec![
            Message::user(long),
            call,
            Message::tool_result("c1", "exec", "output"),
        ];
        let q = query_from_messages(&history, "and now?", 4);
        let lines: Vec<&str> = q.lines().collect();
        assert_eq!(lines.len(), 2, "{q}");
        assert!(lines[0].starts_with("User: word word") && lines[0].ends_with('…'));
        assert!(lines[0].chars().count() <= "User: ".len() + EARLIER_TURN_CHARS + 1);
        assert_eq!(lines[1], "User: and now?");
    }
}
