//! Dates by code: the relative time expressions of a fact or a message
//! ("last week", "next Friday", "3 days ago", 上周, 三天前) found and
//! resolved against the day the message was written, so that a stored fact
//! carries absolute dates. A small model cannot be trusted to know what
//! "last week" meant on the day it was said; this module decides it.
//!
//! The rules, so a reader can check any answer by hand:
//! - weeks are ISO weeks (Monday first): "last/this/next week" and
//!   上周/本周/下周 are Monday..Sunday of the previous, current or next week,
//!   written "the week of" its Monday; "N weeks ago" is the week of the day
//!   7N days back; a weekend is the Saturday and Sunday of such a week;
//! - "last Friday" is the latest Friday before today, "next Friday" the
//!   first after it, "this Friday" the Friday of this week, "on Friday" and
//!   a bare 周五 the latest Friday up to today; 上周五 and 下周五 are the
//!   Friday of the previous and next week;
//! - months and years are whole: "last month" is the previous calendar
//!   month, "3 years ago" the calendar year.
//!
//! Vague words ("recently", "lately", "a few days ago", 最近) and absolute
//! dates are left as they are. English words match whole and ignoring case;
//! Chinese phrases, which have no word boundaries, are refused where their
//! neighbours make them part of another word (以后天天 holds no 后天).

use std::ops::Range;

use chrono::{Datelike, Days, Months, NaiveDate, Weekday};

/// How an English day is written: "4 December 2026", the way people (and
/// the questions asked of memory) write dates, unambiguous in any locale.
const EN_DAY: &str = "%-d %B %Y";

/// A time expression found in a text and what it means.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Where the expression is in the text (bytes, on char boundaries).
    pub span: Range<usize>,
    /// The expression as written (`&text[span]`).
    pub phrase: String,
    /// The first day it names.
    pub start: NaiveDate,
    /// The last day it names, inclusive (`start` for one day).
    pub end: NaiveDate,
    /// What [`absolutize`] writes in its place, fitted to the words before
    /// it ("on 4 December 2026", but "since 4 December 2026").
    pub absolute: String,
}

/// Every relative time expression of `text`, resolved against `today`
/// (the day of the message the text comes from), in order, not
/// overlapping.
pub fn find(text: &str, today: NaiveDate) -> Vec<Resolved> {
    let mut found = English::new(text).find(today);
    found.extend(find_chinese(text, today));
    found.sort_by_key(|r| r.span.start);
    let mut out: Vec<Resolved> = Vec::with_capacity(found.len());
    for r in found {
        if out.last().is_none_or(|p| p.span.end <= r.span.start) {
            out.push(r);
        }
    }
    out
}

/// `text` with each relative time expression replaced by its absolute
/// form: "I moved to Berlin last week" becomes "I moved to Berlin in the
/// week of 23 November 2026", 昨天 becomes 2026年12月4日. A text without one is
/// returned unchanged.
pub fn absolutize(text: &str, today: NaiveDate) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut at = 0;
    for r in find(text, today) {
        out.push_str(&text[at..r.span.start]);
        out.push_str(&r.absolute);
        at = r.span.end;
    }
    out.push_str(&text[at..]);
    out
}

/// The day the text says something happened or began (the first day of its
/// first time expression), for a fact's `since`; `None` when it names none.
pub fn event_day(text: &str, today: NaiveDate) -> Option<NaiveDate> {
    find(text, today).first().map(|r| r.start)
}

#[derive(Debug, Clone, Copy)]
enum Part {
    Morning,
    Afternoon,
    Evening,
    Night,
}

/// What a phrase means relative to today.
#[derive(Debug, Clone, Copy)]
enum Rel {
    Days(i64, Option<Part>),
    /// The week of the day 7N days away.
    Weeks(i64),
    /// The weekend of the week N weeks away.
    Weekend(i64),
    Months(i64),
    Years(i64),
    Weekday(Weekday, Pick, Option<Part>),
    /// The day N units away ("2 years ago today").
    Ago(Unit, i64),
}

/// The unit of "N units ago".
#[derive(Debug, Clone, Copy)]
enum Unit {
    Day,
    Week,
    Month,
    Year,
}

impl Unit {
    /// N of these from today (back when negative).
    fn rel(self, n: i64) -> Rel {
        match self {
            Unit::Day => Rel::Days(n, None),
            Unit::Week => Rel::Weeks(n),
            Unit::Month => Rel::Months(n),
            Unit::Year => Rel::Years(n),
        }
    }
}

/// Which of the days with a weekday's name.
#[derive(Debug, Clone, Copy)]
enum Pick {
    /// The latest before today.
    Before,
    /// The first after today.
    After,
    /// The latest up to today.
    UpTo,
    /// The one in the week N weeks away.
    Week(i64),
}

