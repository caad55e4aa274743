//! English dates written out: "on 3 June 2023", "June 3rd", "in May",
//! "April 27th, 2023", with the month names that are also ordinary words
//! ("May", "March") read as months only next to a day, a year or a time
//! preposition; and the query's words, shared with the Latin languages.

use super::*;

/// A word of the query: letters, or digits with an optional ordinal suffix.
#[derive(Debug)]
pub(super) struct Word<'a> {
    pub(super) text: &'a str,
    /// Byte offset in the query.
    pub(super) start: usize,
    /// Punctuation right before it (for "June, 2023" and sentence starts).
    pub(super) after_punct: bool,
}

pub(super) fn words(query: &str) -> Vec<Word<'_>> {
    let mut out = Vec::new();
    let mut start = None;
    let mut punct = true;
    for (i, ch) in query.char_indices() {
        // Letters of any script ("février", "März"); a CJK run becomes one
        // word that no rule below matches (`cjk` reads those).
        if ch.is_alphanumeric() {
            if start.is_none() {
                start = Some(i);
            }
        } else {
            if let Some(s) = start.take() {
                out.push(Word {
                    text: query.get(s..i).unwrap_or_default(),
                    start: s,
                    after_punct: punct,
                });
                punct = false;
            }
            if !ch.is_whitespace() && ch != ',' {
                punct = true;
            }
        }
    }
    if let Some(s) = start {
        out.push(Word {
            text: query.get(s..).unwrap_or_default(),
            start: s,
            after_punct: punct,
        });
    }
    out
}

pub(super) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// Words that introduce a time ("in May", "since March").
pub(super) const TIME_PREPOSITIONS: &[&str] = &[
    "in", "on", "of", "since", "during", "until", "till", "before", "after", "by", "early", "late",
    "mid", "last", "this", "next", "from", "to", "around",
];

/// `(month, needs_context)`: capitalised full names and common
/// abbreviations. Names that are also ordinary words or given names (May,
/// March, August, Jan, …) count only next to a day, a year or a preposition.
pub(super) fn month_of(w: &str) -> Option<(u32, bool)> {
    if !w.starts_with(|c: char| c.is_ascii_uppercase()) {
        return None;
    }
    if let Some(i) = MONTHS.iter().position(|m| *m == w) {
        let ambiguous = matches!(w, "May" | "March" | "August");
        return Some((i as u32 + 1, ambiguous));
    }
    let abbrev = w.strip_suffix('.').unwrap_or(w);
    let m = match abbrev {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" | "Sept" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    Some((m, true))
}

/// 1-31, with an optional ordinal suffix ("3", "3rd", "27th").
pub(super) fn day_of(w: &str) -> Option<u32> {
    let digits = w
        .strip_suffix("st")
        .or_else(|| w.strip_suffix("nd"))
        .or_else(|| w.strip_suffix("rd"))
        .or_else(|| w.strip_suffix("th"))
        .unwrap_or(w);
    if digits.is_empty() || digits.len() > 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|d| (1..=31).contains(d))
}

pub(super) fn year_of(w: &str) -> Option<i32> {
    if w.len() != 4 || !w.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    w.parse().ok().filter(|y| (1900..=2200).contains(y))
}

/// "June 3, 2023", "3 June 2023", "3rd of June", "June 2023", "in June".
pub(super) fn english(query: &str, out: &mut Vec<(Period, Range<usize>)>) {
    let ws = words(query);
    let text = |i: usize| ws.get(i).map(|w| w.text);
    for (i, w) in ws.iter().enumerate() {
        let Some((month, needs_context)) = month_of(w.text) else {
            continue;
        };
        // A day after the month ("June 3"), or before it ("3 June", "3rd of June").
        let mut day = text(i + 1)
            .filter(|_| !ws[i + 1].after_punct)
            .and_then(day_of);
        let mut next = i + 1 + usize::from(day.is_some());
        let mut first = i;
        if day.is_none() && i > 0 {
            if let Some(d) = text(i - 1).and_then(day_of) {
                day = Some(d);
                first = i - 1;
            } else if i > 1 && text(i - 1) == Some("of") {
                day = text(i - 2).and_then(day_of);
                first = if day.is_some() { i - 2 } else { i };
            }
            next = i + 1;
        }
        let year = text(next).and_then(year_of);
        let last = if year.is_some() { next } else { next - 1 };
        let prev = i.checked_sub(1).and_then(text).map(str::to_ascii_lowercase);
        let introduced = prev
            .as_deref()
            .is_some_and(|p| TIME_PREPOSITIONS.contains(&p));
        if needs_context && day.is_none() && year.is_none() && !introduced {
            continue;
        }
        let span = ws[first].start..ws[last].start + ws[last].text.len();
        out.push((
            match day {
                Some(day) => Period::Day { year, month, day },
                None => Period::Month { year, month },
            },
            span,
        ));
    }
}
