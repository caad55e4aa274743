use super::*;
use mnemo_core::{FunctionCall, ToolCall};
use mnemo_tokens::EstimateCounter;
use serde_json::Map;

fn call(id: &str, tool: &str, args: &str) -> Message {
    let mut m = Message::assistant("");
    m.content = None;
    m.tool_calls = Some(vec![ToolCall {
        id: id.into(),
        kind: "function".into(),
        function: FunctionCall {
            name: tool.into(),
            arguments: args.into(),
        },
        extra: Map::new(),
    }]);
    m
}

fn entries(msgs: Vec<Message>) -> Vec<Entry> {
    msgs.into_iter()
        .enumerate()
        .map(|(i, m)| Entry::logged(i, m))
        .collect()
}

fn session() -> Vec<Entry> {
    entries(vec![
        Message::user("read the config"),
        call("a", "read", r#"{"path":"conf.toml"}"#),
        Message::tool_result("a", "read", "x = 1"),
        call("b", "exec", r#"{"cmd":"rm -rf /"}"#),
        Message::tool_result("b", "exec", "Error: command not allowed"),
        call("c", "grep", r#"{"q":"x"}"#),
        Message::tool_result("c", "grep", ""),
        Message::assistant("x is 1").with_timestamp("2026-01-01T10:00:00Z"),
        Message::user("now the agent"),
        call("d", "agent", r#"{"task":"t"}"#),
        Message::tool_result("d", "agent", "sub-agent result"),
        Message::assistant("done").with_timestamp("2026-01-01T10:05:00Z"),
        Message::user("thanks"),
    ])
}

#[test]
fn snip_names_errors_and_empty_results_outside_recent_turns() {
    let e = session();
    assert_eq!(snip(&e, 2), vec![4, 6]);
    // The recent turns are protected.
    assert!(snip(&e, 3).is_empty());
}

#[test]
fn microcompact_waits_for_the_gap_and_keeps_the_last_ones() {
    let e = session();
    let tools: Vec<String> = ["read", "exec", "grep"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let protected = vec!["agent".to_string()];
    let rule = MicrocompactRule {
        gap_minutes: 60,
        keep: 1,
        tools: &tools,
        protected: &protected,
    };
    let early = parse_ts("2026-01-01T10:30:00Z").unwrap();
    assert!(microcompact(&e, early, &rule, false).is_empty());
    let late = parse_ts("2026-01-01T11:05:00Z").unwrap();
    // a, b, c covered; the last one (c) kept; the agent's result never.
    assert_eq!(microcompact(&e, late, &rule, false), vec!["a", "b"]);
    assert_eq!(microcompact(&e, early, &rule, true), vec!["a", "b"]);
}

#[test]
fn collapse_folds_old_tool_runs_only() {
    let e = session();
    let spans = collapse(&e, 2);
    assert_eq!(spans.len(), 1);
    assert_eq!((spans[0].first, spans[0].last), (1, 7));
    assert!(spans[0].text.contains("exec×1"), "{}", spans[0].text);
    assert!(spans[0].text.ends_with("x is 1"));
}

#[test]
fn tail_never_starts_with_a_tool_result() {
    let e = session();
    let c = EstimateCounter;
    for budget in 0..200 {
        if let Some(s) = split_tail(&e, &c, budget) {
            assert_ne!(e[s].message.role, Role::Tool, "budget {budget}");
            assert!(s > 0 && s < e.len());
        }
    }
    assert_eq!(split_tail(&e, &c, 1_000_000), Some(1));
}

#[test]
fn drop_oldest_cuts_at_a_user_turn() {
    let e = session();
    assert_eq!(drop_oldest(&e, 0.2), Some(8));
    assert_eq!(drop_oldest(&e, 0.9), Some(12));
}

#[test]
fn read_files_newest_first() {
    let mut msgs = vec![Message::user("u")];
    msgs.push(call("1", "read", r#"{"path":"a.md"}"#));
    msgs.push(call("2", "read_file", r#"{"file_path":"b.md"}"#));
    msgs.push(call("3", "read", r#"{"path":"a.md"}"#));
    let e = entries(msgs);
    let tools = vec!["read".to_string(), "read_file".to_string()];
    assert_eq!(recently_read_files(&e, &tools), vec!["a.md", "b.md"]);
}
