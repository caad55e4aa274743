//! Tool calls in a model's text, in both forms small models write them:
//! `<tool_call>{…}</tool_call>` tags (Qwen's template), or bare JSON
//! objects `{"name": …, "arguments": …}` (alone, in a list, in a code
//! fence, or after some prose).

use serde_json::Value;

/// One call found in the text.
#[derive(Debug, Clone, PartialEq)]
pub struct FoundCall {
    /// Tool name.
    pub name: String,
    /// Arguments object.
    pub arguments: Value,
}

/// Text and calls of an answer.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    /// What is left of the text once the calls are taken out, trimmed.
    pub content: String,
    /// The calls, in order.
    pub calls: Vec<FoundCall>,
}

/// A call object: `{"name": <one of tools>, "arguments"|"parameters": …}`.
fn as_call(v: &Value, tools: &[&str]) -> Option<FoundCall> {
    let name = v.get("name")?.as_str()?;
    if !tools.contains(&name) {
        return None;
    }
    let args = v
        .get("arguments")
        .or_else(|| v.get("parameters"))
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    let args = match args {
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        other => other,
    };
    Some(FoundCall {
        name: name.to_string(),
        arguments: args,
    })
}

/// The first JSON value at the start of `text` and its length in bytes.
fn leading_json(text: &str) -> Option<(Value, usize)> {
    let mut it = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    let v = it.next()?.ok()?;
    Some((v, it.byte_offset()))
}

/// Finds the calls of `tools` in `text`. An opened `<tool_call>` whose JSON
/// does not parse, or a bare call object that never closes, is an error
/// that says so.
pub fn parse(text: &str, tools: &[&str]) -> Result<Parsed, String> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    if tools.is_empty() {
        return Ok(Parsed {
            content: text.trim().to_string(),
            calls: Vec::new(),
        });
    }
    let mut content = String::new();
    let mut calls = Vec::new();
    if text.contains(OPEN) {
        let mut rest = text;
        while let Some(at) = rest.find(OPEN) {
            content.push_str(&rest[..at]);
            let after = &rest[at + OPEN.len()..];
            let (body, next) = match after.find(CLOSE) {
                Some(end) => (&after[..end], &after[end + CLOSE.len()..]),
                None => (after, ""),
            };
            let body = strip_fence(body.trim());
            let v: Value = serde_json::from_str(body).map_err(|e| {
                format!(
                    "the model opened a <tool_call> whose JSON does not parse ({e}): {}",
                    clip(body)
                )
            })?;
            let items = match v {
                Value::Array(items) => items,
                v => vec![v],
            };
            for item in items {
                match as_call(&item, tools) {
                    Some(c) => calls.push(c),
                    None => {
                        return Err(format!(
                        "the model called something that is not one of the offered tools ({}): {}",
                        tools.join(", "),
                        clip(body)
                    ))
                    }
                }
            }
            rest = next;
        }
        content.push_str(rest);
        return Ok(Parsed {
            content: content.trim().to_string(),
            calls,
        });
    }
    // Bare JSON: try every `{` or `[` where a value may start.
    let mut i = 0;
    let mut last = 0;
    while i < text.len() {
        let c = text.as_bytes()[i];
        if c == b'{' || c == b'[' {
            if let Some((v, len)) = leading_json(&text[i..]) {
                let found: Vec<FoundCall> = match &v {
                    Value::Array(items) => items.iter().filter_map(|x| as_call(x, tools)).collect(),
                    v => as_call(v, tools).into_iter().collect(),
                };
                if !found.is_empty() {
                    content.push_str(&text[last..i]);
                    calls.extend(found);
                    i += len;
                    last = i;
                    continue;
                }
            } else if c == b'{' && opens_call(&text[i..], tools) {
                return Err(format!(
                    "the model began a tool call but never closed its JSON: {}",
                    clip(&text[i..])
                ));
            }
        }
        i += 1;
    }
    content.push_str(&text[last..]);
    let content = content.trim();
    let content = if calls.is_empty() {
        content.to_string()
    } else {
        strip_fence_marks(content)
    };
    Ok(Parsed { content, calls })
}

