//! One consolidation or compaction per session at a time: an advisory
//! lock on `.mnemo/locks/<session>.lock`, which also excludes other
//! handles of the same process (each open file description locks on its
//! own).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mnemo_core::Workspace;

use crate::error::{Error, Result};

/// A held session lock; released on drop.
#[derive(Debug)]
pub struct SessionLock {
    file: File,
    path: PathBuf,
}

impl SessionLock {
    /// Takes the lock of `key`, waiting up to `wait` for another holder.
    pub async fn acquire(workspace: &Workspace, key: &str, wait: Duration) -> Result<SessionLock> {
        let stem = mnemo_store::session::file_stem(key)?;
        let dir = workspace.state_dir().join("locks");
        std::fs::create_dir_all(&dir).map_err(|source| Error::Io {
            op: "create folder",
            path: dir.display().to_string(),
            source,
        })?;
        let path = dir.join(format!("{stem}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| Error::Io {
                op: "open lock",
                path: path.display().to_string(),
                source,
            })?;
        let started = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(SessionLock { file, path }),
                Err(TryLockError::WouldBlock) => {
                    if started.elapsed() >= wait {
                        return Err(Error::Busy {
                            key: key.to_string(),
                            lock: path.display().to_string(),
                        });
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
                Err(TryLockError::Error(source)) => {
                    return Err(Error::Io {
                        op: "lock",
                        path: path.display().to_string(),
                        source,
                    })
                }
            }
        }
    }

    /// The lock file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl Drop for SessionLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}
