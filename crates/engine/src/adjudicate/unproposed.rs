//! What the code reads in a round that the model's extraction missed, for
//! the two statements a small model drops most and the code can read by
//! their words alone:
//!
//! - a request to forget ("Please forget that my hotel room number is
//!   512", "Scratch what I told you about the iguana") that no retraction
//!   of the model's covers: a retraction without an attribute, which ends
//!   the facts it names (see `decide`);
//! - a plain "my A is B" of the user's ("Update: my favourite tea is now
//!   sencha.") that no proposal of its message says the value of: the
//!   fact in the user's words, a change when its words say so;
//! - a change the assistant offers in so many words ("Shall I switch your
//!   preferred airline to KLM?") and the user confirms ("Yes, do that."):
//!   the user's attribute takes the offered value.

use chrono::NaiveDate;
use mnemo_core::{Message, Role};

use super::words::{
    content, flat, has_phrase, my_a_is_b, words, CHANGE_CUES, CONFIRMATIONS, CORRECT_CUES,
    RETRACT_CUES,
};
use super::{attribute_key, message_day, Checked, Kind};

/// Phrases that ask to forget, as a request (not "I always forget my
/// keys").
const FORGET_REQUESTS: &[&str] = &[
    "please forget",
    "can you forget",
    "could you forget",
    "forget what i",
    "forget that i",
    "forget that my",
    "forget about my",
    "forget my",
    "scratch what",
    "scratch that",
    "that isn't true",
    "that's not true",
    "that is not true",
    "that was not true",
    "that wasn't true",
    "disregard what",
    "delete what",
    "请忘掉",
    "请忘记",
    "忘掉",
    "不是真的",
    "别记",
    "不要记",
];

/// Longest sentence read as a plain statement: a longer one says more
/// than its "my A is B", and is the model's to read.
const MAX_STATEMENT_WORDS: usize = 16;

/// Verbs of an assistant's offer to change something of the user's.
const OFFER_VERBS: &[&str] = &["switch", "change", "update", "set", "move"];

/// The code's retractions and confirmed changes for `messages` that
/// `proposed` (the checked facts of the model's proposals) does not cover.
pub fn unproposed(messages: &[Message], proposed: &[Checked], today: NaiveDate) -> Vec<Checked> {
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if m.role != Role::User {
            continue;
        }
        let said = message_day(m, today);
        let covered = |kind: Kind| proposed.iter().any(|c| c.message == i && c.kind == kind);
        if !covered(Kind::Retracts) {
            for s in crate::extract::sentences(&m.text()) {
                let f = flat(s);
                let request = has_phrase(&f, FORGET_REQUESTS)
                    && words(s).first().is_none_or(|w| w != "i")
                    && !s.trim_end().ends_with(['?', '？']);
                if request {
                    out.push(checked(s, ("", ""), Kind::Retracts, i, said, s.to_string()));
                }
            }
        }
        for s in crate::extract::sentences(&m.text()) {
            let f = flat(s);
            if words(s).len() > MAX_STATEMENT_WORDS
                || s.trim_end().ends_with(['?', '？'])
                || has_phrase(&f, RETRACT_CUES)
                || has_phrase(&f, FORGET_REQUESTS)
            {
                continue;
            }
            let Some((attribute, text, value)) = my_a_is_b(s) else {
                continue;
            };
            let have: std::collections::HashSet<String> = content(s).into_iter().collect();
            let said = proposed.iter().chain(out.iter()).any(|c| {
                let v = content(&c.value);
                c.message == i && !v.is_empty() && v.iter().all(|w| have.contains(w))
            });
            if said || value.split_whitespace().count() > 6 {
                continue;
            }
            let kind = if has_phrase(&f, CORRECT_CUES) {
                Kind::Corrects
            } else if has_phrase(&f, CHANGE_CUES) {
                Kind::Changes
            } else {
                Kind::States
            };
            let day = message_day(m, today);
            out.push(checked(
                &text,
                (&attribute, &value),
                kind,
                i,
                day,
                s.to_string(),
            ));
        }
        if covered(Kind::Changes) || !confirms(m) {
            continue;
        }
        let Some(prev) = messages[..i]
            .iter()
            .rev()
            .find(|p| matches!(p.role, Role::User | Role::Assistant))
            .filter(|p| p.role == Role::Assistant)
        else {
            continue;
        };
        if let Some((attribute, value)) = offer(&prev.text()) {
            let text = format!("The user's {attribute} is {value}.");
            let evidence = format!("{}\n{}", prev.text(), m.text());
            out.push(checked(
                &text,
                (&attribute, &value),
                Kind::Changes,
                i,
                said,
                evidence,
            ));
        }
    }
    out
}

