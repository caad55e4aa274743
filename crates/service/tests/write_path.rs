//! The write path through the service, on a workspace with the local
//! embedding model: search puts current facts first and answers as of a
//! day; forget removes a fact from every search; history lists a
//! memory's changes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
use std::sync::Arc;

use mnemo_core::{Config, Workspace};
use mnemo_service::args::SearchArgs;
use mnemo_service::Service;

const FACTS: &str = "# Facts\n\n\
- Lives in Berlin. (f2; since 2026-03-05; recorded 2026-03-05 10:00; by cli:t 4..8)\n\
- Has a cat named Biscuit. (f3; since 2026-03-01)\n\
\n\
## No longer true\n\
\n\
- ~~Lives in Paris.~~ (f1; since 2026-03-01; until 2026-03-05; superseded by f2; recorded 2026-03-01 10:00; by cli:t 0..4)\n";

fn service(root: &std::path::Path) -> Arc<Service> {
    let config = Config::parse(&format!(
        "[embedder]\nkind = \"local\"\nmodel = \"sentence-transformers/all-MiniLM-L6-v2\"\npath = {:?}\nengine = \"fast\"\n[memory]\ntimezone = \"UTC\"\n",
        mnemo_test_support::model_dir().display().to_string()
    ))
    .unwrap();
    Service::new(Arc::new(
        mnemo::Mnemo::open(Workspace::new(root), config).unwrap(),
    ))
}

fn args(query: &str, as_of: Option<&str>) -> SearchArgs {
    SearchArgs {
        query: query.into(),
        max_results: Some(10),
        min_score: Some(0.0),
        as_of: as_of.map(str::to_string),
        ..Default::default()
    }
}

fn lines_found(out: &mnemo_service::output::SearchOutput) -> Vec<String> {
    out.results
        .iter()
        .filter(|h| h.path == "memory/facts.md")
        .map(|h| h.snippet.clone())
        .collect()
}

#[tokio::test]
async fn search_puts_the_current_fact_first_and_answers_as_of_a_day() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("memory")).unwrap();
    std::fs::write(dir.path().join("memory/facts.md"), FACTS).unwrap();
    let svc = service(dir.path());

    let now = svc
        .search(args("where does the user live? Paris", None))
        .await
        .unwrap();
    let found = lines_found(&now);
    let berlin = found
        .iter()
        .position(|s| s.contains("Berlin"))
        .expect("Berlin found");
    let paris = found
        .iter()
        .position(|s| s.contains("Paris"))
        .expect("Paris still found");
    assert!(berlin < paris, "the current fact first: {found:#?}");

    let then = svc
        .search(args("where does the user live?", Some("2026-03-02")))
        .await
        .unwrap();
    let found = lines_found(&then);
    assert!(found.iter().any(|s| s.contains("Paris")), "{found:#?}");
    assert!(!found.iter().any(|s| s.contains("Berlin")), "{found:#?}");

    let err = svc
        .search(args("where", Some("last tuesday")))
        .await
        .unwrap_err();
    assert_eq!(err.code(), mnemo_core::ErrorCode::InvalidInput);
    assert!(err.to_string().contains("YYYY-MM-DD"), "{err}");
}

/// A typed memory with a line a dream folded into it and one a
/// retraction ended.
const HOBBY: &str = "---\nname: Hobby\ndescription: what the user does for fun\ntype: user\n---\n\n\
- Hobby: go (since 2026-02-10; from memory/2026-02-10.md)\n\
\n\
## No longer true\n\
\n\
- ~~Hobby: chess~~ (since 2026-02-01; until 2026-02-05; retracted by memory/2026-02-05.md; from memory/2026-02-01.md)\n";

