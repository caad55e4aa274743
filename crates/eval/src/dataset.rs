//! The benchmark file schema (conversations, sessions, turns, questions with
//! evidence) and its tolerant loader.
//!
//! The loader accepts any file in the schema described in the data README:
//! unknown fields are ignored, optional fields may be missing or `null`,
//! categories may be numbers or strings, and answers may be any JSON value.
//! Nothing here knows which dataset it reads.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use crate::error::{EvalError, Result};

/// A whole benchmark file.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Dataset {
    /// Free-form dataset name, shown in reports only.
    #[serde(default)]
    pub dataset: Option<String>,
    /// Language tag, shown in reports only.
    #[serde(default)]
    pub language: Option<String>,
    /// Provenance; `source.category_names` (if present) labels categories.
    #[serde(default)]
    pub source: Option<Value>,
    /// The conversations; each question is asked against one of them.
    #[serde(default, deserialize_with = "null_as_default")]
    pub conversations: Vec<Conversation>,
    /// The questions.
    #[serde(default, deserialize_with = "null_as_default")]
    pub questions: Vec<Question>,
}

/// One conversation: the memory of one store.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Conversation {
    /// Identifier that questions refer to.
    #[serde(deserialize_with = "id_string")]
    pub conv_id: String,
    /// The participants, first one first (it becomes the `user` role).
    #[serde(default, deserialize_with = "null_as_default")]
    pub speakers: Vec<String>,
    /// The sessions in order.
    #[serde(default, deserialize_with = "null_as_default")]
    pub sessions: Vec<SessionData>,
}

/// One session of a conversation.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct SessionData {
    /// Identifier used by `evidence_sessions`.
    #[serde(deserialize_with = "id_string")]
    pub session_id: String,
    /// When the session took place, in the source's own free-text format.
    #[serde(default)]
    pub date_time: Option<String>,
    /// The turns in order.
    #[serde(default, deserialize_with = "null_as_default")]
    pub turns: Vec<Turn>,
}

/// One turn (utterance) of a session.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Turn {
    /// Identifier used by `evidence_turns`, unique within a conversation.
    #[serde(deserialize_with = "id_string")]
    pub turn_id: String,
    /// Who spoke; `None` when the text itself carries both parties.
    #[serde(default)]
    pub speaker: Option<String>,
    /// What was said.
    #[serde(default, deserialize_with = "null_as_default")]
    pub text: String,
    /// Caption of an image shared with the turn (`image_caption` or
    /// `blip_caption` in the sources).
    #[serde(default, alias = "blip_caption")]
    pub image_caption: Option<String>,
}

/// One question with its annotated evidence.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct Question {
    /// Question identifier.
    #[serde(default, deserialize_with = "opt_id_string")]
    pub qid: Option<String>,
    /// The conversation it is asked against.
    #[serde(deserialize_with = "id_string")]
    pub conv_id: String,
    /// The question text: the search query.
    pub question: String,
    /// The reference answer, not used for retrieval scores.
    #[serde(default)]
    pub answer: Value,
    /// Category, normalised to a string (`2` and `"2"` are the same).
    #[serde(default, deserialize_with = "opt_id_string")]
    pub category: Option<String>,
    /// Turn ids holding the evidence.
    #[serde(default, deserialize_with = "id_list")]
    pub evidence_turns: Vec<String>,
    /// Session ids holding the evidence.
    #[serde(default, deserialize_with = "id_list")]
    pub evidence_sessions: Vec<String>,
    /// Sessions that are the conversation the query comes from rather than
    /// memory (dialogue-form queries, see [`crate::dialogue`]): hits from
    /// them are not scored.
    #[serde(
        default,
        deserialize_with = "id_list",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub exclude_sessions: Vec<String>,
}

