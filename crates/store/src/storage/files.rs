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
        Ok(fsutil::read_text_opt(&path)?.map(|text| Document {
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
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("open", &path)(e)),
        };
        let mut head = Vec::with_capacity(max);
        f.by_ref()
            .take(max as u64)
            .read_to_end(&mut head)
            .map_err(Error::io("read", &path))?;
        Ok(Some(head))
    }

    fn write(&self, rel: &str, text: &str, expect: Expect) -> Result<Version> {
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

    fn append(&self, rel: &str, text: &str) -> Result<()> {
        let path = self.path(rel)?;
        fsutil::append(&path, text.as_bytes(), true)?;
        // An append leaves the folder's times as they were: the index
        // learns of it from the journal.
        mnemo_core::journal::note(&self.workspace, &path);
        Ok(())
    }

    fn remove(&self, rel: &str) -> Result<bool> {
        let path = self.path(rel)?;
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io("remove", &path)(e)),
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

    fn lock_memory(&self) -> Result<Held> {
        Ok(Held::new(MemoryLock::acquire(&self.workspace)?))
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
}

fn collect_md(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io("list", dir)(e)),
    };
    for entry in entries.flatten() {
        let Ok(ft) = entry.file_type() else { continue };
        let path = entry.path();
        // Links are not followed: they could lead out of the workspace.
        if ft.is_dir() {
            collect_md(&path, out)?;
        } else if ft.is_file() && path.extension().and_then(|e| e.to_str()) == Some("md") {
            out.push(path);
        }
    }
    Ok(())
}
