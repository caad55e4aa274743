//! Forget through the service (issue 43 N7): a fact a dream merged with
//! its duplicate is found by no search once forgotten, neither in the
//! ended duplicate nor in the dream's diff in the history; and a broken
//! local model file is reported as such (N13), not as "no chat model".
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_core::Coded;
use std::path::Path;
use std::sync::Arc;

use mnemo_core::{Config, Workspace};
use mnemo_service::args::{ForgetArgs, SearchArgs};
use mnemo_service::Service;

fn service(root: &Path, extra: &str) -> Arc<Service> {
    let config = Config::parse(&format!(
        "[embedder]\nkind = \"none\"\n[memory]\ntimezone = \"UTC\"\n{extra}"
    ))
    .unwrap();
    Service::new(Arc::new(
        mnemo::Mnemo::open(Workspace::new(root), config).unwrap(),
    ))
}

async fn hits(svc: &Arc<Service>, query: &str) -> Vec<String> {
    svc.search(SearchArgs {
        query: query.into(),
        max_results: Some(20),
        min_score: Some(0.0),
        ..Default::default()
    })
    .await
    .unwrap()
    .results
    .into_iter()
    .filter(|h| h.snippet.contains("4242"))
    .map(|h| format!("{}: {}", h.citation, h.snippet))
    .collect()
}

/// Every file under `dir` whose bytes hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                if String::from_utf8_lossy(&bytes).contains(needle) {
                    found.push(p.strip_prefix(dir).unwrap().display().to_string());
                }
            }
        }
    }
    found
}

#[tokio::test]
async fn a_forgotten_fact_stays_gone_after_a_dream_merged_it() {
    // The probe's forget_leak.sh: two near-duplicate facts, merged by a
    // dream (one ends, superseded by the other; the diff goes to the
    // history), then the current one forgotten.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("memory")).unwrap();
    std::fs::write(
        dir.path().join("memory/facts.md"),
        "- The user's locker code is FORGET-FACT-4242. (f1; since 2026-11-01; recorded 2026-11-01 10:00; by cli:direct 0..2)\n\
         - The user's locker code is FORGET-FACT-4242 (f2; since 2026-11-02; recorded 2026-11-02 10:00; by cli:direct 2..4)\n\
         - Likes green tea. (f3; since 2026-11-01)\n",
    )
    .unwrap();
    let svc = service(dir.path(), "");
    let dream = svc.dream(false).await.unwrap();
    assert_eq!(dream.merged.len(), 1, "{dream:?}");
    let history = std::fs::read_to_string(dir.path().join("memory/HISTORY.md")).unwrap();
    assert!(history.contains("FORGET-FACT-4242"), "{history}");
    assert!(!hits(&svc, "FORGET-FACT-4242").await.is_empty());

    let (ended, kept) = &dream.merged[0];
    let out = svc.forget(ForgetArgs { name: kept.clone() }).await.unwrap();
    assert_eq!(out.removed, format!("memory/facts.md#{kept}"));
    assert_eq!(
        hits(&svc, "FORGET-FACT-4242").await,
        Vec::<String>::new(),
        "a search still finds the forgotten text"
    );
    assert_eq!(hits(&svc, "locker code").await, Vec::<String>::new());
    assert_eq!(
        files_holding(dir.path(), "FORGET-FACT-4242"),
        Vec::<String>::new()
    );
    let facts = std::fs::read_to_string(dir.path().join("memory/facts.md")).unwrap();
    assert!(
        !facts.contains(&format!("({ended};")) && facts.contains("Likes green tea."),
        "{facts}"
    );

    // Undoing the dream now cannot bring the text back.
    let _ = svc.dream(true).await;
    assert_eq!(
        files_holding(dir.path(), "FORGET-FACT-4242"),
        Vec::<String>::new()
    );
    assert_eq!(hits(&svc, "FORGET-FACT-4242").await, Vec::<String>::new());
}

