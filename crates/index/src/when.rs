//! Dates: those named in a query ("on 3 June 2023", "in May", "April 27th",
//! "2023-06-03", "5月2日", "yesterday"), the one in a daily log's file name,
//! and how close a chunk's days are to the query's. People ask memory about a time as often as about a topic; the
//! words of a date rarely occur in the text itself (a session log carries
//! its dates as timestamps, a daily log in its file name), so keyword and
//! vector search alone cannot use them.

// This module reads text a user or a model wrote: no byte-offset slicing of
// it, which could land inside a character. (Its indexing is into token and
// character vectors under explicit bounds checks; the fuzz targets cover it.)
#![cfg_attr(not(test), deny(clippy::string_slice))]

use std::ops::Range;

use chrono::{Datelike, Duration, NaiveDate};

/// Days after a named period at which a chunk keeps half its date affinity:
/// people talk about what happened days later ("last week we went …").
const AFTER_HALF_LIFE_DAYS: f32 = 7.0;
/// Days before it, for plans talked about ahead of time: a shorter reach.
const BEFORE_HALF_LIFE_DAYS: f32 = 2.0;
/// Affinities below this count as none.
const MIN_AFFINITY: f32 = 0.05;

/// A period named in a query. A missing year matches any year.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Period {
    /// One day (`month` 1-12, `day` 1-31).
    Day {
        year: Option<i32>,
        month: u32,
        day: u32,
    },
    /// A whole month.
    Month { year: Option<i32>, month: u32 },
    /// Inclusive days, for relative phrases resolved against today.
    Span(NaiveDate, NaiveDate),
}

impl Period {
    /// The inclusive days of this period in `year` (for year-less periods),
    /// `None` when the date does not exist (30 February).
    fn days_in(&self, year: i32) -> Option<(NaiveDate, NaiveDate)> {
        match *self {
            Period::Day {
                year: y,
                month,
                day,
            } => {
                let d = NaiveDate::from_ymd_opt(y.unwrap_or(year), month, day)?;
                Some((d, d))
            }
            Period::Month { year: y, month } => {
                let y = y.unwrap_or(year);
                let first = NaiveDate::from_ymd_opt(y, month, 1)?;
                let next = if month == 12 {
                    NaiveDate::from_ymd_opt(y + 1, 1, 1)?
                } else {
                    NaiveDate::from_ymd_opt(y, month + 1, 1)?
                };
                Some((first, next - Duration::days(1)))
            }
            Period::Span(a, b) => Some((a, b)),
        }
    }

    /// How the period was understood, for the search response:
    /// `2023-06-03`, `2023-06`, `3 June of any year`, `June of any year`,
    /// `2026-03-02 to 2026-03-08`.
    pub(crate) fn describe(&self) -> String {
        match *self {
            Period::Day {
                year: Some(y),
                month,
                day,
            } => format!("{y:04}-{month:02}-{day:02}"),
            Period::Day {
                year: None,
                month,
                day,
            } => format!("{day} {} of any year", MONTHS[month as usize - 1]),
            Period::Month {
                year: Some(y),
                month,
            } => format!("{y:04}-{month:02}"),
            Period::Month { year: None, month } => {
                format!("{} of any year", MONTHS[month as usize - 1])
            }
            Period::Span(a, b) if a == b => a.to_string(),
            Period::Span(a, b) => format!("{a} to {b}"),
        }
    }

    fn has_year(&self) -> bool {
        match self {
            Period::Day { year, .. } | Period::Month { year, .. } => year.is_some(),
            Period::Span(..) => true,
        }
    }
}

/// How well a chunk spanning the days `first..=last` fits the periods:
/// 1 inside one, decaying with the distance outside (faster before a period
/// than after it), 0 when there are no periods or it is far from all.
pub(crate) fn affinity(periods: &[Period], first: NaiveDate, last: NaiveDate) -> f32 {
    let mut best = 0.0f32;
    for p in periods {
        // A year-less "in December" asked of a January chunk means the
        // December before it.
        let years: &[i32] = if p.has_year() {
            &[0]
        } else {
            &[first.year() - 1, first.year(), last.year()]
        };
        for &y in years {
            let Some((start, end)) = p.days_in(y) else {
                continue;
            };
            let a = if last < start {
                let gap = (start - last).num_days() as f32;
                0.5f32.powf(gap / BEFORE_HALF_LIFE_DAYS)
            } else if first > end {
                let gap = (first - end).num_days() as f32;
                0.5f32.powf(gap / AFTER_HALF_LIFE_DAYS)
            } else {
                1.0
            };
            best = best.max(a);
        }
    }
    if best < MIN_AFFINITY {
        0.0
    } else {
        best
    }
}

/// A `YYYY-MM-DD` in the file name of `path`.
pub(crate) fn date_in_path(path: &str) -> Option<NaiveDate> {
    let name = path.rsplit('/').next().unwrap_or(path);
    let b = name.as_bytes();
    (0..b.len().saturating_sub(9)).find_map(|i| {
        let s = name.get(i..i + 10)?;
        let ok = s.bytes().enumerate().all(|(j, c)| {
            if j == 4 || j == 7 {
                c == b'-'
            } else {
                c.is_ascii_digit()
            }
        });
        if ok {
            NaiveDate::parse_from_str(s, "%Y-%m-%d").ok()
        } else {
            None
        }
    })
}

/// The days, in the index's `range`, where a chunk's affinity to one of
/// the periods reaches a quarter: where chunks that match nothing else are
/// worth adding to the candidates.
pub(crate) fn windows(
    periods: &[Period],
    range: (NaiveDate, NaiveDate),
) -> Vec<(NaiveDate, NaiveDate)> {
    let before = Duration::days((2.0 * BEFORE_HALF_LIFE_DAYS) as i64);
    let after = Duration::days((2.0 * AFTER_HALF_LIFE_DAYS) as i64);
    let mut out = Vec::new();
    for p in periods {
        let years: Vec<i32> = if p.has_year() {
            vec![0]
        } else {
            // Capped: a century of daily logs is more than any workspace.
            (range.0.year() - 1..=range.1.year())
                .rev()
                .take(100)
                .collect()
        };
        for y in years {
            if let Some((start, end)) = p.days_in(y) {
                let (a, b) = (start - before, end + after);
                if a <= range.1 && b >= range.0 {
                    out.push((a, b));
                }
            }
        }
    }
    out
}

