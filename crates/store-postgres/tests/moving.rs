//! A workspace moved to another database (two schemas of the test server
//! stand for two servers here; `crates/http/tests/placement.rs` moves one
//! between two servers under load): the new copy holds every row with its
//! versions, and the old copy refuses every read and write with a busy
//! answer that says to send the request again.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_store::{Error, Expect, SessionOptions, Storage};
use mnemo_store_postgres::Database;
use mnemo_test_support::postgres::{execute, fresh_schema, test_url};

fn refused<T: std::fmt::Debug>(what: &str, r: Result<T, Error>) {
    match r {
        Err(Error::Conflict(m)) => {
            assert!(m.contains("moved to the database server"), "{what}: {m}")
        }
        other => panic!("{what} on the old copy: {other:?}"),
    }
}

#[test]
fn a_moved_workspace_is_whole_on_its_new_server_and_its_old_copy_answers_nothing() {
    let Some(url) = test_url() else { return };
    let (s1, s2) = (fresh_schema(), fresh_schema());
    let registry = Database::connect(&url, &s1).unwrap();
    let other = Database::connect(&url, &s2).unwrap();
    let t = registry.register("mv", &[7u8; 32]).unwrap().unwrap();
    let old = registry.registered(&t).unwrap();
    old.write("MEMORY.md", "# Memory\n- kept\n", Expect::Absent)
        .unwrap();
    old.write(
        "memory/gone.md",
        "- removed before the move\n",
        Expect::Absent,
    )
    .unwrap();
    old.remove("memory/gone.md").unwrap();
    old.append("memory/HISTORY.md", "one\n").unwrap();
    old.append("memory/HISTORY.md", "two\n").unwrap();
    let mut log = old
        .open_session("cli:a", &SessionOptions::default())
        .unwrap();
    for i in 0..5 {
        log.append_lines(
            format!("{{\"role\":\"user\",\"content\":\"m{i}\"}}\n").as_bytes(),
            false,
        )
        .unwrap();
    }
    let before = old.load_session("cli:a").unwrap().unwrap().messages.len();
    let version = old.read("MEMORY.md").unwrap().unwrap().version;

    other.adopt(&t).unwrap();
    let report = registry
        .move_rows(&t, &registry, &other, Some("b"))
        .unwrap();
    assert_eq!((report.documents, report.sessions), (2, 1), "{report:?}");
    assert!(report.lines >= 5, "{report:?}");
    registry.drop_rows("mv").unwrap();

    // The registry places it on b; b's copy is whole, versions included.
    let placed = registry.tenant("mv").unwrap().unwrap();
    assert_eq!(placed.server.as_deref(), Some("b"));
    let new = other.registered(&placed).unwrap();
    let memory = new.read("MEMORY.md").unwrap().unwrap();
    assert_eq!(
        (memory.text.as_str(), &memory.version),
        ("# Memory\n- kept\n", &version)
    );
    assert_eq!(
        new.read("memory/HISTORY.md").unwrap().unwrap().text,
        "one\ntwo\n"
    );
    assert!(new.read("memory/gone.md").unwrap().is_none());
    assert_eq!(
        new.load_session("cli:a").unwrap().unwrap().messages.len(),
        before
    );
    // A compare-and-swap with the version read before the move still holds.
    new.write(
        "MEMORY.md",
        "# Memory\n- kept\n- after\n",
        Expect::Version(version),
    )
    .unwrap();

    // The old copy refuses everything: nothing it answers could be stale.
    refused("read", old.read("MEMORY.md"));
    refused("exists", old.exists("MEMORY.md"));
    refused("documents", old.documents());
    refused("list", old.list("memory"));
    refused("load_session", old.load_session("cli:a"));
    refused("list_sessions", old.list_sessions());
    refused("revision", old.revision());
    refused("write", old.write("MEMORY.md", "x\n", Expect::Any));
    refused("append", old.append("memory/HISTORY.md", "three\n"));
    refused("remove", old.remove("MEMORY.md"));
    refused(
        "append_lines",
        log.append_lines(b"{\"role\":\"user\",\"content\":\"late\"}\n", false),
    );

    // And back: b's copy is then the old one.
    let back = registry
        .move_rows(&placed, &other, &registry, None)
        .unwrap();
    assert!(back.pause_ms >= 0.0);
    other.drop_rows("mv").unwrap();
    let home = registry.tenant("mv").unwrap().unwrap();
    assert_eq!(home.server, None);
    let again = registry.registered(&home).unwrap();
    assert_eq!(
        again.read("MEMORY.md").unwrap().unwrap().text,
        "# Memory\n- kept\n- after\n"
    );
    assert_eq!(
        again.load_session("cli:a").unwrap().unwrap().messages.len(),
        before
    );
    refused("read on b", new.read("MEMORY.md"));
    // Moving it where it is is refused.
    assert!(matches!(
        registry.move_rows(&home, &registry, &registry, None),
        Err(Error::Invalid(_))
    ));

    for s in [s1, s2] {
        let _ = execute(&url, &format!("DROP SCHEMA IF EXISTS {s} CASCADE"));
    }
}
