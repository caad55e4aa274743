//! Turning a benchmark conversation into the session-log messages a client
//! would have sent, and remembering which message is which turn.

use std::collections::HashMap;
use std::path::Path;

use chrono::NaiveDate;
use mnemo_core::{Message, Role, Workspace};
use serde_json::Value;

use crate::dataset::{Conversation, SessionData, Turn};
use crate::dates::parse_session_date;
use crate::error::{EvalError, Result};

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

/// The session's `date_time` as written, when it says anything.
fn raw_date(session: &SessionData) -> Option<&str> {
    session
        .date_time
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
}

/// The messages of one session, one per turn, in turn order.
pub fn session_messages(conv: &Conversation, session: &SessionData) -> Vec<Message> {
    let user = first_speaker(conv);
    let raw_date = raw_date(session);
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

/// `line` without its leading labels (`User: `, `Caroline: `, a list
/// item's `- `): one word and a colon, at most twice.
pub(crate) fn unlabelled(line: &str) -> &str {
    let mut rest = line.trim_start_matches(['-', '*', ' ']);
    for _ in 0..2 {
        match rest.split_once(": ") {
            Some((label, after)) if !label.is_empty() && !label.contains(' ') => {
                rest = after.trim_start();
            }
            _ => break,
        }
    }
    rest.trim()
}

/// `(first line, last line, turn id)` of each turn of a note, 1-based.
pub type TurnLines = Vec<(usize, usize, String)>;

/// A session written as a Markdown note.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionNote {
    /// The session's day, when its date could be read.
    pub date: Option<NaiveDate>,
    /// The note: a heading naming the session and its date, then one list
    /// item per turn (further lines of a turn indented under it).
    pub text: String,
    /// Where each turn is.
    pub lines: TurnLines,
}

/// The note of one session, as a person or a consolidating model would
/// write it; `None` for a session without turns.
pub fn session_note(session: &SessionData) -> Option<SessionNote> {
    if session.turns.is_empty() {
        return None;
    }
    let raw_date = raw_date(session);
    let date = raw_date
        .and_then(parse_session_date)
        .and_then(|ts| NaiveDate::parse_from_str(ts.get(..10)?, "%Y-%m-%d").ok());
    let mut text = match raw_date {
        Some(d) => format!("# {} ({d})\n\n", session.session_id),
        None => format!("# {}\n\n", session.session_id),
    };
    let mut line = 3;
    let mut lines = Vec::with_capacity(session.turns.len());
    for t in &session.turns {
        let content = turn_content(t);
        let mut rows = content.lines().filter(|l| !l.trim().is_empty());
        let first = rows.next().unwrap_or("");
        text.push_str(&format!("- {first}\n"));
        let start = line;
        for r in rows {
            text.push_str(&format!("  {}\n", r.trim()));
            line += 1;
        }
        lines.push((start, line, t.turn_id.clone()));
        line += 1;
    }
    Some(SessionNote { date, text, lines })
}