/// `{"name": "<a tool>"` at the start of `text`, whatever follows.
fn opens_call(text: &str, tools: &[&str]) -> bool {
    let compact: String = text
        .chars()
        .take(200)
        .filter(|c| !c.is_whitespace())
        .collect();
    tools
        .iter()
        .any(|t| compact.starts_with(&format!("{{\"name\":\"{t}\"")))
}

fn strip_fence(s: &str) -> &str {
    let s = s.trim();
    let s = s
        .strip_prefix("```json")
        .or_else(|| s.strip_prefix("```"))
        .unwrap_or(s);
    s.strip_suffix("```").unwrap_or(s).trim()
}

/// Leftover code-fence marks around calls that were taken out.
fn strip_fence_marks(s: &str) -> String {
    s.replace("```json", "")
        .replace("```", "")
        .trim()
        .to_string()
}

fn clip(s: &str) -> String {
    let t: String = s.chars().take(200).collect();
    if s.chars().count() > 200 {
        format!("{t}…")
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const TOOLS: &[&str] = &["save_memory", "memory_search"];

    #[test]
    fn tagged_calls_are_found_with_the_text_around_them() {
        let p = parse(
            "Saving.\n<tool_call>\n{\"name\": \"save_memory\", \"arguments\": {\"history_entry\": \"h\"}}\n</tool_call>\n<tool_call>{\"name\": \"memory_search\", \"arguments\": \"{\\\"query\\\": \\\"q\\\"}\"}</tool_call>",
            TOOLS,
        )
        .unwrap();
        assert_eq!(p.content, "Saving.");
        assert_eq!(p.calls.len(), 2);
        assert_eq!(p.calls[0].arguments, json!({"history_entry": "h"}));
        assert_eq!(
            p.calls[1].arguments,
            json!({"query": "q"}),
            "string arguments are decoded"
        );
        // A closing tag cut off by the stop token still counts.
        let p = parse(
            "<tool_call>\n{\"name\": \"memory_search\", \"arguments\": {}}",
            TOOLS,
        )
        .unwrap();
        assert_eq!(p.calls[0].name, "memory_search");
    }

    #[test]
    fn bare_json_calls_are_found_alone_in_lists_in_fences_and_after_prose() {
        for text in [
            r#"{"name": "save_memory", "arguments": {"history_entry": "h"}}"#,
            "```json\n{\"name\": \"save_memory\", \"arguments\": {\"history_entry\": \"h\"}}\n```",
            r#"[{"name": "save_memory", "parameters": {"history_entry": "h"}}]"#,
            "I will save it: {\"name\": \"save_memory\", \"arguments\": {\"history_entry\": \"h\"}}",
        ] {
            let p = parse(text, TOOLS).unwrap();
            assert_eq!(p.calls, [FoundCall { name: "save_memory".into(), arguments: json!({"history_entry": "h"}) }], "{text}");
            assert!(!p.content.contains("save_memory"), "{text}");
        }
        let p = parse(
            "{\"a\": 1} and {\"name\": \"other\", \"arguments\": {}}",
            TOOLS,
        )
        .unwrap();
        assert!(p.calls.is_empty(), "unknown names and plain JSON are text");
        assert_eq!(
            p.content,
            "{\"a\": 1} and {\"name\": \"other\", \"arguments\": {}}"
        );
    }

    #[test]
    fn unclosed_or_broken_calls_are_errors_that_say_so() {
        let e = parse(
            "{\"name\": \"save_memory\", \"arguments\": {\"history_entry\": \"h",
            TOOLS,
        )
        .unwrap_err();
        assert!(e.contains("never closed"), "{e}");
        let e = parse("<tool_call>\n{\"name\": \"save_memory\", \"arguments\": {\"history_entry\": }\n</tool_call>", TOOLS).unwrap_err();
        assert!(e.contains("does not parse"), "{e}");
        let e = parse(
            "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>",
            TOOLS,
        )
        .unwrap_err();
        assert!(e.contains("not one of the offered tools"), "{e}");
    }
}
