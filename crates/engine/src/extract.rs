//! What the model is asked for on the write path: one constrained
//! `extract_facts` call per batch of messages, each proposed fact with the
//! words of the message that say it, who and what it is about, its value
//! and its kind (states, changes, corrects, retracts), and one yes/no
//! `judge` call for a pair of facts the code cannot tell apart. Both
//! answers are proposals: [`crate::adjudicate`] checks and decides.
//!
//! The messages are shown numbered, without timestamps (the code resolves
//! dates from each message's own timestamp), tool results left out (they
//! are not what a person said), each message cut to
//! [`MAX_MESSAGE_CHARS`]; a round whose messages do not fit one request
//! is split into batches that do ([`batches`]).

use mnemo_core::{Message, Role, TokenCounter};
use mnemo_llm::{ChatRequest, ToolChoice, ToolSpec};
use serde::Serialize;
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::templates;

/// Most facts one extraction call may list (the schema says it, so a local
/// model's constrained decoding closes the call within it).
pub const MAX_FACTS: usize = 12;
/// Longest quote, in characters.
pub const MAX_QUOTE_CHARS: usize = 200;
/// Longest fact sentence, in characters.
pub const MAX_FACT_CHARS: usize = 240;
/// Longest subject or attribute, in characters.
pub const MAX_KEY_CHARS: usize = 60;
/// Longest value, in characters.
pub const MAX_VALUE_CHARS: usize = 120;
/// Characters of one message shown to the model: a pasted log or file is
/// not what facts come from, and must not fill the window.
pub const MAX_MESSAGE_CHARS: usize = 1_500;
/// Tokens of messages one extraction call reads at most: a call lists at
/// most [`MAX_FACTS`], so a long round is read in parts that each give
/// their facts (a model asked about a whole session keeps its gist and
/// drops details), and the prompt's prefix is the model's cache.
pub const BATCH_TOKENS: usize = 1_200;
/// Output tokens of an extraction call (a dozen facts fit).
pub const EXTRACT_MAX_TOKENS: u32 = 1_200;

/// The kinds of a proposed fact.
pub const KINDS: &[&str] = &["states", "changes", "corrects", "retracts"];

/// The `extract_facts` tool.
pub fn extract_facts_tool() -> ToolSpec {
    let text = |max: usize, description: &str| json!({"type": "string", "maxLength": max, "description": description});
    ToolSpec::new(
        "extract_facts",
        "Save the facts worth remembering from the conversation, one item per claim.",
        json!({
            "type": "object",
            "properties": {
                "facts": {
                    "type": "array",
                    "maxItems": MAX_FACTS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "quote": text(MAX_QUOTE_CHARS, "The exact words of one message that say it, copied."),
                            "subject": text(MAX_KEY_CHARS, "Who it is about: \"user\" for the user, else the person's name or relation."),
                            "attribute": text(MAX_KEY_CHARS, "What about them, in one to four words (\"home city\", \"job\")."),
                            "value": text(MAX_VALUE_CHARS, "The value the quote gives, in a few words; empty for a retraction."),
                            "kind": {"type": "string", "enum": KINDS, "description": "states: a new fact; changes: replaces an earlier value; corrects: fixes something said wrongly; retracts: asks to forget it or says it is not true."},
                            "fact": text(MAX_FACT_CHARS, "One short sentence in the third person naming the subject (\"The user lives in Berlin.\"), never \"I\" or \"my\".")
                        },
                        "required": ["quote", "subject", "attribute", "value", "kind", "fact"]
                    }
                }
            },
            "required": ["facts"]
        }),
    )
}

/// The `judge` tool: one yes or no.
pub fn judge_tool() -> ToolSpec {
    ToolSpec::new(
        "judge",
        "Answer the question with yes or no.",
        json!({
            "type": "object",
            "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
            "required": ["answer"]
        }),
    )
}

/// One fact as the model proposed it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Proposed {
    /// The words of a message that say it.
    pub quote: String,
    /// Who it is about.
    pub subject: String,
    /// What about them.
    pub attribute: String,
    /// The value.
    pub value: String,
    /// `states`, `changes`, `corrects` or `retracts` (anything else is
    /// read as `states`).
    pub kind: String,
    /// The sentence to store.
    pub fact: String,
}