impl Dataset {
    /// Reads and parses a benchmark file.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text).map_err(|e| match e {
            EvalError::Parse { message, .. } => EvalError::Parse {
                path: Some(path.to_path_buf()),
                message,
            },
            other => other,
        })
    }

    /// Parses a benchmark file's text.
    pub fn parse(text: &str) -> Result<Self> {
        let ds: Dataset = serde_json::from_str(text).map_err(|e| EvalError::Parse {
            path: None,
            message: e.to_string(),
        })?;
        ds.validate()?;
        Ok(ds)
    }

    /// Checks what the harness relies on: unique conversation ids, and turn
    /// and session ids unique within their conversation.
    fn validate(&self) -> Result<()> {
        let mut convs = HashSet::new();
        for c in &self.conversations {
            if !convs.insert(c.conv_id.as_str()) {
                return Err(EvalError::Schema(format!(
                    "conversation id `{}` appears twice: conv_id must be unique",
                    c.conv_id
                )));
            }
            let mut sessions = HashSet::new();
            let mut turns = HashSet::new();
            for s in &c.sessions {
                if !sessions.insert(s.session_id.as_str()) {
                    return Err(EvalError::Schema(format!(
                        "session id `{}` appears twice in conversation `{}`: session_id must be unique within a conversation",
                        s.session_id, c.conv_id
                    )));
                }
                for t in &s.turns {
                    if !turns.insert(t.turn_id.as_str()) {
                        return Err(EvalError::Schema(format!(
                            "turn id `{}` appears twice in conversation `{}`: turn_id must be unique within a conversation",
                            t.turn_id, c.conv_id
                        )));
                    }
                }
            }
        }
        Ok(())
    }

    /// Human labels for categories from `source.category_names`, if the file
    /// has them (e.g. `{"1": "multi-hop"}`).
    pub fn category_names(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let names = self
            .source
            .as_ref()
            .and_then(|s| s.get("category_names"))
            .and_then(Value::as_object);
        if let Some(names) = names {
            for (k, v) in names {
                let label = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                out.insert(k.clone(), label);
            }
        }
        out
    }

    /// Questions grouped by conversation id, in file order.
    pub fn questions_by_conversation(&self) -> HashMap<&str, Vec<&Question>> {
        let mut out: HashMap<&str, Vec<&Question>> = HashMap::new();
        for q in &self.questions {
            out.entry(q.conv_id.as_str()).or_default().push(q);
        }
        out
    }
}

impl Question {
    /// The question id, or a generated one (`<conv_id>#<index>`).
    pub fn id_or(&self, index: usize) -> String {
        self.qid
            .clone()
            .unwrap_or_else(|| format!("{}#{index}", self.conv_id))
    }
}

fn null_as_default<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Ids may be written as strings or numbers; both become strings.
fn value_to_id(v: Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(s),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        other => Some(other.to_string()),
    }
}

fn id_string<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<String, D::Error> {
    value_to_id(Value::deserialize(d)?)
        .ok_or_else(|| serde::de::Error::custom("an id is null: give a string or a number"))
}

fn opt_id_string<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<String>, D::Error> {
    Ok(value_to_id(Value::deserialize(d)?))
}

/// A list of ids; `null` or a single id are accepted too.
fn id_list<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Array(items) => items.into_iter().filter_map(value_to_id).collect(),
        other => value_to_id(other).into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerant_of_types_and_missing_fields() {
        let ds = Dataset::parse(
            r#"{"conversations":[{"conv_id":7,"sessions":[{"session_id":"s1","turns":[
                {"turn_id":"t1","speaker":null,"text":"A: hi\nB: hello","extra":1},
                {"turn_id":2,"speaker":"B","text":"look","blip_caption":"a dog"}]}]}],
              "questions":[
                {"conv_id":"7","question":"q?","category":2,"evidence_turns":["t1"],"answer":5},
                {"qid":"x","conv_id":"7","question":"r?","category":"recall","evidence_turns":null},
                {"conv_id":"7","question":"s?","evidence_sessions":"s1"}],
              "new_field":{"a":1}}"#,
        )
        .unwrap();
        let c = &ds.conversations[0];
        assert_eq!(c.conv_id, "7");
        assert!(c.speakers.is_empty());
        assert_eq!(c.sessions[0].turns[1].turn_id, "2");
        assert_eq!(
            c.sessions[0].turns[1].image_caption.as_deref(),
            Some("a dog")
        );
        assert_eq!(c.sessions[0].turns[0].speaker, None);
        assert_eq!(ds.questions[0].category.as_deref(), Some("2"));
        assert_eq!(ds.questions[0].id_or(0), "7#0");
        assert_eq!(ds.questions[1].category.as_deref(), Some("recall"));
        assert!(ds.questions[1].evidence_turns.is_empty());
        assert_eq!(ds.questions[2].evidence_sessions, vec!["s1".to_string()]);
        assert_eq!(ds.questions[2].category, None);
    }

    #[test]
    fn duplicate_turn_ids_are_refused_with_a_clear_message() {
        let e = Dataset::parse(
            r#"{"conversations":[{"conv_id":"c","sessions":[
                {"session_id":"s1","turns":[{"turn_id":"t","text":"a"}]},
                {"session_id":"s2","turns":[{"turn_id":"t","text":"b"}]}]}]}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("turn id `t` appears twice"), "{e}");
    }

    #[test]
    fn not_json_says_where() {
        let e = Dataset::parse("{\"conversations\": [").unwrap_err();
        assert!(e.to_string().contains("not a benchmark file"), "{e}");
    }

    #[test]
    fn category_names_from_source() {
        let ds =
            Dataset::parse(r#"{"source":{"category_names":{"1":"multi-hop","2":"temporal"}}}"#)
                .unwrap();
        assert_eq!(
            ds.category_names().get("2").map(String::as_str),
            Some("temporal")
        );
    }
}