fn confirms(m: &Message) -> bool {
    let t = m.text();
    words(&t).len() <= 12
        && has_phrase(&flat(&t), CONFIRMATIONS)
        && !has_phrase(&flat(&t), &["no", "not", "don't"])
}

/// "Shall I switch your preferred airline to KLM?": (`preferred
/// airline`, `KLM`).
fn offer(text: &str) -> Option<(String, String)> {
    let raw: Vec<&str> = text.split_whitespace().collect();
    let bare = |w: &str| {
        w.trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase()
    };
    let verb = raw
        .iter()
        .position(|w| OFFER_VERBS.contains(&bare(w).as_str()))?;
    let your = verb + 1 + raw[verb + 1..].iter().position(|w| bare(w) == "your")?;
    let to = your + 1 + raw[your + 1..].iter().position(|w| bare(w) == "to")?;
    let attribute: Vec<String> = raw[your + 1..to].iter().map(|w| bare(w)).collect();
    let mut value: Vec<&str> = Vec::new();
    for w in &raw[to + 1..] {
        value.push(w);
        if w.ends_with(['?', '.', ',', '!']) {
            break;
        }
    }
    let value = value
        .join(" ")
        .trim_end_matches(['?', '.', ',', '!'])
        .to_string();
    let asks = text.trim_end().ends_with('?');
    if !asks
        || attribute.is_empty()
        || attribute.len() > 5
        || value.is_empty()
        || value.split_whitespace().count() > 6
    {
        return None;
    }
    Some((attribute.join(" "), value))
}

fn checked(
    text: &str,
    (attribute, value): (&str, &str),
    kind: Kind,
    message: usize,
    said: NaiveDate,
    evidence: String,
) -> Checked {
    let (attribute_key, single) = attribute_key(attribute);
    Checked {
        text: text.to_string(),
        subject: "user".into(),
        subject_key: "user".into(),
        attribute: attribute.to_string(),
        attribute_key: if attribute.is_empty() {
            String::new()
        } else {
            attribute_key
        },
        single,
        value: value.to_string(),
        kind,
        message,
        evidence,
        since: said,
        said,
        rewritten: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_forget_requests_and_confirmed_offers() {
        let msgs = vec![
            Message::user(
                "I always forget my keys. Please forget that my hotel room number is 512.",
            ),
            Message::assistant("Noted."),
            Message::user("Scratch what I told you about the iguana, that isn't true."),
            Message::assistant("Shall I switch your preferred airline to KLM?"),
            Message::user("Yes, do that."),
            Message::assistant("Should I change your seat to the aisle?"),
            Message::user("No, thanks."),
            Message::user("Did you forget my birthday?"),
            Message::user("Update: my favourite tea is now sencha."),
        ];
        let got = unproposed(&msgs, &[], "2026-12-05".parse().unwrap());
        let seen: Vec<(usize, Kind, &str)> = got
            .iter()
            .map(|c| (c.message, c.kind, c.text.as_str()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (
                    0,
                    Kind::Retracts,
                    "Please forget that my hotel room number is 512."
                ),
                (
                    2,
                    Kind::Retracts,
                    "Scratch what I told you about the iguana, that isn't true."
                ),
                (4, Kind::Changes, "The user's preferred airline is KLM."),
                (8, Kind::Changes, "The user's favourite tea is sencha."),
            ]
        );
        assert_eq!(got[2].value, "KLM");
        // A retraction the model proposed is not read twice.
        let again = unproposed(&msgs[..1], &got[..1], "2026-12-05".parse().unwrap());
        assert!(again.is_empty(), "{again:?}");
    }
}
