//! The change journal, `.mnemo/changes.log`: one workspace-relative path per
//! line, appended by mnemo's own writers each time they append to a memory
//! file or a session log.
//!
//! Why it exists: the search index checks for changes without reading every
//! file's metadata (mnemo-index, `fresh`). A file created, deleted, renamed
//! or replaced atomically changes its folder's times, which the index reads;
//! an append changes only the file itself. Every append mnemo makes is
//! therefore noted here, and the index reads the lines added since it last
//! looked.
//!
//! The journal is a hint, never the truth: it lives in `.mnemo/` (derived
//! state), is written only once the index created it ([`ensure`]; a
//! workspace never indexed needs no hints, and its journal cannot grow
//! unread), and failing to write it costs nothing but a later discovery of
//! that change (at the index's next full walk). Readers stand
//! at a [`JournalMark`]; the index empties the journal in place when it has
//! grown large, right before it walks every file, so nothing noted before
//! the truncation can be missed, and writers keep their open handle.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::workspace::Workspace;

/// The journal's file name inside `.mnemo/`.
pub const JOURNAL_FILE: &str = "changes.log";

/// How long a writer trusts its open handle before checking that the path
/// still names the same file (someone may have deleted `.mnemo/`).
const HANDLE_TTL: Duration = Duration::from_secs(1);

/// Where a reader stands: the journal file's identity and the byte offset
/// up to which it has read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalMark {
    /// The file's identity (its inode on Unix); a new file means the old
    /// one's lines are gone.
    pub id: u64,
    /// Bytes read.
    pub offset: u64,
}

/// What the journal says since a mark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    /// The paths noted since the mark (in order, repeats kept), and the new
    /// mark to store once they are handled (`None`: still no journal).
    Paths(Vec<String>, Option<JournalMark>),
    /// The journal was replaced, emptied or removed since the mark: what
    /// was noted in between cannot be known.
    Lost,
}

fn journal_path(ws: &Workspace) -> PathBuf {
    ws.state_dir().join(JOURNAL_FILE)
}

fn file_id(meta: &std::fs::Metadata) -> u64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        meta.ino()
    }
    #[cfg(not(unix))]
    {
        meta.created()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    }
}

struct Handle {
    file: File,
    id: u64,
    checked: Instant,
}

/// Open journal handles of this process, by journal path: an append costs
/// one `write`, not an `open` as well.
fn handles() -> &'static Mutex<HashMap<PathBuf, Handle>> {
    static H: OnceLock<Mutex<HashMap<PathBuf, Handle>>> = OnceLock::new();
    H.get_or_init(|| Mutex::new(HashMap::new()))
}

fn open_handle(path: &Path) -> std::io::Result<Handle> {
    let file = OpenOptions::new().append(true).open(path)?;
    let id = file_id(&file.metadata()?);
    Ok(Handle {
        file,
        id,
        checked: Instant::now(),
    })
}

/// Notes that mnemo appended to `path` (a file inside the workspace). Does
/// nothing when the workspace has no journal (no index reads one) or `path`
/// lies outside it; errors are swallowed (see the module docs).
pub fn note(ws: &Workspace, path: &Path) {
    let Ok(rel) = path.strip_prefix(ws.root()) else {
        return;
    };
    let rel = rel.to_string_lossy().replace('\\', "/");
    if rel.is_empty() || rel.contains('\n') {
        return;
    }
    let path = journal_path(ws);
    let mut line = rel.into_bytes();
    line.push(b'\n');
    let mut all = handles().lock().unwrap_or_else(|e| e.into_inner());
    // A handle older than its TTL is used only if the path still names its
    // file; otherwise (journal deleted with `.mnemo/`) it is reopened.
    let stale = all.get(&path).is_some_and(|h| {
        h.checked.elapsed() > HANDLE_TTL
            && std::fs::metadata(&path).map(|m| file_id(&m)).ok() != Some(h.id)
    });
    if stale {
        all.remove(&path);
    }
    if let Some(h) = all.get_mut(&path) {
        if h.checked.elapsed() > HANDLE_TTL {
            h.checked = Instant::now();
        }
    } else {
        match open_handle(&path) {
            Ok(h) => {
                all.insert(path.clone(), h);
            }
            Err(_) => return,
        }
    }
    if let Some(h) = all.get_mut(&path) {
        // One write of a whole line (O_APPEND): concurrent writers never
        // interleave within a line.
        if h.file.write_all(&line).is_err() {
            all.remove(&path);
        }
    }
}

