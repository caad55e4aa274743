//! Freshness: whether the index still matches the workspace, found out
//! without reading every file's metadata on each search.
//!
//! What the index knew when it last looked is its [`Stamp`] (stored in the
//! index's metadata by every sync). A search compares it with the workspace
//! at a cost that depends on the number of folders, not of files:
//! - every folder the last walk listed, by its change times: a file created,
//!   deleted or renamed in a folder (and so every atomic save, by mnemo or by
//!   an editor that saves through a temporary file) changes the folder;
//! - the change journal (`mnemo_core::journal`), for appends by mnemo's own
//!   writers (session logs, daily logs, history), which change no folder;
//! - `MEMORY.md` and extra paths naming single files, by their own times
//!   (people edit MEMORY.md in place);
//! - files whose vectors are missing (the embedder failed), retried.
//!
//! What this cannot see is a file edited in place by another program
//! without a folder change. Two things cover it: processes that keep
//! running (`serve`, `mcp`, `chat`, `index --watch`) watch file-system
//! events (`MemoryIndex::keep_fresh`), and every check walks all files once
//! the last walk is older than `[index] reconcile_secs` (0: every search
//! walks, as before this module existed).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use mnemo_core::journal::{self, JournalMark, Since};
use mnemo_core::Workspace;
use serde::{Deserialize, Serialize};

/// The metadata key the stamp is stored under.
pub(crate) const META_KEY: &str = "fresh";

/// Change times of a folder or file: modification and status change (which
/// no program can set back), in nanoseconds, and the size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Times(i64, i64, u64);

/// The times of `path` (following links, as the walk does).
pub(crate) fn times(path: &Path) -> Option<Times> {
    let meta = std::fs::metadata(path).ok()?;
    let ns = |t: std::io::Result<std::time::SystemTime>| {
        t.ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0)
    };
    #[cfg(unix)]
    let changed = {
        use std::os::unix::fs::MetadataExt;
        meta.ctime()
            .saturating_mul(1_000_000_000)
            .saturating_add(meta.ctime_nsec())
    };
    #[cfg(not(unix))]
    let changed = 0;
    Some(Times(ns(meta.modified()), changed, meta.len()))
}

/// What the index knew about the workspace when it last looked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stamp {
    /// The change journal, read up to here (`None`: there was none).
    pub journal: Option<JournalMark>,
    /// Every folder the walk listed (`""` is the workspace root).
    pub dirs: BTreeMap<String, Times>,
    /// Files checked by their own times on every search.
    pub pinned: BTreeMap<String, Option<Times>>,
    /// When every file was last compared, ms since the epoch.
    pub walked_ms: i64,
    /// Some file's vectors were missing after the last sync.
    pub incomplete: bool,
}

impl Stamp {
    pub(crate) fn parse(text: &str) -> Option<Stamp> {
        serde_json::from_str(text).ok()
    }

    pub(crate) fn to_text(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The stamp of a walk that started at `started_ms`, after reading the
    /// journal up to `journal` and the pinned files' times (`pinned`).
    pub(crate) fn of_walk(
        walked: &[(String, Option<Times>)],
        pinned: BTreeMap<String, Option<Times>>,
        journal: Option<JournalMark>,
        started_ms: i64,
    ) -> Stamp {
        Stamp {
            journal,
            dirs: walked
                .iter()
                .filter_map(|(d, t)| t.map(|t| (d.clone(), t)))
                .collect(),
            pinned,
            walked_ms: started_ms,
            incomplete: false,
        }
    }
}

/// The files checked by their own times, with their times now: MEMORY.md
/// and the extra paths that name a file.
pub(crate) fn pinned_times(root: &Path, extra_paths: &[String]) -> BTreeMap<String, Option<Times>> {
    let mut out = BTreeMap::new();
    for name in ["MEMORY.md", "memory.md"] {
        out.insert(name.to_string(), times(&root.join(name)));
    }
    for e in extra_paths {
        let rel = e.trim_matches('/').replace('\\', "/");
        if !rel.is_empty() && !root.join(&rel).is_dir() {
            out.insert(rel.clone(), times(&root.join(&rel)));
        }
    }
    out
}

/// Where to look again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    /// Folders whose times changed (or that are gone).
    pub dirs: BTreeSet<String>,
    /// Files named by the journal, or pinned files whose times changed.
    pub files: BTreeSet<String>,
    /// Retry the files whose vectors are missing.
    pub incomplete: bool,
    /// The journal's end after reading it.
    pub journal: Option<JournalMark>,
}

/// What must happen before a search answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Due {
    /// Nothing changed.
    Nothing,
    /// Compare these folders and files with the index.
    Look(Changes),
    /// Compare every file: no stamp yet, the journal lost track, or the
    /// last walk is older than `reconcile_ms`.
    Walk,
}

