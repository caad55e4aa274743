//! Two checks of the write-path suite ([`crate::write_path`]) on what a
//! replay left in memory, beyond which values it holds: facts ended when
//! they should not have been, and memory lines no message supports.
//!
//! ## Wrong supersessions
//!
//! Every fact of `memory/facts.md` that is no longer true is checked
//! against the script. Its *cause* is the message that ended it: the one
//! the audit log names for the end (the `update` record that superseded
//! it, or the `delete` record that ended it: session and message), else
//! the first source of the fact that replaced it, else the retraction's
//! source; a fact ended with none of these (by a dream) is taken as ended
//! after the conversation's last message. A fact *holds* a scripted
//! subject when the suite's line rules say it is about the subject and
//! holds one of its values. The end is wrong when:
//!
//! 1. the fact holds a value that was still the subject's value at the
//!    cause: no statement of the subject that changes, corrects or
//!    retracts it came before the cause or with it (a statement said again
//!    is no reason to end the fact either);
//! 2. the fact holds a scripted subject and the fact that replaced it is
//!    not about that subject (the user's home ended by the sister's);
//! 3. the fact holds no scripted subject, every message it came from is a
//!    turn of the benchmark conversation, and its cause is a scripted
//!    message about a subject the fact is not about: not by the line rules
//!    (a fact with `lives` in it is about the user's home city), and not by
//!    its `about` who and attribute: the same person, as the write path
//!    names them (`Caroline` is the user of a conversation whose first
//!    speaker she is), and the same attribute word for word (the write
//!    path's attribute table is what is checked here: the user's `name` is
//!    not the `dentist's name`).
//!
//! Each ended fact counts once, by the first rule it breaks.
//!
//! ## Invented facts
//!
//! A memory line (a MEMORY.md line, a current fact, a daily-log item) is
//! invented when no message of the conversation replayed supports it:
//!
//! 1. a number or a capitalised name in it (a word with a digit, or a
//!    capitalised word of two letters or more that does not start a
//!    sentence) is in no message (nor in a message's date: its year,
//!    month, day, month name and weekday), or
//! 2. fewer than half of its content words (the write path's: lower case,
//!    stemmed, without stop words, each CJK character a word; a fact's
//!    attribute, its `about` label, is the write path's classification and
//!    is left out) are in any
//!    one message (or its date) together with the message after it (a
//!    user's "Yes, do that." with the proposal before it).
//!
//! Markdown marks (bullets, `**`) are not words; a line without content
//! words is not checked. The rule reads words, not meaning: a fact that
//! names what a message only refers to ("it is in Lyon" for the wedding
//! said three sessions before) fails the second part, which is why the
//! suite's scripted corrections name what they correct.

use std::collections::{HashMap, HashSet};

use mnemo_core::Message;
use mnemo_engine::adjudicate::{content, subject_key};
use mnemo_store::memory::facts::{AuditRecord, Fact, FactsFile};

use crate::write_path::{holds, words, Origin, Replay, ReplaySession, Subject};

/// Where each message of a replay is.
struct Positions<'a> {
    /// `(session key, ordinal)` to its place in the whole conversation.
    at: HashMap<(&'a str, usize), usize>,
    /// What each message is, by place.
    origins: Vec<Origin>,
    /// The place of each scripted exchange's first message.
    first: HashMap<usize, usize>,
}

impl<'a> Positions<'a> {
    fn new(sessions: &'a [ReplaySession]) -> Self {
        let mut p = Positions {
            at: HashMap::new(),
            origins: Vec::new(),
            first: HashMap::new(),
        };
        for s in sessions {
            for (ordinal, origin) in s.origins.iter().enumerate() {
                let place = p.origins.len();
                p.at.insert((s.key.as_str(), ordinal), place);
                if let Origin::Scripted(k) = origin {
                    p.first.entry(*k).or_insert(place);
                }
                p.origins.push(*origin);
            }
        }
        p
    }