/// An absolute period: a day, the week of a Monday, the weekend of a
/// Saturday, the month of its first day, a year.
#[derive(Debug, Clone, Copy)]
enum Period {
    Day(NaiveDate, Option<Part>),
    Week(NaiveDate),
    Weekend(NaiveDate),
    Month(NaiveDate),
    Year(i32),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Lang {
    En,
    Zh,
}

fn shift(d: NaiveDate, days: i64) -> Option<NaiveDate> {
    if days >= 0 {
        d.checked_add_days(Days::new(days.unsigned_abs()))
    } else {
        d.checked_sub_days(Days::new(days.unsigned_abs()))
    }
}

fn monday(d: NaiveDate) -> Option<NaiveDate> {
    shift(d, -i64::from(d.weekday().num_days_from_monday()))
}

impl Rel {
    /// `None` when the day falls outside the calendar chrono knows.
    fn resolve(self, today: NaiveDate) -> Option<Period> {
        Some(match self {
            Rel::Days(n, part) => Period::Day(shift(today, n)?, part),
            Rel::Weeks(n) => Period::Week(monday(shift(today, n.checked_mul(7)?)?)?),
            Rel::Weekend(n) => Period::Weekend(shift(monday(today)?, n.checked_mul(7)? + 5)?),
            Rel::Months(n) => {
                let first = today.with_day(1)?;
                let months = Months::new(u32::try_from(n.unsigned_abs()).ok()?);
                Period::Month(if n >= 0 {
                    first.checked_add_months(months)?
                } else {
                    first.checked_sub_months(months)?
                })
            }
            Rel::Years(n) => {
                let y = i32::try_from(i64::from(today.year()).checked_add(n)?).ok()?;
                Period::Year(y)
            }
            Rel::Ago(unit, n) => {
                let (days, months) = match unit {
                    Unit::Day => (n, 0),
                    Unit::Week => (n.checked_mul(7)?, 0),
                    Unit::Month => (0, n),
                    Unit::Year => (0, n.checked_mul(12)?),
                };
                let months = Months::new(u32::try_from(months.unsigned_abs()).ok()?);
                let day = if n >= 0 {
                    today.checked_add_months(months)?
                } else {
                    today.checked_sub_months(months)?
                };
                Period::Day(shift(day, days)?, None)
            }
            Rel::Weekday(day, pick, part) => {
                let t = i64::from(today.weekday().num_days_from_monday());
                let w = i64::from(day.num_days_from_monday());
                let n = match pick {
                    Pick::Before => -((t - w - 1).rem_euclid(7) + 1),
                    Pick::After => (w - t - 1).rem_euclid(7) + 1,
                    Pick::UpTo => -(t - w).rem_euclid(7),
                    Pick::Week(k) => k * 7 + w - t,
                };
                Period::Day(shift(today, n)?, part)
            }
        })
    }
}

impl Period {
    fn range(self) -> Option<(NaiveDate, NaiveDate)> {
        Some(match self {
            Period::Day(d, _) => (d, d),
            Period::Week(m) => (m, shift(m, 6)?),
            Period::Weekend(s) => (s, shift(s, 1)?),
            Period::Month(f) => (f, f.checked_add_months(Months::new(1))?.pred_opt()?),
            Period::Year(y) => (
                NaiveDate::from_ymd_opt(y, 1, 1)?,
                NaiveDate::from_ymd_opt(y, 12, 31)?,
            ),
        })
    }

    /// How the period reads between the words `around` (lowercase):
    /// without its English preposition after one ("since yesterday", "on
    /// last Friday") or as a sentence's subject ("yesterday was ...").
    fn absolute(self, lang: Lang, around: [Option<&str>; 2]) -> String {
        let zh_day = |d: NaiveDate| format!("{}年{}月{}日", d.year(), d.month(), d.day());
        let (prep, rest) = match (lang, self) {
            (Lang::En, Period::Day(d, None)) => ("on ", d.format(EN_DAY).to_string()),
            (Lang::En, Period::Day(d, Some(p))) => {
                let part = match p {
                    Part::Morning => "morning",
                    Part::Afternoon => "afternoon",
                    Part::Evening => "evening",
                    Part::Night => "night",
                };
                ("on ", format!("the {part} of {}", d.format(EN_DAY)))
            }
            (Lang::En, Period::Week(m)) => ("in ", format!("the week of {}", m.format(EN_DAY))),
            (Lang::En, Period::Weekend(s)) => {
                ("on ", format!("the weekend of {}", s.format(EN_DAY)))
            }
            (Lang::En, Period::Month(f)) => ("in ", f.format("%B %Y").to_string()),
            (Lang::En, Period::Year(y)) => ("in ", y.to_string()),
            (Lang::Zh, Period::Day(d, part)) => {
                let part = match part {
                    None => "",
                    Some(Part::Morning) => "早上",
                    Some(Part::Afternoon) => "下午",
                    Some(Part::Evening) => "晚上",
                    Some(Part::Night) => "夜里",
                };
                ("", format!("{}{part}", zh_day(d)))
            }
            (Lang::Zh, Period::Week(m)) => ("", format!("{}那周", zh_day(m))),
            (Lang::Zh, Period::Weekend(s)) => ("", format!("{}那个周末", zh_day(s))),
            (Lang::Zh, Period::Month(f)) => ("", format!("{}年{}月", f.year(), f.month())),
            (Lang::Zh, Period::Year(y)) => ("", format!("{y}年")),
        };
        let [before, after] = around;
        let bare = before.is_some_and(|w| {
            w == prep.trim_end() || EN_PREPOSITIONS.split_whitespace().any(|p| p == w)
        }) || after.is_some_and(|w| EN_VERBS.contains(&w));
        if bare {
            rest
        } else {
            format!("{prep}{rest}")
        }
    }
}

fn resolved(
    text: &str,
    span: Range<usize>,
    rel: Rel,
    today: NaiveDate,
    lang: Lang,
    around: [Option<&str>; 2],
) -> Option<Resolved> {
    let period = rel.resolve(today)?;
    let (start, end) = period.range()?;
    let mut absolute = period.absolute(lang, around);
    // "Yesterday I ..." -> "On 4 December 2026 I ...".
    if text[span.start..].starts_with(|c: char| c.is_ascii_uppercase()) {
        if let Some(first) = absolute.get(..1) {
            absolute = first.to_ascii_uppercase() + &absolute[1..];
        }
    }
    Some(Resolved {
        phrase: text[span.clone()].to_string(),
        span,
        start,
        end,
        absolute,
    })
}

// ---------------------------------------------------------------- English

const EN_FIXED: &[(&str, Rel)] = &[
    ("today", Rel::Days(0, None)),
    ("tonight", Rel::Days(0, Some(Part::Night))),
    ("this morning", Rel::Days(0, Some(Part::Morning))),
    ("this afternoon", Rel::Days(0, Some(Part::Afternoon))),
    ("this evening", Rel::Days(0, Some(Part::Evening))),
    ("yesterday", Rel::Days(-1, None)),
    ("last night", Rel::Days(-1, Some(Part::Night))),
    ("the day before yesterday", Rel::Days(-2, None)),
    ("day before yesterday", Rel::Days(-2, None)),
    ("tomorrow", Rel::Days(1, None)),
    ("the day after tomorrow", Rel::Days(2, None)),
    ("day after tomorrow", Rel::Days(2, None)),
    ("last week", Rel::Weeks(-1)),
    ("this week", Rel::Weeks(0)),
    ("next week", Rel::Weeks(1)),
    ("last weekend", Rel::Weekend(-1)),
    ("this weekend", Rel::Weekend(0)),
    ("next weekend", Rel::Weekend(1)),
    ("last month", Rel::Months(-1)),
    ("this month", Rel::Months(0)),
    ("next month", Rel::Months(1)),
    ("last year", Rel::Years(-1)),
    ("this year", Rel::Years(0)),
    ("next year", Rel::Years(1)),
];

const EN_NUMBERS: &[&str] = &[
    "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve",
];

const EN_WEEKDAYS: &[(&str, Weekday)] = &[
    ("monday", Weekday::Mon),
    ("tuesday", Weekday::Tue),
    ("wednesday", Weekday::Wed),
    ("thursday", Weekday::Thu),
    ("friday", Weekday::Fri),
    ("saturday", Weekday::Sat),
    ("sunday", Weekday::Sun),
];

/// Month names and their abbreviations, for a date after a weekday.
const EN_MONTHS: &str = "january february march april may june july august september october \
    november december jan feb mar apr jun jul aug sep sept oct nov dec";

/// Words after which the absolute form drops its own preposition
/// ("since yesterday" -> "since 4 December 2026"). Not "in", "on" or "at":
/// before a day they are a verb's ("flew in yesterday"), unless they are
/// the form's own ("on last Friday").
const EN_PREPOSITIONS: &str =
    "since until till from by before after during of to for through throughout between";

/// Words after which an expression is not today's ("the last week" is the
/// last of some weeks, "my next Friday" one of mine). Not "her" or "that",
/// which are as often an object or a conjunction ("saw her last Friday").
const EN_DETERMINERS: &[&str] = &[
    "the", "every", "each", "my", "your", "his", "its", "our", "their",
];

/// Verbs after which an expression is a subject and needs no preposition
/// ("yesterday was" -> "4 December 2026 was").
const EN_VERBS: &[&str] = &[
    "is", "was", "were", "will", "has", "had", "would", "seems", "seemed",
];

/// Numbers of units past this are not a relative date ("2023 years ago" is
/// a year misread).
const MAX_COUNT: i64 = 999;

struct English<'a> {
    text: &'a str,
    /// `text` with ASCII lowered: the same bytes at the same offsets.
    lower: String,
    words: Vec<Range<usize>>,
}

