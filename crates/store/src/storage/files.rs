//! [`FileStorage`]: a workspace folder. Documents are files under the root
//! (replaced atomically, appended with one write), session logs are
//! `sessions/<key>.jsonl`. Every path goes through
//! [`mnemo_core::confine`]: a path that a link leads out of the workspace,
//! or out of its area (memory files, session files), is refused for reading
//! and writing alike.

use std::fs;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use mnemo_core::{confine, resolve_in_workspace, Area, Workspace};
use sha2::Digest;

use super::{Document, Entry, Expect, Held, SessionWriter, Storage, Version};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::memory::MemoryLock;
use crate::session::{self, LoadedSession, SessionInfo, SessionOptions};

/// A workspace folder as [`Storage`].
#[derive(Debug, Clone)]
pub struct FileStorage {
    workspace: Workspace,
}

impl FileStorage {
    /// The storage of the folder `workspace`.
    pub fn new(workspace: &Workspace) -> Self {
        FileStorage {
            workspace: workspace.clone(),
        }
    }

    /// The file of the document `rel`, links resolved, refused when they
    /// lead out of its area (`sessions/…` is a session file, anything else
    /// a memory file).
    pub fn path(&self, rel: &str) -> Result<PathBuf> {
        let area = if rel == "sessions" || rel.starts_with("sessions/") {
            Area::Sessions
        } else {
            Area::Memory
        };
        let root = self.workspace.root();
        Ok(confine(root, &resolve_in_workspace(root, rel)?, area)?)
    }
}

impl FileStorage {
    /// `e` naming its file by its workspace-relative path: an error goes to
    /// clients of a server, which must not learn where the server keeps
    /// its workspaces (issue 43 N10).
    fn relative(&self, e: Error) -> Error {
        let root = self.workspace.root();
        // The path may be the resolved one (links followed).
        let real = root.canonicalize().ok();
        let rel = |p: PathBuf| {
            let inside = p
                .strip_prefix(root)
                .ok()
                .or_else(|| real.as_deref().and_then(|r| p.strip_prefix(r).ok()));
            match inside {
                Some(r) => PathBuf::from(mnemo_core::paths::slash_join(r)),
                None => p,
            }
        };
        match e {
            Error::Io { op, path, source } => Error::Io {
                op,
                path: rel(path),
                source,
            },
            Error::Corrupt {
                path,
                line,
                message,
            } => Error::Corrupt {
                path: rel(path),
                line,
                message,
            },
            other => other,
        }
    }

    /// [`Storage::write`], its errors naming absolute paths (see
    /// [`relative`](Self::relative)).
    fn write_file(&self, rel: &str, text: &str, expect: Expect) -> Result<Version> {
        let path = self.path(rel)?;
        match expect {
            Expect::Any => fsutil::atomic_write(&path, text.as_bytes())?,
            Expect::Absent => {
                if !fsutil::create_new(&path, text.as_bytes())? {
                    return Err(Error::Conflict(format!(
                        "{rel} already exists; nothing was written"
                    )));
                }
            }
            Expect::Version(v) => {
                // The callers hold the memory lock: the check and the
                // rename are not raced by another mnemo writer.
                let current = fsutil::read_text_opt(&path)?;
                let found = current.as_deref().map(|t| version_of(t.as_bytes()));
                if found.as_ref() != Some(&v) {
                    return Err(Error::Conflict(format!(
                        "{rel} changed since it was read (version {v}, now {}); nothing was written: read it again",
                        found.map_or_else(|| "gone".to_string(), |f| f.0)
                    )));
                }
                fsutil::atomic_write(&path, text.as_bytes())?;
            }
        }
        Ok(version_of(text.as_bytes()))
    }

    /// The file of the state document `rel` (`.mnemo/…`). Like the locks
    /// and the index beside it, it follows `.mnemo` wherever that leads (a
    /// link to another disk): it is mnemo's own folder, not memory a link
    /// could smuggle out.
    fn state_path(&self, rel: &str) -> Result<PathBuf> {
        let rel = super::state_rel(rel)?;
        Ok(self.workspace.root().join(rel))
    }

