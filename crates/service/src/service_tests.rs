use super::*;

fn hit(path: &str, date: Option<&str>) -> SearchHit {
    SearchHit {
        path: path.into(),
        start_line: 3,
        end_line: 3,
        score: 0.123456,
        vector_score: None,
        text_score: Some(1.0),
        snippet: "- shipped it".into(),
        source: mnemo_index::Source::Memory,
        citation: format!("{path}#L3-L3"),
        session_key: None,
        message_range: None,
        date: date.map(str::to_string),
        trace: None,
    }
}

#[test]
fn rerank_passages_name_each_hit_with_its_day() {
    let resp = SearchResponse {
        mode: mnemo_index::SearchMode::Keyword,
        results: vec![
            hit("memory/2026-03-01.md", Some("2026-03-01")),
            hit("MEMORY.md", None),
        ],
        warnings: Vec::new(),
        dates: Vec::new(),
        focus: None,
    };
    let p = rerank_passages(&resp, 5);
    assert_eq!(p[0].label, "memory/2026-03-01.md#L3-L3 (2026-03-01)");
    assert_eq!(p[1].label, "MEMORY.md#L3-L3");
    assert_eq!(rerank_passages(&resp, 1).len(), 1);
    // The answer states the day only when there is one, rounds scores, and
    // cites `path#Lx-Ly` as `mnemo get` opens it.
    let v = serde_json::to_value(SearchOutput::from_response(&resp, None)).unwrap();
    assert_eq!(v["results"][0]["date"], "2026-03-01");
    assert!(v["results"][1].get("date").is_none());
    assert_eq!(
        v["results"][0]["score"].as_f64().map(|s| (s * 1e4).round()),
        Some(1235.0)
    );
    assert_eq!(v["results"][1]["citation"], "MEMORY.md#L3-L3");
    assert_eq!(v["mode"], "keyword");
    assert!(v.get("reranked").is_none());
}

#[test]
fn a_failed_rerank_keeps_the_index_order() {
    let mut resp = SearchResponse {
        mode: mnemo_index::SearchMode::Hybrid,
        results: vec![hit("a.md", None), hit("b.md", None), hit("c.md", None)],
        warnings: Vec::new(),
        dates: Vec::new(),
        focus: None,
    };
    let applied = apply_rerank(
        &mut resp,
        RerankOutcome {
            order: vec![2, 0],
            ..Default::default()
        },
    );
    assert!(applied);
    let order: Vec<&str> = resp.results.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(order, ["c.md", "a.md", "b.md"]);
    let failed = apply_rerank(
        &mut resp,
        RerankOutcome {
            error: Some("down".into()),
            ..Default::default()
        },
    );
    assert!(!failed);
    assert!(resp.warnings[0].contains("down"));

    // The budget ran out after two judgements: those two move, the rest
    // stay, and the warning says how far the model read.
    resp.warnings.clear();
    let partial = apply_rerank(
        &mut resp,
        RerankOutcome {
            order: vec![1, 0, 2],
            judged: 2,
            timed_out: true,
            ..Default::default()
        },
    );
    assert!(partial);
    let order: Vec<&str> = resp.results.iter().map(|h| h.path.as_str()).collect();
    assert_eq!(order, ["a.md", "c.md", "b.md"]);
    assert!(
        resp.warnings[0].contains("read 2 of 3"),
        "{:?}",
        resp.warnings
    );
    let none = apply_rerank(
        &mut resp,
        RerankOutcome {
            order: vec![0, 1, 2],
            timed_out: true,
            ..Default::default()
        },
    );
    assert!(!none);
    assert!(resp.warnings[1].contains("did not answer in time"));
}

#[test]
fn session_lines_are_read_as_cited() {
    let out = slice_lines("sessions/a.jsonl", "l1\nl2\nl3\n", Some(2), Some(1));
    assert_eq!(out.text, "l2");
    assert_eq!((out.from, out.lines, out.total_lines), (2, 1, 3));
    let all = slice_lines("sessions/a.jsonl", "l1\nl2", None, None);
    assert_eq!(all.text, "l1\nl2");
}