    /// After the last message.
    fn end(&self) -> usize {
        self.origins.len()
    }

    /// The place of a source `SESSION FROM..TO` (its first message).
    fn source(&self, source: &str) -> Option<usize> {
        let (key, range) = source.trim().rsplit_once(' ')?;
        let from: usize = range.split("..").next()?.trim().parse().ok()?;
        self.at.get(&(key, from)).copied()
    }
}

/// The message that ended `f` (see the module docs).
fn cause(f: &Fact, facts: &FactsFile, audit: &[AuditRecord], p: &Positions<'_>) -> usize {
    let record = audit.iter().rev().find(|r| {
        (r.op == "update" && r.supersedes.as_deref() == Some(f.id.as_str()))
            || (r.op == "delete" && r.memory == f.id)
    });
    if let Some(r) = record {
        return r
            .session
            .as_deref()
            .zip(r.messages.as_deref())
            .and_then(|(s, m)| p.source(&format!("{s} {m}")))
            .unwrap_or_else(|| p.end());
    }
    let replaced = f
        .superseded_by
        .as_deref()
        .and_then(|id| facts.get(id))
        .and_then(|r| r.sources().first().and_then(|s| p.source(s)));
    replaced
        .or_else(|| f.retracted_by.as_deref().and_then(|s| p.source(s)))
        .unwrap_or_else(|| p.end())
}

/// The subject's value at `place`: `None` before it was first stated,
/// `Some(None)` once retracted. The exchanges are in the order said.
fn value_at<'p>(
    replay: &'p Replay<'_>,
    p: &Positions<'_>,
    subject: usize,
    place: usize,
) -> Option<Option<&'p str>> {
    replay
        .plan
        .statements
        .iter()
        .enumerate()
        .rev()
        .find(|(k, s)| s.subject == subject && p.first.get(k).is_some_and(|&f| f <= place))
        .map(|(_, s)| s.value.as_deref())
}

/// True when the fact is about `s` by its `about` who and attribute: the
/// same person (as the write path names them) and the same attribute,
/// word for word. The write path's own attribute table is not used: it
/// is what is being checked ("dentist's name" is not the user's name).
fn same_keys(f: &Fact, s: &Subject, names: &[String]) -> bool {
    let (Some(who), Some(attribute)) = (f.subject.as_deref(), f.attribute.as_deref()) else {
        return false;
    };
    subject_key(who, names) == subject_key(&s.who, names) && words(attribute) == words(&s.attribute)
}

/// The wrong supersessions among the facts no longer true (see the module
/// docs), each described in a line.
pub fn wrong_supersessions(
    facts: &FactsFile,
    audit: &[AuditRecord],
    replay: &Replay<'_>,
) -> Vec<String> {
    let p = Positions::new(replay.sessions);
    let subjects = &replay.plan.subjects;
    let mut out = Vec::new();
    for f in facts.facts().iter().filter(|f| !f.is_current()) {
        let line = words(&f.text);
        let held: Vec<usize> = (0..subjects.len())
            .filter(|&i| {
                subjects[i].is_about(&line) && subjects[i].values.iter().any(|v| holds(&line, v))
            })
            .collect();
        let at = cause(f, facts, audit, &p);
        let still = held
            .iter()
            .find(|&&i| matches!(value_at(replay, &p, i, at), Some(Some(v)) if holds(&line, v)));
        if let Some(&i) = still {
            out.push(format!(
                "{:?} ended while {} was still true",
                f.text, subjects[i].subject
            ));
            continue;
        }
        if !held.is_empty() {
            let replacement = f.superseded_by.as_deref().and_then(|id| facts.get(id));
            if let Some(r) = replacement {
                let words_r = words(&r.text);
                if !held.iter().any(|&i| subjects[i].is_about(&words_r)) {
                    out.push(format!(
                        "{:?} replaced by {:?}, about something else",
                        f.text, r.text
                    ));
                    continue;
                }
            }
            continue;
        }
        let origins: Vec<Option<Origin>> = f
            .sources()
            .iter()
            .map(|s| p.source(s).and_then(|k| p.origins.get(k).copied()))
            .collect();
        let real = !origins.is_empty() && origins.iter().all(|o| *o == Some(Origin::Real));
        let by = match p.origins.get(at) {
            Some(Origin::Scripted(k)) => {
                replay.plan.statements.get(*k).map(|s| &subjects[s.subject])
            }
            _ => None,
        };
        if let (true, Some(t)) = (real, by) {
            if !t.is_about(&line) && !same_keys(f, t, &replay.user_names) {
                out.push(format!(
                    "{:?}, a fact of the conversation, ended by the scripted {}",
                    f.text, t.subject
                ));
            }
        }
    }
    out
}

