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

mod english;
mod latin;
mod numeric;
mod relative;

use english::*;
use latin::*;
use numeric::*;
use relative::*;

/// Days after a named period at which a chunk keeps half its date affinity:
/// people talk about what happened days later ("last week we went …").
const AFTER_HALF_LIFE_DAYS: f32 = 7.0;
/// Days before it, for plans talked about ahead of time: a shorter reach.
const BEFORE_HALF_LIFE_DAYS: f32 = 2.0;
/// Affinities below this count as none.
const MIN_AFFINITY: f32 = 0.05;

/// A period named in a query. A missing year matches any year.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    /// One day (`month` 1-12, `day` 1-31).
    Day {
        /// `None`: any year.
        year: Option<i32>,
        /// 1-12.
        month: u32,
        /// 1-31.
        day: u32,
    },
    /// A whole month.
    Month {
        /// `None`: any year.
        year: Option<i32>,
        /// 1-12.
        month: u32,
    },
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
    pub fn describe(&self) -> String {
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
pub fn affinity(periods: &[Period], first: NaiveDate, last: NaiveDate) -> f32 {
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
pub fn date_in_path(path: &str) -> Option<NaiveDate> {
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
pub struct Dates {
    /// The periods the query names.
    pub periods: Vec<Period>,
    /// The query with written-out dates replaced by spaces (relative
    /// phrases such as "yesterday" stay).
    pub rest: String,
}

/// The periods named in `query`; relative phrases are resolved against
/// `today`. Bare years ("in 2023") are left out: they rarely tell one memory
/// from another.
pub fn dates(query: &str, today: NaiveDate) -> Dates {
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

#[cfg(test)]
mod tests;