    /// `.mnemo/locks/<name>.lock`; a name that is not a plain file name is
    /// refused.
    fn lock_path(&self, name: &str) -> Result<PathBuf> {
        if name.is_empty() || name.contains(['/', '\\', '\0']) || name.starts_with('.') {
            return Err(Error::Invalid(format!("{name:?} cannot name a lock")));
        }
        Ok(self
            .workspace
            .state_dir()
            .join("locks")
            .join(format!("{name}.lock")))
    }
}

/// A held file lock; the OS frees it when the file closes.
struct Locked(fs::File);

impl Drop for Locked {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// A file's version: the hash of its bytes, so that any change shows.
fn version_of(bytes: &[u8]) -> Version {
    let hash = hex::encode(sha2::Sha256::digest(bytes));
    Version(hash.get(..16).unwrap_or(&hash).to_string())
}

impl Storage for FileStorage {
    fn kind(&self) -> &'static str {
        "files"
    }

    fn location(&self) -> String {
        self.workspace.root().display().to_string()
    }

    fn root(&self) -> Option<&Path> {
        Some(self.workspace.root())
    }

    fn read(&self, rel: &str) -> Result<Option<Document>> {
        let path = self.path(rel)?;
        Ok(fsutil::read_text_opt(&path)
            .map_err(|e| self.relative(e))?
            .map(|text| Document {
                version: version_of(text.as_bytes()),
                text,
            }))
    }

    fn read_head(&self, rel: &str, max: usize) -> Result<Option<Vec<u8>>> {
        use std::io::Read;
        let path = self.path(rel)?;
        // A FIFO named *.md must not hang a scan: regular files only.
        let mut f = match fsutil::open_regular(&path, fs::OpenOptions::new().read(true)) {
            Ok(f) => f,
            Err(e) if mnemo_core::files::names_no_file(&e) => return Ok(None),
            Err(e) => return Err(self.relative(Error::io("open", &path)(e))),
        };
        let mut head = Vec::with_capacity(max);
        f.by_ref()
            .take(max as u64)
            .read_to_end(&mut head)
            .map_err(|e| self.relative(Error::io("read", &path)(e)))?;
        Ok(Some(head))
    }

    fn write(&self, rel: &str, text: &str, expect: Expect) -> Result<Version> {
        self.write_file(rel, text, expect)
            .map_err(|e| self.relative(e))
    }

    fn append(&self, rel: &str, text: &str) -> Result<()> {
        let path = self.path(rel)?;
        fsutil::append(&path, text.as_bytes(), true).map_err(|e| self.relative(e))?;
        // An append leaves the folder's times as they were: the index
        // learns of it from the journal.
        mnemo_core::journal::note(&self.workspace, &path);
        Ok(())
    }

