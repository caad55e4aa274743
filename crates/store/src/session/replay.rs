//! Rebuilding the message history a model sees from a session log: the
//! invariants of a well-formed conversation live here.

use std::collections::HashSet;

use mnemo_core::{Message, Role};
use serde_json::Map;

/// History since the consolidation cursor, as nanobot replays it:
/// - a leading run of non-user messages is dropped (a prompt starts with the user);
/// - tool results whose call was never declared in the window are dropped;
/// - tool calls that never got a result are removed from their assistant
///   message (providers reject unanswered calls), and an assistant message
///   left with neither text nor calls is dropped;
/// - only `role, content, tool_calls, tool_call_id, name` are kept.
pub fn replay(messages: &[Message], cursor: usize) -> Vec<Message> {
    let window = messages.get(cursor.min(messages.len())..).unwrap_or(&[]);
    let start = window
        .iter()
        .position(|m| m.role == Role::User)
        .unwrap_or(window.len());
    let window = window.get(start..).unwrap_or_default();

    let answered: HashSet<&str> = window
        .iter()
        .filter(|m| m.role == Role::Tool)
        .filter_map(|m| m.tool_call_id.as_deref())
        .collect();
    let mut declared: HashSet<&str> = HashSet::new();
    let mut out = Vec::with_capacity(window.len());
    for m in window {
        match m.role {
            Role::Tool => {
                let Some(id) = m.tool_call_id.as_deref() else {
                    continue;
                };
                if declared.contains(id) {
                    out.push(strip(m));
                }
            }
            Role::Assistant if m.tool_calls.is_some() => {
                let mut m2 = strip(m);
                if let Some(calls) = m2.tool_calls.as_mut() {
                    calls.retain(|c| answered.contains(c.id.as_str()));
                    for c in calls.iter() {
                        if let Some(orig) = m.tool_calls.iter().flatten().find(|o| o.id == c.id) {
                            declared.insert(orig.id.as_str());
                        }
                    }
                    if calls.is_empty() {
                        m2.tool_calls = None;
                    }
                }
                if !m2.is_empty() {
                    out.push(m2);
                }
            }
            _ => out.push(strip(m)),
        }
    }
    out
}

/// The message as sent to a model: only the protocol's fields (no
/// timestamp, no extra fields).
pub fn strip(m: &Message) -> Message {
    Message {
        role: m.role,
        content: m.content.clone(),
        tool_calls: m.tool_calls.clone(),
        tool_call_id: m.tool_call_id.clone(),
        name: m.name.clone(),
        timestamp: None,
        extra: Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mnemo_core::{FunctionCall, ToolCall};

    fn call(id: &str) -> Message {
        let mut m = Message::assistant("");
        m.content = None;
        m.tool_calls = Some(vec![ToolCall {
            id: id.into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "exec".into(),
                arguments: "{}".into(),
            },
            extra: Map::new(),
        }]);
        m
    }

    #[test]
    fn drops_leading_non_user_and_orphans() {
        let msgs = vec![
            Message::assistant("before cursor"),
            Message::tool_result("x", "exec", "orphan at start"),
            Message::user("hi").with_timestamp("t"),
            call("a"),
            Message::tool_result("a", "exec", "ok"),
            Message::tool_result("zz", "exec", "never called"),
            call("b"), // never answered
            Message::assistant("done"),
        ];
        let out = replay(&msgs, 1);
        let roles: Vec<_> = out.iter().map(|m| (m.role, m.text())).collect();
        assert_eq!(
            roles,
            vec![
                (Role::User, "hi".to_string()),
                (Role::Assistant, String::new()),
                (Role::Tool, "ok".to_string()),
                (Role::Assistant, "done".to_string()),
            ]
        );
        assert!(out[0].timestamp.is_none());
    }

    #[test]
    fn cursor_past_end_is_empty() {
        assert!(replay(&[Message::user("a")], 5).is_empty());
    }
}
