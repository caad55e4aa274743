//! What the code reads in a round that the model's extraction missed, for
//! the two statements a small model drops most and the code can read by
//! their words alone:
//!
//! - a request to forget ("Please forget that my hotel room number is
//!   512", "Scratch what I told you about the iguana") that no retraction
//!   of the model's covers: a retraction without an attribute, which ends
//!   the facts it names (see `decide`);
//! - a plain "my A is B" of the user's ("Update: my favourite tea is now
//!   sencha.", "My cousin's wedding is in Lyon.", 我的车位号码是B7,
//!   其实我现在最喜欢靛青色了 for a colour), or a correction's "the A is B"
//!   ("No wait, the wedding is in Lyon after all."), that no proposal of
//!   its message says the value of: the fact in the user's words, a change
//!   or correction when its words say so;
//! - a home ("I live in Tallinn.", "We're in Ghent these days.") or a move
//!   ("Marisol moved to Bilbao last month.", "We moved to Ghent."): the
//!   home city of whoever it names, a change when the words say so, from
//!   the day they name;
//! - a change the assistant offers in so many words ("Shall I switch your
//!   preferred airline to KLM?") and the user confirms ("Yes, do that."):
//!   the user's attribute takes the offered value.

use chrono::NaiveDate;
use mnemo_core::{Message, Role};

