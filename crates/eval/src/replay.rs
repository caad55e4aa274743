//! Turning a benchmark conversation into the session-log messages a client
//! would have sent, and remembering which message is which turn.

use std::collections::HashMap;

use mnemo_core::{Message, Role};
use serde_json::Value;

use crate::dataset::{Conversation, SessionData, Turn};
use crate::dates::parse_session_date;

/// Metadata field holding a session date that could not be parsed.
pub const RAW_DATE_FIELD: &str = "session_date_time";

/// The session-log key of a session: `eval:<conv_id>:<session_id>`. The
/// store sanitises it into a file name; the key itself comes back in hits.
pub fn session_key(conv_id: &str, session_id: &str) -> String {
    format!("eval:{conv_id}:{session_id}")
}

/// Who counts as the `user` of a conversation: the first listed speaker,
/// else the first turn's speaker.
fn first_speaker(conv: &Conversation) -> Option<&str> {
    conv.speakers.first().map(String::as_str).or_else(|| {
        conv.sessions
            .iter()
            .flat_map(|s| &s.turns)
            .find_map(|t| t.speaker.as_deref())
    })
}

/// The message text of a turn: `"{speaker}: {text}"` when the speaker is
/// known (else the text as is), with an image caption appended the way a
/// client that captions images would send it.
pub fn turn_content(turn: &Turn) -> String {
    let mut out = match turn.speaker.as_deref().filter(|s| !s.is_empty()) {
        Some(s) => format!("{s}: {}", turn.text),
        None => turn.text.clone(),
    };
    if let Some(c) = turn
        .image_caption
        .as_deref()
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        out.push_str(&format!("\n[image: {c}]"));
    }
    out
}

/// The messages of one session, one per turn, in turn order.
pub fn session_messages(conv: &Conversation, session: &SessionData) -> Vec<Message> {
    let user = first_speaker(conv);
    let raw_date = session
        .date_time
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty());
    let parsed = raw_date.and_then(parse_session_date);
    session
        .turns
        .iter()
        .map(|t| {
            // A turn without a speaker carries both parties in its text; it is
            // what the user pasted or said, so it is logged as the user.
            let role = match (t.speaker.as_deref(), user) {
                (Some(s), Some(u)) if s != u => Role::Assistant,
                _ => Role::User,
            };
            let mut m = Message::new(role, turn_content(t));
            match (&parsed, raw_date) {
                (Some(ts), _) => m.timestamp = Some(ts.clone()),
                (None, Some(raw)) => {
                    m.extra
                        .insert(RAW_DATE_FIELD.to_string(), Value::String(raw.to_string()));
                }
                (None, None) => {}
            }
            m
        })
        .collect()
}

/// Where each unit of a conversation lives: message ordinal `i` of the log
/// with key `k` is turn `turns[k][i]` of session `sessions[k]`.
#[derive(Debug, Clone, Default)]
pub struct UnitMap {
    sessions: HashMap<String, String>,
    turns: HashMap<String, Vec<String>>,
}

impl UnitMap {
    /// Builds the map for a conversation written with [`session_messages`]
    /// under [`session_key`].
    pub fn new(conv: &Conversation) -> Self {
        let mut map = UnitMap::default();
        for s in &conv.sessions {
            let key = session_key(&conv.conv_id, &s.session_id);
            map.sessions.insert(key.clone(), s.session_id.clone());
            map.turns
                .insert(key, s.turns.iter().map(|t| t.turn_id.clone()).collect());
        }
        map
    }

    /// The session id logged under `key`.
    pub fn session(&self, key: &str) -> Option<&str> {
        self.sessions.get(key).map(String::as_str)
    }

    /// The turn ids of messages `first..=last` of the log under `key`
    /// (ordinals past the end are ignored).
    pub fn turns(&self, key: &str, first: usize, last: usize) -> Vec<String> {
        match self.turns.get(key) {
            Some(ids) if first < ids.len() => ids[first..=last.min(ids.len() - 1)].to_vec(),
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Dataset;

    fn conv() -> Conversation {
        Dataset::parse(
            r#"{"conversations":[{"conv_id":"c1","speakers":["Ann","Bob"],"sessions":[
                {"session_id":"s1","date_time":"1:56 pm on 8 May, 2023","turns":[
                  {"turn_id":"D1:1","speaker":"Ann","text":"hi"},
                  {"turn_id":"D1:2","speaker":"Bob","text":"look","image_caption":"a photo of a cat"}]},
                {"session_id":"s2","date_time":"sometime","turns":[
                  {"turn_id":"D2:1","speaker":null,"text":"Ann: x\nAI: y"}]}]}]}"#,
        )
        .unwrap()
        .conversations
        .remove(0)
    }

    #[test]
    fn messages_carry_speaker_caption_role_and_date() {
        let c = conv();
        let m = session_messages(&c, &c.sessions[0]);
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].role, Role::User);
        assert_eq!(m[0].text(), "Ann: hi");
        assert_eq!(m[1].role, Role::Assistant);
        assert_eq!(m[1].text(), "Bob: look\n[image: a photo of a cat]");
        assert_eq!(m[1].timestamp.as_deref(), Some("2023-05-08T13:56:00"));
        assert!(m[1].extra.is_empty());
    }

    #[test]
    fn unparsed_date_kept_raw_and_speakerless_turn_as_is() {
        let c = conv();
        let m = session_messages(&c, &c.sessions[1]);
        assert_eq!(m[0].text(), "Ann: x\nAI: y");
        assert_eq!(m[0].role, Role::User);
        assert_eq!(m[0].timestamp, None);
        assert_eq!(
            m[0].extra.get(RAW_DATE_FIELD),
            Some(&Value::String("sometime".into()))
        );
    }

    #[test]
    fn unit_map_resolves_ordinals() {
        let c = conv();
        let map = UnitMap::new(&c);
        let k = session_key("c1", "s1");
        assert_eq!(map.session(&k), Some("s1"));
        assert_eq!(
            map.turns(&k, 0, 1),
            vec!["D1:1".to_string(), "D1:2".to_string()]
        );
        assert_eq!(map.turns(&k, 1, 9), vec!["D1:2".to_string()]);
        assert!(map.turns(&k, 5, 9).is_empty());
        assert!(map.turns("eval:c1:nope", 0, 0).is_empty());
    }
}