/// Compares `stamp` with the workspace: one `stat` per folder and pinned
/// file, one for the journal (and a read of what was added to it).
pub(crate) fn due(ws: &Workspace, stamp: Option<&Stamp>, now_ms: i64, reconcile_ms: i64) -> Due {
    let Some(stamp) = stamp else {
        return Due::Walk;
    };
    if reconcile_ms <= 0 || now_ms.saturating_sub(stamp.walked_ms) >= reconcile_ms {
        return Due::Walk;
    }
    let root = ws.root();
    let mut c = Changes {
        incomplete: stamp.incomplete,
        journal: stamp.journal,
        ..Default::default()
    };
    for (d, t) in &stamp.dirs {
        if times(&root.join(d)).as_ref() != Some(t) {
            c.dirs.insert(d.clone());
        }
    }
    for (p, t) in &stamp.pinned {
        if &times(&root.join(p)) != t {
            c.files.insert(p.clone());
        }
    }
    if journal::moved(ws, stamp.journal.as_ref()) {
        match journal::since(ws, stamp.journal.as_ref()) {
            Since::Paths(paths, end) => {
                c.files.extend(paths);
                c.journal = end;
            }
            Since::Lost => return Due::Walk,
        }
    }
    if c.dirs.contains("") {
        // The root changed: a place (memory/, sessions/, an extra path) may
        // have appeared or gone. Rare; everything is compared.
        return Due::Walk;
    }
    if c.dirs.is_empty() && c.files.is_empty() && !c.incomplete && c.journal == stamp.journal {
        Due::Nothing
    } else {
        Due::Look(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_up() -> (tempfile::TempDir, Workspace, Stamp) {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path());
        std::fs::create_dir_all(ws.state_dir()).unwrap();
        std::fs::create_dir_all(dir.path().join("memory/people")).unwrap();
        std::fs::write(dir.path().join("MEMORY.md"), "core\n").unwrap();
        std::fs::write(dir.path().join("memory/a.md"), "a\n").unwrap();
        let pinned = pinned_times(dir.path(), &[]);
        let mut issues = Vec::new();
        let walked = crate::scan::walk_all(dir.path(), &Default::default(), &mut issues);
        journal::ensure(&ws);
        let stamp = Stamp::of_walk(&walked.dirs, pinned, journal::end(&ws), 1_000);
        assert_eq!(
            stamp.dirs.keys().collect::<Vec<_>>(),
            ["", "memory", "memory/people"]
        );
        (dir, ws, stamp)
    }

    #[test]
    fn nothing_changed_is_nothing_due() {
        let (_dir, ws, stamp) = set_up();
        assert_eq!(due(&ws, Some(&stamp), 2_000, 60_000), Due::Nothing);
        assert_eq!(due(&ws, None, 2_000, 60_000), Due::Walk);
        // Past the reconciliation interval, or with it off: a walk.
        assert_eq!(due(&ws, Some(&stamp), 61_000, 60_000), Due::Walk);
        assert_eq!(due(&ws, Some(&stamp), 2_000, 0), Due::Walk);
        let back = Stamp::parse(&stamp.to_text()).unwrap();
        assert_eq!(back, stamp);
    }

    #[test]
    fn new_files_appends_and_in_place_edits_of_memory_md_are_seen() {
        let (dir, ws, stamp) = set_up();
        // A file created in a sub-folder: that folder changed.
        std::fs::write(dir.path().join("memory/people/bob.md"), "b\n").unwrap();
        let Due::Look(c) = due(&ws, Some(&stamp), 2_000, 60_000) else {
            panic!("a new file must be due")
        };
        assert_eq!(c.dirs, BTreeSet::from(["memory/people".to_string()]));
        assert!(c.files.is_empty());
        // An append by mnemo (the file changes, its folder does not).
        let (dir, ws, stamp) = set_up();
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.path().join("memory/a.md"))
            .unwrap();
        journal::note(&ws, &dir.path().join("memory/a.md"));
        let Due::Look(c) = due(&ws, Some(&stamp), 2_000, 60_000) else {
            panic!("a journaled append must be due")
        };
        assert_eq!(c.files, BTreeSet::from(["memory/a.md".to_string()]));
        assert!(c.journal.is_some() && c.journal != stamp.journal);
        // MEMORY.md edited in place by hand.
        let (dir, ws, stamp) = set_up();
        std::fs::write(dir.path().join("MEMORY.md"), "core, edited\n").unwrap();
        let Due::Look(c) = due(&ws, Some(&stamp), 2_000, 60_000) else {
            panic!("an edited MEMORY.md must be due")
        };
        assert_eq!(c.files, BTreeSet::from(["MEMORY.md".to_string()]));
        // A new folder at the root: everything is compared.
        let (dir, ws, stamp) = set_up();
        std::fs::create_dir_all(dir.path().join("sessions")).unwrap();
        assert_eq!(due(&ws, Some(&stamp), 2_000, 60_000), Due::Walk);
    }
}
