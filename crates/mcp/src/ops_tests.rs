use super::*;

#[test]
fn write_args_parse_by_mode() {
    let a: WriteArgs = serde_json::from_value(json!({"mode": "daily", "text": "x"})).unwrap();
    assert!(matches!(a, WriteArgs::Daily { .. }));
    let a: WriteArgs = serde_json::from_value(
        json!({"mode": "typed", "name": "n", "description": "d", "type": "user", "body": "b"}),
    )
    .unwrap();
    assert!(matches!(a, WriteArgs::Typed { .. }));
    assert!(serde_json::from_value::<WriteArgs>(json!({"mode": "nope", "text": "x"})).is_err());
    assert!(serde_json::from_value::<WriteArgs>(json!({"mode": "daily"})).is_err());
}

#[test]
fn rerank_passages_name_each_hit_with_its_day() {
    let hit = |path: &str, date: Option<&str>| mnemo_index::SearchHit {
        path: path.into(),
        start_line: 3,
        end_line: 3,
        score: 0.5,
        vector_score: None,
        text_score: Some(1.0),
        snippet: "- shipped it".into(),
        source: mnemo_index::Source::Memory,
        citation: format!("{path}#L3-L3"),
        session_key: None,
        message_range: None,
        date: date.map(str::to_string),
    };
    let resp = SearchResponse {
        mode: mnemo_index::SearchMode::Keyword,
        results: vec![
            hit("memory/2026-03-01.md", Some("2026-03-01")),
            hit("MEMORY.md", None),
        ],
        warnings: Vec::new(),
        dates: Vec::new(),
    };
    let p = rerank_passages(&resp, 5);
    assert_eq!(p[0].label, "memory/2026-03-01.md#L3-L3 (2026-03-01)");
    assert_eq!(p[1].label, "MEMORY.md#L3-L3");
    assert_eq!(rerank_passages(&resp, 1).len(), 1);
    // search_json states the day only when there is one.
    let v = search_json(&resp);
    assert_eq!(v["results"][0]["date"], "2026-03-01");
    assert!(v["results"][1].get("date").is_none());
}
