//! The SQLite [`IndexStore`]: generations as database files under
//! `.mnemo/` (`index.sqlite`, then `index-<ms>.sqlite` for each full
//! rebuild), the live one named by the pointer file `index.current`
//! (replaced by rename, so a reader sees the old name or the new one), and
//! writers locked by `sync.lock`. A rebuild killed before its swap leaves
//! its file behind; the next open removes it.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use mnemo_core::EmbedderId;

use crate::backend::SqliteBackend;
use mnemo_index::IndexBackend;
use mnemo_index::VectorScan;
use mnemo_index::{Generation, IndexStore, LockWait, WriterLock};
use mnemo_index::{IndexError, Result};

/// Name of the first database file; later generations are `index-<ms>.sqlite`.
const FIRST_DB: &str = "index.sqlite";
/// File naming the live database (replaced atomically by rename).
const POINTER: &str = "index.current";
/// Lock file held during a sync.
const LOCK: &str = "sync.lock";

/// The index of one workspace in SQLite files under its state folder.
pub struct SqliteStore(Arc<Shared>);

struct Shared {
    state_dir: PathBuf,
    emb_id: Option<(EmbedderId, usize)>,
    vector_scan: VectorScan,
    current: RwLock<Arc<SqliteBackend>>,
}

impl SqliteStore {
    /// Opens the live generation under `state_dir` (creating the folder and
    /// the first database if needed) for the embedder `emb_id`, and removes
    /// generations a killed rebuild left behind.
    pub fn open(
        state_dir: &Path,
        emb_id: Option<(EmbedderId, usize)>,
        vector_scan: VectorScan,
    ) -> Result<SqliteStore> {
        std::fs::create_dir_all(state_dir).map_err(|e| IndexError::io(state_dir, e))?;
        let live = read_pointer(state_dir).unwrap_or_else(|| FIRST_DB.to_string());
        collect_stale_generations(state_dir, &live);
        let backend = SqliteBackend::open(&state_dir.join(live), emb_id.clone())?
            .with_vector_scan(vector_scan);
        Ok(SqliteStore(Arc::new(Shared {
            state_dir: state_dir.to_path_buf(),
            emb_id,
            vector_scan,
            current: RwLock::new(Arc::new(backend)),
        })))
    }
}

impl Shared {
    fn open_backend(&self, path: &Path) -> Result<SqliteBackend> {
        Ok(SqliteBackend::open(path, self.emb_id.clone())?.with_vector_scan(self.vector_scan))
    }

    /// The live database, switching to a newer generation if another
    /// process swapped one in.
    fn live(&self) -> Result<Arc<SqliteBackend>> {
        let cur = self
            .current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let Some(name) = read_pointer(&self.state_dir) else {
            return Ok(cur);
        };
        if cur
            .path()
            .file_name()
            .is_some_and(|n| n.to_string_lossy() == name)
        {
            return Ok(cur);
        }
        let path = self.state_dir.join(&name);
        if !path.exists() {
            return Ok(cur);
        }
        let fresh = Arc::new(self.open_backend(&path)?);
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = fresh.clone();
        Ok(fresh)
    }
}

impl IndexStore for SqliteStore {
    fn kind(&self) -> &'static str {
        "sqlite"
    }

    fn schema_version(&self) -> String {
        crate::backend::SCHEMA_VERSION.to_string()
    }

    fn location(&self) -> String {
        self.0
            .live()
            .map(|b| b.path().to_string_lossy().into_owned())
            .unwrap_or_else(|_| self.0.state_dir.join(FIRST_DB).display().to_string())
    }

    fn live(&self) -> Result<Arc<dyn IndexBackend>> {
        Ok(self.0.live()?)
    }

    fn lock(&self, wait: LockWait) -> Result<Option<WriterLock>> {
        let lock_path = self.0.state_dir.join(LOCK);
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| IndexError::io(&lock_path, e))?;
        loop {
            match wait {
                LockWait::Forever => {
                    file.lock().map_err(|e| IndexError::io(&lock_path, e))?;
                    break;
                }
                LockWait::Until(deadline) => match file.try_lock() {
                    Ok(()) => break,
                    Err(std::fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(std::fs::TryLockError::WouldBlock) => return Ok(None),
                    Err(std::fs::TryLockError::Error(e)) => {
                        return Err(IndexError::io(&lock_path, e))
                    }
                },
            }
        }
        // Closing the file releases the lock.
        Ok(Some(WriterLock::new(file)))
    }

    fn lock_location(&self) -> String {
        self.0.state_dir.join(LOCK).display().to_string()
    }

    fn new_generation(&self) -> Result<Box<dyn Generation>> {
        let old = self.0.live()?;
        let name = format!("index-{}.sqlite", chrono::Utc::now().timestamp_millis());
        let path = self.0.state_dir.join(&name);
        remove_db_files(&path);
        let fresh = Arc::new(self.0.open_backend(&path)?);
        let generation = SqliteGeneration {
            shared: self.0.clone(),
            name,
            backend: fresh,
            swapped: false,
        };
        generation.backend.import_cache_from(old.path())?;
        Ok(Box::new(generation))
    }

    fn scrub(&self) -> Result<()> {
        self.0.live()?.scrub()
    }
}