fn field(o: &serde_json::Map<String, Value>, keys: &[&str]) -> String {
    keys.iter()
        .find_map(|k| match o.get(*k) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            _ => None,
        })
        .map(|s| mnemo_store::memory::facts::one_line(&s))
        .unwrap_or_default()
}

/// Reads `extract_facts` arguments: `facts` must be a list; an item may be
/// an object (the schema's) or a bare string (a weak model's shortcut,
/// read as a fact without evidence, which the checks then refuse).
pub fn parse_extracted(args: &Value) -> Result<Vec<Proposed>> {
    let obj = crate::consolidate::tool_arguments(args, "extract_facts")?;
    let list = match obj.get("facts") {
        Some(Value::Array(a)) => a.clone(),
        Some(Value::String(s)) if s.trim().is_empty() => Vec::new(),
        Some(v @ Value::Object(_)) => vec![v.clone()],
        None | Some(Value::Null) => {
            return Err(Error::BadAnswer("extract_facts: `facts` is missing".into()))
        }
        Some(_) => {
            return Err(Error::BadAnswer(
                "extract_facts: `facts` is not a list".into(),
            ))
        }
    };
    let mut out = Vec::new();
    for item in list {
        let p = match item {
            Value::Object(o) => Proposed {
                quote: field(&o, &["quote", "evidence"]),
                subject: field(&o, &["subject", "who"]),
                attribute: field(&o, &["attribute", "what"]),
                value: field(&o, &["value"]),
                kind: field(&o, &["kind", "type"]).to_lowercase(),
                fact: field(&o, &["fact", "text"]),
            },
            Value::String(s) => Proposed {
                fact: mnemo_store::memory::facts::one_line(&s),
                kind: "states".into(),
                ..Default::default()
            },
            _ => continue,
        };
        let blank = p.fact.is_empty() && p.value.is_empty();
        if !blank && !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// Reads a `judge` answer: true for yes.
pub fn parse_judge(args: &Value) -> Result<bool> {
    let obj = crate::consolidate::tool_arguments(args, "judge")?;
    match obj
        .get("answer")
        .and_then(Value::as_str)
        .map(|s| s.trim().to_lowercase())
        .as_deref()
    {
        Some("yes") => Ok(true),
        Some("no") => Ok(false),
        other => Err(Error::BadAnswer(format!(
            "judge: the answer {other:?} is neither yes nor no"
        ))),
    }
}

/// The sentences of `text`: cut after `.`, `!` or `?` followed by a space
/// and a capital or digit, after `。！？`, and at line ends; never inside
/// "Dr. Smith" or "3.5".
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (k, &(i, c)) in chars.iter().enumerate() {
        let end = i + c.len_utf8();
        let cut = match c {
            '\n' | '。' | '！' | '？' => true,
            '.' | '!' | '?' => {
                let next = chars.get(k + 1).map(|x| x.1);
                let after = chars.get(k + 2).map(|x| x.1);
                let word = text[start..i]
                    .rsplit(char::is_whitespace)
                    .next()
                    .unwrap_or("");
                let abbreviation = c == '.'
                    && [
                        "dr", "mr", "mrs", "ms", "st", "prof", "jr", "sr", "vs", "etc", "e.g",
                        "i.e",
                    ]
                    .contains(&word.to_lowercase().as_str());
                !abbreviation
                    && next.is_some_and(char::is_whitespace)
                    && after.is_some_and(|a| {
                        a.is_uppercase() || a.is_ascii_digit() || a == '"' || !a.is_ascii()
                    })
            }
            _ => false,
        };
        if cut {
            let piece = text[start..end].trim();
            if !piece.is_empty() {
                out.push(piece);
            }
            start = end;
        }
    }
    let piece = text[start..].trim();
    if !piece.is_empty() {
        out.push(piece);
    }
    out
}

/// A message as the extraction shows it: one `[n] USER: sentence` line per
/// sentence (a small model takes one fact per line it reads, so a message
/// that says three things is shown as three lines), or `None` for what it
/// leaves out (tool results, calls without text, empty messages).
pub fn shown(n: usize, m: &Message) -> Option<String> {
    if m.role == Role::Tool || m.role == Role::System {
        return None;
    }
    let text = m.text();
    if text.trim().is_empty() {
        return None;
    }
    let cut: String = text.chars().take(MAX_MESSAGE_CHARS).collect();
    let more = if cut.len() < text.len() { " …" } else { "" };
    let role = m.role.as_str().to_uppercase();
    let lines: Vec<String> = sentences(&cut)
        .into_iter()
        .map(|s| format!("[{n}] {role}: {}", mnemo_store::memory::facts::one_line(s)))
        .collect();
    Some(format!("{}{more}", lines.join("\n")))
}

/// Which of `messages` the extraction reads: every user message, and an
/// assistant message only where a person speaks in the assistant's place
/// or the user's next message is short enough to lean on it (a "yes", an
/// answer to its question). What the agent says unanswered is not memory,
/// and a small model asked about it writes facts the checks then refuse,
/// at the cost of its output tokens.
pub fn heard(messages: &[Message]) -> Vec<bool> {
    let names = crate::adjudicate::user_names(messages);
    let spoken = |m: &Message| matches!(m.role, Role::User | Role::Assistant);
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| match m.role {
            Role::User => true,
            Role::Assistant => {
                crate::adjudicate::assistant_person(m, &names).is_some()
                    || messages
                        .iter()
                        .skip(i + 1)
                        .find(|n| spoken(n))
                        .is_some_and(|n| {
                            n.role == Role::User
                                && n.text().split_whitespace().count() <= SHORT_REPLY_WORDS
                        })
            }
            _ => false,
        })
        .collect()
}

