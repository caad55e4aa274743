//! Dialogue-form queries derived from a benchmark's own conversations.
//!
//! An agent's automatic recall does not see a clean question: it sees the
//! last few turns of the conversation, speaker-tagged, in which the need for
//! a memory is often only implied. This module turns a benchmark file's
//! questions into queries of that shape, deterministically (the choices hang
//! on a hash of the question id, never on a random generator), so every run
//! and every machine scores the same queries:
//!
//! - [`QueryShape::Embedded`]: the question asked as the last turn of a few
//!   turns of other chat. The chat is taken from the latest session of the
//!   same conversation that holds none of the question's evidence.
//! - [`QueryShape::LeadUp`]: no question at all. When a question's evidence
//!   spans several sessions, its first evidence turn in the latest of them
//!   is a moment where the earlier evidence matters: that turn ends the
//!   query, with the turns that led up to it, and the evidence in earlier
//!   sessions is what must be found. The callbacks are the benchmark's own
//!   annotations, not chosen by any similarity, so the shape favours neither
//!   words nor vectors. Questions whose evidence lies in one session have no
//!   query of this shape and are left out.
//!
//! The session the query's turns come from is the conversation happening
//! now, not memory: it is listed in the question's `exclude_sessions`, and
//! the harness does not score hits from it.

use std::collections::{HashMap, HashSet};

use mnemo_index::is_cjk;

use crate::dataset::{Conversation, Dataset, Question};

/// The shape of the queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QueryShape {
    /// The benchmark's own questions, unchanged.
    Question,
    /// The question as the last turn of a few turns of other chat.
    Embedded,
    /// The turns leading up to a later turn that calls back to the evidence.
    LeadUp,
}

impl QueryShape {
    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            QueryShape::Question => "question",
            QueryShape::Embedded => "embedded",
            QueryShape::LeadUp => "lead-up",
        }
    }

    /// One line for reports.
    pub fn described(self) -> &'static str {
        match self {
            QueryShape::Question => "queries are the benchmark's questions",
            QueryShape::Embedded => {
                "queries are dialogue: 2-4 speaker-tagged turns of other chat, then the question as the last turn"
            }
            QueryShape::LeadUp => {
                "queries are dialogue: the 2-4 turns leading up to a later turn that calls back to the evidence (no question)"
            }
        }
    }
}

impl std::str::FromStr for QueryShape {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "question" => Ok(QueryShape::Question),
            "embedded" => Ok(QueryShape::Embedded),
            "lead-up" | "leadup" => Ok(QueryShape::LeadUp),
            other => Err(format!(
                "unknown query shape `{other}`: question, embedded or lead-up"
            )),
        }
    }
}

/// Longest turn kept in a query, in display columns (a CJK character counts
/// two). Together with 2-4 turns this gives queries of a few hundred
/// characters, as an agent's recent conversation is.
const TURN_COLUMNS: usize = 80;
/// The callback turn (lead-up) keeps more: it carries the need.
const LAST_TURN_COLUMNS: usize = 160;
/// `ds` with every question rewritten into `shape` (questions that have no
/// query of that shape are left out). The conversations are unchanged.
pub fn derive(ds: &Dataset, shape: QueryShape) -> Dataset {
    let mut out = ds.clone();
    if shape == QueryShape::Question {
        return out;
    }
    let convs: HashMap<&str, ConversationTurns> = ds
        .conversations
        .iter()
        .map(|c| (c.conv_id.as_str(), ConversationTurns::new(c)))
        .collect();
    out.questions = ds
        .questions
        .iter()
        .enumerate()
        .filter_map(|(i, q)| {
            let conv = convs.get(q.conv_id.as_str())?;
            let seed = fnv(&q.id_or(i));
            match shape {
                QueryShape::Question => Some(q.clone()),
                QueryShape::Embedded => embedded(conv, q, seed),
                QueryShape::LeadUp => lead_up(conv, q, seed),
            }
        })
        .collect();
    out
}