/// A rebuild's database file, removed unless swapped in.
struct SqliteGeneration {
    shared: Arc<Shared>,
    name: String,
    backend: Arc<SqliteBackend>,
    swapped: bool,
}

impl Generation for SqliteGeneration {
    fn backend(&self) -> Arc<dyn IndexBackend> {
        self.backend.clone()
    }

    fn swap_in(mut self: Box<Self>) -> Result<()> {
        self.backend.checkpoint()?;
        // The generation being replaced is the one the pointer names (the
        // writer lock keeps it still), not the one this process last used:
        // a search may already have followed the new pointer.
        let replaced = read_pointer(&self.shared.state_dir).unwrap_or_else(|| FIRST_DB.into());
        write_pointer(&self.shared.state_dir, &self.name)?;
        self.swapped = true;
        *self
            .shared
            .current
            .write()
            .unwrap_or_else(|e| e.into_inner()) = self.backend.clone();
        // Searches that still hold the old generation keep their open
        // connections (the file stays readable until they finish on Unix).
        if replaced != self.name {
            remove_db_files(&self.shared.state_dir.join(replaced));
        }
        Ok(())
    }
}

impl Drop for SqliteGeneration {
    fn drop(&mut self) {
        if !self.swapped {
            remove_db_files(self.backend.path());
        }
    }
}

fn read_pointer(state_dir: &Path) -> Option<String> {
    let name = std::fs::read_to_string(state_dir.join(POINTER)).ok()?;
    let name = name.trim();
    // Only a plain file name inside .mnemo/ is accepted.
    (!name.is_empty() && !name.contains(['/', '\\']) && name.ends_with(".sqlite"))
        .then(|| name.to_string())
}

fn write_pointer(state_dir: &Path, name: &str) -> Result<()> {
    let tmp = state_dir.join(format!("{POINTER}.tmp"));
    std::fs::write(&tmp, format!("{name}\n")).map_err(|e| IndexError::io(&tmp, e))?;
    if let Ok(f) = File::open(&tmp) {
        let _ = f.sync_all();
    }
    let dst = state_dir.join(POINTER);
    std::fs::rename(&tmp, &dst).map_err(|e| IndexError::io(&dst, e))
}

/// Removes index generations that are not the live one: a full rebuild
/// killed before its swap leaves its `index-<ms>.sqlite` (and WAL) behind.
/// Only while no sync runs (the sync lock is free), since a running rebuild's
/// new generation looks just like an orphan; otherwise the next open does it.
fn collect_stale_generations(state_dir: &Path, live: &str) {
    let lock_path = state_dir.join(LOCK);
    let Ok(lock) = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
    else {
        return;
    };
    if lock.try_lock().is_err() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(state_dir) else {
        let _ = lock.unlock();
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let base = ["-wal", "-shm", "-journal"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(&name);
        let generation = base == FIRST_DB
            || base
                .strip_prefix("index-")
                .and_then(|r| r.strip_suffix(".sqlite"))
                .is_some_and(|ms| !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()));
        if generation && base != live {
            if let Err(e) = std::fs::remove_file(entry.path()) {
                tracing::warn!("cannot remove the stale index file {name}: {e}");
            }
        }
    }
    let _ = lock.unlock();
}

fn remove_db_files(path: &Path) {
    let _ = std::fs::remove_file(path);
    for suffix in ["-wal", "-shm", "-journal"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(p));
    }
}
