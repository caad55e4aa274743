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
        "3", "31", "2023", " ", "-", ".", "de", "juin", "Juni", "mars", "May", "of", "月", "日",
        "年", "월", "일", "년", "十", "il y a", "vor", "hace", "fa", "jours", "hier", "ieri", "é",
        "🙂", "ago", "days", "上周", "昨日",
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