    fn remove(&self, rel: &str) -> Result<bool> {
        let path = self.path(rel)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if mnemo_core::files::names_no_file(&e) => Ok(false),
            Err(e) => Err(self.relative(Error::io("remove", &path)(e))),
        }
    }

    fn exists(&self, rel: &str) -> Result<bool> {
        Ok(self.path(rel)?.symlink_metadata().is_ok())
    }

    fn list(&self, dir: &str) -> Result<Vec<Entry>> {
        let real = self.path(dir)?;
        let mut files = Vec::new();
        collect_md(&real, &mut files)?;
        let mut out: Vec<Entry> = files
            .into_iter()
            .filter_map(|p| {
                let meta = fs::metadata(&p).ok()?;
                // The folder may be reached through a link: name files by
                // where they are found, not where the link leads.
                let rel = mnemo_core::paths::slash_join(p.strip_prefix(&real).unwrap_or(&p));
                Some(Entry {
                    rel: format!("{dir}/{rel}"),
                    modified: meta.modified().map(DateTime::<Utc>::from).ok()?,
                    len: meta.len(),
                })
            })
            .collect();
        out.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(out)
    }

    fn documents(&self) -> Result<Vec<Entry>> {
        let root = self.workspace.root();
        let mut out = Vec::new();
        let mut push = |abs: &Path| {
            if let Ok(meta) = fs::metadata(abs) {
                if let Ok(modified) = meta.modified() {
                    out.push(Entry {
                        rel: mnemo_core::paths::slash_join(abs.strip_prefix(root).unwrap_or(abs)),
                        modified: DateTime::<Utc>::from(modified),
                        len: meta.len(),
                    });
                }
            }
        };
        let memory_md = self.workspace.memory_md();
        if memory_md.is_file() {
            push(&memory_md);
        }
        let mut files = Vec::new();
        collect(&self.workspace.memory_dir(), &mut files, &|_| true)?;
        if let Ok(entries) = fs::read_dir(self.workspace.sessions_dir()) {
            for e in entries.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir())
                    && e.file_name().to_string_lossy().ends_with(".tool-results")
                {
                    collect(&e.path(), &mut files, &|_| true)?;
                }
            }
        }
        for f in &files {
            push(f);
        }
        out.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(out)
    }

    // The state documents are the files they have always been
    // (`.mnemo/engine/…` in the folder), outside the memory and session
    // areas `path` confines documents to, and outside every listing.

    fn read_state(&self, rel: &str) -> Result<Option<String>> {
        let path = self.state_path(rel)?;
        fsutil::read_text_opt(&path).map_err(|e| self.relative(e))
    }

    fn write_state(&self, rel: &str, text: &str) -> Result<()> {
        let path = self.state_path(rel)?;
        fsutil::atomic_write(&path, text.as_bytes()).map_err(|e| self.relative(e))
    }

    fn lock_memory(&self) -> Result<Held> {
        Ok(Held::new(MemoryLock::acquire(&self.workspace)?))
    }

    fn try_lock(&self, name: &str) -> Result<Option<Held>> {
        let path = self.lock_path(name)?;
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(Error::io("create folder", dir))?;
        }
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(Error::io("open lock", &path))?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Held::new(Locked(file)))),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(Error::io("lock", &path)(e)),
        }
    }

    fn lock_location(&self, name: &str) -> String {
        self.lock_path(name)
            .map_or_else(|_| name.to_string(), |p| p.display().to_string())
    }

    fn session_rel(&self, key: &str) -> Result<String> {
        let path = session::log::file_path_for(&self.workspace, key)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(format!("sessions/{name}"))
    }

    fn open_session(&self, key: &str, options: &SessionOptions) -> Result<Box<dyn SessionWriter>> {
        Ok(Box::new(session::log::FileLog::new(
            &self.workspace,
            key,
            options,
        )?))
    }

    fn session_exists(&self, key: &str) -> Result<bool> {
        Ok(session::log::file_path_for(&self.workspace, key)?.exists())
    }

    fn load_session(&self, key: &str) -> Result<Option<LoadedSession>> {
        let path = session::log::file_path_for(&self.workspace, key)?;
        if !path.exists() {
            return Ok(None);
        }
        session::read_session_file(&path).map(Some)
    }

    fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        session::log::list_files(&self.workspace)
    }

    fn session_files(&self) -> Result<Vec<Entry>> {
        let dir = self.workspace.sessions_dir();
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("list", &dir)(e)),
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Ok(meta) = e.metadata() else { continue };
            if !meta.is_file() || !name.ends_with(".jsonl") {
                continue;
            }
            if let Ok(modified) = meta.modified() {
                out.push(Entry {
                    rel: format!("sessions/{name}"),
                    modified: DateTime::<Utc>::from(modified),
                    len: meta.len(),
                });
            }
        }
        out.sort_by(|a, b| a.rel.cmp(&b.rel));
        Ok(out)
    }

    fn read_session_file(&self, rel: &str) -> Result<Option<Vec<u8>>> {
        let path = self.path(rel)?;
        match fsutil::read_regular(&path) {
            Ok(b) => Ok(Some(b)),
            Err(Error::Io { source, .. }) if mnemo_core::files::names_no_file(&source) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

fn collect_md(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    collect(dir, out, &|p| {
        p.extension().and_then(|e| e.to_str()) == Some("md")
    })
}

/// The regular files under `dir` that `keep` accepts, at any depth; links
/// are not followed: they could lead out of the workspace.
fn collect(dir: &Path, out: &mut Vec<PathBuf>, keep: &dyn Fn(&Path) -> bool) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("list", dir)(e)),
    };
    for entry in entries.flatten() {
        let Ok(ft) = entry.file_type() else { continue };
        let path = entry.path();
        if ft.is_dir() {
            collect(&path, out, keep)?;
        } else if ft.is_file() && keep(&path) {
            out.push(path);
        }
    }
    Ok(())
}