/// Where each unit of a conversation lives: message ordinal `i` of the log
/// with key `k` is turn `turns[k][i]` of session `sessions[k]`; line `l` of
/// the note at `path` is the turn whose lines hold `l`.
#[derive(Debug, Clone, Default)]
pub struct UnitMap {
    sessions: HashMap<String, String>,
    turns: HashMap<String, Vec<String>>,
    notes: HashMap<String, (String, TurnLines)>,
    /// Each turn's text as written ([`turn_content`]), by turn id.
    texts: HashMap<String, String>,
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
            for t in &s.turns {
                map.texts.insert(t.turn_id.clone(), turn_content(t));
            }
        }
        map
    }

    /// Whether `excerpt` (a hit's snippet cut to some of its lines and
    /// sentences, " … " where something was left out) still shows turn
    /// `id`: one of its pieces of at least a few words is a part of the
    /// turn's text, a rendering's `Role: ` or `Speaker: ` labels aside.
    pub fn shows_turn(&self, id: &str, excerpt: &str) -> bool {
        let Some(text) = self.texts.get(id) else {
            return false;
        };
        excerpt
            .split(['\n', '…'])
            .map(|p| unlabelled(p.trim()))
            .any(|p| (p.chars().count() >= 12 || p == text.trim()) && text.contains(p))
    }

    /// Records that the note at `path` (workspace-relative) holds session
    /// `session_id`, its turns on `lines` (see [`SessionNote::lines`]).
    pub fn add_note(&mut self, path: String, session_id: String, lines: TurnLines) {
        self.notes.insert(path, (session_id, lines));
    }

    /// The session and the turns that lines `first..=last` of the note at
    /// `path` hold; `None` when no note was written there.
    pub fn note_units(
        &self,
        path: &str,
        first: usize,
        last: usize,
    ) -> Option<(Vec<String>, Vec<String>)> {
        let (session, lines) = self.notes.get(path)?;
        let turns = lines
            .iter()
            .filter(|(a, b, _)| *a <= last && *b >= first)
            .map(|(_, _, id)| id.clone())
            .collect();
        Some((vec![session.clone()], turns))
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

/// Refuses a `--keep` folder that already holds something: a kept
/// workspace must hold one run's files only.
pub fn check_keep(keep: Option<&Path>) -> Result<()> {
    if let Some(keep) = keep {
        let used = std::fs::read_dir(keep).is_ok_and(|mut d| d.next().is_some());
        if used {
            return Err(EvalError::Options(format!(
                "{} is not empty: give --keep a new or empty folder",
                keep.display()
            )));
        }
    }
    Ok(())
}

/// A fresh replay workspace: `<keep>/<conv_id>/<name>` with `--keep`, else a
/// temporary folder (removed with the guard).
pub fn scratch(
    keep: Option<&Path>,
    conv_id: &str,
    name: &str,
) -> Result<(Option<tempfile::TempDir>, Workspace)> {
    if let Some(keep) = keep {
        // Conversation ids come from the data file: only their plain
        // characters make the folder's name.
        let conv: String = conv_id
            .chars()
            .map(|c| {
                if c.is_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let dir = keep.join(conv).join(name);
        std::fs::create_dir_all(&dir).map_err(EvalError::Workspace)?;
        return Ok((None, Workspace::new(&dir)));
    }
    let tmp = tempfile::Builder::new()
        .prefix("mnemo-eval-")
        .tempdir()
        .map_err(EvalError::Workspace)?;
    let ws = Workspace::new(tmp.path());
    Ok((Some(tmp), ws))
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
    fn a_session_note_maps_its_lines_to_turns() {
        let c = conv();
        let note = session_note(&c.sessions[0]).unwrap();
        assert_eq!(note.date, NaiveDate::from_ymd_opt(2023, 5, 8));
        assert_eq!(
            note.text,
            "# s1 (1:56 pm on 8 May, 2023)\n\n- Ann: hi\n- Bob: look\n  [image: a photo of a cat]\n"
        );
        assert_eq!(
            note.lines,
            vec![(3, 3, "D1:1".to_string()), (4, 5, "D1:2".to_string())]
        );
        let undated = session_note(&c.sessions[1]).unwrap();
        assert_eq!(undated.date, None);
        assert_eq!(undated.lines, vec![(3, 4, "D2:1".to_string())]);

        let mut map = UnitMap::new(&c);
        map.add_note("memory/2023-05-08-c1-s1.md".into(), "s1".into(), note.lines);
        let units = |a, b| map.note_units("memory/2023-05-08-c1-s1.md", a, b);
        assert_eq!(units(1, 3), Some((vec!["s1".into()], vec!["D1:1".into()])));
        assert_eq!(units(5, 9), Some((vec!["s1".into()], vec!["D1:2".into()])));
        assert_eq!(units(1, 2), Some((vec!["s1".into()], vec![])));
        assert_eq!(map.note_units("MEMORY.md", 1, 3), None);
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