impl<'a> English<'a> {
    fn new(text: &'a str) -> Self {
        // A word is a run of letters and digits, with inner apostrophes:
        // "yesterday's" is one word, and not "yesterday".
        let mut words = Vec::new();
        let mut start = None;
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let next_alnum = chars.peek().is_some_and(|&(_, n)| n.is_alphanumeric());
            let inside =
                c.is_alphanumeric() || (start.is_some() && matches!(c, '\'' | '’') && next_alnum);
            match (inside, start) {
                (true, None) => start = Some(i),
                (false, Some(s)) => {
                    words.push(s..i);
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(s) = start {
            words.push(s..text.len());
        }
        English {
            text,
            lower: text.to_ascii_lowercase(),
            words,
        }
    }

    /// The `k`-th word of a phrase starting at word `i`, when only
    /// whitespace separates it from the word before.
    fn at(&self, i: usize, k: usize) -> Option<&str> {
        let j = i.checked_add(k)?;
        let w = self.words.get(j)?;
        if k > 0
            && !self.text[self.words[j - 1].end..w.start]
                .chars()
                .all(char::is_whitespace)
        {
            return None;
        }
        Some(&self.lower[w.clone()])
    }

    fn find(&self, today: NaiveDate) -> Vec<Resolved> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.words.len() {
            let found = self.phrase(i).and_then(|(n, rel)| {
                let mut span = self.words[i].start..self.words[i + n - 1].end;
                // "in 2 weeks' time" is "in 2 weeks"; "the weeks' end" no date.
                let rest = &self.lower[span.end..];
                if let Some(time) = ["' time", "’ time"].iter().find(|t| rest.starts_with(**t)) {
                    span.end += time.len();
                } else if rest.starts_with(['\'', '’']) {
                    return None;
                }
                let before = i
                    .checked_sub(1)
                    .and_then(|p| self.at(p, 1).and(self.at(p, 0)));
                // "the last week", "my next Friday": not a date of today's.
                if before.is_some_and(|w| EN_DETERMINERS.contains(&w))
                    && matches!(self.at(i, 0), Some("last" | "next" | "this"))
                {
                    return None;
                }
                let around = [before, self.at(i, n)];
                Some((n, resolved(self.text, span, rel, today, Lang::En, around)?))
            });
            match found {
                Some((n, r)) => {
                    out.push(r);
                    i += n;
                }
                None => i += 1,
            }
        }
        out
    }

    /// The longest phrase starting at word `i`: its length in words and
    /// meaning.
    fn phrase(&self, i: usize) -> Option<(usize, Rel)> {
        let w = |k| self.at(i, k);
        let mut best = EN_FIXED
            .iter()
            .filter(|(p, _)| p.split(' ').enumerate().all(|(k, word)| w(k) == Some(word)))
            .map(|(p, rel)| (p.split(' ').count(), *rel))
            .max_by_key(|(n, _)| *n);
        // "N units ago", "N units from now", "in N units".
        let counted = match w(0) {
            Some("in") => self.count(i, 1).map(|(n, k)| (n, k, true)),
            _ => self.count(i, 0).map(|(n, k)| (n, k, false)),
        };
        if let Some((n, k, lead)) = counted {
            let unit = match w(k).map(|u| u.trim_end_matches('s')) {
                Some("day") => Some(Unit::Day),
                Some("week") => Some(Unit::Week),
                Some("month") => Some(Unit::Month),
                Some("year") => Some(Unit::Year),
                _ => None,
            };
            let tail = match (lead, w(k + 1), w(k + 2)) {
                (true, _, _) => Some((k + 1, n, false)),
                // "2 years ago today" is a day, not a year.
                (false, Some("ago"), Some("today")) => Some((k + 3, -n, true)),
                (false, Some("ago"), _) => Some((k + 2, -n, false)),
                (false, Some("from"), Some("now")) => Some((k + 3, n, false)),
                _ => None,
            };
            if let (Some(unit), Some((len, n, exact))) = (unit, tail) {
                best = Some((
                    len,
                    if exact {
                        Rel::Ago(unit, n)
                    } else {
                        unit.rel(n)
                    },
                ));
            }
        }
        // "last/next/this/on Friday", unless a date follows ("on Monday, 8 May").
        let pick = match w(0) {
            Some("last") => Some(Pick::Before),
            Some("next") => Some(Pick::After),
            Some("this") => Some(Pick::Week(0)),
            Some("on") => Some(Pick::UpTo),
            _ => None,
        };
        if let (Some(pick), Some(day)) = (pick, w(1)) {
            if let Some((_, wd)) = EN_WEEKDAYS.iter().find(|(name, _)| *name == day) {
                if !self.dated_after(self.words[i + 1].end) {
                    best = Some((2, Rel::Weekday(*wd, pick, None)));
                }
            }
        }
        // "yesterday evening", "last Friday night".
        let (n, rel) = best?;
        let part = match w(n) {
            Some("morning") => Some(Part::Morning),
            Some("afternoon") => Some(Part::Afternoon),
            Some("evening") => Some(Part::Evening),
            Some("night") => Some(Part::Night),
            _ => None,
        };
        Some(match (rel, part) {
            (Rel::Days(d, None), Some(p)) => (n + 1, Rel::Days(d, Some(p))),
            (Rel::Weekday(d, pick, None), Some(p)) => (n + 1, Rel::Weekday(d, pick, Some(p))),
            _ => (n, rel),
        })
    }

    /// A count at word `i + k`: its value and how many words it takes.
    fn count(&self, i: usize, k: usize) -> Option<(i64, usize)> {
        let w = self.at(i, k)?;
        if w.bytes().all(|b| b.is_ascii_digit()) {
            // Not the tail of "1.5" or "2-3".
            let start = self.words[i + k].start;
            let before = self.text[..start].chars().next_back();
            if before.is_some_and(|c| !c.is_whitespace() && !matches!(c, '(' | '"' | '“' | '\''))
            {
                return None;
            }
            let n: i64 = w.parse().ok().filter(|n| (1..=MAX_COUNT).contains(n))?;
            return Some((n, k + 1));
        }
        if let Some(p) = EN_NUMBERS.iter().position(|n| *n == w) {
            return Some((p as i64 + 1, k + 1));
        }
        match (w, self.at(i, k + 1), self.at(i, k + 2)) {
            ("a", Some("couple"), Some("of")) => Some((2, k + 3)),
            ("a", Some("couple"), _) => Some((2, k + 2)),
            ("a" | "an", _, _) => Some((1, k + 1)),
            _ => None,
        }
    }

    /// Whether a date follows byte `end` ("Monday, 8 May", "Monday the
    /// 8th", "Monday, May 8"; not "Monday 3pm", "Monday may be late").
    fn dated_after(&self, end: usize) -> bool {
        let rest = self.lower[end..].trim_start_matches(|c: char| c.is_whitespace() || c == ',');
        let rest = rest.strip_prefix("the ").unwrap_or(rest);
        let (word, after) = rest.split_at(
            rest.find(|c: char| !c.is_alphanumeric())
                .unwrap_or(rest.len()),
        );
        let month = EN_MONTHS.split_whitespace().any(|m| m == word)
            && after
                .trim_start_matches([' ', '.'])
                .starts_with(|c: char| c.is_ascii_digit());
        let time = rest.trim_start_matches(|c: char| c.is_ascii_digit());
        let time = [":", "am", "pm", "a.m", "p.m", " am", " pm"]
            .iter()
            .any(|t| time.starts_with(t));
        (rest.starts_with(|c: char| c.is_ascii_digit()) && !time) || month
    }
}

// ---------------------------------------------------------------- Chinese

const ZH_FIXED: &[(&str, Rel)] = &[
    ("今天", Rel::Days(0, None)),
    ("今日", Rel::Days(0, None)),
    ("今早", Rel::Days(0, Some(Part::Morning))),
    ("今晚", Rel::Days(0, Some(Part::Evening))),
    ("昨天", Rel::Days(-1, None)),
    ("昨日", Rel::Days(-1, None)),
    ("昨晚", Rel::Days(-1, Some(Part::Evening))),
    ("前天", Rel::Days(-2, None)),
    ("大前天", Rel::Days(-3, None)),
    ("明天", Rel::Days(1, None)),
    ("明日", Rel::Days(1, None)),
    ("明早", Rel::Days(1, Some(Part::Morning))),
    ("明晚", Rel::Days(1, Some(Part::Evening))),
    ("后天", Rel::Days(2, None)),
    ("大后天", Rel::Days(3, None)),
    ("上个月", Rel::Months(-1)),
    ("上月", Rel::Months(-1)),
    ("这个月", Rel::Months(0)),
    ("本月", Rel::Months(0)),
    ("下个月", Rel::Months(1)),
    ("下月", Rel::Months(1)),
    ("前年", Rel::Years(-2)),
    ("去年", Rel::Years(-1)),
    ("今年", Rel::Years(0)),
    ("明年", Rel::Years(1)),
    ("后年", Rel::Years(2)),
];

/// Words for a week, with the week they name (`None`: only before a day,
/// 周五 alone).
const ZH_WEEKS: &[(&str, Option<i64>)] = &[
    ("上个星期", Some(-1)),
    ("上个礼拜", Some(-1)),
    ("上星期", Some(-1)),
    ("上礼拜", Some(-1)),
    ("上周", Some(-1)),
    ("这个星期", Some(0)),
    ("这个礼拜", Some(0)),
    ("这星期", Some(0)),
    ("这礼拜", Some(0)),
    ("本星期", Some(0)),
    ("这周", Some(0)),
    ("本周", Some(0)),
    ("下个星期", Some(1)),
    ("下个礼拜", Some(1)),
    ("下星期", Some(1)),
    ("下礼拜", Some(1)),
    ("下周", Some(1)),
    ("星期", None),
    ("礼拜", None),
    ("周", None),
];

/// Units of "N units ago" (N天前, 两个星期前); not 日: 十二日前 is "before
/// the 12th".
const ZH_UNITS: &[(&str, Unit)] = &[
    ("天", Unit::Day),
    ("个星期", Unit::Week),
    ("星期", Unit::Week),
    ("个礼拜", Unit::Week),
    ("礼拜", Unit::Week),
    ("周", Unit::Week),
    ("个月", Unit::Month),
    ("年", Unit::Year),
];

/// Characters that, just before a phrase's first character, make that
/// character part of another word (以后, 聪明, 过去, 日本, 马上, 一下).
const ZH_NOT_AFTER: &[(char, &str)] = &[
    ('前', "以之提目当此先事午饭课会从眼面跟往向空生天年"),
    ('后', "以之然最随此先事午饭课会日今往向落背前生天年"),
    ('明', "聪说表证发光透清文分声简高精鲜黎开阐标指英神"),
    ('今', "如至迄当现古"),
    ('去', "过出回进失离来"),
    ('本', "日基成资根版课书样剧文账脚原标范"),
    ('上', "马晚早网线路身手楼世"),
    ('下', "一以之底天地楼乡私留剩"),
];

/// Characters that, just after a phrase's last character, make that
/// character part of another word (周期, 年轻, 月饼, 日本).
const ZH_NOT_BEFORE: &[(char, &str)] = &[
    ('周', "期报刊年围边转岁"),
    ('年', "轻级纪代龄会"),
    ('月', "饼亮球光"),
    ('天', "性"),
    ('日', "本子记常期语元程报"),
];

/// Before a bare weekday (周五 alone): a count (一周一次), "every" (每周五),
/// or a date it belongs to (5月8日周一).
const ZH_WEEKDAY_NOT_AFTER: &str = "零一二三四五六七八九十百两几每个日号(（到至~";
/// After a bare weekday: a range (周一到周五 is a schedule).
const ZH_WEEKDAY_NOT_BEFORE: &str = "到至~";

const ZH_NUMERALS: &str = "零一二三四五六七八九十百千万两几";

fn guarded(table: &[(char, &str)], c: Option<char>, neighbour: Option<char>) -> bool {
    match (c, neighbour) {
        (Some(c), Some(n)) => table.iter().any(|(k, set)| *k == c && set.contains(n)),
        _ => false,
    }
}

fn zh_digit(c: char) -> Option<i64> {
    "一二三四五六七八九"
        .chars()
        .position(|d| d == c)
        .map(|p| p as i64 + 1)
        .or((c == '两').then_some(2))
}

/// A count at the start of `s` (3, 十二, 两): its value and its length in
/// bytes.
fn zh_count(s: &str) -> Option<(i64, usize)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits > 0 {
        let n: i64 = s[..digits]
            .parse()
            .ok()
            .filter(|n| (1..=MAX_COUNT).contains(n))?;
        return Some((n, digits));
    }
    let mut chars = s.chars();
    let first = chars.next()?;
    let (tens, mut len) = match first {
        '十' => (1, first.len_utf8()),
        _ => {
            let d = zh_digit(first)?;
            match chars.next() {
                Some('十') => (d, first.len_utf8() + '十'.len_utf8()),
                _ => return Some((d, first.len_utf8())),
            }
        }
    };
    let ones = match s[len..].chars().next().and_then(zh_digit) {
        Some(d) => {
            len += '一'.len_utf8();
            d
        }
        None => 0,
    };
    Some((tens * 10 + ones, len))
}

