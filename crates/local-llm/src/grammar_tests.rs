use serde_json::json;

use super::*;

fn save_memory() -> Arc<Node> {
    Node::compile(&json!({
        "type": "object",
        "properties": {
            "history_entry": {"type": "string"},
            "memory_update": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b\"c"]}},
            "count": {"type": "integer"}
        },
        "required": ["history_entry", "memory_update"]
    }))
}

fn complete(node: &Arc<Node>, text: &str) -> bool {
    let mut m = JsonMatcher::new(node.clone());
    m.feed(text.as_bytes()) && m.is_done()
}

fn accepted_prefix(node: &Arc<Node>, text: &str) -> bool {
    JsonMatcher::new(node.clone()).feed(text.as_bytes())
}

#[test]
fn schema_valid_objects_complete() {
    let n = save_memory();
    for ok in [
        r#"{"history_entry": "[2026-01-01 10:00] x", "memory_update": "- a\n- b"}"#,
        r#"{"history_entry":"h","memory_update":"m","tags":["a","b\"c"],"count":-12}"#,
        r#"{"history_entry": "h", "memory_update": "m", "count": 0}"#,
        r#"{"history_entry": "caf\u00e9 café 咖啡 😀", "memory_update": ""}"#,
    ] {
        assert!(complete(&n, ok), "{ok}");
        assert!(serde_json::from_str::<Value>(ok).is_ok());
    }
}