#[tokio::test]
async fn a_forget_leaves_no_memory_md_line_in_the_merge_guards_list() {
    // Before it kept digests, `.mnemo/engine/memory-lines.json` held the
    // MEMORY.md lines consolidation wrote, lower-cased, word for word; a
    // forget rewrites such a file without its text.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("memory")).unwrap();
    std::fs::write(
        dir.path().join("memory/facts.md"),
        "- The user's locker code is FORGET-FACT-4242. (f1; since 2026-11-01)\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("MEMORY.md"),
        "# Memory\n\n- The user's locker code is FORGET-FACT-4242\n",
    )
    .unwrap();
    let lines = dir.path().join(".mnemo/engine/memory-lines.json");
    std::fs::create_dir_all(lines.parent().unwrap()).unwrap();
    std::fs::write(
        &lines,
        r#"{"consolidated_lines": ["the user's locker code is forget-fact-4242"]}"#,
    )
    .unwrap();
    let svc = service(dir.path(), "");
    svc.forget(ForgetArgs { name: "f1".into() }).await.unwrap();
    let after = std::fs::read_to_string(&lines).unwrap();
    assert!(
        !after.to_lowercase().contains("forget-fact-4242"),
        "{after}"
    );
    assert!(after.contains("line_sha256"), "{after}");
    assert_eq!(
        files_holding(dir.path(), "FORGET-FACT-4242"),
        Vec::<String>::new()
    );
}

#[tokio::test]
async fn a_broken_local_model_file_is_named_first() {
    let dir = tempfile::tempdir().unwrap();
    let model = dir.path().join("broken.gguf");
    std::fs::write(&model, "this is not a model\n").unwrap();
    let svc = service(
        dir.path(),
        &format!(
            "[provider]\nkind = \"local\"\npath = {:?}\ndownload = false\n",
            model.display().to_string()
        ),
    );
    let Err(err) = svc.engine() else {
        panic!("an engine over a broken model file");
    };
    let text = err.to_string();
    let head = format!("the model file {} could not be loaded: ", model.display());
    assert!(text.starts_with(&head), "{text}");
    assert!(text.contains("re-download it"), "{text}");
    assert!(!text.contains("no chat model is configured"), "{text}");
    assert_eq!(err.code(), mnemo_core::ErrorCode::Config);
}

#[tokio::test]
async fn forgetting_again_after_a_crash_finishes_the_index() {
    // A forget killed after the facts file changed and before the index
    // did (issue 43 N8): the text is gone from the files, not from
    // `.mnemo/`. Forgetting again finds no fact, and still finishes.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("memory")).unwrap();
    let facts = dir.path().join("memory/facts.md");
    std::fs::write(
        &facts,
        "# Facts\n\n- The garage door code is 4711-ZEBRA. (f1; since 2026-03-01)\n- Likes green tea. (f2; since 2026-03-01)\n",
    )
    .unwrap();
    let svc = service(dir.path(), "");
    let found = svc
        .search(SearchArgs {
            query: "4711-ZEBRA".into(),
            min_score: Some(0.0),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(!found.results.is_empty());
    std::fs::write(
        &facts,
        "# Facts\n\n- Likes green tea. (f2; since 2026-03-01)\n",
    )
    .unwrap();
    assert!(
        files_holding(dir.path(), "4711-ZEBRA")
            .iter()
            .any(|f| f.starts_with(".mnemo")),
        "the index should still hold the text before the second forget"
    );
    let err = svc
        .forget(ForgetArgs { name: "f1".into() })
        .await
        .unwrap_err();
    assert_eq!(err.code(), mnemo_core::ErrorCode::NotFound, "{err}");
    assert_eq!(
        files_holding(dir.path(), "4711-ZEBRA"),
        Vec::<String>::new()
    );
}

/// Forgetting a typed memory by its path (as the inspector's page does)
/// records the forget under the memory's name, where its history is.
#[tokio::test]
async fn a_typed_memory_forgotten_by_its_path_has_the_forget_in_its_history() {
    use mnemo_service::args::{MemoryHistoryArgs, WriteArgs};
    let dir = tempfile::tempdir().unwrap();
    let svc = service(dir.path(), "");
    let saved = svc
        .write(
            serde_json::from_value::<WriteArgs>(serde_json::json!({
                "mode": "typed", "name": "Green Tea", "type": "user",
                "description": "what the user drinks", "text": "Prefers green tea."
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let path = serde_json::to_value(&saved).unwrap()["path"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        path.starts_with("memory/") && path.ends_with(".md"),
        "{path}"
    );
    svc.forget(ForgetArgs { name: path.clone() }).await.unwrap();
    let history = svc
        .memory_history(MemoryHistoryArgs {
            name: "Green Tea".into(),
        })
        .await
        .unwrap();
    let ops: Vec<(String, String)> = history
        .changes
        .iter()
        .map(|c| (c.op.clone(), c.memory.clone()))
        .collect();
    assert_eq!(
        ops,
        [
            ("write".to_string(), "Green Tea".to_string()),
            ("forget".to_string(), "Green Tea".to_string())
        ],
        "{path}"
    );
}