/// A user message of at most this many words reads with the assistant
/// message before it.
const SHORT_REPLY_WORDS: usize = 12;

/// The messages of a round split into batches whose shown lines take at
/// most `budget` tokens each (at least one message a batch): index ranges
/// into `messages`.
pub fn batches(
    messages: &[Message],
    counter: &dyn TokenCounter,
    budget: usize,
) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let (mut start, mut used) = (0, 0);
    let heard = heard(messages);
    for (i, m) in messages.iter().enumerate() {
        let n = if heard.get(i).copied().unwrap_or(true) {
            shown(i + 1, m).map_or(0, |l| counter.count_text(&l) + 1)
        } else {
            0
        };
        if used + n > budget && i > start {
            out.push(start..i);
            start = i;
            used = 0;
        }
        used += n;
    }
    if start < messages.len() {
        out.push(start..messages.len());
    }
    out
}

/// The extraction request for `messages` (numbered from 1).
pub fn extract_request(messages: &[Message], choice: ToolChoice) -> ChatRequest {
    let heard = heard(messages);
    let lines: Vec<String> = messages
        .iter()
        .enumerate()
        .filter(|(i, _)| heard.get(*i).copied().unwrap_or(true))
        .filter_map(|(i, m)| shown(i + 1, m))
        .collect();
    let user = templates::render(
        templates::FACTS_EXTRACT_USER,
        &[
            ("count", &lines.len().to_string()),
            ("lines", &lines.join("\n")),
        ],
    );
    ChatRequest::new(vec![Message::user(user.trim_end().to_string())])
        .with_system(templates::FACTS_EXTRACT_PROMPT.trim_end().to_string())
        .with_tools(vec![extract_facts_tool()])
        .with_tool_choice(choice)
        .with_max_tokens(EXTRACT_MAX_TOKENS)
        // Instructions and the tool only (the messages are the user's
        // turn): a local model may keep them on disk.
        .with_fixed_system()
}

/// The question a `judge` call asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Question {
    /// Does the new fact mean the old one is no longer true?
    Replaces,
    /// Does the request ask to forget (or say untrue) the old fact?
    Retracts,
}