/// Creates the journal when it is missing (the index does, before it
/// compares every file), so that writers start noting their appends.
pub fn ensure(ws: &Workspace) {
    let _ = OpenOptions::new()
        .create(true)
        .append(true)
        .open(journal_path(ws));
}

/// The journal's current end, for a reader that has just seen every file
/// (a full walk); `None` when there is no journal.
pub fn end(ws: &Workspace) -> Option<JournalMark> {
    let meta = std::fs::metadata(journal_path(ws)).ok()?;
    Some(JournalMark {
        id: file_id(&meta),
        offset: meta.len(),
    })
}

/// Whether anything was noted since `mark` (one `stat`): `false` when the
/// journal is exactly where the mark left it.
pub fn moved(ws: &Workspace, mark: Option<&JournalMark>) -> bool {
    end(ws).as_ref() != mark
}

/// The paths noted since `mark`. `mark = None` (the reader saw no journal)
/// reads a journal that appeared since from its start.
pub fn since(ws: &Workspace, mark: Option<&JournalMark>) -> Since {
    let path = journal_path(ws);
    let Ok(mut file) = File::open(&path) else {
        // No journal: nothing was noted, unless there was one before.
        return match mark {
            None => Since::Paths(Vec::new(), None),
            Some(_) => Since::Lost,
        };
    };
    let Ok(meta) = file.metadata() else {
        return Since::Lost;
    };
    let id = file_id(&meta);
    let start = match mark {
        Some(m) if m.id != id || m.offset > meta.len() => return Since::Lost,
        Some(m) => m.offset,
        None => 0,
    };
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(start)).is_err() || file.read_to_end(&mut bytes).is_err() {
        return Since::Lost;
    }
    // A line still being written (no newline yet) is read next time.
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let paths = bytes[..complete]
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect();
    Since::Paths(
        paths,
        Some(JournalMark {
            id,
            offset: start + complete as u64,
        }),
    )
}

/// Empties the journal in place when it is larger than `max_bytes`, and
/// returns the mark of the emptied file. The caller must then look at every
/// file (a full walk): what was noted before is gone. In place, so writers
/// keep appending through their open handles.
pub fn truncate_if_over(ws: &Workspace, max_bytes: u64) -> Option<JournalMark> {
    let path = journal_path(ws);
    let file = OpenOptions::new().write(true).open(&path).ok()?;
    let meta = file.metadata().ok()?;
    if meta.len() <= max_bytes {
        return None;
    }
    file.set_len(0).ok()?;
    Some(JournalMark {
        id: file_id(&meta),
        offset: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes_are_read_once_in_order_and_survive_truncation() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::new(dir.path());
        // No journal (no index created one): nothing is written.
        std::fs::create_dir_all(ws.state_dir()).unwrap();
        note(&ws, &dir.path().join("memory/a.md"));
        assert_eq!(end(&ws), None);
        assert_eq!(since(&ws, None), Since::Paths(Vec::new(), None));
        ensure(&ws);
        note(&ws, &dir.path().join("memory/a.md"));
        note(&ws, &dir.path().join("sessions/x.jsonl"));
        note(&ws, Path::new("/elsewhere/b.md"));
        let Since::Paths(paths, Some(mark)) = since(&ws, None) else {
            panic!("lost")
        };
        assert_eq!(paths, vec!["memory/a.md", "sessions/x.jsonl"]);
        assert!(moved(&ws, None));
        assert!(!moved(&ws, Some(&mark)));
        note(&ws, &dir.path().join("MEMORY.md"));
        assert_eq!(
            since(&ws, Some(&mark)),
            Since::Paths(vec!["MEMORY.md".into()], end(&ws))
        );
        // Emptied: a reader behind the old end has lost track; writers go on.
        let emptied = truncate_if_over(&ws, 4).unwrap();
        assert_eq!(since(&ws, Some(&mark)), Since::Lost);
        note(&ws, &dir.path().join("memory/c.md"));
        assert_eq!(
            since(&ws, Some(&emptied)),
            Since::Paths(vec!["memory/c.md".into()], end(&ws))
        );
        // Replaced: lost as well.
        std::fs::remove_file(ws.state_dir().join(JOURNAL_FILE)).unwrap();
        assert_eq!(since(&ws, Some(&emptied)), Since::Lost);
    }
}
