//! Undo of a round of memory/facts.md through the service (issue 39):
//! the facts it added go, the facts it ended are current again, and the
//! Changes view marks the round undone and the one before it next.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use mnemo_core::{Config, Workspace};
use mnemo_service::inspect::{MemoryViewArgs, UndoArgs, UndoWhat};
use mnemo_service::Service;

fn service(root: &Path) -> Arc<Service> {
    let config =
        Config::parse("[embedder]\nkind = \"none\"\n[memory]\ntimezone = \"UTC\"\n").unwrap();
    Service::new(Arc::new(
        mnemo::Mnemo::open(Workspace::new(root), config).unwrap(),
    ))
}

const FACTS: &str = "# Facts\n\n\
- The user lives in Berlin. (f2; about user: home city; since 2026-03-05; recorded 2026-03-05 10:00; by chat:1 4..5)\n\
- The user drinks tea. (f3; about user: drink; since 2026-03-01; recorded 2026-03-01 10:00; by chat:1 1..2, chat:1 5..6)\n\
\n\
## No longer true\n\
\n\
- ~~The user lives in Paris.~~ (f1; about user: home city; since 2026-03-01; until 2026-03-05; superseded by f2; recorded 2026-03-01 10:00; by chat:1 0..1)\n";

const HISTORY: &str = "[2026-03-01 10:00] chat:1 messages 0..2: 2 fact(s) proposed\n\
[memory/facts.md: added f1, f3]\n\
[consolidated from chat:1 messages 0..2]\n\
\n\
[2026-03-05 10:00] chat:1 messages 2..7: 2 fact(s) proposed\n\
[memory/facts.md: replaced f1 by f2; 1 said again]\n\
[consolidated from chat:1 messages 2..7]\n\n";

#[tokio::test]
async fn a_facts_round_is_undone_from_the_changes_view() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("memory")).unwrap();
    std::fs::write(root.join("memory/facts.md"), FACTS).unwrap();
    std::fs::write(root.join("memory/HISTORY.md"), HISTORY).unwrap();
    let svc = service(root);

    let changes = svc.inspect_changes().await.unwrap();
    let marks: Vec<(usize, &str, bool, bool)> = changes
        .entries
        .iter()
        .map(|e| (e.id, e.kind.as_str(), e.undone, e.undo_next))
        .collect();
    assert_eq!(
        marks,
        [(2, "facts", false, true), (1, "facts", false, false)]
    );

    let out = svc
        .undo(UndoArgs {
            what: UndoWhat::Facts,
        })
        .await
        .unwrap();
    assert_eq!(out.undone, "chat:1 messages 2..7");
    assert_eq!(out.removed, ["f2"]);
    assert_eq!(out.restored, ["f1"]);
    assert_eq!(out.lines, 3);

    let memory = svc.inspect_memory(MemoryViewArgs::default()).await.unwrap();
    let facts: Vec<(&str, bool, Vec<&str>)> = memory
        .facts
        .iter()
        .map(|f| {
            (
                f.id.as_str(),
                f.current,
                f.sources.iter().map(|s| s.text.as_str()).collect(),
            )
        })
        .collect();
    assert_eq!(
        facts,
        [
            ("f3", true, vec!["chat:1 1..2"]),
            ("f1", true, vec!["chat:1 0..1"]),
        ]
    );
    let text = std::fs::read_to_string(root.join("memory/facts.md")).unwrap();
    assert!(
        !text.contains("Berlin") && !text.contains("## No longer true"),
        "{text}"
    );

    // The round is undone, the undo has an entry of its own, and the round
    // before is the one to undo next; the audit log says what happened.
    let changes = svc.inspect_changes().await.unwrap();
    let marks: Vec<(usize, &str, bool, bool)> = changes
        .entries
        .iter()
        .map(|e| (e.id, e.kind.as_str(), e.undone, e.undo_next))
        .collect();
    assert_eq!(
        marks,
        [
            (3, "facts_undo", false, false),
            (2, "facts", true, false),
            (1, "facts", false, true)
        ]
    );
    assert!(
        changes.entries[0]
            .body
            .contains("removed f2; current again f1"),
        "{:?}",
        changes.entries[0]
    );
    let undos: Vec<(&str, &str)> = changes
        .audit
        .iter()
        .filter(|c| c.op == "undo")
        .map(|c| (c.memory.as_str(), c.by.as_str()))
        .collect();
    assert_eq!(undos.len(), 3, "{undos:?}");
    assert!(undos.iter().all(|(_, by)| *by == "undo"));

    // Once more: the first round, whose facts all go; then none is left.
    let out = svc
        .undo(UndoArgs {
            what: UndoWhat::Facts,
        })
        .await
        .unwrap();
    assert_eq!(out.removed, ["f1", "f3"]);
    let memory = svc.inspect_memory(MemoryViewArgs::default()).await.unwrap();
    assert!(memory.facts.is_empty(), "{:?}", memory.facts);
    let err = svc
        .undo(UndoArgs {
            what: UndoWhat::Facts,
        })
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no facts round to undo"), "{err}");
}