use super::words::{
    bare, content, corrected_the_a_is_b, flat, has_phrase, my_a_is_b, words, CHANGE_CUES,
    CONFIRMATIONS, CORRECT_CUES, RETRACT_CUES,
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
    let names = &super::user_names(messages);
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
            let Some((attribute, text, value)) = my_a_is_b(s).or_else(|| corrected_the_a_is_b(s))
            else {
                continue;
            };
            // Said already when a fact of the message holds the value.
            let v = content(&value);
            let said = proposed.iter().chain(out.iter()).any(|c| {
                let have: std::collections::HashSet<String> =
                    content(&format!("{} {}", c.value, c.text))
                        .into_iter()
                        .collect();
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
        for s in crate::extract::sentences(&m.text()) {
            let Some((who, place, changed)) = home_of(s) else {
                continue;
            };
            let said_already = keyed(proposed.iter().chain(out.iter()), i, "home city", &place);
            if said_already {
                continue;
            }
            let text = match (who.as_str(), s.chars().any(super::words::is_cjk)) {
                ("user", true) => format!("用户住在{place}。"),
                (_, true) => format!("{}住在{place}。", who.replace(' ', "")),
                ("user", false) => format!("The user lives in {place}."),
                _ => format!("{} lives in {place}.", super::capitalised(&who)),
            };
            let kind = if changed { Kind::Changes } else { Kind::States };
            let mut c = checked(&text, ("home city", &place), kind, i, said, s.to_string());
            c.subject_key = super::subject_key(&who, names);
            c.subject = who;
            c.since = crate::dates::event_day(s, said).unwrap_or(said);
            out.push(c);
        }
        if !confirms(m) {
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
        if let Some((attribute, value)) = offer(&prev.text())
            .filter(|(a, v)| !keyed(proposed.iter().chain(out.iter()), i, &attribute_key(a).0, v))
        {
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

/// Words after a place that make "we're in Ghent" a home, not a stay.
const HOME_NOW: &[&str] = &["now", "these days", "nowadays", "for good"];

/// "Marisol moved to Bilbao last month", "my sister moved to Porto", "We
/// moved to Ghent", "I live in Tallinn", "We're in Ghent these days": who
/// (`user` for the user), the place (its capitalised words after "to" or
/// "in") and whether the words say it changed.
fn home_of(sentence: &str) -> Option<(String, String, bool)> {
    if sentence.chars().any(super::words::is_cjk) {
        return zhu_zai(sentence).map(|(who, place)| (who, place, true));
    }
    if has_phrase(&flat(sentence), super::words::NEGATIONS) || sentence.trim_end().ends_with('?') {
        return None;
    }
    let raw: Vec<&str> = sentence.split_whitespace().collect();
    let lower: Vec<String> = raw.iter().map(|w| bare(w)).collect();
    let is =
        |i: usize, options: &[&str]| lower.get(i).is_some_and(|w| options.contains(&w.as_str()));
    // The verb and its preposition; a bare "I'm in" must say "now".
    let (verb, bare_be) = (0..raw.len()).find_map(|i| {
        let lives = is(
            i,
            &["live", "lives", "living", "based", "reside", "resides"],
        );
        if (is(i, &["moved"]) && is(i + 1, &["to"])) || (lives && is(i + 1, &["in"])) {
            Some((i, false))
        } else if is(i, &["i'm", "we're", "am", "are"]) && is(i + 1, &["in"]) {
            Some((i, true))
        } else {
            None
        }
    })?;
    let mut place: Vec<String> = Vec::new();
    let mut end = verb + 2;
    for w in &raw[verb + 2..] {
        let b = w.trim_matches(|c: char| !c.is_alphanumeric()).to_string();
        if !b.chars().next().is_some_and(char::is_uppercase) || place.len() == 3 {
            break;
        }
        place.push(b);
        end += 1;
        if w.ends_with([',', '.', '!', ';']) {
            break;
        }
    }
    if place.is_empty() {
        return None;
    }
    if bare_be {
        let after = lower[end.min(lower.len())..].join(" ");
        if raw.len() > 10 || !HOME_NOW.iter().any(|h| after.starts_with(h)) {
            return None;
        }
    }
    // Who: the words before the verb, past a preface ("Big news:").
    let upto = if bare_be && is(verb, &["i'm", "we're"]) {
        verb + 1
    } else {
        verb
    };
    let before: Vec<String> = raw[..upto]
        .iter()
        .rev()
        .take_while(|w| !w.ends_with([':', ',', '.', '!']))
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_string()
        })
        .filter(|w| {
            !matches!(
                w.to_lowercase().as_str(),
                "just"
                    | "recently"
                    | "finally"
                    | "also"
                    | "has"
                    | "have"
                    | "already"
                    | "am"
                    | "are"
                    | "is"
                    | "still"
                    | "currently"
                    | "now"
            )
        })
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let who = match before
        .iter()
        .map(|w| w.to_lowercase())
        .collect::<Vec<_>>()
        .as_slice()
    {
        [w] if matches!(w.as_str(), "i" | "we" | "i'm" | "we're") => "user".to_string(),
        [my, rel, ..] if my == "my" && super::words::RELATIONS.contains(&rel.as_str()) => {
            before[1..].join(" ")
        }
        [_] if before[0].chars().next().is_some_and(char::is_uppercase) => before[0].clone(),
        _ => return None,
    };
    let changed = is(verb, &["moved"]) || has_phrase(&flat(sentence), CHANGE_CUES);
    Some((who, place.join(" "), changed))
}

/// True when the model's proposal `proposed` gives way to the code's
/// reading `code` of the same message: it says the code's value under
/// another key ("Marisol's move is Bilbao"), or it comes from the
/// sentence the code read and says nothing the reading does not ("The
/// user notes the storage box label" for "my storage box 1 label is
/// L1x").
pub fn gives_way(code: &Checked, proposed: &Checked) -> bool {
    if code.kind == Kind::Retracts
        || proposed.kind == Kind::Retracts
        || code.message != proposed.message
    {
        return false;
    }
    let v = content(&code.value);
    let have = content(&format!("{} {}", proposed.value, proposed.text));
    let rekeyed = code.attribute_key != proposed.attribute_key
        && !v.is_empty()
        && v.iter().all(|w| have.contains(w));
    let sentence: std::collections::HashSet<String> = content(&code.evidence).into_iter().collect();
    let quote = content(&proposed.evidence);
    let same_sentence = !quote.is_empty()
        && quote.iter().filter(|w| sentence.contains(*w)).count() * 4 >= quote.len() * 3;
    let read: std::collections::HashSet<String> =
        content(&format!("{} {} {}", code.text, code.attribute, code.value))
            .into_iter()
            .collect();
    let nothing_more = content(&proposed.value).iter().all(|w| read.contains(w));
    rekeyed || (same_sentence && nothing_more)
}

/// True when a fact of message `i` gives `value` to the attribute `key`
/// (a proposal with the value under another key, "Marisol's move is
/// Bilbao", does not count: the code's reading is the one keyed right).
fn keyed<'a>(facts: impl Iterator<Item = &'a Checked>, i: usize, key: &str, value: &str) -> bool {
    let v = content(value);
    facts
        .filter(|c| c.message == i && c.attribute_key == key)
        .any(|c| {
            let have = content(&c.value);
            v.iter().all(|w| have.contains(w))
        })
}

/// "我们最近住在根特。", "我妹妹玛丽索尔搬到了毕尔巴鄂。": who (`user`, or
/// `用户的妹妹 玛丽索尔`) and the city, when the sentence is only that.
fn zhu_zai(sentence: &str) -> Option<(String, String)> {
    let t = sentence.trim().trim_end_matches(['。', '！', '.', '!']);
    if t.contains(['不', '没', '？', '?', '，', ',']) {
        return None;
    }
    let (before, place) = ["搬到了", "搬去了", "搬到", "搬去", "住在"]
        .iter()
        .find_map(|v| t.split_once(v))?;
    let place = place.trim();
    if place.is_empty() || place.chars().count() > 8 || !place.chars().all(super::words::is_cjk) {
        return None;
    }
    let mut who = before.trim();
    for adverb in ["最近", "现在", "已经", "刚刚", "刚", "也"] {
        who = who.strip_suffix(adverb).unwrap_or(who);
    }
    let who = who.trim();
    if matches!(who, "我" | "我们") {
        return Some(("user".into(), place.to_string()));
    }
    let rest = who
        .strip_prefix("我的")
        .or_else(|| who.strip_prefix('我'))?;
    let rel = super::words::RELATIONS
        .iter()
        .find(|r| r.chars().any(super::words::is_cjk) && rest.starts_with(**r))?;
    let name = rest[rel.len()..].trim();
    if name.chars().count() > 5 {
        return None;
    }
    Some((
        format!("用户的{rel} {name}").trim().to_string(),
        place.to_string(),
    ))
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
            Message::user("Marisol moved to Bilbao last month."),
            Message::user("Big news: we moved to Ghent. The kids moved to their rooms."),
            Message::user("我的车位号码是B7。"),
            Message::user("我们最近住在根特。"),
            Message::user("我妹妹玛丽索尔搬到了毕尔巴鄂。"),
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
                (9, Kind::Changes, "Marisol lives in Bilbao."),
                (10, Kind::Changes, "The user lives in Ghent."),
                (11, Kind::States, "用户的车位号码是B7。"),
                (12, Kind::Changes, "用户住在根特。"),
                (13, Kind::Changes, "用户的妹妹玛丽索尔住在毕尔巴鄂。"),
            ]
        );
        // Her sister's, not the user's: the same person as "用户的妹妹".
        let sister = crate::adjudicate::subject_key("用户的妹妹", &[]);
        assert!(
            crate::adjudicate::same_subject(&got[8].subject_key, &sister),
            "{} / {sister}",
            got[8].subject_key
        );
        assert_eq!(got[4].subject_key, "marisol");
        assert_eq!(got[4].since, "2026-11-01".parse::<NaiveDate>().unwrap());
        assert_eq!(got[2].value, "KLM");
        // A retraction the model proposed is not read twice.
        let again = unproposed(&msgs[..1], &got[..1], "2026-12-05".parse().unwrap());
        assert!(again.is_empty(), "{again:?}");
    }
}
