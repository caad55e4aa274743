//! Dates in digits and CJK writing: ISO dates (`2023-06-03`, `2023/06/03`,
//! `2023-06`) and Chinese, Japanese and Korean dates (`2023年6月3日`,
//! `6月3号`, `五月三日`, `5월 2일`).

use super::*;

/// `2023-06-03`, `2023/06/03`, `2023-06`.
pub(super) fn iso(query: &str, out: &mut Vec<(Period, Range<usize>)>) {
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
pub(super) fn cjk(query: &str, out: &mut Vec<(Period, Range<usize>)>) {
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
pub(super) fn digit_value(c: char) -> Option<u32> {
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

pub(super) fn is_number_char(c: char) -> bool {
    c == '十' || digit_value(c).is_some()
}

/// A number in digits ("12", "２０２３", "二〇二三") or in Chinese numerals
/// up to 99 ("十", "十二", "二十", "三十一").
pub(super) fn cjk_number(s: &[char]) -> Option<u32> {
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
