//! The lines of a session log: messages and `_type`-tagged records.

use mnemo_core::Message;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Session metadata. The first line of a log is one; later metadata lines
/// (written when the consolidation cursor moves) replace it: the last one
/// wins, so moving the cursor costs one append, not a rewrite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionMetadata {
    /// The session key, e.g. `telegram:123`.
    pub key: String,
    /// When the session was created.
    #[serde(default)]
    pub created_at: String,
    /// When the metadata last changed.
    #[serde(default)]
    pub updated_at: String,
    /// Free-form metadata (channel, user, …).
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Number of leading messages already consolidated into long-term memory.
    #[serde(default)]
    pub last_consolidated: usize,
    /// Fields this version does not know, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl SessionMetadata {
    /// Fresh metadata for `key`, stamped now.
    pub fn new(key: &str) -> Self {
        let now = now_iso();
        SessionMetadata {
            key: key.to_string(),
            created_at: now.clone(),
            updated_at: now,
            metadata: Map::new(),
            last_consolidated: 0,
            extra: Map::new(),
        }
    }
}

/// A compaction or consolidation event, written into the log so that
/// replaying the log rebuilds the same prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionRecord {
    /// Which pipeline level produced it (`snip`, `microcompact`, `autocompact`, `reactive`, …).
    pub kind: String,
    /// Prompt tokens before.
    #[serde(default)]
    pub tokens_before: usize,
    /// Prompt tokens after.
    #[serde(default)]
    pub tokens_after: usize,
    /// The summary that replaces the folded messages, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// Ordinal of the first message kept verbatim after the summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_kept: Option<usize>,
    /// When it happened.
    #[serde(default)]
    pub timestamp: String,
    /// Level-specific details, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One line of a session log.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// `{"_type":"metadata", …}`.
    Metadata(SessionMetadata),
    /// A conversation message.
    Message(Message),
    /// `{"_type":"compaction", …}`.
    Compaction(CompactionRecord),
    /// A record of a kind this version does not know, kept verbatim.
    Other(Value),
}

impl Record {
    /// Parses one line (without its newline).
    pub fn parse(line: &str) -> Result<Record, String> {
        // Messages are the common case: try them first so that a message
        // costs one parse.
        let first_error = match serde_json::from_str::<Message>(line) {
            Ok(m) => return Ok(Record::Message(m)),
            Err(e) => e,
        };
        let mut value: Value = serde_json::from_str(line).map_err(|e| e.to_string())?;
        let kind = match value.get("_type").and_then(Value::as_str) {
            Some(k @ ("metadata" | "compaction")) => {
                let k = k.to_string();
                if let Some(obj) = value.as_object_mut() {
                    obj.remove("_type");
                }
                Some(k)
            }
            Some(_) => return Ok(Record::Other(value)),
            None => None,
        };
        match kind.as_deref() {
            Some("metadata") => serde_json::from_value(value)
                .map(Record::Metadata)
                .map_err(|e| format!("bad metadata record: {e}")),
            Some("compaction") => serde_json::from_value(value)
                .map(Record::Compaction)
                .map_err(|e| format!("bad compaction record: {e}")),
            _ => Err(format!("not a message: {first_error}")),
        }
    }

    /// Serialises to one JSON line, without the newline.
    pub fn to_line(&self) -> Result<String, serde_json::Error> {
        match self {
            Record::Message(m) => serde_json::to_string(m),
            Record::Metadata(m) => tagged("metadata", m),
            Record::Compaction(c) => tagged("compaction", c),
            Record::Other(v) => serde_json::to_string(v),
        }
    }
}

fn tagged<T: Serialize>(kind: &str, v: &T) -> Result<String, serde_json::Error> {
    let mut obj = Map::new();
    obj.insert("_type".into(), Value::String(kind.into()));
    if let Value::Object(fields) = serde_json::to_value(v)? {
        for (k, v) in fields {
            if k != "_type" {
                obj.insert(k, v);
            }
        }
    }
    serde_json::to_string(&Value::Object(obj))
}

/// The current time as an ISO 8601 timestamp with offset.
pub fn now_iso() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_line_round_trip() {
        let line = r#"{"_type":"metadata","key":"telegram:123","created_at":"2026-01-01T00:00:00","updated_at":"2026-01-01T00:00:00","metadata":{},"last_consolidated":42}"#;
        let r = Record::parse(line).unwrap();
        match &r {
            Record::Metadata(m) => assert_eq!(m.last_consolidated, 42),
            other => panic!("{other:?}"),
        }
        let back: Value = serde_json::from_str(&r.to_line().unwrap()).unwrap();
        assert_eq!(back, serde_json::from_str::<Value>(line).unwrap());
    }

    #[test]
    fn unknown_records_kept() {
        let line = r#"{"_type":"future","x":1}"#;
        let r = Record::parse(line).unwrap();
        assert_eq!(r.to_line().unwrap(), line);
        assert!(Record::parse(r#"{"nope":1}"#).is_err());
        assert!(Record::parse("{\"role\":\"user\",").is_err());
    }
}