/// `ds` with every question rewritten the way the engine's automatic recall
/// builds its query from a conversation
/// ([`mnemo_core::dialogue::conversation_query`]): the query's turns, the
/// conversation's first speaker as `User` and the others as `Assistant`,
/// the latest [`mnemo_core::dialogue::RECALL_TURNS`] kept. A question on
/// one line stays as it is.
pub fn as_engine_queries(ds: &Dataset) -> Dataset {
    let mut out = ds.clone();
    let users: HashMap<&str, &str> = ds
        .conversations
        .iter()
        .filter_map(|c| c.speakers.first().map(|s| (c.conv_id.as_str(), s.as_str())))
        .collect();
    for q in &mut out.questions {
        let user = users.get(q.conv_id.as_str()).copied().unwrap_or_default();
        let mut turns: Vec<(String, String)> = Vec::new();
        split_speakers(&q.question, |speaker, text| {
            let role = if speaker == user { "User" } else { "Assistant" };
            turns.push((role.to_string(), text));
        });
        let turns: Vec<mnemo_core::dialogue::Turn<'_>> = turns
            .iter()
            .map(|(speaker, text)| mnemo_core::dialogue::Turn { speaker, text })
            .collect();
        if turns.len() > 1 {
            q.question = mnemo_core::dialogue::conversation_query(
                &turns,
                mnemo_core::dialogue::RECALL_TURNS,
            );
        }
    }
    out
}

/// One utterance: a speaker and what they said.
#[derive(Debug, Clone)]
struct Utterance {
    session: usize,
    turn_id: String,
    speaker: String,
    text: String,
}

/// A conversation as utterances.
struct ConversationTurns<'a> {
    conv: &'a Conversation,
    utterances: Vec<Utterance>,
}

impl<'a> ConversationTurns<'a> {
    fn new(conv: &'a Conversation) -> Self {
        let mut utterances = Vec::new();
        for (si, s) in conv.sessions.iter().enumerate() {
            for t in &s.turns {
                match &t.speaker {
                    Some(sp) => utterances.push(Utterance {
                        session: si,
                        turn_id: t.turn_id.clone(),
                        speaker: sp.clone(),
                        text: t.text.trim().to_string(),
                    }),
                    // The text carries both parties, one `Name: text` line each.
                    None => split_speakers(&t.text, |speaker, text| {
                        utterances.push(Utterance {
                            session: si,
                            turn_id: t.turn_id.clone(),
                            speaker,
                            text,
                        })
                    }),
                }
            }
        }
        ConversationTurns { conv, utterances }
    }

    fn session_ids(&self, sessions: &HashSet<usize>) -> Vec<String> {
        let mut ids: Vec<usize> = sessions.iter().copied().collect();
        ids.sort_unstable();
        ids.into_iter()
            .filter_map(|i| self.conv.sessions.get(i))
            .map(|s| s.session_id.clone())
            .collect()
    }

    /// Indexes of the sessions holding `q`'s evidence.
    fn evidence_sessions(&self, q: &Question) -> HashSet<usize> {
        let turns: HashSet<&str> = q.evidence_turns.iter().map(String::as_str).collect();
        let named: HashSet<&str> = q.evidence_sessions.iter().map(String::as_str).collect();
        self.conv
            .sessions
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                named.contains(s.session_id.as_str())
                    || s.turns.iter().any(|t| turns.contains(t.turn_id.as_str()))
            })
            .map(|(i, _)| i)
            .collect()
    }
}

/// Calls `emit(speaker, text)` for each `Name: text` line of `text`; a line
/// without a speaker continues the previous utterance.
fn split_speakers(text: &str, mut emit: impl FnMut(String, String)) {
    let mut current: Option<(String, String)> = None;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let speaker = line
            .split_once(':')
            .filter(|(name, _)| {
                let n = name.trim();
                !n.is_empty() && n.chars().count() <= 24 && !n.contains(['.', '!', '?', '。'])
            })
            .map(|(name, rest)| (name.trim().to_string(), rest.trim().to_string()));
        match (speaker, current.as_mut()) {
            (Some(new), _) => {
                if let Some((s, t)) = current.take() {
                    emit(s, t);
                }
                current = Some(new);
            }
            (None, Some((_, t))) => {
                t.push(' ');
                t.push_str(line);
            }
            (None, None) => current = Some((String::new(), line.to_string())),
        }
    }
    if let Some((s, t)) = current {
        emit(s, t);
    }
}

/// The question as the last turn of 2-4 turns of other chat.
fn embedded(conv: &ConversationTurns, q: &Question, seed: u64) -> Option<Question> {
    let evidence = conv.evidence_sessions(q);
    // The latest session without evidence: "now" in the conversation.
    let session = (0..conv.conv.sessions.len())
        .rev()
        .find(|s| !evidence.contains(s))?;
    let turns: Vec<&Utterance> = conv
        .utterances
        .iter()
        .filter(|u| u.session == session && !u.text.is_empty())
        .collect();
    if turns.is_empty() {
        return None;
    }
    let want = 2 + (seed % 3) as usize;
    let take = want.min(turns.len());
    let start = ((seed >> 8) as usize) % (turns.len() - take + 1);
    let chat = turns.get(start..start + take)?;
    let asker = asker(conv.conv, q);
    let mut lines: Vec<String> = chat
        .iter()
        .map(|u| tagged(&u.speaker, &clip(&u.text, TURN_COLUMNS)))
        .collect();
    lines.push(tagged(&asker, q.question.trim()));
    Some(rewritten(
        q,
        lines,
        conv.session_ids(&HashSet::from([session])),
    ))
}