/// The `judge` request: `old` (a saved fact) against `new` (the new fact,
/// or the words of a retraction).
pub fn judge_request(question: Question, old: &str, new: &str, choice: ToolChoice) -> ChatRequest {
    let template = match question {
        Question::Replaces => templates::FACTS_JUDGE_REPLACES,
        Question::Retracts => templates::FACTS_JUDGE_RETRACTS,
    };
    let user = templates::render(template, &[("old", old), ("new", new)]);
    ChatRequest::new(vec![Message::user(user.trim_end().to_string())])
        .with_tools(vec![judge_tool()])
        .with_tool_choice(choice)
        .with_max_tokens(16)
        // The tool only: both facts are in the user's turn.
        .with_fixed_system()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_instruction_requests_say_so() {
        // A local model saves only such system blocks to disk (issue 43
        // N7), and the write path's speed rests on it
        // (docs/BENCHMARKS-LOG.md item 48).
        let said = [Message::user("I moved to Berlin")];
        assert!(extract_request(&said, ToolChoice::Auto).fixed_system);
        assert!(judge_request(Question::Replaces, "a", "b", ToolChoice::Auto).fixed_system);
        assert!(crate::rerank::judge_request("q", None, "p").fixed_system);
        assert!(crate::recall::need_request("User: hi", 16).fixed_system);
        assert!(!mnemo_llm::ChatRequest::new(said.to_vec()).fixed_system);
    }

    #[test]
    fn reads_the_schema_and_weak_answers() {
        let got = parse_extracted(&json!({"facts": [
            {"quote": "I moved to Berlin", "subject": "user", "attribute": "home city", "value": "Berlin", "kind": "Changes", "fact": "The user lives in Berlin."},
            "Likes tea.",
            {"quote": "", "subject": "", "attribute": "", "value": "", "kind": "states", "fact": ""},
            3
        ]}))
        .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].kind, "changes");
        assert_eq!(got[0].value, "Berlin");
        assert_eq!(got[1].fact, "Likes tea.");
        assert!(got[1].quote.is_empty());
        assert!(parse_extracted(&json!({"facts": 3})).is_err());
        assert!(parse_extracted(&json!({})).is_err());
        assert!(parse_judge(&json!({"answer": "Yes"})).unwrap());
        assert!(!parse_judge(&json!("{\"answer\": \"no\"}")).unwrap());
        assert!(parse_judge(&json!({"answer": "maybe"})).is_err());
    }

    #[test]
    fn the_agent_unanswered_is_not_read() {
        let msgs = vec![
            Message::user("I switched from coffee to green tea last month, to sleep better."),
            Message::assistant("Green tea has less caffeine, which may help your sleep."),
            Message::user("Thanks. Remind me next time to book the restaurant for Ines by Friday."),
            Message::assistant("Shall I note that Ines is allergic to peanuts?"),
            Message::user("Yes, do that."),
            Message::assistant("Nate: I have had my turtles for three years."),
        ];
        assert_eq!(heard(&msgs), vec![true, false, true, true, true, true]);
        let req = extract_request(&msgs, ToolChoice::Auto);
        let user = req.messages[0].text();
        assert!(!user.contains("less caffeine"), "{user}");
        assert!(user.contains("[4] ASSISTANT: Shall I note"), "{user}");
    }

    #[test]
    fn batches_fit_the_budget() {
        let counter = mnemo_tokens::counter_for("gpt-4o", false);
        let msgs: Vec<Message> = (0..10)
            .map(|i| Message::user(format!("message number {i} ").repeat(20)))
            .collect();
        let b = batches(&msgs, &*counter, 300);
        assert!(b.len() > 1, "{b:?}");
        assert_eq!(b.first().map(|r| r.start), Some(0));
        assert_eq!(b.last().map(|r| r.end), Some(10));
        assert!(b.windows(2).all(|w| w[0].end == w[1].start));
        // One message larger than the budget is a batch of its own.
        let big = vec![Message::user("word ".repeat(2_000))];
        assert_eq!(batches(&big, &*counter, 10), vec![0..1]);
        // Tool results are not shown.
        assert!(shown(1, &Message::tool_result("c1", "read", "x")).is_none());
    }

    #[test]
    fn a_message_is_shown_a_sentence_a_line() {
        let m = Message::user("Hi, my name is Rui. I live in Lisbon, Dr. Sousa says 3.5 km from the river! 我喜欢蓝色。我有一只狗\nOk");
        assert_eq!(
            shown(2, &m).unwrap(),
            "[2] USER: Hi, my name is Rui.\n[2] USER: I live in Lisbon, Dr. Sousa says 3.5 km from the river!\n[2] USER: 我喜欢蓝色。\n[2] USER: 我有一只狗\n[2] USER: Ok"
        );
    }
}
