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

/// The items of the write path's `extract_facts`: required strings, an
/// enum whose options share a first letter, a bounded array.
fn facts_schema() -> Arc<Node> {
    Node::compile(&json!({
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "maxItems": 2,
                "items": {
                    "type": "object",
                    "properties": {
                        "quote": {"type": "string", "maxLength": 200},
                        "subject": {"type": "string"},
                        "kind": {"type": "string", "enum": ["states", "changes", "corrects", "retracts"]},
                        "fact": {"type": "string"}
                    },
                    "required": ["quote", "subject", "kind", "fact"]
                }
            }
        },
        "required": ["facts"]
    }))
}

/// What the schema forces after `text`.
fn forced_after(node: &Arc<Node>, text: &str) -> String {
    let mut m = JsonMatcher::new(node.clone());
    assert!(m.feed(text.as_bytes()), "{text}");
    let run = m.forced();
    assert!(run.is_empty() || m.accepts(&run), "{text} + {run:?}");
    String::from_utf8(run).unwrap()
}

/// Key names, their colons, the separator before a required property and
/// closing brackets run on their own, laid out as `json.dumps` writes
/// them; a run stops at every choice the model has, and right after the
/// opening quote of a string value.
#[test]
fn forced_runs_of_required_properties_and_closings() {
    let n = facts_schema();
    let item = r#"{"facts": [{"quote": "I moved", "subject": "user", "kind": "changes", "fact": "The user moved."}"#;
    for (prefix, run) in [
        ("", r#"{"facts": ["#),
        (r#"{"facts": ["#, ""), // an item or the end: the model's
        (r#"{"facts": [{"#, r#""quote": ""#),
        (r#"{"facts": [{"quote": ""#, ""), // the content is the model's
        (r#"{"facts": [{"quote": "I moved"#, ""),
        (r#"{"facts": [{"quote": "I moved""#, r#", "subject": ""#),
        // The model's token carried the comma (`",`): the rest still runs.
        (r#"{"facts": [{"quote": "I moved","#, r#" "subject": ""#),
        // Whitespace the model wrote itself is not doubled.
        (r#"{"facts": [{"quote": "I moved", "#, r#""subject": ""#),
        (
            r#"{"facts": [{"quote": "I moved", "subject": "user""#,
            r#", "kind": ""#,
        ),
        (
            r#"{"facts": [{"quote": "I", "subject": "u", "kind": "states""#,
            r#", "fact": ""#,
        ),
        (&item[..item.len() - 1], "}"),
        (item, ""), // another item or the end
        (&format!("{item},"), r#" {"quote": ""#),
        // The second item is the last `maxItems` allows: the array and
        // the object close.
        (&format!("{item}, {}", &item[11..]), "]}"),
        (&format!("{item}]"), "}"),
    ] {
        assert_eq!(forced_after(&n, prefix), run, "after {prefix:?}");
    }
    let mut done = JsonMatcher::new(n);
    assert!(done.feed(format!("{item}]}}").as_bytes()) && done.is_done());
    assert!(done.forced().is_empty());
}

/// An enum option runs once only one fits what was written; options
/// that share a prefix leave the choice to the model until they part.
#[test]
fn forced_runs_of_enum_options() {
    let n = facts_schema();
    let at = r#"{"facts": [{"quote": "I", "subject": "u", "kind": ""#;
    assert_eq!(forced_after(&n, at), ""); // states, changes, corrects, retracts
    assert_eq!(forced_after(&n, &format!("{at}c")), ""); // changes or corrects
    assert_eq!(
        forced_after(&n, &format!("{at}co")),
        r#"rrects", "fact": ""#
    );
    assert_eq!(
        forced_after(&n, &format!("{at}r")),
        r#"etracts", "fact": ""#
    );
    let shared = Node::compile(&json!({"enum": ["note", "notes", "nothing", "yes"]}));
    assert_eq!(forced_after(&shared, ""), "\""); // the opening quote alone
    assert_eq!(forced_after(&shared, "\"n"), "ot");
    assert_eq!(forced_after(&shared, "\"not"), ""); // e or h
    assert_eq!(forced_after(&shared, "\"note"), ""); // the end or s
    assert_eq!(forced_after(&shared, "\"noth"), "ing\"");
    // A settled option after an opening quote runs as its own piece.
    let one = Node::compile(&json!({"const": "extract"}));
    assert_eq!(forced_after(&one, ""), "\"");
    assert_eq!(forced_after(&one, "\""), "extract\"");
}

/// Optional properties are a choice (to close, or which key), and a key
/// runs as far as the keys still allowed agree; a free value after a
/// colon is the model's, space included.
#[test]
fn forced_runs_with_optional_properties() {
    let n = save_memory();
    assert_eq!(forced_after(&n, ""), r#"{"history_entry": ""#);
    assert_eq!(
        forced_after(&n, r#"{"history_entry": "h""#),
        r#", "memory_update": ""#
    );
    let both = r#"{"history_entry": "h", "memory_update": "m""#;
    assert_eq!(forced_after(&n, both), ""); // `,` or `}`
    assert_eq!(forced_after(&n, &format!("{both},")), r#" ""#); // tags or count
    assert_eq!(forced_after(&n, &format!("{both}, \"c")), r#"ount":"#);
    assert_eq!(forced_after(&n, &format!("{both}, \"t")), r#"ags": ["#);
    let prefixed = Node::compile(&json!({
        "type": "object",
        "properties": {"max_a": {"type": "null"}, "max_b": {"type": "boolean"}}
    }));
    assert_eq!(forced_after(&prefixed, "{"), ""); // a key or `}`
    assert_eq!(forced_after(&prefixed, "{\""), "max_");
    assert_eq!(forced_after(&prefixed, "{\"max_a"), r#"": null"#);
    assert_eq!(forced_after(&prefixed, "{\"max_b\": t"), "rue}");
}

/// Arrays of arrays of objects: each level's opening runs until the
/// model's first choice, and `maxItems` closes a level.
#[test]
fn forced_runs_in_nested_arrays() {
    let n = Node::compile(&json!({
        "type": "array",
        "items": {
            "type": "array",
            "maxItems": 1,
            "items": {
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"]
            }
        }
    }));
    assert_eq!(forced_after(&n, ""), "[");
    assert_eq!(forced_after(&n, "["), ""); // an item or `]`
    assert_eq!(forced_after(&n, "[["), "");
    assert_eq!(forced_after(&n, "[[{"), r#""ok":"#);
    assert_eq!(forced_after(&n, r#"[[{"ok": f"#), "alse}]");
    assert_eq!(forced_after(&n, r#"[[{"ok": false}]"#), "");
    assert_eq!(forced_after(&n, r#"[[{"ok": false}],"#), " [");
    let empty = Node::compile(&json!({"type": "array", "maxItems": 0}));
    assert_eq!(forced_after(&empty, ""), "[]");
}

/// Whatever the cut, what is forced is where a value laid out as
/// `json.dumps` writes it goes on: the runs never take a byte the model
/// might have written differently (except layout whitespace).
#[test]
fn forced_runs_follow_every_valid_value() {
    let n = facts_schema();
    let doc: Value = json!({"facts": [
        {"quote": "Ich wohne in Köln, 咖啡", "subject": "user", "kind": "states", "fact": "The user lives in Köln."},
        {"quote": "", "subject": "sister \"Ana\"", "kind": "retracts", "fact": ""}
    ]});
    let text = crate::template::py_json(&doc);
    let bytes = text.as_bytes();
    let mut forced_total = 0;
    for cut in 0..=bytes.len() {
        let mut m = JsonMatcher::new(n.clone());
        assert!(m.feed(&bytes[..cut]), "cut {cut}");
        let run = m.forced();
        assert!(
            bytes[cut..].starts_with(&run),
            "after {:?}: {:?}",
            String::from_utf8_lossy(&bytes[..cut]),
            String::from_utf8_lossy(&run)
        );
        forced_total += run.len();
    }
    assert!(forced_total > 0);
}