/// A message's date as words (`2023`, `05`, `5`, `may`, `monday`), so a
/// fact that writes out the day a message was said invents nothing.
fn date_words(m: &Message) -> Vec<String> {
    let Some(t) = m.timestamp.as_deref() else {
        return Vec::new();
    };
    let Ok(d) = chrono::DateTime::parse_from_rfc3339(t) else {
        return words(t);
    };
    ["%Y", "%m", "%-m", "%d", "%-d", "%B", "%b", "%A", "%a"]
        .iter()
        .map(|f| d.format(f).to_string().to_lowercase())
        .collect()
}

/// The numbers and capitalised names of `text` (see the module docs), as
/// [`words`].
fn hard_words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut first = true;
    for raw in text.split_whitespace() {
        let w = raw.trim_matches(|c: char| !c.is_alphanumeric());
        if w.is_empty() {
            continue;
        }
        let number = w.chars().any(|c| c.is_ascii_digit());
        let capital = !first && w.chars().next().is_some_and(char::is_uppercase);
        if number || capital {
            out.extend(words(w).into_iter().filter(|x| {
                x.is_ascii() && (x.len() > 1 || x.chars().all(|c| c.is_ascii_digit()))
            }));
        }
        first = raw.ends_with(['.', '!', '?', ':', '。', '！', '？']);
    }
    out
}

/// The memory lines of `lines` that no message of `sessions` supports
/// (see the module docs). `labels` gives a fact's attribute (its `about`
/// metadata, the write path's classification, not a claim): its words
/// need no message.
pub fn invented_facts(
    lines: &[String],
    labels: &HashMap<String, String>,
    sessions: &[ReplaySession],
) -> Vec<String> {
    let messages: Vec<&Message> = sessions.iter().flat_map(|s| &s.messages).collect();
    let mut known: HashSet<String> = HashSet::new();
    let contents: Vec<HashSet<String>> = messages
        .iter()
        .map(|m| {
            let t = m.text();
            let day = date_words(m);
            known.extend(words(&t));
            known.extend(day.iter().cloned());
            content(&t).into_iter().chain(day).collect()
        })
        .collect();
    lines
        .iter()
        .filter(|l| unsupported(l, labels.get(*l), &known, &contents))
        .cloned()
        .collect()
}