/// The longest Chinese phrase at byte `i` of `text`: its length in bytes
/// and meaning.
fn zh_phrase(text: &str, i: usize) -> Option<(usize, Rel)> {
    let rest = &text[i..];
    let before = text[..i].chars().next_back();
    let after = |len: usize| text[i + len..].chars().next();
    let mut best: Option<(usize, Rel)> = None;
    let mut offer = |len: usize, rel: Rel| {
        if best.is_none_or(|(l, _)| len > l) {
            best = Some((len, rel));
        }
    };

    // N天前, 两个星期前, 3个月以前.
    let counted = before.is_none_or(|b| {
        !b.is_ascii_alphanumeric() && !".月第".contains(b) && !ZH_NUMERALS.contains(b)
    });
    if let (true, Some((n, len))) = (counted, zh_count(rest)) {
        for (unit, rel) in ZH_UNITS {
            if let Some(tail) = rest[len..].strip_prefix(unit) {
                if let Some(ago) = ["以前", "之前", "前"]
                    .iter()
                    .find(|a| tail.starts_with(**a))
                {
                    offer(len + unit.len() + ago.len(), rel.rel(-n));
                }
            }
        }
    }

    for (p, rel) in ZH_FIXED {
        if rest.starts_with(p) {
            offer(p.len(), *rel);
        }
    }

    // 上周, 上周五, 下周末, 星期天 (but not 上周天气: 天 is Sunday only after 星期/礼拜).
    if let Some((p, week)) = ZH_WEEKS.iter().find(|(p, _)| rest.starts_with(p)) {
        let next = after(p.len());
        let day = match next {
            Some('一') => Some(Weekday::Mon),
            Some('二') => Some(Weekday::Tue),
            Some('三') => Some(Weekday::Wed),
            Some('四') => Some(Weekday::Thu),
            Some('五') => Some(Weekday::Fri),
            Some('六') => Some(Weekday::Sat),
            Some('日') => Some(Weekday::Sun),
            Some('天') if !p.ends_with('周') => Some(Weekday::Sun),
            _ => None,
        };
        let long = p.len() + next.map_or(0, char::len_utf8);
        match (day, week) {
            (Some(d), Some(k)) => offer(long, Rel::Weekday(d, Pick::Week(*k), None)),
            (Some(d), None) => {
                let free = before.is_none_or(|b| !ZH_WEEKDAY_NOT_AFTER.contains(b))
                    && after(long).is_none_or(|a| !ZH_WEEKDAY_NOT_BEFORE.contains(a));
                if free {
                    offer(long, Rel::Weekday(d, Pick::UpTo, None));
                }
            }
            (None, Some(k)) if next == Some('末') => offer(long, Rel::Weekend(*k)),
            (None, Some(k)) => offer(p.len(), Rel::Weeks(*k)),
            (None, None) => {}
        }
    }

    let (len, rel) = best?;
    let phrase = &rest[..len];
    if guarded(ZH_NOT_AFTER, phrase.chars().next(), before)
        || guarded(ZH_NOT_BEFORE, phrase.chars().next_back(), after(len))
    {
        return None;
    }
    Some((len, rel))
}

