//! One writer at a time for the memory files: an advisory lock on
//! `.mnemo/locks/memory.lock`, held around every read-modify-write of
//! MEMORY.md, typed memories, daily logs and session notes, in every
//! process that opens the workspace (CLI commands, `mnemo serve`,
//! `mnemo mcp`, the engine).
//!
//! Each acquisition opens its own file description, so the lock excludes
//! other threads of the same process as well as other processes (flock
//! semantics). The operating system releases it when the holder exits,
//! so a crash never leaves it held. Holders keep it for a read, a merge
//! and a write, never while a model is consulted.

use std::fs::{self, File, OpenOptions};
use std::path::PathBuf;

use mnemo_core::Workspace;

use crate::error::{Error, Result};

/// A held memory lock; released on drop.
#[derive(Debug)]
pub struct MemoryLock {
    file: File,
    path: PathBuf,
}

impl MemoryLock {
    /// Takes the memory lock of `workspace`, waiting for another holder.
    pub fn acquire(workspace: &Workspace) -> Result<MemoryLock> {
        let dir = workspace.state_dir().join("locks");
        fs::create_dir_all(&dir).map_err(Error::io("create folder", &dir))?;
        let path = dir.join("memory.lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(Error::io("open lock", &path))?;
        file.lock().map_err(Error::io("lock", &path))?;
        Ok(MemoryLock { file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl Drop for MemoryLock {
    fn drop(&mut self) {
        let _ = self.file.unlock();
    }
}