/// The periods named in a query, and the query without the dates it
/// wrote out: "3 June 2023" is matched through timestamps, and its words
/// would otherwise match any "3" or "June" in the text.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Dates {
    pub periods: Vec<Period>,
    /// The query with written-out dates replaced by spaces (relative
    /// phrases such as "yesterday" stay).
    pub rest: String,
}

/// The periods named in `query`; relative phrases are resolved against
/// `today`. Bare years ("in 2023") are left out: they rarely tell one memory
/// from another.
pub(crate) fn dates(query: &str, today: NaiveDate) -> Dates {
    let mut found: Vec<(Period, Range<usize>)> = Vec::new();
    english(query, &mut found);
    latin(query, &mut found);
    iso(query, &mut found);
    cjk(query, &mut found);
    let mut rest = String::with_capacity(query.len());
    for (i, ch) in query.char_indices() {
        rest.push(if found.iter().any(|(_, r)| r.contains(&i)) {
            ' '
        } else {
            ch
        });
    }
    let mut periods: Vec<Period> = found.into_iter().map(|(p, _)| p).collect();
    relative(query, today, &mut periods);
    periods.dedup();
    Dates { periods, rest }
}

#[cfg(test)]
fn periods(query: &str, today: NaiveDate) -> Vec<Period> {
    dates(query, today).periods
}

/// A word of the query: letters, or digits with an optional ordinal suffix.
#[derive(Debug)]
struct Word<'a> {
    text: &'a str,
    /// Byte offset in the query.
    start: usize,
    /// Punctuation right before it (for "June, 2023" and sentence starts).
    after_punct: bool,
}

fn words(query: &str) -> Vec<Word<'_>> {
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

