//! A tenant's storage is bound to its registration (issue 43 N2): once
//! the workspace is deleted, a request still holding the storage writes
//! nothing and reads nothing, even after the id is registered again, and
//! appends racing the delete leave no row behind for the successor. And a
//! wait for a workspace's lock is not cut by the statement timeout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mnemo_store::{Error, Expect, SessionOptions, Storage};
use mnemo_store_postgres::Database;
use mnemo_test_support::postgres::{fresh_schema, test_url};

#[test]
fn a_deleted_registration_writes_nothing_into_its_successor() {
    let Some(url) = test_url() else { return };
    let db = Database::connect(&url, &fresh_schema()).unwrap();
    let first = db.register("rc3", &[1u8; 32]).unwrap().unwrap();
    let old = db.registered(&first).unwrap();
    old.write("MEMORY.md", "# Memory\n- before\n", Expect::Any)
        .unwrap();
    let mut log = old.open_session("s", &SessionOptions::default()).unwrap();
    log.append_lines(b"{\"role\":\"user\",\"content\":\"before\"}\n", false)
        .unwrap();

    db.delete_workspace("rc3").unwrap();
    let second = db.register("rc3", &[2u8; 32]).unwrap().unwrap();
    let new = db.registered(&second).unwrap();
    new.write("MEMORY.md", "# Memory\n- the new tenant\n", Expect::Absent)
        .unwrap();

    let gone = |r: Result<(), Error>| match r {
        Err(Error::NotFound(m)) => assert!(m.contains("was deleted"), "{m}"),
        other => panic!("a write of the deleted workspace: {other:?}"),
    };
    gone(
        old.write("MEMORY.md", "- MARK-OLD fact\n", Expect::Any)
            .map(|_| ()),
    );
    gone(
        old.write("memory/x.md", "- MARK-OLD fact\n", Expect::Absent)
            .map(|_| ()),
    );
    gone(old.append("memory/HISTORY.md", "MARK-OLD history\n"));
    gone(log.append_lines(
        b"{\"role\":\"assistant\",\"content\":\"MARK-OLD\"}\n",
        false,
    ));
    gone(old.remove("MEMORY.md").map(|_| ()));
    // Its reads find nothing of the successor.
    assert!(old.read("MEMORY.md").unwrap().is_none());
    assert!(old.documents().unwrap().is_empty());

    let text = new.read("MEMORY.md").unwrap().unwrap().text;
    assert_eq!(text, "# Memory\n- the new tenant\n");
    assert!(new.documents().unwrap().len() == 1);
    assert!(new.list_sessions().unwrap().is_empty());
    db.delete_workspace("rc3").unwrap();
}

/// Appends that race a delete and a new registration: each is either
/// acknowledged before the delete (and deleted with it) or refused; the
/// successor never holds one.
#[test]
fn appends_racing_a_delete_leave_nothing_behind() {
    let Some(url) = test_url() else { return };
    let db = Database::connect(&url, &fresh_schema()).unwrap();
    for round in 0..5 {
        let t = db.register("race", &[1u8; 32]).unwrap().unwrap();
        let old = Arc::new(db.registered(&t).unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..3)
            .map(|w| {
                let (old, stop) = (old.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut log = old
                        .open_session(&format!("s{w}"), &SessionOptions::default())
                        .unwrap();
                    let mut n = 0;
                    while !stop.load(Ordering::Relaxed) {
                        let line = format!("{{\"role\":\"user\",\"content\":\"m{n}\"}}\n");
                        let doc = old.append("memory/HISTORY.md", &line);
                        let log = log.append_lines(line.as_bytes(), false);
                        if doc.is_err() && log.is_err() {
                            break;
                        }
                        n += 1;
                    }
                })
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(100));
        db.delete_workspace("race").unwrap();
        let next = db.register("race", &[2u8; 32]).unwrap().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        let new = db.registered(&next).unwrap();
        assert!(
            new.documents().unwrap().is_empty() && new.list_sessions().unwrap().is_empty(),
            "round {round}: the new registration holds the old one's rows"
        );
        db.delete_workspace("race").unwrap();
    }
}

/// Issue 43 N4: a wait for the memory lock lasts as long as its holder's
/// work (a consolidation's model call), past the statement timeout.
#[test]
fn a_lock_wait_outlasts_the_statement_timeout() {
    let Some(url) = test_url() else { return };
    let sep = if url.contains('?') { '&' } else { '?' };
    let url = format!("{url}{sep}options=-c%20statement_timeout%3D300ms");
    let db = Database::connect(&url, &fresh_schema()).unwrap();
    let storage = Arc::new(db.workspace("locks").unwrap());
    let held = storage.lock_memory().unwrap();
    let waiter = std::thread::spawn(move || storage.lock_memory().map(drop));
    std::thread::sleep(std::time::Duration::from_millis(1200));
    drop(held);
    waiter.join().unwrap().unwrap();
}
