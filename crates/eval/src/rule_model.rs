//! The rule-based extractor of `mnemo eval write-path`: a deterministic
//! stand-in for the model, answering the requests of mnemo's write path
//! (`extract_facts`, `update_memory`, `save_memory` and the memory flush)
//! from the request body alone. It is meant to be served over the real
//! OpenAI wire protocol on loopback (the eval crate's
//! `rule_model_server` example, or a test's scripted server), so the
//! numbers it gives measure mnemo's bookkeeping (the checks, supersession,
//! history, caps) and never a model's judgement.
//!
//! It only understands statements of one shape, the shape of the
//! statements the write-path suite scripts into its conversations
//! ([`crate::write_path`]): a user sentence ending in `my SUBJECT is
//! VALUE` (`now` allowed before the value, the value one word) sets a
//! subject; a user sentence with `forget` and `my SUBJECT` retracts it.
//! Facts are written `The user's SUBJECT is VALUE.`; a retraction becomes
//! the fact `Forget that the user's SUBJECT is VALUE.` (extraction) or the
//! item `The user asked to forget their SUBJECT.` (the flush), and both
//! are read back as retractions when it decides the fact-level operations.

use serde_json::{json, Value};

/// What the rule-based model answers.
#[derive(Debug, Clone, PartialEq)]
pub enum RuleAnswer {
    /// A call of the tool `name` with these arguments.
    Tool {
        /// The tool.
        name: String,
        /// Its arguments (a JSON object).
        arguments: Value,
    },
    /// A plain text answer (the flush, or a request it does not know).
    Text(String),
}

/// One statement found in a user message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Statement {
    /// `my SUBJECT is VALUE`.
    Set {
        /// The subject, lower case.
        subject: String,
        /// The value, as written.
        value: String,
    },
    /// `forget (that) my SUBJECT (is VALUE)`.
    Forget {
        /// The subject, lower case.
        subject: String,
        /// The value, when the sentence says it.
        value: Option<String>,
    },
}

impl Statement {
    /// The statement as a fact.
    pub fn fact(&self) -> String {
        match self {
            Statement::Set { subject, value } => format!("The user's {subject} is {value}."),
            Statement::Forget {
                subject,
                value: Some(v),
            } => format!("Forget that the user's {subject} is {v}."),
            Statement::Forget {
                subject,
                value: None,
            } => format!("Forget the user's {subject}."),
        }
    }

    /// Its subject.
    pub fn subject(&self) -> &str {
        match self {
            Statement::Set { subject, .. } | Statement::Forget { subject, .. } => subject,
        }
    }
}

fn is_word(w: &str) -> bool {
    !w.is_empty()
        && w.chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '\'' | '-' | '_' | '@'))
}

/// The statements of a text, in order.
pub fn statements(text: &str) -> Vec<Statement> {
    let mut out = Vec::new();
    for sentence in text.split(['.', '!', '?', '\n']) {
        let lower = sentence.to_lowercase();
        let Some(at) = lower.rfind("my ") else {
            continue;
        };
        if at > 0
            && lower[..at]
                .chars()
                .last()
                .is_some_and(char::is_alphanumeric)
        {
            continue;
        }
        let rest_lower = &lower[at + 3..];
        // The value keeps its case where lower-casing kept the offsets.
        let rest = sentence
            .get(at + 3..)
            .filter(|r| r.len() == rest_lower.len());
        let (subject, value) = match rest_lower.find(" is ") {
            Some(i) => (
                rest_lower[..i].trim().to_string(),
                Some(
                    rest.and_then(|r| r.get(i + 4..))
                        .unwrap_or(&rest_lower[i + 4..])
                        .trim(),
                ),
            ),
            None => (rest_lower.trim().to_string(), None),
        };
        let subject_words: Vec<&str> = subject.split_whitespace().collect();
        if subject_words.is_empty()
            || subject_words.len() > 5
            || !subject_words.iter().all(|w| is_word(w))
        {
            continue;
        }
        let subject = subject_words.join(" ");
        let value = value.map(|v| v.strip_prefix("now ").unwrap_or(v).trim());
        let value = value.filter(|v| is_word(v)).map(str::to_string);
        if lower.contains("forget") {
            out.push(Statement::Forget { subject, value });
        } else if let Some(value) = value {
            out.push(Statement::Set { subject, value });
        }
    }
    out
}

/// A fact written by [`Statement::fact`] read back: `(subject, value)`,
/// the value `None` for a retraction.
pub fn parse_fact(text: &str) -> Option<(String, Option<String>, bool)> {
    let t = text.trim().trim_end_matches('.');
    if let Some(subject) = t.strip_prefix("The user asked to forget their ") {
        return Some((subject.to_lowercase(), None, true));
    }
    let forget = t.starts_with("Forget ");
    let rest = t
        .strip_prefix("Forget that the user's ")
        .or_else(|| t.strip_prefix("Forget the user's "))
        .or_else(|| t.strip_prefix("The user's "))?;
    match rest.split_once(" is ") {
        Some((s, v)) => Some((s.to_lowercase(), Some(v.to_string()), forget)),
        None => Some((rest.to_lowercase(), None, forget)),
    }
}