#[tokio::test]
async fn search_puts_a_typed_memory_s_retracted_line_after_its_current_one() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("memory")).unwrap();
    std::fs::write(dir.path().join("memory/hobby.md"), HOBBY).unwrap();
    let svc = service(dir.path());
    let found = |out: &mnemo_service::output::SearchOutput| -> Vec<String> {
        out.results
            .iter()
            .filter(|h| h.path == "memory/hobby.md")
            .map(|h| h.snippet.clone())
            .collect()
    };

    let now = svc
        .search(args("what is the user's hobby? chess", None))
        .await
        .unwrap();
    let hits = found(&now);
    let go = hits
        .iter()
        .position(|s| s.contains("Hobby: go"))
        .expect("the current line found");
    let chess = hits
        .iter()
        .position(|s| s.contains("chess"))
        .expect("the retracted line still found, as history");
    assert!(go < chess, "the current line first: {hits:#?}");

    // As of a day the retracted line held, it is the answer.
    let then = svc
        .search(args("what is the user's hobby?", Some("2026-02-03")))
        .await
        .unwrap();
    let hits = found(&then);
    assert!(hits.iter().any(|s| s.contains("chess")), "{hits:#?}");
    assert!(!hits.iter().any(|s| s.contains("Hobby: go")), "{hits:#?}");
}

#[tokio::test]
async fn a_forgotten_fact_is_found_by_no_search() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("memory")).unwrap();
    std::fs::write(
        dir.path().join("memory/facts.md"),
        "# Facts\n\n- The garage door code is 4711-ZEBRA. (f1; since 2026-03-01)\n- Likes green tea. (f2; since 2026-03-01)\n",
    )
    .unwrap();
    let svc = service(dir.path());
    let mnemo_only = |q: &str| SearchArgs {
        query: q.into(),
        max_results: Some(20),
        min_score: Some(0.0),
        ..Default::default()
    };
    let before = svc.search(mnemo_only("garage door code")).await.unwrap();
    assert!(
        before
            .results
            .iter()
            .any(|h| h.snippet.contains("4711-ZEBRA")),
        "{:#?}",
        before.results
    );

    let out = svc
        .forget(mnemo_service::args::ForgetArgs { name: "f1".into() })
        .await
        .unwrap();
    assert_eq!(out.removed, "memory/facts.md#f1");
    let text = std::fs::read_to_string(dir.path().join("memory/facts.md")).unwrap();
    assert!(
        !text.contains("4711") && text.contains("Likes green tea."),
        "{text}"
    );
    // No search finds it: by its words, by its identifier, by meaning.
    for q in [
        "garage door code",
        "4711-ZEBRA",
        "ZEBRA",
        "the code to open the garage",
    ] {
        let found = svc.search(mnemo_only(q)).await.unwrap();
        assert!(
            !found
                .results
                .iter()
                .any(|h| h.snippet.contains("4711") || h.snippet.contains("ZEBRA")),
            "{q}: {:#?}",
            found.results
        );
    }
    // Nor is the text in any derived file, the audit log included.
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                let hay = String::from_utf8_lossy(&bytes);
                assert!(
                    !hay.contains("4711-ZEBRA"),
                    "{} still holds the forgotten fact",
                    p.display()
                );
            }
        }
    }
    // The history says it was forgotten, without what it said.
    let h = svc
        .memory_history(mnemo_service::args::MemoryHistoryArgs { name: "f1".into() })
        .await
        .unwrap();
    assert_eq!(h.changes.last().map(|c| c.op.as_str()), Some("forget"));
    assert!(h.fact.is_none());
    let err = svc
        .memory_history(mnemo_service::args::MemoryHistoryArgs { name: "f99".into() })
        .await
        .unwrap_err();
    assert_eq!(err.code(), mnemo_core::ErrorCode::NotFound);
}

#[tokio::test]
async fn typed_memory_writes_are_in_their_history() {
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path());
    for (text, replace) in [
        ("Prefers green tea.", false),
        ("Prefers oolong.", true),
        ("Prefers oolong.", true),
    ] {
        let args: mnemo_service::args::WriteArgs = serde_json::from_value(serde_json::json!({
            "name": "Tea", "type": "user", "text": text, "replace": replace
        }))
        .unwrap();
        svc.write(args).await.unwrap();
    }
    let h = svc
        .memory_history(mnemo_service::args::MemoryHistoryArgs { name: "tea".into() })
        .await
        .unwrap();
    // The third write changed nothing and is not a change.
    assert_eq!(h.changes.len(), 2, "{:#?}", h.changes);
    assert_eq!(h.changes[0].old, None);
    assert_eq!(h.changes[1].old.as_deref(), Some("Prefers green tea."));
    assert_eq!(h.changes[1].new.as_deref(), Some("Prefers oolong."));
    assert!(h
        .changes
        .iter()
        .all(|c| c.op == "write" && c.by == "memory_write"));
}