/// The turns leading up to the first evidence turn of the latest evidence
/// session, for the evidence in the sessions before it.
fn lead_up(conv: &ConversationTurns, q: &Question, seed: u64) -> Option<Question> {
    let evidence_turns: HashSet<&str> = q.evidence_turns.iter().map(String::as_str).collect();
    let sessions = conv.evidence_sessions(q);
    let now = sessions.iter().copied().max()?;
    if sessions.len() < 2 {
        return None;
    }
    let at = conv
        .utterances
        .iter()
        .position(|u| u.session == now && evidence_turns.contains(u.turn_id.as_str()))?;
    let callback = conv.utterances.get(at)?;
    let before = 1 + (seed % 3) as usize;
    let first = (0..at)
        .rev()
        .take_while(|&i| conv.utterances.get(i).is_some_and(|u| u.session == now))
        .take(before)
        .last()
        .unwrap_or(at);
    let mut lines: Vec<String> = conv
        .utterances
        .get(first..at)?
        .iter()
        .map(|u| tagged(&u.speaker, &clip(&u.text, TURN_COLUMNS)))
        .collect();
    lines.push(tagged(
        &callback.speaker,
        &clip(&callback.text, LAST_TURN_COLUMNS),
    ));
    let mut out = rewritten(q, lines, conv.session_ids(&HashSet::from([now])));
    // What is said now is not memory: only the earlier evidence can be found.
    let now_id = conv.conv.sessions.get(now).map(|s| s.session_id.as_str());
    let now_turns: HashSet<&str> = conv
        .conv
        .sessions
        .get(now)
        .map(|s| s.turns.iter().map(|t| t.turn_id.as_str()).collect())
        .unwrap_or_default();
    out.evidence_turns
        .retain(|t| !now_turns.contains(t.as_str()));
    out.evidence_sessions.retain(|s| Some(s.as_str()) != now_id);
    Some(out)
}

fn rewritten(q: &Question, lines: Vec<String>, exclude: Vec<String>) -> Question {
    let mut out = q.clone();
    out.question = lines.join("\n");
    out.exclude_sessions = exclude;
    out
}

fn tagged(speaker: &str, text: &str) -> String {
    if speaker.is_empty() {
        text.to_string()
    } else {
        format!("{speaker}: {text}")
    }
}

/// Who asks the question: the first speaker (the user, by the schema's
/// convention), unless the question names them and not the other, since
/// people do not ask about themselves in the third person.
fn asker(conv: &Conversation, q: &Question) -> String {
    let names = |s: &String| q.question.contains(s.as_str());
    match conv.speakers.as_slice() {
        [first, second, ..] if names(first) && !names(second) => second.clone(),
        [first, ..] => first.clone(),
        [] => String::new(),
    }
}

/// `text` cut to `columns` display columns: at the end of a sentence when one
/// ends past half the limit, else at a word (or, in CJK text, a character).
fn clip(text: &str, columns: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut width = 0;
    let mut end = text.len();
    let mut sentence_end = None;
    let mut word_end = None;
    for (i, c) in text.char_indices() {
        let w = if is_cjk(c) { 2 } else { 1 };
        if width + w > columns {
            end = i;
            break;
        }
        width += w;
        let after = i + c.len_utf8();
        if matches!(c, '.' | '!' | '?' | '。' | '！' | '？') && width * 2 >= columns {
            sentence_end = Some(after);
        }
        if c == ' ' {
            word_end = Some(i);
        } else if is_cjk(c) {
            word_end = Some(after);
        }
    }
    if end == text.len() {
        return text;
    }
    let cut = sentence_end.or(word_end).unwrap_or(end);
    let mut out = text.get(..cut).unwrap_or(&text).trim_end().to_string();
    if sentence_end != Some(cut) {
        out.push('…');
    }
    out
}

/// FNV-1a: a stable hash of the question id, so the same question gets the
/// same query on every machine and in every run.
fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
#[path = "dialogue_tests.rs"]
mod tests;
