//! Metric checks on rankings whose scores were computed by hand.

use super::*;

fn v(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn partial_evidence_hand_computed() {
    let r = v(&["a", "b", "c", "d"]);
    let e = v(&["c", "e"]);
    assert_eq!(any_at_k(&r, &e, 1), 0.0);
    assert_eq!(any_at_k(&r, &e, 3), 1.0);
    assert_eq!(all_at_k(&r, &e, 3), 0.0);
    assert_eq!(all_at_k(&r, &e, 50), 0.0);
    assert_eq!(recall_at_k(&r, &e, 2), 0.0);
    assert_eq!(recall_at_k(&r, &e, 3), 0.5);
    assert_eq!(recall_at_k(&r, &e, 50), 0.5);
    assert!(close(reciprocal_rank(&r, &e), 1.0 / 3.0));
    // DCG = 1/log2(4) = 0.5; IDCG = 1 + 1/log2(3).
    let want = 0.5 / (1.0 + 1.0 / 3f64.log2());
    assert!(
        close(ndcg_at_k(&r, &e, 10), want),
        "{}",
        ndcg_at_k(&r, &e, 10)
    );
    // Outside the cut-off it gains nothing.
    assert_eq!(ndcg_at_k(&r, &e, 2), 0.0);
}

#[test]
fn all_evidence_first_is_perfect() {
    let r = v(&["x", "y", "z"]);
    let e = v(&["y", "x"]);
    assert_eq!(all_at_k(&r, &e, 2), 1.0);
    assert_eq!(recall_at_k(&r, &e, 1), 0.5);
    assert!(close(ndcg_at_k(&r, &e, 10), 1.0));
    assert_eq!(reciprocal_rank(&r, &e), 1.0);
}

#[test]
fn duplicates_count_once() {
    // The repeated `a` does not push `c` down to rank 3.
    let r = v(&["a", "a", "c"]);
    let e = v(&["c", "c"]);
    assert_eq!(any_at_k(&r, &e, 2), 1.0);
    assert_eq!(all_at_k(&r, &e, 2), 1.0);
    assert_eq!(recall_at_k(&r, &e, 2), 1.0);
    assert_eq!(reciprocal_rank(&r, &e), 0.5);
    // DCG = 1/log2(3); IDCG (one distinct evidence unit) = 1.
    assert!(close(ndcg_at_k(&r, &e, 10), 1.0 / 3f64.log2()));
    // A ranking that repeats the evidence cannot exceed 1.
    let r = v(&["c", "c", "c"]);
    assert_eq!(recall_at_k(&r, &e, 3), 1.0);
    assert!(close(ndcg_at_k(&r, &e, 10), 1.0));
}

#[test]
fn empty_evidence_and_empty_ranking() {
    let e: Vec<String> = Vec::new();
    let r = v(&["a"]);
    assert_eq!(any_at_k(&r, &e, 5), 0.0);
    assert_eq!(all_at_k(&r, &e, 5), 0.0);
    assert_eq!(recall_at_k(&r, &e, 5), 0.0);
    assert_eq!(ndcg_at_k(&r, &e, 10), 0.0);
    assert_eq!(budget_recall(&[], &e, 1000), 0.0);
    assert!(MetricSpec::default().score(&[], &e).is_none());

    let none: Vec<String> = Vec::new();
    let e = v(&["a"]);
    assert_eq!(reciprocal_rank(&none, &e), 0.0);
    assert_eq!(any_at_k(&none, &e, 50), 0.0);
    assert_eq!(ndcg_at_k(&none, &e, 10), 0.0);
}

#[test]
fn k_larger_than_ranking() {
    let r = v(&["b", "a"]);
    let e = v(&["a"]);
    assert_eq!(any_at_k(&r, &e, 50), 1.0);
    assert_eq!(all_at_k(&r, &e, 50), 1.0);
    assert_eq!(recall_at_k(&r, &e, 50), 1.0);
    let e = v(&["a", "q"]);
    assert_eq!(all_at_k(&r, &e, 50), 0.0);
    assert_eq!(recall_at_k(&r, &e, 50), 0.5);
}

#[test]
fn unit_ranking_keeps_first_appearance_and_in_hit_order() {
    let hits = vec![
        RankedHit {
            units: v(&["b", "c"]),
            tokens: 10,
        },
        RankedHit {
            units: v(&["a", "c"]),
            tokens: 10,
        },
        RankedHit {
            units: vec![],
            tokens: 10,
        },
        RankedHit {
            units: v(&["b", "d"]),
            tokens: 10,
        },
    ];
    assert_eq!(unit_ranking(&hits), v(&["b", "c", "a", "d"]));
}

#[test]
fn budget_recall_reads_whole_hits_within_budget() {
    let hits = vec![
        RankedHit {
            units: v(&["a"]),
            tokens: 500,
        },
        RankedHit {
            units: v(&["c"]),
            tokens: 600,
        },
        RankedHit {
            units: v(&["e"]),
            tokens: 100,
        },
    ];
    let e = v(&["c", "e"]);
    assert_eq!(budget_recall(&hits, &e, 1000), 0.0);
    assert_eq!(budget_recall(&hits, &e, 1100), 0.5);
    assert_eq!(budget_recall(&hits, &e, 1200), 1.0);
    assert_eq!(budget_recall(&hits, &e, 4000), 1.0);
}

#[test]
fn token_estimate() {
    assert_eq!(estimate_tokens(""), 0);
    assert_eq!(estimate_tokens("abcd"), 1);
    assert_eq!(estimate_tokens("abcde"), 2);
    assert_eq!(estimate_tokens("钢琴abcd"), 3);
}

#[test]
fn spec_scores_in_name_order_and_means() {
    let spec = MetricSpec {
        ks: vec![1, 5],
        ndcg_k: 10,
        token_budgets: vec![100],
    };
    assert_eq!(
        spec.names(),
        v(&[
            "any@1",
            "any@5",
            "all@1",
            "all@5",
            "recall@1",
            "recall@5",
            "mrr",
            "ndcg@10",
            "recall@100tok"
        ])
    );
    let hits = vec![
        RankedHit {
            units: v(&["x"]),
            tokens: 60,
        },
        RankedHit {
            units: v(&["y"]),
            tokens: 60,
        },
    ];
    let a = spec.score(&hits, &v(&["y"])).unwrap();
    assert_eq!(a.get("any@1"), Some(0.0));
    assert_eq!(a.get("any@5"), Some(1.0));
    assert_eq!(a.get("mrr"), Some(0.5));
    assert_eq!(a.get("recall@100tok"), Some(0.0));
    let b = spec.score(&hits, &v(&["x"])).unwrap();
    assert_eq!(b.get("recall@100tok"), Some(1.0));
    let mut mean = MetricMean::default();
    mean.add(&a);
    mean.add(&b);
    assert_eq!(mean.count(), 2);
    let m = mean.mean();
    assert_eq!(m.get("any@1"), Some(0.5));
    assert_eq!(m.get("mrr"), Some(0.75));
    assert_eq!(m.get("nope"), None);
    let json = serde_json::to_string(&m).unwrap();
    assert!(json.starts_with("{\"any@1\":0.5,\"any@5\":1.0"), "{json}");
}