fn unsupported(
    line: &str,
    label: Option<&String>,
    known: &HashSet<String>,
    contents: &[HashSet<String>],
) -> bool {
    let text = line
        .trim()
        .trim_start_matches(['-', '*', '+', ' '])
        .replace("**", "");
    if hard_words(&text).iter().any(|w| !known.contains(w)) {
        return true;
    }
    let label: HashSet<String> = label
        .map(|l| content(l))
        .unwrap_or_default()
        .into_iter()
        .collect();
    let needed: Vec<String> = content(&text)
        .into_iter()
        .filter(|w| !label.contains(w))
        .collect();
    if needed.is_empty() {
        return false;
    }
    let best = (0..contents.len())
        .map(|i| {
            needed
                .iter()
                .filter(|w| {
                    contents[i].contains(*w) || contents.get(i + 1).is_some_and(|c| c.contains(*w))
                })
                .count()
        })
        .max()
        .unwrap_or(0);
    best * 2 < needed.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::write_path::{Plan, Scenario, Scripted};
    use chrono::{NaiveDate, TimeZone, Utc};
    use mnemo_core::Role;

    fn subject(name: &str, who: &str, about: &[&str], values: &[&str]) -> Subject {
        Subject {
            scenario: Scenario::UnmarkedChange,
            subject: name.into(),
            who: who.into(),
            attribute: "home city".into(),
            about: about.iter().chain(values).map(|s| s.to_string()).collect(),
            not_about: if who == "user" {
                vec!["ana".into()]
            } else {
                Vec::new()
            },
            values: values.iter().map(|s| s.to_string()).collect(),
            foreign: Vec::new(),
            retracted: false,
        }
    }

    fn said(subject: usize, text: &str, value: &str) -> Scripted {
        Scripted {
            session: 0,
            turns: vec![(Role::User, text.into())],
            subject,
            value: Some(value.into()),
        }
    }

    /// One session: a real turn (0), the user's Tallinn (1), a real turn
    /// (2), Ana's Valencia (3), the user's Porto (4), Ana's Seville (5).
    fn replay_parts() -> (Plan, Vec<ReplaySession>) {
        let plan = Plan {
            subjects: vec![
                subject("home city", "user", &["lives"], &["Tallinn", "Porto"]),
                subject(
                    "sister Ana's home city",
                    "Ana",
                    &["ana"],
                    &["Valencia", "Seville"],
                ),
            ],
            statements: vec![
                said(0, "I live in Tallinn.", "Tallinn"),
                said(1, "My sister Ana lives in Valencia.", "Valencia"),
                said(0, "We're in Porto these days.", "Porto"),
                said(1, "Ana moved to Seville last month.", "Seville"),
            ],
        };
        let messages = [
            (
                Role::User,
                "Caroline: I work as a nurse at the city hospital.",
                Origin::Real,
            ),
            (Role::User, "I live in Tallinn.", Origin::Scripted(0)),
            (
                Role::Assistant,
                "Melanie: Shall I book the trip to Oslo for you?",
                Origin::Real,
            ),
            (
                Role::User,
                "My sister Ana lives in Valencia.",
                Origin::Scripted(1),
            ),
            (
                Role::User,
                "We're in Porto these days.",
                Origin::Scripted(2),
            ),
            (
                Role::User,
                "Ana moved to Seville last month.",
                Origin::Scripted(3),
            ),
            (Role::User, "Yes, do that.", Origin::Real),
        ];
        let stamp = Utc
            .with_ymd_and_hms(2023, 5, 8, 12, 0, 0)
            .unwrap()
            .to_rfc3339();
        let session = ReplaySession {
            key: "eval:c-s1".into(),
            end: Utc::now(),
            messages: messages
                .iter()
                .map(|(r, t, _)| Message::new(*r, t.to_string()).with_timestamp(stamp.clone()))
                .collect(),
            origins: messages.iter().map(|(_, _, o)| *o).collect(),
        };
        (plan, vec![session])
    }

    fn fact(file: &mut FactsFile, text: &str, source: &str, about: (&str, &str)) -> String {
        let now = Utc.with_ymd_and_hms(2023, 5, 8, 12, 0, 0).unwrap();
        file.add_fact(
            Fact::new(String::new(), text, None, now, Some(source.into())).about(about.0, about.1),
        )
    }

    fn ended_by(
        file: &mut FactsFile,
        old: &str,
        new: &str,
        audit: &mut Vec<AuditRecord>,
        ordinal: usize,
    ) {
        let day = NaiveDate::from_ymd_opt(2023, 5, 8);
        file.end(old, day, Some(new)).unwrap();
        audit.push(AuditRecord {
            session: Some("eval:c-s1".into()),
            messages: Some(format!("{ordinal}..{}", ordinal + 1)),
            ..AuditRecord::change(
                Utc::now(),
                "consolidation",
                "update",
                new,
                Some(old),
                None,
                None,
            )
        });
    }

    #[test]
    fn a_change_that_came_first_is_a_right_supersession() {
        let (plan, sessions) = replay_parts();
        let replay = Replay {
            conv_id: "test",
            plan: &plan,
            sessions: &sessions,
            user_names: vec!["Caroline".into()],
        };
        let mut file = FactsFile::default();
        let mut audit = Vec::new();
        let tallinn = fact(
            &mut file,
            "The user lives in Tallinn.",
            "eval:c-s1 1..2",
            ("user", "home city"),
        );
        let porto = fact(
            &mut file,
            "The user lives in Porto.",
            "eval:c-s1 4..5",
            ("user", "home city"),
        );
        ended_by(&mut file, &tallinn, &porto, &mut audit, 4);
        let valencia = fact(
            &mut file,
            "The user's sister Ana lives in Valencia.",
            "eval:c-s1 3..4",
            ("Ana", "home city"),
        );
        let seville = fact(
            &mut file,
            "Ana lives in Seville.",
            "eval:c-s1 5..6",
            ("Ana", "home city"),
        );
        ended_by(&mut file, &valencia, &seville, &mut audit, 5);
        assert_eq!(
            wrong_supersessions(&file, &audit, &replay),
            Vec::<String>::new()
        );
        // Without the audit log the replacement's source says the same.
        assert_eq!(
            wrong_supersessions(&file, &[], &replay),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_true_fact_ended_by_an_unrelated_one_is_wrong() {
        let (plan, sessions) = replay_parts();
        let replay = Replay {
            conv_id: "test",
            plan: &plan,
            sessions: &sessions,
            user_names: vec!["Caroline".into()],
        };
        // The user's Porto ended by the sister's move: still true at the
        // cause, and replaced by a fact about someone else.
        let mut file = FactsFile::default();
        let mut audit = Vec::new();
        let porto = fact(
            &mut file,
            "The user lives in Porto.",
            "eval:c-s1 4..5",
            ("user", "home city"),
        );
        let seville = fact(
            &mut file,
            "Ana lives in Seville.",
            "eval:c-s1 5..6",
            ("Ana", "home city"),
        );
        ended_by(&mut file, &porto, &seville, &mut audit, 5);
        let wrong = wrong_supersessions(&file, &audit, &replay);
        assert_eq!(wrong.len(), 1, "{wrong:?}");
        assert!(wrong[0].contains("still true"), "{wrong:?}");
        // Tallinn, no longer true when the sister moved, but replaced by her
        // city: the replacement is about someone else.
        let mut file = FactsFile::default();
        let mut audit = Vec::new();
        let tallinn = fact(
            &mut file,
            "The user lives in Tallinn.",
            "eval:c-s1 1..2",
            ("user", "home city"),
        );
        let seville = fact(
            &mut file,
            "Ana lives in Seville.",
            "eval:c-s1 5..6",
            ("Ana", "home city"),
        );
        ended_by(&mut file, &tallinn, &seville, &mut audit, 5);
        let wrong = wrong_supersessions(&file, &audit, &replay);
        assert_eq!(wrong.len(), 1, "{wrong:?}");
        assert!(wrong[0].contains("about something else"), "{wrong:?}");
        // A fact of a real turn (the user's job) ended by the scripted home:
        // wrong; the same turn's fact about where she lives would not be.
        let mut file = FactsFile::default();
        let mut audit = Vec::new();
        let nurse = fact(
            &mut file,
            "Caroline works as a nurse.",
            "eval:c-s1 0..1",
            ("Caroline", "job"),
        );
        let tallinn = fact(
            &mut file,
            "The user lives in Tallinn.",
            "eval:c-s1 1..2",
            ("user", "home city"),
        );
        ended_by(&mut file, &nurse, &tallinn, &mut audit, 1);
        let wrong = wrong_supersessions(&file, &audit, &replay);
        assert_eq!(wrong.len(), 1, "{wrong:?}");
        assert!(wrong[0].contains("a fact of the conversation"), "{wrong:?}");
        let mut file = FactsFile::default();
        let mut audit = Vec::new();
        let near = fact(
            &mut file,
            "Caroline lives near the hospital.",
            "eval:c-s1 0..1",
            ("Caroline", "residence"),
        );
        let flat = fact(
            &mut file,
            "Caroline's flat is near the hospital.",
            "eval:c-s1 0..1",
            ("Caroline", "home city"),
        );
        let tallinn = fact(
            &mut file,
            "The user lives in Tallinn.",
            "eval:c-s1 1..2",
            ("user", "home city"),
        );
        ended_by(&mut file, &near, &tallinn, &mut audit, 1);
        ended_by(&mut file, &flat, &tallinn, &mut audit, 1);
        assert_eq!(
            wrong_supersessions(&file, &audit, &replay),
            Vec::<String>::new()
        );
        // The user's own name ended by the dentist's: another attribute,
        // whatever the write path's table makes of it.
        let mut file = FactsFile::default();
        let mut audit = Vec::new();
        let name = fact(
            &mut file,
            "Caroline's name is Caroline.",
            "eval:c-s1 0..1",
            ("Caroline", "name"),
        );
        let plan = Plan {
            subjects: vec![Subject {
                who: "user".into(),
                attribute: "dentist's name".into(),
                about: vec!["dentist's name".into()],
                values: vec!["Okafor".into()],
                ..plan.subjects[0].clone()
            }],
            statements: vec![said(0, "I live in Tallinn.", "Okafor")],
        };
        let replay = Replay {
            conv_id: "test",
            plan: &plan,
            sessions: &sessions,
            user_names: vec!["Caroline".into()],
        };
        let dentist = fact(
            &mut file,
            "The user's dentist's name is Okafor.",
            "eval:c-s1 1..2",
            ("user", "dentist's name"),
        );
        ended_by(&mut file, &name, &dentist, &mut audit, 1);
        assert_eq!(wrong_supersessions(&file, &audit, &replay).len(), 1);
    }

    #[test]
    fn a_line_no_message_supports_is_invented() {
        let (_, sessions) = replay_parts();
        let lines: Vec<String> = [
            "The user lives in Porto.",
            "Ana lives in Seville.",
            "- **Caroline** works as a nurse at the city hospital.",
            // The proposal and the user's yes together.
            "The user wants the trip to Oslo booked.",
            // The day the messages were said.
            "The user's sister moved on 8 May 2023.",
            // A name no message has.
            "The user lives in Lisbon.",
            // A number no message has.
            "The user works 12 shifts at the hospital.",
            // Words no message has, most of them.
            "The user enjoys painting watercolour landscapes at weekends.",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let invented = invented_facts(&lines, &HashMap::new(), &sessions);
        assert_eq!(
            invented,
            lines[5..].to_vec(),
            "supported lines must pass and the last three must not"
        );
        // A fact's attribute is the write path's label, not a claim: the
        // message need not say "home city" for "The user's home city is
        // Porto." to hold; unlabelled, most of its words are unsaid.
        let labelled = vec!["The user's home city region is Porto.".to_string()];
        assert_eq!(
            invented_facts(&labelled, &HashMap::new(), &sessions),
            labelled
        );
        let labels: HashMap<String, String> =
            [(labelled[0].clone(), "home city region".to_string())].into();
        assert!(invented_facts(&labelled, &labels, &sessions).is_empty());
        // Chinese: characters are the words.
        let zh = ReplaySession {
            key: "eval:z-1".into(),
            end: Utc::now(),
            messages: vec![Message::user("其实我现在最喜欢绿色了。")],
            origins: vec![Origin::Scripted(0)],
        };
        let lines = vec![
            "用户最喜欢的颜色是绿色。".to_string(),
            "用户的车位号码是B7。".to_string(),
        ];
        assert_eq!(
            invented_facts(&lines, &HashMap::new(), &[zh]),
            vec![lines[1].clone()]
        );
    }
}