/// The user lines of a transcript as mnemo formats it (`[time] USER: text`).
fn user_lines(lines: &str) -> Vec<&str> {
    lines
        .lines()
        .filter_map(|l| l.split_once("] USER: ").map(|(_, t)| t))
        .collect()
}

/// The time of a transcript's first line, for a history entry.
fn first_time(lines: &str) -> String {
    lines
        .lines()
        .find_map(|l| l.strip_prefix('[').and_then(|r| r.split_once(']')))
        .map(|(t, _)| t.to_string())
        .filter(|t| t.len() >= 16)
        .unwrap_or_else(|| "1970-01-01 00:00".into())
}

fn content(m: &Value) -> String {
    match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The tool a request asks for: the forced choice, else its only tool.
fn wanted_tool(body: &Value) -> Option<String> {
    if let Some(name) = body
        .pointer("/tool_choice/function/name")
        .or_else(|| body.pointer("/tool_choice/name"))
        .and_then(Value::as_str)
    {
        return Some(name.to_string());
    }
    let tools = body.get("tools")?.as_array()?;
    tools.first().and_then(|t| {
        t.pointer("/function/name")
            .or_else(|| t.get("name"))
            .and_then(Value::as_str)
            .map(str::to_string)
    })
}

/// The answer to one chat request body (OpenAI or Anthropic shape).
pub fn answer(body: &Value) -> RuleAnswer {
    let messages: Vec<&Value> = body
        .get("messages")
        .and_then(Value::as_array)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    let last_user = messages
        .iter()
        .rev()
        .find(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(|m| content(m))
        .unwrap_or_default();
    match wanted_tool(body).as_deref() {
        Some("extract_facts") => extract(&last_user),
        Some("update_memory") => update(&last_user),
        Some("save_memory") => save(&last_user),
        Some(other) => RuleAnswer::Text(format!("the rule-based model does not know {other}")),
        None => flush(&messages),
    }
}

fn extract(user: &str) -> RuleAnswer {
    let lines = user.split_once("\n\n").map_or(user, |(_, l)| l);
    let mut facts: Vec<String> = Vec::new();
    for l in user_lines(lines) {
        for s in statements(l) {
            let f = s.fact();
            if !facts.contains(&f) {
                facts.push(f);
            }
        }
    }
    RuleAnswer::Tool {
        name: "extract_facts".into(),
        arguments: json!({
            "facts": facts,
            "history_entry": format!("[{}] {} statement(s) about the user", first_time(lines), facts.len()),
        }),
    }
}

fn update(user: &str) -> RuleAnswer {
    let (memories, facts) = user.split_once("## New facts").unwrap_or((user, ""));
    // `- [f1] text (since 2026-01-01)`
    let existing: Vec<(String, String)> = memories
        .lines()
        .filter_map(|l| l.strip_prefix("- ["))
        .filter_map(|l| l.split_once("] "))
        .map(|(id, t)| {
            let t = match t.rfind(" (since ") {
                Some(i) if t.ends_with(')') => &t[..i],
                _ => t,
            };
            (id.to_string(), t.to_string())
        })
        .collect();
    let new: Vec<(usize, String)> = facts
        .lines()
        .filter_map(|l| l.split_once(". "))
        .filter_map(|(n, t)| Some((n.trim().parse().ok()?, t.to_string())))
        .collect();
    let memory_of = |subject: &str| {
        existing.iter().find(|(_, t)| {
            parse_fact(t).is_some_and(|(s, v, forget)| s == subject && v.is_some() && !forget)
        })
    };
    let mut ops = Vec::new();
    for (pos, (i, text)) in new.iter().enumerate() {
        let Some((subject, value, forget)) = parse_fact(text) else {
            ops.push(json!({"fact": i, "event": "ADD", "text": text}));
            continue;
        };
        // A later new fact about the same subject wins within one batch.
        let later = new[pos + 1..]
            .iter()
            .any(|(_, t)| parse_fact(t).is_some_and(|(s, _, _)| s == subject));
        let found = memory_of(&subject);
        let op = match (forget, found) {
            (_, _) if later => json!({"fact": i, "event": "NOOP"}),
            (true, Some((id, _))) => json!({"fact": i, "event": "DELETE", "id": id}),
            (true, None) => json!({"fact": i, "event": "NOOP"}),
            (false, Some((id, t))) => {
                if parse_fact(t).and_then(|(_, v, _)| v) == value {
                    json!({"fact": i, "event": "NOOP", "id": id})
                } else {
                    json!({"fact": i, "event": "UPDATE", "id": id, "text": text})
                }
            }
            (false, None) => json!({"fact": i, "event": "ADD", "text": text}),
        };
        ops.push(op);
    }
    RuleAnswer::Tool {
        name: "update_memory".into(),
        arguments: json!({ "operations": ops }),
    }
}

fn save(user: &str) -> RuleAnswer {
    let memory = user
        .split_once("## Current long-term memory (MEMORY.md)")
        .map_or("", |(_, r)| r);
    let (memory, excerpt) = memory
        .split_once("## Conversation excerpt to consolidate")
        .unwrap_or((memory, ""));
    let memory = memory.trim();
    let mut lines: Vec<String> = if memory == "(empty)" {
        Vec::new()
    } else {
        memory.lines().map(str::to_string).collect()
    };
    let excerpt = excerpt.split_once("\n\n").map_or(excerpt, |(_, l)| l);
    let subject_line = |lines: &[String], subject: &str| {
        lines.iter().position(|l| {
            l.strip_prefix("- ")
                .and_then(parse_fact)
                .is_some_and(|(s, _, _)| s == subject)
        })
    };
    let mut said = 0;
    for l in user_lines(excerpt) {
        for s in statements(l) {
            said += 1;
            let at = subject_line(&lines, s.subject());
            match (&s, at) {
                (Statement::Set { .. }, Some(i)) => lines[i] = format!("- {}", s.fact()),
                (Statement::Set { .. }, None) => lines.push(format!("- {}", s.fact())),
                (Statement::Forget { .. }, Some(i)) => {
                    lines.remove(i);
                }
                (Statement::Forget { .. }, None) => {}
            }
        }
    }
    let mut update = lines.join("\n");
    if !update.is_empty() {
        update.push('\n');
    }
    RuleAnswer::Tool {
        name: "save_memory".into(),
        arguments: json!({
            "history_entry": format!("[{}] {said} statement(s) about the user", first_time(excerpt)),
            "memory_update": update,
        }),
    }
}

fn flush(messages: &[&Value]) -> RuleAnswer {
    let mut items: Vec<String> = Vec::new();
    for m in messages {
        if m.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        let text = content(m);
        if text.starts_with("[memory flush]") {
            continue;
        }
        for s in statements(&text) {
            let item = match &s {
                Statement::Set { .. } => format!("- {}", s.fact()),
                Statement::Forget { subject, .. } => {
                    format!("- The user asked to forget their {subject}.")
                }
            };
            if !items.contains(&item) {
                items.push(item);
            }
        }
    }
    if items.is_empty() {
        RuleAnswer::Text("NO_REPLY".into())
    } else {
        RuleAnswer::Text(items.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_scripted_statements_only() {
        assert_eq!(
            statements("By the way, my gym locker number is 14. I love it!"),
            vec![Statement::Set {
                subject: "gym locker number".into(),
                value: "14".into()
            }]
        );
        assert_eq!(
            statements("Update: my parking spot is now C9."),
            vec![Statement::Set {
                subject: "parking spot".into(),
                value: "C9".into()
            }]
        );
        assert_eq!(
            statements("Please forget that my spare key spot is flowerpot."),
            vec![Statement::Forget {
                subject: "spare key spot".into(),
                value: Some("flowerpot".into())
            }]
        );
        assert!(statements("My mom is so happy that I got the job").is_empty());
        assert!(statements("Tommy is great.").is_empty());
        assert_eq!(
            parse_fact("The user's parking spot is C9."),
            Some(("parking spot".into(), Some("C9".into()), false))
        );
        // The flush's retraction item.
        assert_eq!(
            parse_fact("The user asked to forget their spare key spot."),
            Some(("spare key spot".into(), None, true))
        );
    }

    #[test]
    fn updates_by_subject() {
        let user = "## Existing memories\n\n- [f1] The user's parking spot is B4. (since 2026-01-01)\n- [f2] The user's bike lock code is 4417.\n\n## New facts\n\n0. The user's parking spot is C9.\n1. The user's bike lock code is 4417.\n2. Forget that the user's bike lock code is 4417.\n3. The user's cat is Tom.";
        let RuleAnswer::Tool { arguments, .. } = update(user) else {
            panic!("no tool call")
        };
        let ops = arguments["operations"].as_array().unwrap();
        assert_eq!(ops[0]["event"], "UPDATE");
        assert_eq!(ops[0]["id"], "f1");
        assert_eq!(ops[1]["event"], "NOOP");
        assert_eq!(ops[2]["event"], "DELETE");
        assert_eq!(ops[3]["event"], "ADD");
        // A flush's retraction item ends the fact it names.
        let user = "## Existing memories\n\n- [f2] The user's bike lock code is 4417.\n\n## New facts\n\n0. The user asked to forget their bike lock code.";
        let RuleAnswer::Tool { arguments, .. } = update(user) else {
            panic!("no tool call")
        };
        assert_eq!(
            arguments["operations"],
            json!([{"fact": 0, "event": "DELETE", "id": "f2"}])
        );
    }
}
