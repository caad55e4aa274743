//! Dates relative to today: "yesterday", "last week", "3 days ago", "on
//! Monday" and their French, German, Spanish, Italian, Portuguese,
//! Japanese, Korean and Chinese forms ("hier", "vor 3 Tagen", "el lunes
//! pasado", "先週の金曜日", "지난주", "上周五").

use super::*;

pub(super) const WEEKDAYS: [&str; 7] = [
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
pub(super) fn has_words(lower: &str, w: &str) -> bool {
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
pub(super) const OTHER_WEEKDAYS: [&[&str]; 7] = [
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
pub(super) fn latest_weekday(today: NaiveDate, wd: usize, before_today: bool) -> NaiveDate {
    let back = i64::from((today.weekday().num_days_from_monday() + 7 - wd as u32) % 7);
    today - Duration::days(if back == 0 && before_today { 7 } else { back })
}

/// Weekdays of [`OTHER_WEEKDAYS`]: alone, the latest such day up to today
/// (as "on Monday"); with the language's "last" ("lundi dernier", "letzten
/// Montag", "el lunes pasado", "lunedì scorso", "segunda-feira passada"),
/// the latest before today; after "last week" ("先週の月曜日", "지난주
/// 월요일"), that day of last week.
pub(super) fn other_weekdays(
    lower: &str,
    today: NaiveDate,
    week_start: NaiveDate,
    out: &mut Vec<Period>,
) {
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
pub(super) enum Rel {
    Today,
    Yesterday,
    BeforeYesterday,
    LastWeek,
    LastMonth,
}

/// The same words in French, German, Spanish, Italian and Portuguese.
/// French "hier" is not listed: it is German for "here" (see
/// [`latin_relative`]).
pub(super) const LATIN_RELATIVE: &[(&str, Rel)] = &[
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
pub(super) const FRENCH_WORDS: &[&str] = &[
    "je", "j", "nous", "vous", "avons", "avez", "ai", "est", "le", "la", "les", "des", "du", "que",
    "qu", "quoi", "on", "de", "dit", "fait",
];
pub(super) const GERMAN_WORDS: &[&str] = &[
    "ich", "wir", "ihr", "haben", "hat", "habe", "ist", "der", "die", "das", "und", "was", "wo",
    "wie", "ein", "eine", "nicht",
];

/// The relative periods `lower` names in the languages of
/// [`LATIN_RELATIVE`], and French "hier" when the query reads as French.
pub(super) fn latin_relative(lower: &str) -> Vec<Rel> {
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
pub(super) fn latin_count(w: &str) -> Option<i64> {
    match w {
        "un" | "une" | "einem" | "einer" | "una" | "uno" | "um" | "uma" => Some(1),
        "deux" | "zwei" | "dos" | "due" | "dois" | "duas" => Some(2),
        "trois" | "drei" | "tres" | "tre" | "três" => Some(3),
        _ => w.parse().ok().filter(|n| (1..=366).contains(n)),
    }
}

/// Days per unit of those phrases: days or weeks.
pub(super) fn latin_unit(w: &str) -> Option<i64> {
    match w {
        "jour" | "jours" | "tag" | "tagen" | "día" | "días" | "dia" | "dias" | "giorno"
        | "giorni" => Some(1),
        "semaine" | "semaines" | "woche" | "wochen" | "semana" | "semanas" | "settimana"
        | "settimane" => Some(7),
        _ => None,
    }
}

pub(super) fn relative(query: &str, today: NaiveDate, out: &mut Vec<Period>) {
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
