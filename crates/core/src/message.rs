//! The conversation message record, in the OpenAI-style shape that nanobot
//! stores in its session files, so those files load unchanged.
//!
//! Unknown fields (nanobot's `tools_used`, `reasoning_content`, …) are kept in
//! [`Message::extra`] and written back as they were: nothing is lost on a
//! round trip.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions to the model.
    System,
    /// The person talking to the agent.
    User,
    /// The model.
    Assistant,
    /// The result of a tool call.
    Tool,
}

impl Role {
    /// Lower-case name as stored on disk.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

impl std::str::FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "system" => Ok(Role::System),
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            other => Err(format!(
                "unknown role `{other}`: expected system, user, assistant or tool"
            )),
        }
    }
}

/// A message's content: plain text or a list of content parts
/// (`{"type":"text","text":…}`, `{"type":"image_url",…}`, …).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Structured parts, kept as JSON so that unknown part kinds survive.
    Parts(Vec<Value>),
}

impl Content {
    /// The text of the content: the string itself, or the `text` of every
    /// text part joined by newlines. Non-text parts are rendered as a short
    /// marker such as `[image]`.
    pub fn text(&self) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Parts(parts) => {
                let mut out = Vec::with_capacity(parts.len());
                for part in parts {
                    if let Some(t) = part.get("text").and_then(Value::as_str) {
                        out.push(t.to_string());
                    } else if let Some(kind) = part.get("type").and_then(Value::as_str) {
                        let kind = kind.strip_suffix("_url").unwrap_or(kind);
                        out.push(format!("[{kind}]"));
                    }
                }
                out.join("\n")
            }
        }
    }

    /// Length in characters of the textual content.
    pub fn char_len(&self) -> usize {
        match self {
            Content::Text(s) => s.chars().count(),
            Content::Parts(_) => self.text().chars().count(),
        }
    }
}

impl From<String> for Content {
    fn from(s: String) -> Self {
        Content::Text(s)
    }
}

impl From<&str> for Content {
    fn from(s: &str) -> Self {
        Content::Text(s.to_string())
    }
}

/// A function call requested by the assistant (OpenAI shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Identifier that the matching tool result refers to.
    pub id: String,
    /// Always `function` today.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// The function and its arguments.
    pub function: FunctionCall,
    /// Fields this version does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn function_type() -> String {
    "function".to_string()
}

/// Name and arguments of a function call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Tool name.
    pub name: String,
    /// Arguments: a JSON-encoded string in the OpenAI protocol, though some
    /// writers store an object; both are accepted and kept as they came.
    #[serde(default)]
    pub arguments: Value,
}

impl FunctionCall {
    /// The arguments as a JSON value (parsing them when they are a string).
    pub fn arguments_value(&self) -> Value {
        match &self.arguments {
            Value::String(s) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
            other => other.clone(),
        }
    }

    /// The arguments as a JSON-encoded string, as the OpenAI protocol sends them.
    pub fn arguments_string(&self) -> String {
        match &self.arguments {
            Value::String(s) => s.clone(),
            Value::Null => "{}".to_string(),
            other => other.to_string(),
        }
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said; `None` for an assistant message that only calls tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Content>,
    /// Tool calls made by an assistant message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// For a tool result: the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool result: the tool's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When the message was recorded (RFC 3339 / ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Fields this version does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Message {
    /// A message with text content and nothing else.
    pub fn new(role: Role, text: impl Into<String>) -> Self {
        Message {
            role,
            content: Some(Content::Text(text.into())),
            tool_calls: None,
            tool_call_id: None,
            name: None,
            timestamp: None,
            extra: Map::new(),
        }
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, text)
    }

    /// An assistant message.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, text)
    }

    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, text)
    }

    /// A tool result answering `call_id`.
    pub fn tool_result(
        call_id: impl Into<String>,
        name: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        let mut m = Self::new(Role::Tool, text);
        m.tool_call_id = Some(call_id.into());
        m.name = Some(name.into());
        m
    }

    /// Sets the timestamp.
    pub fn with_timestamp(mut self, ts: impl Into<String>) -> Self {
        self.timestamp = Some(ts.into());
        self
    }

    /// The message's text (empty when it has none).
    pub fn text(&self) -> String {
        self.content.as_ref().map(Content::text).unwrap_or_default()
    }

    /// True when the message has neither text nor tool calls.
    pub fn is_empty(&self) -> bool {
        self.text().trim().is_empty() && self.tool_calls.as_ref().is_none_or(|c| c.is_empty())
    }

    /// Ids of the tool calls this message makes.
    pub fn tool_call_ids(&self) -> impl Iterator<Item = &str> {
        self.tool_calls.iter().flatten().map(|c| c.id.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nanobot_lines_round_trip_unchanged() {
        let lines = [
            r#"{"role":"user","content":"hi 你好","timestamp":"2026-03-01T10:00:00"}"#,
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"exec","arguments":"{\"cmd\":\"ls\"}"}}],"timestamp":"2026-03-01T10:00:01","tools_used":["exec"]}"#,
            r#"{"role":"tool","tool_call_id":"c1","name":"exec","content":"a b","timestamp":"2026-03-01T10:00:02"}"#,
            r#"{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"x"}}]}"#,
        ];
        for line in lines {
            let m: Message = serde_json::from_str(line).unwrap();
            let back: Value = serde_json::to_value(&m).unwrap();
            let orig: Value = serde_json::from_str(line).unwrap();
            // `content: null` is dropped on write; everything else is identical.
            let mut orig = orig;
            if orig.get("content") == Some(&Value::Null) {
                orig.as_object_mut().unwrap().remove("content");
            }
            assert_eq!(back, orig, "{line}");
        }
    }

    #[test]
    fn parts_text_marks_images() {
        let m: Message = serde_json::from_str(
            r#"{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"x"}}]}"#,
        )
        .unwrap();
        assert_eq!(m.text(), "look\n[image]");
    }

    #[test]
    fn arguments_accept_object_or_string() {
        let a = FunctionCall {
            name: "f".into(),
            arguments: Value::String("{\"a\":1}".into()),
        };
        let b = FunctionCall {
            name: "f".into(),
            arguments: serde_json::json!({"a":1}),
        };
        assert_eq!(a.arguments_value(), b.arguments_value());
        assert_eq!(b.arguments_string(), "{\"a\":1}");
    }
}
