//! Parsing of the free-text session dates found in benchmark files into the
//! ISO 8601 timestamps that session logs store.

use chrono::{DateTime, NaiveDate, NaiveDateTime};

/// Date-and-time layouts tried in order. `%d`/`%I` accept one or two digits
/// when parsing, so "8 May" and "08 May" both match.
const DATETIME_FORMATS: &[&str] = &[
    "%I:%M %p on %d %B, %Y",
    "%I:%M %p on %d %b, %Y",
    "%I:%M %p on %B %d, %Y",
    "%I:%M %p on %d %B %Y",
    "%Y-%m-%dT%H:%M:%S%.f",
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%d %H:%M:%S%.f",
    "%Y-%m-%d %H:%M",
    "%Y/%m/%d %H:%M:%S",
    "%Y/%m/%d %H:%M",
    "%d %B %Y, %H:%M",
    "%B %d, %Y %I:%M %p",
];

/// Date-only layouts, taken as midnight.
const DATE_FORMATS: &[&str] = &[
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%Y%m%d",
    "%d %B, %Y",
    "%d %B %Y",
    "%B %d, %Y",
    "%d %b %Y",
    "%b %d, %Y",
];

/// Parses a session date in one of a few common layouts
/// ("1:56 pm on 8 May, 2023", "2023-04-27", RFC 3339, …) into an ISO 8601
/// timestamp. Offsets are kept when given; otherwise the result is a local
/// time without offset, as the source gave it. `None` when no layout fits.
pub fn parse_session_date(raw: &str) -> Option<String> {
    let s = raw.trim();
    if s.is_empty() {
        return None;
    }
    if let Ok(dt) = DateTime::parse_from_rfc3339(s) {
        return Some(dt.to_rfc3339());
    }
    // chrono's %p only knows upper-case AM/PM when parsing in some versions:
    // normalise so "pm" and "PM" both work.
    let normalised = s.replace(" am ", " AM ").replace(" pm ", " PM ");
    for f in DATETIME_FORMATS {
        if let Ok(dt) = NaiveDateTime::parse_from_str(&normalised, f) {
            return Some(dt.format("%Y-%m-%dT%H:%M:%S").to_string());
        }
    }
    for f in DATE_FORMATS {
        if let Ok(d) = NaiveDate::parse_from_str(s, f) {
            return d
                .and_hms_opt(0, 0, 0)
                .map(|dt| dt.format("%Y-%m-%dT%H:%M:%S").to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_layouts() {
        assert_eq!(
            parse_session_date("1:56 pm on 8 May, 2023").as_deref(),
            Some("2023-05-08T13:56:00")
        );
        assert_eq!(
            parse_session_date("10:04 am on 19 June, 2023").as_deref(),
            Some("2023-06-19T10:04:00")
        );
        assert_eq!(
            parse_session_date("12:09 AM on 13 October, 2022").as_deref(),
            Some("2022-10-13T00:09:00")
        );
        assert_eq!(
            parse_session_date("2023-04-27").as_deref(),
            Some("2023-04-27T00:00:00")
        );
        assert_eq!(
            parse_session_date(" 2023-04-27 08:30 ").as_deref(),
            Some("2023-04-27T08:30:00")
        );
        assert_eq!(
            parse_session_date("2023-04-27T08:30:00+02:00").as_deref(),
            Some("2023-04-27T08:30:00+02:00")
        );
        assert_eq!(
            parse_session_date("May 8, 2023").as_deref(),
            Some("2023-05-08T00:00:00")
        );
    }

    #[test]
    fn unknown_layouts_give_none() {
        assert_eq!(parse_session_date(""), None);
        assert_eq!(parse_session_date("last Tuesday"), None);
        assert_eq!(parse_session_date("2023-13-45"), None);
    }
}
