//! Dates written out in French, German, Spanish, Italian and Portuguese:
//! "le 3 juin", "am 3. Juni 2023", "el 3 de junio", "a giugno", "em maio".

use super::*;

/// Month names of French, German, Spanish, Italian and Portuguese, written
/// in lower case, with their language. Several are ordinary words or names
/// elsewhere ("Mars", "Julio", "Abril"), so they count only next to a day
/// or after a time word of their own language.
pub(super) const LATIN_MONTHS: &[(&str, u32, Lang)] = &[
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
pub(super) enum Lang {
    Fr,
    De,
    Es,
    It,
    Pt,
}

/// Words that put a month name in time, per language ("en juin", "im Juni",
/// "desde marzo", "a giugno", "em maio").
pub(super) fn time_word(lang: Lang, w: &str) -> bool {
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
pub(super) fn is_connector(w: &str) -> bool {
    matches!(w, "de" | "del" | "di" | "do" | "da")
}

/// "3 juin 2023", "le 1er juin", "am 3. Juni 2023", "im März", "el 3 de
/// junio de 2023", "a giugno", "em 5 de maio": day-month-year order with
/// lower-case month names (German capitalises them).
pub(super) fn latin(query: &str, out: &mut Vec<(Period, Range<usize>)>) {
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