const MONTHS: [&str; 12] = [
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
const TIME_PREPOSITIONS: &[&str] = &[
    "in", "on", "of", "since", "during", "until", "till", "before", "after", "by", "early", "late",
    "mid", "last", "this", "next", "from", "to", "around",
];

/// `(month, needs_context)`: capitalised full names and common
/// abbreviations. Names that are also ordinary words or given names (May,
/// March, August, Jan, …) count only next to a day, a year or a preposition.
fn month_of(w: &str) -> Option<(u32, bool)> {
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
fn day_of(w: &str) -> Option<u32> {
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

fn year_of(w: &str) -> Option<i32> {
    if w.len() != 4 || !w.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    w.parse().ok().filter(|y| (1900..=2200).contains(y))
}

/// "June 3, 2023", "3 June 2023", "3rd of June", "June 2023", "in June".
fn english(query: &str, out: &mut Vec<(Period, Range<usize>)>) {
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

/// Month names of French, German, Spanish, Italian and Portuguese, written
/// in lower case, with their language. Several are ordinary words or names
/// elsewhere ("Mars", "Julio", "Abril"), so they count only next to a day
/// or after a time word of their own language.
const LATIN_MONTHS: &[(&str, u32, Lang)] = &[
    ("janvier", 1, Lang::Fr),
    ("février", 2, Lang::Fr),
    ("fevrier", 2, Lang::Fr),
    ("mars", 3, Lang::Fr),
    ("avril", 4, Lang::Fr),
    ("mai", 5, Lang::Fr),
    ("juin", 6, Lang::Fr),
    ("juillet", 7, Lang::Fr),
    ("août", 8, Lang::Fr),
    ("aout", 8, Lang::Fr),
    ("septembre", 9, Lang::Fr),
    ("octobre", 10, Lang::Fr),
    ("novembre", 11, Lang::Fr),
    ("décembre", 12, Lang::Fr),
    ("decembre", 12, Lang::Fr),
    ("januar", 1, Lang::De),
    ("jänner", 1, Lang::De),
    ("februar", 2, Lang::De),
    ("märz", 3, Lang::De),
    ("maerz", 3, Lang::De),
    ("april", 4, Lang::De),
    ("mai", 5, Lang::De),
    ("juni", 6, Lang::De),
    ("juli", 7, Lang::De),
    ("august", 8, Lang::De),
    ("september", 9, Lang::De),
    ("oktober", 10, Lang::De),
    ("november", 11, Lang::De),
    ("dezember", 12, Lang::De),
    ("enero", 1, Lang::Es),
    ("febrero", 2, Lang::Es),
    ("marzo", 3, Lang::Es),
    ("abril", 4, Lang::Es),
    ("mayo", 5, Lang::Es),
    ("junio", 6, Lang::Es),
    ("julio", 7, Lang::Es),
    ("agosto", 8, Lang::Es),
    ("septiembre", 9, Lang::Es),
    ("setiembre", 9, Lang::Es),
    ("octubre", 10, Lang::Es),
    ("noviembre", 11, Lang::Es),
    ("diciembre", 12, Lang::Es),
    ("gennaio", 1, Lang::It),
    ("febbraio", 2, Lang::It),
    ("marzo", 3, Lang::It),
    ("aprile", 4, Lang::It),
    ("maggio", 5, Lang::It),
    ("giugno", 6, Lang::It),
    ("luglio", 7, Lang::It),
    ("agosto", 8, Lang::It),
    ("settembre", 9, Lang::It),
    ("ottobre", 10, Lang::It),
    ("novembre", 11, Lang::It),
    ("dicembre", 12, Lang::It),
    ("janeiro", 1, Lang::Pt),
    ("fevereiro", 2, Lang::Pt),
    ("março", 3, Lang::Pt),
    ("marco", 3, Lang::Pt),
    ("abril", 4, Lang::Pt),
    ("maio", 5, Lang::Pt),
    ("junho", 6, Lang::Pt),
    ("julho", 7, Lang::Pt),
    ("agosto", 8, Lang::Pt),
    ("setembro", 9, Lang::Pt),
    ("outubro", 10, Lang::Pt),
    ("novembro", 11, Lang::Pt),
    ("dezembro", 12, Lang::Pt),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Fr,
    De,
    Es,
    It,
    Pt,
}

/// Words that put a month name in time, per language ("en juin", "im Juni",
/// "desde marzo", "a giugno", "em maio").
fn time_word(lang: Lang, w: &str) -> bool {
    let words: &[&str] = match lang {
        Lang::Fr => &[
            "en", "depuis", "avant", "après", "début", "fin", "mi", "mois", "jusqu",
        ],
        Lang::De => &[
            "im", "am", "seit", "bis", "vor", "nach", "anfang", "ende", "mitte", "monat",
        ],
        Lang::Es => &[
            "en",
            "desde",
            "hasta",
            "antes",
            "después",
            "principios",
            "finales",
            "mediados",
            "mes",
        ],
        Lang::It => &[
            "a", "in", "da", "dal", "fino", "prima", "dopo", "inizio", "fine", "metà", "mese",
        ],
        Lang::Pt => &[
            "em", "desde", "até", "antes", "depois", "início", "fim", "meados", "mês",
        ],
    };
    words.contains(&w)
}

/// Words between a day or month and what follows ("3 de junio de 2023",
/// "1er juin", "3 di giugno").
fn is_connector(w: &str) -> bool {
    matches!(w, "de" | "del" | "di" | "do" | "da")
}

/// "3 juin 2023", "le 1er juin", "am 3. Juni 2023", "im März", "el 3 de
/// junio de 2023", "a giugno", "em 5 de maio": day-month-year order with
/// lower-case month names (German capitalises them).
fn latin(query: &str, out: &mut Vec<(Period, Range<usize>)>) {
    let ws = words(query);
    let lower: Vec<String> = ws.iter().map(|w| w.text.to_lowercase()).collect();
    let text = |i: usize| lower.get(i).map(String::as_str);
    let day_at = |i: usize| {
        text(i).and_then(|w| day_of(w).or_else(|| w.strip_suffix("er").and_then(day_of)))
    };
    for (i, w) in lower.iter().enumerate() {
        let langs: Vec<(u32, Lang)> = LATIN_MONTHS
            .iter()
            .filter(|(name, ..)| name == w)
            .map(|&(_, m, l)| (m, l))
            .collect();
        let Some(&(month, _)) = langs.first() else {
            continue;
        };
        // The day before the month: "3 juin", "3. Juni", "3 de junio".
        let (day, first) = match i.checked_sub(1).and_then(day_at) {
            Some(d) => (Some(d), i - 1),
            None if i > 1 && text(i - 1).is_some_and(is_connector) => match day_at(i - 2) {
                Some(d) => (Some(d), i - 2),
                None => (None, i),
            },
            None => (None, i),
        };
        // The year after it: "juin 2023", "junio de 2023".
        let (year, last) = match text(i + 1).and_then(year_of) {
            Some(y) => (Some(y), i + 1),
            None if text(i + 1).is_some_and(is_connector) => match text(i + 2).and_then(year_of) {
                Some(y) => (Some(y), i + 2),
                None => (None, i),
            },
            None => (None, i),
        };
        let introduced = first
            .checked_sub(1)
            .and_then(text)
            .is_some_and(|p| langs.iter().any(|&(_, l)| time_word(l, p)));
        // A year alone is not enough: "Mars 2020" is a rover.
        if day.is_none() && !introduced {
            continue;
        }
        // English month names were read by `english`.
        let span = ws[first].start..ws[last].start + ws[last].text.len();
        if out
            .iter()
            .any(|(_, r)| r.start < span.end && span.start < r.end)
        {
            continue;
        }
        out.push((
            match day {
                Some(day) => Period::Day { year, month, day },
                None => Period::Month { year, month },
            },
            span,
        ));
    }
}

/// `2023-06-03`, `2023/06/03`, `2023-06`.
fn iso(query: &str, out: &mut Vec<(Period, Range<usize>)>) {
    let b = query.as_bytes();
    let mut i = 0;
    while i + 7 <= b.len() {
        let boundary = i == 0 || !b[i - 1].is_ascii_alphanumeric();
        let digits = |from: usize, n: usize| -> Option<u32> {
            let s = query.get(from..from + n)?;
            s.bytes()
                .all(|c| c.is_ascii_digit())
                .then(|| s.parse().ok())
                .flatten()
        };
        let sep = b[i + 4];
        if boundary && (sep == b'-' || sep == b'/') {
            if let (Some(y), Some(m)) = (digits(i, 4), digits(i + 5, 2)) {
                let day = (b.get(i + 7) == Some(&sep))
                    .then(|| digits(i + 8, 2))
                    .flatten();
                let end = i + if day.is_some() { 10 } else { 7 };
                let clean_end = b.get(end).is_none_or(|c| !c.is_ascii_digit());
                if (1..=12).contains(&m) && clean_end {
                    let year = Some(y as i32);
                    let p = match day {
                        Some(day) => Period::Day {
                            year,
                            month: m,
                            day,
                        },
                        None => Period::Month { year, month: m },
                    };
                    out.push((p, i..end));
                    i = end;
                    continue;
                }
            }
        }
        i += 1;
    }
}

/// `2023年6月3日`, `6月3日`, `6月3号`, `6月`, in digits (ASCII or full
/// width) or Chinese numerals (`五月三日`, `二〇二三年十二月`).
fn cjk(query: &str, out: &mut Vec<(Period, Range<usize>)>) {
    let chars: Vec<char> = query.chars().collect();
    // Byte offset of each char, and of the end.
    let offsets: Vec<usize> = query
        .char_indices()
        .map(|(b, _)| b)
        .chain(std::iter::once(query.len()))
        .collect();
    // The number written right before `end`, and where it starts.
    let number_before = |end: usize| -> (Option<u32>, usize) {
        let mut s = end;
        while s > 0 && is_number_char(chars[s - 1]) && end - s < 4 {
            s -= 1;
        }
        (cjk_number(&chars[s..end]), s)
    };
    // Korean writes a space between the parts: "2023년 5월 2일".
    let year_mark = |start: usize| -> Option<usize> {
        match start.checked_sub(1).map(|k| chars[k]) {
            Some('年' | '년') => Some(start - 1),
            Some(' ') if start >= 2 && chars[start - 2] == '년' => Some(start - 2),
            _ => None,
        }
    };
    for (i, &c) in chars.iter().enumerate() {
        if c != '月' && c != '월' {
            continue;
        }
        let (Some(month), start) = number_before(i) else {
            continue;
        };
        if !(1..=12).contains(&month) {
            continue;
        }
        let (year, first) = match year_mark(start).map(number_before) {
            Some((Some(y), s)) => match i32::try_from(y).ok().filter(|y| (1900..=2200).contains(y))
            {
                Some(y) => (Some(y), s),
                None => (None, start),
            },
            _ => (None, start),
        };
        let from = if c == '월' && chars.get(i + 1) == Some(&' ') {
            i + 2
        } else {
            i + 1
        };
        let mut j = from;
        while j < chars.len() && is_number_char(chars[j]) && j - from < 3 {
            j += 1;
        }
        let day = (j > from && matches!(chars.get(j), Some('日' | '号' | '일')))
            .then(|| cjk_number(&chars[from..j]))
            .flatten()
            .filter(|d| (1..=31).contains(d));
        let end = if day.is_some() { j + 1 } else { i + 1 };
        let p = match day {
            Some(day) => Period::Day { year, month, day },
            None => Period::Month { year, month },
        };
        out.push((p, offsets[first]..offsets[end]));
    }
}

/// A digit 0-9 written in ASCII, full width or as a Chinese numeral.
fn digit_value(c: char) -> Option<u32> {
    match c {
        '0'..='9' => c.to_digit(10),
        '０'..='９' => Some(c as u32 - '０' as u32),
        '〇' | '零' => Some(0),
        '一' => Some(1),
        '二' | '两' => Some(2),
        '三' => Some(3),
        '四' => Some(4),
        '五' => Some(5),
        '六' => Some(6),
        '七' => Some(7),
        '八' => Some(8),
        '九' => Some(9),
        _ => None,
    }
}

fn is_number_char(c: char) -> bool {
    c == '十' || digit_value(c).is_some()
}

/// A number in digits ("12", "２０２３", "二〇二三") or in Chinese numerals
/// up to 99 ("十", "十二", "二十", "三十一").
fn cjk_number(s: &[char]) -> Option<u32> {
    if s.is_empty() {
        return None;
    }
    match s.iter().position(|c| *c == '十') {
        None => s
            .iter()
            .try_fold(0u32, |n, c| Some(n * 10 + digit_value(*c)?)),
        Some(p) => {
            let (before, after) = (&s[..p], &s[p + 1..]);
            if before.len() > 1 || after.len() > 1 {
                return None;
            }
            let tens = before.first().map_or(Some(1), |c| digit_value(*c))?;
            let ones = after.first().map_or(Some(0), |c| digit_value(*c))?;
            Some(tens * 10 + ones)
        }
    }
}

const WEEKDAYS: [&str; 7] = [
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
];

/// today, yesterday, this/last week, last month, weekday names ("on
/// Monday": the latest Monday up to today; "last Monday": before today);
/// 今天, 昨天, 前天, 上周, 上个月, 周一/星期一 (the latest up to today),
/// 上周一 (last week's).
/// True when `w` occurs in `lower` as whole words (not inside a longer word).
fn has_words(lower: &str, w: &str) -> bool {
    lower.match_indices(w).any(|(i, _)| {
        let before = lower.get(..i).and_then(|s| s.chars().next_back());
        let after = lower.get(i + w.len()..).and_then(|s| s.chars().next());
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Weekday names in French, German, Spanish, Italian, Portuguese, Japanese
/// and Korean, Monday first. Spanish and Portuguese "domingo" is also a
/// name, and Portuguese "segunda" … "sexta" are ordinals, so those count
/// only in the forms [`other_weekdays`] accepts.
const OTHER_WEEKDAYS: [&[&str]; 7] = [
    &[
        "lundi",
        "montag",
        "lunes",
        "lunedì",
        "lunedi",
        "segunda-feira",
        "月曜",
        "월요일",
    ],
    &[
        "mardi",
        "dienstag",
        "martes",
        "martedì",
        "martedi",
        "terça-feira",
        "terca-feira",
        "火曜",
        "화요일",
    ],
    &[
        "mercredi",
        "mittwoch",
        "miércoles",
        "miercoles",
        "mercoledì",
        "mercoledi",
        "quarta-feira",
        "水曜",
        "수요일",
    ],
    &[
        "jeudi",
        "donnerstag",
        "jueves",
        "giovedì",
        "giovedi",
        "quinta-feira",
        "木曜",
        "목요일",
    ],
    &[
        "vendredi",
        "freitag",
        "viernes",
        "venerdì",
        "venerdi",
        "sexta-feira",
        "金曜",
        "금요일",
    ],
    &[
        "samedi",
        "samstag",
        "sonnabend",
        "sábado",
        "sabado",
        "sabato",
        "土曜",
        "토요일",
    ],
    &[
        "dimanche",
        "sonntag",
        "domenica",
        "domingo",
        "日曜",
        "일요일",
    ],
];

/// The latest weekday `wd` (0 = Monday) up to today, or strictly before
/// today when `before_today` ("last Monday" said on a Monday).
fn latest_weekday(today: NaiveDate, wd: usize, before_today: bool) -> NaiveDate {
    let back = i64::from((today.weekday().num_days_from_monday() + 7 - wd as u32) % 7);
    today - Duration::days(if back == 0 && before_today { 7 } else { back })
}

/// Weekdays of [`OTHER_WEEKDAYS`]: alone, the latest such day up to today
/// (as "on Monday"); with the language's "last" ("lundi dernier", "letzten
/// Montag", "el lunes pasado", "lunedì scorso", "segunda-feira passada"),
/// the latest before today; after "last week" ("先週の月曜日", "지난주
/// 월요일"), that day of last week.
fn other_weekdays(lower: &str, today: NaiveDate, week_start: NaiveDate, out: &mut Vec<Period>) {
    for (wd, names) in OTHER_WEEKDAYS.iter().enumerate() {
        for name in names.iter() {
            let cjk = name.chars().any(|c| c >= '\u{2e80}');
            let found = if cjk {
                lower.contains(name)
            } else if *name == "domingo" {
                [
                    "el domingo",
                    "este domingo",
                    "o domingo",
                    "no domingo",
                    "neste domingo",
                ]
                .iter()
                .any(|p| has_words(lower, p))
                    || ["pasado", "passado"]
                        .iter()
                        .any(|l| has_words(lower, &format!("domingo {l}")))
            } else {
                has_words(lower, name)
            };
            if !found {
                continue;
            }
            let last_week = cjk
                && ["先週の", "先週", "지난주 ", "지난 주 ", "지난주"]
                    .iter()
                    .any(|p| lower.contains(&format!("{p}{name}")));
            let last = !cjk
                && ([
                    "dernier", "pasado", "passado", "passada", "scorso", "scorsa",
                ]
                .iter()
                .any(|l| has_words(lower, &format!("{name} {l}")))
                    || ["letzten", "vergangenen"]
                        .iter()
                        .any(|l| has_words(lower, &format!("{l} {name}"))));
            let d = if last_week {
                week_start - Duration::days(7) + Duration::days(wd as i64)
            } else {
                latest_weekday(today, wd, last)
            };
            let p = Period::Span(d, d);
            if !out.contains(&p) {
                out.push(p);
            }
            break;
        }
    }
}

/// Relative periods a query can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rel {
    Today,
    Yesterday,
    BeforeYesterday,
    LastWeek,
    LastMonth,
}

/// The same words in French, German, Spanish, Italian and Portuguese.
/// French "hier" is not listed: it is German for "here" (see
/// [`latin_relative`]).
const LATIN_RELATIVE: &[(&str, Rel)] = &[
    ("aujourd'hui", Rel::Today),
    ("avant-hier", Rel::BeforeYesterday),
    ("la semaine dernière", Rel::LastWeek),
    ("la semaine passée", Rel::LastWeek),
    ("le mois dernier", Rel::LastMonth),
    ("heute", Rel::Today),
    ("gestern", Rel::Yesterday),
    ("vorgestern", Rel::BeforeYesterday),
    ("letzte woche", Rel::LastWeek),
    ("letzten woche", Rel::LastWeek),
    ("vergangene woche", Rel::LastWeek),
    ("vergangenen woche", Rel::LastWeek),
    ("letzten monat", Rel::LastMonth),
    ("vergangenen monat", Rel::LastMonth),
    ("hoy", Rel::Today),
    ("ayer", Rel::Yesterday),
    ("anteayer", Rel::BeforeYesterday),
    ("la semana pasada", Rel::LastWeek),
    ("el mes pasado", Rel::LastMonth),
    ("oggi", Rel::Today),
    ("ieri", Rel::Yesterday),
    ("l'altro ieri", Rel::BeforeYesterday),
    ("altroieri", Rel::BeforeYesterday),
    ("la settimana scorsa", Rel::LastWeek),
    ("il mese scorso", Rel::LastMonth),
    ("hoje", Rel::Today),
    ("ontem", Rel::Yesterday),
    ("anteontem", Rel::BeforeYesterday),
    ("semana passada", Rel::LastWeek),
    ("mês passado", Rel::LastMonth),
];

/// Function words that tell French from German, for "hier".
const FRENCH_WORDS: &[&str] = &[
    "je", "j", "nous", "vous", "avons", "avez", "ai", "est", "le", "la", "les", "des", "du", "que",
    "qu", "quoi", "on", "de", "dit", "fait",
];
const GERMAN_WORDS: &[&str] = &[
    "ich", "wir", "ihr", "haben", "hat", "habe", "ist", "der", "die", "das", "und", "was", "wo",
    "wie", "ein", "eine", "nicht",
];

/// The relative periods `lower` names in the languages of
/// [`LATIN_RELATIVE`], and French "hier" when the query reads as French.
fn latin_relative(lower: &str) -> Vec<Rel> {
    let mut out: Vec<Rel> = Vec::new();
    for (w, r) in LATIN_RELATIVE {
        // "ieri" inside "l'altro ieri" is not yesterday.
        if has_words(lower, w) && !(*w == "ieri" && has_words(lower, "l'altro ieri")) {
            out.push(*r);
        }
    }
    if has_words(lower, "hier") && !has_words(lower, "avant-hier") {
        let words: Vec<&str> = lower.split(|c: char| !c.is_alphanumeric()).collect();
        let count = |list: &[&str]| words.iter().filter(|w| list.contains(w)).count();
        if count(FRENCH_WORDS) > count(GERMAN_WORDS) {
            out.push(Rel::Yesterday);
        }
    }
    out
}

/// A count in "N days ago" phrases of the languages of [`LATIN_RELATIVE`]:
/// digits, or one to three written out.
fn latin_count(w: &str) -> Option<i64> {
    match w {
        "un" | "une" | "einem" | "einer" | "una" | "uno" | "um" | "uma" => Some(1),
        "deux" | "zwei" | "dos" | "due" | "dois" | "duas" => Some(2),
        "trois" | "drei" | "tres" | "tre" | "três" => Some(3),
        _ => w.parse().ok().filter(|n| (1..=366).contains(n)),
    }
}

/// Days per unit of those phrases: days or weeks.
fn latin_unit(w: &str) -> Option<i64> {
    match w {
        "jour" | "jours" | "tag" | "tagen" | "día" | "días" | "dia" | "dias" | "giorno"
        | "giorni" => Some(1),
        "semaine" | "semaines" | "woche" | "wochen" | "semana" | "semanas" | "settimana"
        | "settimane" => Some(7),
        _ => None,
    }
}

fn relative(query: &str, today: NaiveDate, out: &mut Vec<Period>) {
    let lower = query.to_lowercase().replace('’', "'");
    let has_word = |w: &str| has_words(&lower, w);
    let latin = latin_relative(&lower);
    let named = |r: Rel| latin.contains(&r);
    let day = |d: NaiveDate| Period::Span(d, d);
    let week_start = today - Duration::days(i64::from(today.weekday().num_days_from_monday()));
    let any = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    // Chinese, Japanese and Korean forms beside the English words.
    if has_word("today") || any(&["今天", "今日", "오늘"]) || named(Rel::Today) {
        out.push(day(today));
    }
    let before_yesterday =
        any(&["前天", "一昨日", "그저께", "그제"]) || named(Rel::BeforeYesterday);
    if has_word("yesterday")
        || lower.contains("昨天")
        || lower.contains("어제")
        || (lower.contains("昨日") && !lower.contains("一昨日"))
        || named(Rel::Yesterday)
    {
        out.push(day(today - Duration::days(1)));
    }
    if before_yesterday {
        out.push(day(today - Duration::days(2)));
    }
    if has_word("this week") || any(&["这周", "本周", "今週", "이번 주", "이번주"]) {
        out.push(Period::Span(week_start, today));
    }
    if has_word("last week")
        || any(&["上周", "上个星期", "先週", "지난주", "지난 주"])
        || named(Rel::LastWeek)
    {
        out.push(Period::Span(
            week_start - Duration::days(7),
            week_start - Duration::days(1),
        ));
    }
    for (wd, name) in WEEKDAYS.iter().enumerate() {
        if has_word(&format!("last {name}")) {
            out.push(day(latest_weekday(today, wd, true)));
        } else if has_word(name) {
            out.push(day(latest_weekday(today, wd, false)));
        }
    }
    other_weekdays(&lower, today, week_start, out);
    let chars: Vec<char> = query.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        let wd = match c {
            '一' => 0,
            '二' => 1,
            '三' => 2,
            '四' => 3,
            '五' => 4,
            '六' => 5,
            '日' | '天' => 6,
            _ => continue,
        };
        // "一周一次" (once a week), "每周一" (every Monday): not a day.
        let counted =
            i >= 2 && (is_number_char(chars[i - 2]) || matches!(chars[i - 2], '几' | '每'));
        let prefix_len = if i >= 1 && chars[i - 1] == '周' && !counted {
            1
        } else if i >= 2 && matches!((chars[i - 2], chars[i - 1]), ('星', '期') | ('礼', '拜'))
        {
            2
        } else {
            continue;
        };
        let last_week = i > prefix_len && chars[i - prefix_len - 1] == '上';
        let d = if last_week {
            week_start - Duration::days(7) + Duration::days(wd as i64)
        } else {
            latest_weekday(today, wd, false)
        };
        out.push(day(d));
    }
    // "3 days ago", "2 weeks ago"; "a few days ago" as the week before yesterday.
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    for w in words.windows(3).filter(|w| w[2] == "ago") {
        let n: Option<i64> = match w[0] {
            "a" | "one" => Some(1),
            "two" => Some(2),
            "three" => Some(3),
            "few" | "several" | "couple" => None,
            other => other.parse().ok().filter(|n| (1..=366).contains(n)),
        };
        let unit = match w[1].trim_end_matches('s') {
            "day" => 1,
            "week" => 7,
            _ => continue,
        };
        match n {
            Some(n) => out.push(day(today - Duration::days(n * unit))),
            None => out.push(Period::Span(
                today - Duration::days(7 * unit),
                today - Duration::days(2 * unit),
            )),
        }
    }
    // The same in French, German, Spanish, Italian and Portuguese: "il y a
    // 3 jours", "vor 3 Tagen", "hace 3 días", "3 giorni fa", "há 3 dias".
    for (i, w) in words.iter().enumerate() {
        let at = |k: usize| words.get(k).copied();
        let (n, unit) = match *w {
            "a" if i >= 2 && at(i - 2) == Some("il") && at(i - 1) == Some("y") => {
                (at(i + 1), at(i + 2))
            }
            "vor" | "hace" | "há" => (at(i + 1), at(i + 2)),
            "fa" if i >= 2 => (at(i - 2), at(i - 1)),
            _ => continue,
        };
        let (Some(n), Some(unit)) = (n.and_then(latin_count), unit.and_then(latin_unit)) else {
            continue;
        };
        out.push(day(today - Duration::days(n * unit)));
    }
    if lower.contains("几天前") || lower.contains("前几天") {
        out.push(Period::Span(
            today - Duration::days(7),
            today - Duration::days(2),
        ));
    }
    if has_word("last month")
        || any(&["上个月", "先月", "지난달", "지난 달"])
        || named(Rel::LastMonth)
    {
        let (y, m) = if today.month() == 1 {
            (today.year() - 1, 12)
        } else {
            (today.year(), today.month() - 1)
        };
        out.push(Period::Month {
            year: Some(y),
            month: m,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(y: i32, m: u32, day: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, day).unwrap()
    }

    fn p(q: &str) -> Vec<Period> {
        periods(q, d(2026, 3, 11))
    }

    fn day(year: Option<i32>, month: u32, day: u32) -> Period {
        Period::Day { year, month, day }
    }

    #[test]
    fn english_dates() {
        assert_eq!(
            p("What did Gina find on 1 February, 2023?"),
            vec![day(Some(2023), 2, 1)]
        );
        assert_eq!(
            p("accepted for on May 23, 2023?"),
            vec![day(Some(2023), 5, 23)]
        );
        assert_eq!(
            p("I mentioned on May 2nd that I went"),
            vec![day(None, 5, 2)]
        );
        assert_eq!(
            p("On April 27th, how long did I run?"),
            vec![day(None, 4, 27)]
        );
        assert_eq!(p("the 3rd of June"), vec![day(None, 6, 3)]);
        assert_eq!(
            p("camping in June?"),
            vec![Period::Month {
                year: None,
                month: 6
            }]
        );
        assert_eq!(
            p("What setback in October 2023?"),
            vec![Period::Month {
                year: Some(2023),
                month: 10
            }]
        );
    }

    #[test]
    fn dates_in_french_german_spanish_italian_and_portuguese() {
        let month = |year, month| Period::Month { year, month };
        assert_eq!(
            p("Qu'avons-nous décidé le 3 juin 2023 ?"),
            vec![day(Some(2023), 6, 3)]
        );
        assert_eq!(p("le 1er février"), vec![day(None, 2, 1)]);
        assert_eq!(p("en août"), vec![month(None, 8)]);
        assert_eq!(p("Was war am 3. Juni 2023?"), vec![day(Some(2023), 6, 3)]);
        assert_eq!(p("Was haben wir im März besprochen?"), vec![month(None, 3)]);
        assert_eq!(
            p("¿Qué pasó el 3 de junio de 2023?"),
            vec![day(Some(2023), 6, 3)]
        );
        assert_eq!(p("desde marzo de 2024"), vec![month(Some(2024), 3)]);
        assert_eq!(p("Cosa abbiamo detto a giugno?"), vec![month(None, 6)]);
        assert_eq!(p("il 5 maggio"), vec![day(None, 5, 5)]);
        assert_eq!(p("O que conversamos em 5 de maio?"), vec![day(None, 5, 5)]);
        // English stays English, and English words stay words.
        assert_eq!(p("on 3 June 2023"), vec![day(Some(2023), 6, 3)]);
        assert!(p("life on Mars").is_empty());
        assert!(p("the Mars 2020 rover").is_empty());
        assert!(p("Julio and Abril came over").is_empty());
        assert!(p("in August").len() == 1, "read once, by the English rules");
        let d = dates("Qu'avons-nous décidé le 3 juin ?", d(2026, 3, 11));
        assert!(!d.rest.contains("juin"), "{}", d.rest);
    }

    #[test]
    fn relative_words_in_european_languages() {
        assert_eq!(p("Qu'avons-nous décidé hier ?"), p("yesterday"));
        assert!(
            p("Was haben wir hier besprochen?").is_empty(),
            "German 'here'"
        );
        assert_eq!(p("Was haben wir gestern besprochen?"), p("yesterday"));
        assert_eq!(p("¿Qué dijimos ayer?"), p("yesterday"));
        assert_eq!(p("Cosa abbiamo detto l'altro ieri?"), p("前天"));
        assert_eq!(p("anteontem"), p("前天"));
        assert_eq!(p("avant-hier"), p("前天"));
        assert_eq!(p("la semaine dernière"), p("last week"));
        assert_eq!(p("letzte Woche"), p("last week"));
        assert_eq!(p("el mes pasado"), p("last month"));
        assert_eq!(p("aujourd’hui"), p("today"));
        assert!(p("Ayers Rock and the hoya plant").is_empty());
        for q in [
            "Qu'ai-je dit il y a 3 jours ?",
            "Was habe ich vor 3 Tagen gesagt?",
            "¿Qué dije hace 3 días?",
            "Cosa ho detto 3 giorni fa?",
            "O que eu disse há 3 dias?",
        ] {
            assert_eq!(p(q), p("3 days ago"), "{q}");
        }
        assert_eq!(p("vor zwei Wochen"), p("two weeks ago"));
        assert!(p("vor dem Haus, 3 Tage").is_empty());
    }

    #[test]
    fn japanese_and_korean_dates() {
        let month = |year, month| Period::Month { year, month };
        assert_eq!(p("2023年5月2日に何を話した？"), vec![day(Some(2023), 5, 2)]);
        assert_eq!(
            p("2023년 5월 2일에 무슨 얘기를 했지?"),
            vec![day(Some(2023), 5, 2)]
        );
        assert_eq!(p("5월 2일"), vec![day(None, 5, 2)]);
        assert_eq!(p("5월에"), vec![month(None, 5)]);
        assert_eq!(p("昨日の話"), p("yesterday"));
        assert_eq!(p("어제 뭐 했어?"), p("yesterday"));
        assert_eq!(p("一昨日の話"), p("前天"));
        assert_eq!(p("오늘"), p("today"));
        assert_eq!(p("先週"), p("last week"));
        assert_eq!(p("지난주"), p("last week"));
        assert_eq!(p("先月"), p("last month"));
        assert_eq!(p("지난달"), p("last month"));
    }

    #[test]
    fn words_that_only_look_like_months() {
        assert!(p("May I ask what we decided?").is_empty());
        assert!(p("the march was long, an august crowd").is_empty());
        assert!(p("Jan said hello").is_empty());
        assert!(
            p("How many times in 2023?").is_empty(),
            "bare years are left out"
        );
        assert_eq!(p("Jan 5 2024"), vec![day(Some(2024), 1, 5)]);
        assert_eq!(
            p("since March"),
            vec![Period::Month {
                year: None,
                month: 3
            }]
        );
    }

    #[test]
    fn iso_and_cjk_dates() {
        assert_eq!(
            p("notes from 2026-01-31 please"),
            vec![day(Some(2026), 1, 31)]
        );
        assert_eq!(
            p("2026/02"),
            vec![Period::Month {
                year: Some(2026),
                month: 2
            }]
        );
        assert!(p("build 20260131 failed, code 2026-13-01").is_empty());
        assert_eq!(p("我曾经在5月2日提到过"), vec![day(None, 5, 2)]);
        assert_eq!(p("在4月27号这天"), vec![day(None, 4, 27)]);
        assert_eq!(p("2023年6月3日"), vec![day(Some(2023), 6, 3)]);
        assert_eq!(p("五月三日那天我们聊了什么"), vec![day(None, 5, 3)]);
        assert_eq!(p("二〇二三年十二月三十一日"), vec![day(Some(2023), 12, 31)]);
        assert_eq!(p("１２月３日"), vec![day(None, 12, 3)]);
        assert!(p("这个月和两个月以前").is_empty());
        assert_eq!(cjk_number(&['二', '十', '三']), Some(23));
        assert_eq!(cjk_number(&['十']), Some(10));
        assert_eq!(cjk_number(&['十', '十']), None);
        assert_eq!(
            p("我在12月做了什么"),
            vec![Period::Month {
                year: None,
                month: 12
            }]
        );
    }

    #[test]
    fn written_out_dates_leave_the_rest_of_the_query() {
        let rest = |q: &str| {
            dates(q, d(2026, 3, 11))
                .rest
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(
            rest("What did Gina find on 1 February, 2023?"),
            "What did Gina find on ?"
        );
        assert_eq!(rest("the 3rd of June trip"), "the trip");
        assert_eq!(rest("hike in June 2023 with Ana"), "hike in with Ana");
        assert_eq!(rest("notes from 2026-01-31 please"), "notes from please");
        assert_eq!(rest("我曾经在2023年5月2日提到过"), "我曾经在 提到过");
        assert_eq!(rest("what happened yesterday"), "what happened yesterday");
        assert_eq!(rest("May I ask"), "May I ask");
    }

    #[test]
    fn odd_input_never_panics() {
        let range = (d(2020, 1, 1), d(2026, 12, 31));
        for q in [
            "",
            "2023-",
            "2023-06-",
            "月",
            "12月",
            "年5月",
            "99999年1月",
            "May",
            "June 31, 2023",
            "30 February 2023",
            "ß2023-06-0ü",
            "🙂 on 3 June 🙂",
            "of June",
            "3rd of",
            "2023/13/40",
            "１２月３日",
            "Sept. 9",
            "last",
            "ИЮНЬ June",
            "de juin",
            "31 de febrero de",
            "le 0er mars",
            "im",
            "년 5월",
            "5월 ",
            "월 2일",
            "il y a",
            "vor",
            "fa",
            "3 giorni fa fa",
            "avant-hier hier",
            "l'altro ieri",
        ] {
            let found = dates(q, d(2026, 3, 11));
            assert_eq!(found.rest.chars().count(), q.chars().count(), "{q}");
            let _ = windows(&found.periods, range);
            let _ = affinity(&found.periods, d(2023, 6, 3), d(2023, 6, 3));
        }
        assert_eq!(windows(&[day(None, 2, 30)], range), vec![]);
        // Pseudo-random mixes of the pieces the parsers look for.
        let pieces = [
            "3", "31", "2023", " ", "-", ".", "de", "juin", "Juni", "mars", "May", "of", "月",
            "日", "年", "월", "일", "년", "十", "il y a", "vor", "hace", "fa", "jours", "hier",
            "ieri", "é", "🙂", "ago", "days", "上周", "昨日",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..5_000 {
            let mut q = String::new();
            for _ in 0..(seed % 9) {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                q.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            }
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let found = dates(&q, d(2026, 3, 11));
            assert_eq!(found.rest.chars().count(), q.chars().count(), "{q}");
            let _ = windows(&found.periods, range);
        }
    }

    #[test]
    fn periods_describe_themselves() {
        let all: Vec<String> = [
            day(Some(2023), 6, 3),
            day(None, 6, 3),
            Period::Month {
                year: Some(2023),
                month: 6,
            },
            Period::Month {
                year: None,
                month: 12,
            },
            Period::Span(d(2026, 3, 2), d(2026, 3, 8)),
        ]
        .iter()
        .map(Period::describe)
        .collect();
        assert_eq!(
            all,
            [
                "2023-06-03",
                "3 June of any year",
                "2023-06",
                "December of any year",
                "2026-03-02 to 2026-03-08"
            ]
        );
    }

    /// The one day `q` names (the test's today is 2026-03-11).
    fn one(q: &str) -> NaiveDate {
        match p(q).as_slice() {
            [Period::Span(a, b)] if a == b => *a,
            other => panic!("{q}: {other:?}"),
        }
    }

    #[test]
    fn weekdays() {
        // 2026-03-11 is a Wednesday.
        assert_eq!(one("what did we do on Monday?"), d(2026, 3, 9));
        assert_eq!(one("notes from wednesday"), d(2026, 3, 11));
        assert_eq!(one("since last Wednesday"), d(2026, 3, 4));
        assert_eq!(one("on Friday"), d(2026, 3, 6));
        assert_eq!(one("周一的会议"), d(2026, 3, 9));
        assert_eq!(one("星期天"), d(2026, 3, 8));
        assert!(p("上周一").contains(&Period::Span(d(2026, 3, 2), d(2026, 3, 2))));
        assert!(p("一周一次").is_empty());
        assert!(p("每周一开会").is_empty());
    }

    #[test]
    fn weekdays_in_other_languages() {
        // 2026-03-11 is a Wednesday.
        assert_eq!(one("qu'avons-nous fait lundi ?"), d(2026, 3, 9));
        assert_eq!(one("was war am Montag?"), d(2026, 3, 9));
        assert_eq!(one("¿qué pasó el lunes?"), d(2026, 3, 9));
        assert_eq!(one("cosa è successo lunedì?"), d(2026, 3, 9));
        assert_eq!(one("o que houve na segunda-feira?"), d(2026, 3, 9));
        assert_eq!(one("mercredi dernier"), d(2026, 3, 4));
        assert_eq!(one("am letzten Mittwoch"), d(2026, 3, 4));
        assert_eq!(one("el miércoles pasado"), d(2026, 3, 4));
        assert_eq!(one("mercoledì scorso"), d(2026, 3, 4));
        assert_eq!(one("no domingo"), d(2026, 3, 8));
        assert_eq!(one("月曜日の会議"), d(2026, 3, 9));
        assert_eq!(one("금요일에 뭐 했어?"), d(2026, 3, 6));
        assert!(p("先週の金曜日").contains(&Period::Span(d(2026, 3, 6), d(2026, 3, 6))));
        assert!(p("지난주 수요일").contains(&Period::Span(d(2026, 3, 4), d(2026, 3, 4))));
        // A name and an ordinal are not days.
        assert!(
            p("Plácido Domingo sang").is_empty(),
            "{:?}",
            p("Plácido Domingo sang")
        );
        assert!(p("a segunda vez").is_empty());
    }

    #[test]
    fn days_ago() {
        // 2026-03-11 is a Wednesday.
        assert_eq!(
            p("3 days ago"),
            vec![Period::Span(d(2026, 3, 8), d(2026, 3, 8))]
        );
        assert_eq!(
            p("two weeks ago"),
            vec![Period::Span(d(2026, 2, 25), d(2026, 2, 25))]
        );
        assert_eq!(
            p("A few days ago, I mentioned Green Wheat Park"),
            vec![Period::Span(d(2026, 3, 4), d(2026, 3, 9))]
        );
        assert_eq!(
            p("前几天我说过"),
            vec![Period::Span(d(2026, 3, 4), d(2026, 3, 9))]
        );
        assert!(p("ages ago").is_empty());
        assert!(p("3 years ago").is_empty());
    }

    #[test]
    fn relative_dates() {
        // 2026-03-11 is a Wednesday.
        assert_eq!(
            p("what did we do yesterday"),
            vec![Period::Span(d(2026, 3, 10), d(2026, 3, 10))]
        );
        assert_eq!(
            p("上周的会议"),
            vec![Period::Span(d(2026, 3, 2), d(2026, 3, 8))]
        );
        assert!(p("yesterdays").is_empty());
    }

    #[test]
    fn affinity_decays_faster_before_than_after() {
        let june = [Period::Month {
            year: Some(2023),
            month: 6,
        }];
        assert_eq!(affinity(&june, d(2023, 6, 27), d(2023, 6, 27)), 1.0);
        let after = affinity(&june, d(2023, 7, 7), d(2023, 7, 7));
        assert!((after - 0.5).abs() < 1e-3, "{after}");
        let before = affinity(&june, d(2023, 5, 30), d(2023, 5, 30));
        assert!((before - 0.5).abs() < 1e-3, "{before}");
        assert_eq!(affinity(&june, d(2023, 9, 1), d(2023, 9, 1)), 0.0);
        assert_eq!(affinity(&[], d(2023, 6, 1), d(2023, 6, 1)), 0.0);
        // A chunk spanning the period counts as inside it.
        assert_eq!(affinity(&june, d(2023, 5, 1), d(2023, 8, 1)), 1.0);
    }

    #[test]
    fn windows_cover_each_year_of_the_index_for_year_less_periods() {
        let range = (d(2022, 3, 1), d(2023, 7, 1));
        let w = windows(&[day(None, 6, 3)], range);
        assert_eq!(
            w,
            vec![
                (d(2023, 5, 30), d(2023, 6, 17)),
                (d(2022, 5, 30), d(2022, 6, 17))
            ]
        );
        assert!(windows(&[day(Some(2019), 6, 3)], range).is_empty());
    }

    #[test]
    fn year_less_periods_match_the_nearest_year() {
        let dec = [Period::Month {
            year: None,
            month: 12,
        }];
        assert!(affinity(&dec, d(2024, 1, 3), d(2024, 1, 3)) > 0.5);
        assert_eq!(affinity(&dec, d(2021, 12, 24), d(2021, 12, 24)), 1.0);
        let feb30 = [day(None, 2, 30)];
        assert_eq!(affinity(&feb30, d(2024, 2, 29), d(2024, 2, 29)), 0.0);
    }
}