#[test]
fn anything_else_is_refused_at_the_first_bad_byte() {
    let n = save_memory();
    for bad in [
        "Sure! Here is",                                                  // prose
        r#"{"memory_update": "m"}"#,                                      // skips a required key
        r#"{"history_entry": "h"}"#, // closes before a required key
        r#"{"history_entry": "h", "other": 1}"#, // unknown key
        r#"{"history_entry": "h", "memory_update": "m",}"#, // trailing comma
        "{\"history_entry\": \"line\nbreak\"", // raw newline in a string
        r#"{"history_entry": "\x"}"#, // bad escape
        r#"{"history_entry": "h", "memory_update": "m", "count": 1.5}"#, // not an integer
        r#"{"history_entry": "h", "memory_update": "m", "tags": ["c"]}"#, // not in the enum
        r#"{"history_entry": 12"#,   // wrong type
        "{     \"history_entry\"",   // whitespace run
    ] {
        assert!(!complete(&n, bad), "{bad}");
    }
    // Order is the schema's: a later optional key cannot come first.
    assert!(!accepted_prefix(&n, r#"{"count""#));
    // Nothing after the value.
    let mut m = JsonMatcher::new(n);
    assert!(m.feed(br#"{"history_entry": "h", "memory_update": "m"}"#));
    assert!(m.is_done());
    assert!(!m.accepts(b" "));
}

#[test]
fn invalid_utf8_and_control_bytes_are_refused() {
    let n = Node::compile(&json!({"type": "string"}));
    assert!(!accepted_prefix(&n, "\"\u{1}"));
    let m = JsonMatcher::new(n);
    assert!(!m.accepts(&[b'"', 0xC3, b'a']));
    assert!(!m.accepts(&[b'"', 0xFF]));
    assert!(m.accepts(&[b'"', 0xC3, 0xA9]));
}

#[test]
fn max_length_and_free_values() {
    let n = Node::compile(&json!({"type": "string", "maxLength": 3}));
    assert!(complete(&n, r#""abc""#));
    assert!(!complete(&n, r#""abcd""#));
    let any = Node::compile(&json!({}));
    for ok in [
        r#"{"a": [1, {"b": null}], "c": true}"#,
        "[]",
        r#""x""#,
        "false",
    ] {
        assert!(complete(&any, ok) || ok == "1", "{ok}");
    }
}

/// `maxItems` closes the array after its last allowed item, so a model
/// cannot list facts forever.
#[test]
fn max_items_bounds_an_array() {
    let n = Node::compile(&json!({"type": "array", "items": {"type": "string"}, "maxItems": 2}));
    assert!(complete(&n, "[]"));
    assert!(complete(&n, r#"["a"]"#));
    assert!(complete(&n, r#"["a", "b"]"#));
    assert!(!accepted_prefix(&n, r#"["a", "b","#));
    let none = Node::compile(&json!({"type": "array", "maxItems": 0}));
    assert!(complete(&none, "[]"));
    assert!(!accepted_prefix(&none, "[1"));
}

/// A token may close the value and go on past it (`"}}`: the arguments,
/// then the call's own brace); only the bytes up to the end count. A token
/// that does not complete the value must fit it whole.
#[test]
fn a_closing_token_may_carry_bytes_past_the_value() {
    let n = save_memory();
    let mut m = JsonMatcher::new(n);
    assert!(m.feed(br#"{"history_entry": "h", "memory_update": "m"#));
    assert!(!m.accepts(b"\"}}"));
    assert_eq!(m.usable_prefix(b"\"}}"), Some(2));
    assert_eq!(m.usable_prefix(b"\"}\n</tool_call>"), Some(2));
    assert_eq!(m.usable_prefix(b"\", \""), Some(4));
    assert_eq!(m.usable_prefix(b"xyz"), Some(3));
    assert_eq!(m.usable_prefix(b"\"]"), None);
    assert_eq!(m.usable_prefix(b""), None);
    let mut done = m.clone();
    assert!(done.feed(b"\"}"));
    assert!(done.is_done());
    assert_eq!(done.usable_prefix(b"}"), Some(0));
    // A number is complete at the first byte after it.
    let num = Node::compile(&json!({"type": "integer"}));
    let mut m = JsonMatcher::new(num);
    assert!(m.feed(b"12"));
    assert_eq!(m.usable_prefix(b"3}"), Some(1));
    assert_eq!(m.usable_prefix(b"}"), Some(0));
}

/// From any point of a valid value, `closing` completes it (and a value
/// the schema accepts), so a budget can always be kept.
#[test]
fn closing_completes_every_prefix() {
    let facts = Node::compile(&json!({
        "type": "object",
        "properties": {
            "facts": {"type": "array", "items": {"type": "string", "maxLength": 30}, "maxItems": 4},
            "history_entry": {"type": "string"},
            "ops": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "fact": {"type": "integer"},
                    "event": {"type": "string", "enum": ["ADD", "UPDATE", "NOOP"]},
                    "ok": {"type": "boolean"}
                },
                "required": ["fact", "event"]
            }}
        },
        "required": ["facts", "history_entry"]
    }));
    let n = save_memory();
    let docs: [(&Arc<Node>, &str); 4] = [
        (
            &n,
            r#"{"history_entry": "caf\u00e9 \n 咖啡 😀", "memory_update": "m", "tags": ["b\"c"], "count": -15}"#,
        ),
        (&n, r#"{"history_entry":"h","memory_update":"","count":0}"#),
        (
            &facts,
            r#"{"facts": ["Lives in Porto", "咖啡"], "history_entry": "[2026-01-01] x", "ops": [{"fact": 12, "event": "UPDATE", "ok": true}]}"#,
        ),
        (
            &facts,
            r#"{"facts":[],"history_entry":"","ops":[{"fact":-3,"event":"NOOP"}]}"#,
        ),
    ];
    for (node, doc) in docs {
        let bytes = doc.as_bytes();
        for cut in 0..bytes.len() {
            let mut m = JsonMatcher::new(node.clone());
            assert!(m.feed(&bytes[..cut]), "{doc} cut at {cut}");
            let close = m.closing();
            let mut done = m.clone();
            assert!(
                done.feed(&close) && done.is_done(),
                "{:?} + {:?} does not complete",
                String::from_utf8_lossy(&bytes[..cut]),
                String::from_utf8_lossy(&close)
            );
            let mut text = bytes[..cut].to_vec();
            text.extend_from_slice(&close);
            let v: Value = serde_json::from_slice(&text)
                .unwrap_or_else(|e| panic!("{e}: {:?}", String::from_utf8_lossy(&text)));
            assert!(v.is_object());
        }
    }
    // The closing of a fresh matcher is the schema's smallest value.
    let m = JsonMatcher::new(facts);
    assert_eq!(m.closing(), br#"{"facts":[],"history_entry":""}"#.to_vec());
}