fn find_chinese(text: &str, today: NaiveDate) -> Vec<Resolved> {
    let mut out = Vec::new();
    let mut next = 0;
    for (i, c) in text.char_indices() {
        if i < next || (c.is_ascii() && !c.is_ascii_digit()) {
            continue;
        }
        if let Some((len, rel)) = zh_phrase(text, i) {
            if let Some(r) = resolved(text, i..i + len, rel, today, Lang::Zh, [None, None]) {
                next = i + len;
                out.push(r);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A Saturday; its ISO week runs from Monday 2026-11-30 to Sunday 2026-12-06.
    fn today() -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 12, 5).unwrap()
    }

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    /// The one expression of `text`: its phrase, first and last day, and absolute form.
    fn one(text: &str) -> (String, String, String, String) {
        let found = find(text, today());
        assert_eq!(found.len(), 1, "{text:?}: {found:#?}");
        let r = &found[0];
        assert_eq!(&text[r.span.clone()], r.phrase);
        (
            r.phrase.clone(),
            r.start.to_string(),
            r.end.to_string(),
            r.absolute.clone(),
        )
    }

    fn check(cases: &[(&str, &str, &str, &str, &str)]) {
        for (text, phrase, start, end, absolute) in cases {
            let want = (
                phrase.to_string(),
                start.to_string(),
                end.to_string(),
                absolute.to_string(),
            );
            assert_eq!(one(text), want, "{text:?}");
        }
    }

    #[test]
    #[rustfmt::skip] // a table: one case a line
    fn english_days() {
        check(&[
            ("I went today", "today", "2026-12-05", "2026-12-05", "on 5 December 2026"),
            ("we eat out tonight", "tonight", "2026-12-05", "2026-12-05", "on the night of 5 December 2026"),
            ("I ran this morning", "this morning", "2026-12-05", "2026-12-05", "on the morning of 5 December 2026"),
            ("she called this evening", "this evening", "2026-12-05", "2026-12-05", "on the evening of 5 December 2026"),
            ("I fell ill yesterday", "yesterday", "2026-12-04", "2026-12-04", "on 4 December 2026"),
            ("it rained yesterday evening", "yesterday evening", "2026-12-04", "2026-12-04", "on the evening of 4 December 2026"),
            ("we met last night", "last night", "2026-12-04", "2026-12-04", "on the night of 4 December 2026"),
            ("I flew in the day before yesterday", "the day before yesterday", "2026-12-03", "2026-12-03", "on 3 December 2026"),
            ("I called on last Friday", "last Friday", "2026-12-04", "2026-12-04", "4 December 2026"),
            ("the plan for next week", "next week", "2026-12-07", "2026-12-13", "the week of 7 December 2026"),
            ("Yesterday was great", "Yesterday", "2026-12-04", "2026-12-04", "4 December 2026"),
            ("last week was hard", "last week", "2026-11-23", "2026-11-29", "the week of 23 November 2026"),
            ("I fly tomorrow", "tomorrow", "2026-12-06", "2026-12-06", "on 6 December 2026"),
            ("we leave the day after tomorrow", "the day after tomorrow", "2026-12-07", "2026-12-07", "on 7 December 2026"),
            ("Yesterday I quit", "Yesterday", "2026-12-04", "2026-12-04", "On 4 December 2026"),
            ("I have been sick since yesterday", "yesterday", "2026-12-04", "2026-12-04", "4 December 2026"),
            ("TOMORROW we go", "TOMORROW", "2026-12-06", "2026-12-06", "On 6 December 2026"),
        ]);
    }

    #[test]
    #[rustfmt::skip] // a table: one case a line
    fn english_counts() {
        check(&[
            ("I moved 3 days ago", "3 days ago", "2026-12-02", "2026-12-02", "on 2 December 2026"),
            ("I moved three days ago", "three days ago", "2026-12-02", "2026-12-02", "on 2 December 2026"),
            ("we met a day ago", "a day ago", "2026-12-04", "2026-12-04", "on 4 December 2026"),
            ("a couple of days ago it broke", "a couple of days ago", "2026-12-03", "2026-12-03", "on 3 December 2026"),
            ("a couple days ago it broke", "a couple days ago", "2026-12-03", "2026-12-03", "on 3 December 2026"),
            ("two weeks ago I started", "two weeks ago", "2026-11-16", "2026-11-22", "in the week of 16 November 2026"),
            ("a week ago", "a week ago", "2026-11-23", "2026-11-29", "in the week of 23 November 2026"),
            ("I quit a month ago", "a month ago", "2026-11-01", "2026-11-30", "in November 2026"),
            ("twelve months ago", "twelve months ago", "2025-12-01", "2025-12-31", "in December 2025"),
            ("I married 5 years ago", "5 years ago", "2021-01-01", "2021-12-31", "in 2021"),
            ("a year ago", "a year ago", "2025-01-01", "2025-12-31", "in 2025"),
            ("I start in 3 days", "in 3 days", "2026-12-08", "2026-12-08", "on 8 December 2026"),
            ("I start in two weeks", "in two weeks", "2026-12-14", "2026-12-20", "in the week of 14 December 2026"),
            ("she is back in a month", "in a month", "2027-01-01", "2027-01-31", "in January 2027"),
            ("ten days from now", "ten days from now", "2026-12-15", "2026-12-15", "on 15 December 2026"),
            ("born 2 years ago today", "2 years ago today", "2024-12-05", "2024-12-05", "on 5 December 2024"),
            ("a month ago today", "a month ago today", "2026-11-05", "2026-11-05", "on 5 November 2026"),
            ("in 2 weeks' time", "in 2 weeks' time", "2026-12-14", "2026-12-20", "in the week of 14 December 2026"),
        ]);
    }

    #[test]
    #[rustfmt::skip] // a table: one case a line
    fn english_weeks_months_years() {
        check(&[
            ("I moved to Berlin last week", "last week", "2026-11-23", "2026-11-29", "in the week of 23 November 2026"),
            ("busy this week", "this week", "2026-11-30", "2026-12-06", "in the week of 30 November 2026"),
            ("Next week I travel", "Next week", "2026-12-07", "2026-12-13", "In the week of 7 December 2026"),
            ("we hiked last weekend", "last weekend", "2026-11-28", "2026-11-29", "on the weekend of 28 November 2026"),
            ("we hike this weekend", "this weekend", "2026-12-05", "2026-12-06", "on the weekend of 5 December 2026"),
            ("we hike next weekend", "next weekend", "2026-12-12", "2026-12-13", "on the weekend of 12 December 2026"),
            ("I got a raise last month", "last month", "2026-11-01", "2026-11-30", "in November 2026"),
            ("this month is calm", "this month", "2026-12-01", "2026-12-31", "December 2026"),
            ("we met in this month", "this month", "2026-12-01", "2026-12-31", "December 2026"),
            ("I retire next month", "next month", "2027-01-01", "2027-01-31", "in January 2027"),
            ("I graduated last year", "last year", "2025-01-01", "2025-12-31", "in 2025"),
            ("this year I run", "this year", "2026-01-01", "2026-12-31", "in 2026"),
            ("next year we marry", "next year", "2027-01-01", "2027-12-31", "in 2027"),
            ("working here since last month", "last month", "2026-11-01", "2026-11-30", "November 2026"),
        ]);
    }

    #[test]
    #[rustfmt::skip] // a table: one case a line
    fn english_weekdays() {
        // Today is a Saturday.
        check(&[
            ("I saw her last Friday", "last Friday", "2026-12-04", "2026-12-04", "on 4 December 2026"),
            ("he said that last Friday he quit", "last Friday", "2026-12-04", "2026-12-04", "on 4 December 2026"),
            ("last Saturday", "last Saturday", "2026-11-28", "2026-11-28", "on 28 November 2026"),
            ("the exam is next Friday", "next Friday", "2026-12-11", "2026-12-11", "on 11 December 2026"),
            ("next Saturday", "next Saturday", "2026-12-12", "2026-12-12", "on 12 December 2026"),
            ("this Monday was hard", "this Monday", "2026-11-30", "2026-11-30", "30 November 2026"),
            ("this Sunday we rest", "this Sunday", "2026-12-06", "2026-12-06", "on 6 December 2026"),
            ("I called on Monday", "on Monday", "2026-11-30", "2026-11-30", "on 30 November 2026"),
            ("call me on Monday at 3pm", "on Monday", "2026-11-30", "2026-11-30", "on 30 November 2026"),
            ("on Monday 10:30 we met", "on Monday", "2026-11-30", "2026-11-30", "on 30 November 2026"),
            ("the call on Monday may move", "on Monday", "2026-11-30", "2026-11-30", "on 30 November 2026"),
            ("it opened on saturday", "on saturday", "2026-12-05", "2026-12-05", "on 5 December 2026"),
            ("on Sunday", "on Sunday", "2026-11-29", "2026-11-29", "on 29 November 2026"),
            ("we danced last Friday night", "last Friday night", "2026-12-04", "2026-12-04", "on the night of 4 December 2026"),
        ]);
    }

    #[test]
    #[rustfmt::skip] // a table: one case a line
    fn chinese() {
        check(&[
            ("我今天很忙", "今天", "2026-12-05", "2026-12-05", "2026年12月5日"),
            ("我昨天搬家了", "昨天", "2026-12-04", "2026-12-04", "2026年12月4日"),
            ("今晚吃火锅", "今晚", "2026-12-05", "2026-12-05", "2026年12月5日晚上"),
            ("前天下雨", "前天", "2026-12-03", "2026-12-03", "2026年12月3日"),
            ("明天见", "明天", "2026-12-06", "2026-12-06", "2026年12月6日"),
            ("后天出发", "后天", "2026-12-07", "2026-12-07", "2026年12月7日"),
            ("上周我搬到了柏林", "上周", "2026-11-23", "2026-11-29", "2026年11月23日那周"),
            ("上个星期很冷", "上个星期", "2026-11-23", "2026-11-29", "2026年11月23日那周"),
            ("上星期很冷", "上星期", "2026-11-23", "2026-11-29", "2026年11月23日那周"),
            ("这周很忙", "这周", "2026-11-30", "2026-12-06", "2026年11月30日那周"),
            ("本周很忙", "本周", "2026-11-30", "2026-12-06", "2026年11月30日那周"),
            ("下周开会", "下周", "2026-12-07", "2026-12-13", "2026年12月7日那周"),
            ("下个星期开会", "下个星期", "2026-12-07", "2026-12-13", "2026年12月7日那周"),
            ("上周末去爬山", "上周末", "2026-11-28", "2026-11-29", "2026年11月28日那个周末"),
            ("上个月涨工资了", "上个月", "2026-11-01", "2026-11-30", "2026年11月"),
            ("这个月很闲", "这个月", "2026-12-01", "2026-12-31", "2026年12月"),
            ("本月很闲", "本月", "2026-12-01", "2026-12-31", "2026年12月"),
            ("下个月搬家", "下个月", "2027-01-01", "2027-01-31", "2027年1月"),
            ("去年毕业", "去年", "2025-01-01", "2025-12-31", "2025年"),
            ("今年结婚", "今年", "2026-01-01", "2026-12-31", "2026年"),
            ("明年退休", "明年", "2027-01-01", "2027-12-31", "2027年"),
            ("上周五见过她", "上周五", "2026-11-27", "2026-11-27", "2026年11月27日"),
            ("下周五考试", "下周五", "2026-12-11", "2026-12-11", "2026年12月11日"),
            ("周五见过她", "周五", "2026-12-04", "2026-12-04", "2026年12月4日"),
            ("星期五见过她", "星期五", "2026-12-04", "2026-12-04", "2026年12月4日"),
            ("礼拜五见过她", "礼拜五", "2026-12-04", "2026-12-04", "2026年12月4日"),
            ("星期天去了教堂", "星期天", "2026-11-29", "2026-11-29", "2026年11月29日"),
            ("这周日休息", "这周日", "2026-12-06", "2026-12-06", "2026年12月6日"),
            ("三天前来的", "三天前", "2026-12-02", "2026-12-02", "2026年12月2日"),
            ("3天前来的", "3天前", "2026-12-02", "2026-12-02", "2026年12月2日"),
            ("两天前来的", "两天前", "2026-12-03", "2026-12-03", "2026年12月3日"),
            ("十二天前来的", "十二天前", "2026-11-23", "2026-11-23", "2026年11月23日"),
            ("两周前来的", "两周前", "2026-11-16", "2026-11-22", "2026年11月16日那周"),
            ("两个星期前来的", "两个星期前", "2026-11-16", "2026-11-22", "2026年11月16日那周"),
            ("三个月前来的", "三个月前", "2026-09-01", "2026-09-30", "2026年9月"),
            ("十年前来的", "十年前", "2016-01-01", "2016-12-31", "2016年"),
            ("二十年以前来的", "二十年以前", "2006-01-01", "2006-12-31", "2006年"),
        ]);
    }

    #[test]
    #[rustfmt::skip] // a table: one case a line
    fn replacement_text() {
        let cases = [
            ("I moved to Berlin last week", "I moved to Berlin in the week of 23 November 2026"),
            ("yesterday", "on 4 December 2026"),
            ("The exam is next Friday.", "The exam is on 11 December 2026."),
            ("Since last year I have lived in Porto.", "Since 2025 I have lived in Porto."),
            ("Last week I quit, and tomorrow I start.", "In the week of 23 November 2026 I quit, and on 6 December 2026 I start."),
            ("上周我搬到了柏林", "2026年11月23日那周我搬到了柏林"),
            ("昨天", "2026年12月4日"),
            ("我去年三月换了工作", "我2025年三月换了工作"),
            ("I moved yesterday (昨天)", "I moved on 4 December 2026 (2026年12月4日)"),
        ];
        for (text, want) in cases {
            assert_eq!(absolutize(text, today()), want, "{text:?}");
            // An absolute form holds no relative expression of its own.
            assert_eq!(absolutize(want, today()), want, "{want:?}");
        }
    }

    #[test]
    fn adjacent_and_overlapping_expressions() {
        let found: Vec<_> = find("yesterday today tomorrow", today())
            .into_iter()
            .map(|r| r.phrase)
            .collect();
        assert_eq!(found, ["yesterday", "today", "tomorrow"]);
        // The longest phrase wins: one expression, not "yesterday" inside it.
        assert_eq!(
            one("the day before yesterday").0,
            "the day before yesterday"
        );
        assert_eq!(one("three weeks ago").0, "three weeks ago");
        let found: Vec<_> = find("昨天和今天，上周五和下周", today())
            .into_iter()
            .map(|r| r.phrase)
            .collect();
        assert_eq!(found, ["昨天", "今天", "上周五", "下周"]);
        assert_eq!(
            absolutize("昨天今天", today()),
            "2026年12月4日2026年12月5日"
        );
        let spans: Vec<_> = find("last week, last month; last year", today())
            .into_iter()
            .map(|r| r.span)
            .collect();
        assert_eq!(spans, [0..9, 11..21, 23..32]);
    }

    #[test]
    fn text_without_an_expression_is_unchanged() {
        let texts = [
            "",
            "I live in Lisbon, near the river.",
            "I moved recently; lately I cook a lot.",
            "a few days ago, several weeks ago, the other day",
            "My birthday is on 2023-05-08, and we met on 8 May 2023.",
            "The meeting was on Monday, 8 May 2023, and on Friday the 12th.",
            "We met on Tuesday, May 9, and on Sunday Sept. 3.",
            "yesterdayish, yesterdays, todays, last weeks, this week's plan, today's news",
            "2023 years ago, 1.5 weeks ago, 0 days ago",
            "the last-week plan, next- week, last, week",
            "Mondays and last Fridays",
            "the two weeks' holiday, three days' notice",
            "in the last week, the next year, my last Friday at work, every last month",
            "我最近很忙",
            "几天前，以后天天锻炼，他很聪明年轻，日本很美",
            "我周一到周五上班，每周五游泳，一周一次",
            "上周期的报告，基本周期",
            "2023年5月8日前交，5月8日(周一)，请于十二日前提交",
            "Ünïcödé ✓ 🙂 e\u{301}",
        ];
        for text in texts {
            assert_eq!(find(text, today()), [], "{text:?}");
            assert_eq!(absolutize(text, today()), text);
            assert_eq!(event_day(text, today()), None);
        }
    }

    #[test]
    fn event_day_is_the_start_of_the_first_expression() {
        assert_eq!(
            event_day(
                "I moved to Berlin last week and start work tomorrow",
                today()
            ),
            Some(day("2026-11-23"))
        );
        assert_eq!(
            event_day("我上个月开始学钢琴", today()),
            Some(day("2026-11-01"))
        );
        assert_eq!(event_day("I live in Berlin", today()), None);
    }

    #[test]
    fn the_edges_of_the_calendar_resolve_nothing() {
        for today in [NaiveDate::MIN, NaiveDate::MAX] {
            let text = "yesterday today tomorrow last week next month 5 years ago next Friday 明年 三天前 下周五";
            for r in find(text, today) {
                assert!(r.start <= r.end);
                assert_eq!(&text[r.span.clone()], r.phrase);
            }
        }
        assert_eq!(
            find("tomorrow, next week, next month, next year", NaiveDate::MAX),
            []
        );
    }

    /// Random strings from word pieces, CJK, emoji and any char never make
    /// it panic, and what it finds is in order, on char boundaries and
    /// replaced exactly.
    #[test]
    fn any_text_is_safe() {
        const PIECES: &[&str] = &[
            "last",
            "next",
            "this",
            "on",
            "in",
            "a",
            "couple",
            "of",
            "3",
            "12",
            "days",
            "week",
            "ago",
            "from",
            "now",
            "yesterday",
            "Friday",
            "night",
            " ",
            "  ",
            ",",
            ".",
            "'",
            "’s",
            "-",
            "上",
            "下",
            "这",
            "本",
            "周",
            "星期",
            "礼拜",
            "个",
            "月",
            "年",
            "天",
            "前",
            "后",
            "今",
            "昨",
            "明",
            "去",
            "五",
            "日",
            "末",
            "两",
            "十",
            "三",
            "以",
            "每",
            "🙂",
            "é",
            "\u{301}",
            "İ",
        ];
        let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let mut text = String::new();
            for _ in 0..next() % 24 {
                let r = next();
                if r % 5 == 0 {
                    text.extend(char::from_u32((r >> 8) as u32 % 0x11_0000));
                } else {
                    text.push_str(PIECES[(r >> 8) as usize % PIECES.len()]);
                }
            }
            let found = find(&text, today());
            let mut rebuilt = String::new();
            let mut at = 0;
            for r in &found {
                assert!(
                    at <= r.span.start && r.span.start < r.span.end,
                    "{text:?}: {found:#?}"
                );
                assert_eq!(text.get(r.span.clone()), Some(r.phrase.as_str()));
                assert!(r.start <= r.end);
                rebuilt.push_str(&text[at..r.span.start]);
                rebuilt.push_str(&r.absolute);
                at = r.span.end;
            }
            rebuilt.push_str(&text[at..]);
            assert_eq!(absolutize(&text, today()), rebuilt);
        }
    }
}
