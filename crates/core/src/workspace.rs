//! The on-disk layout of a mnemo workspace.
//!
//! ```text
//! <root>/
//!   MEMORY.md          core long-term memory, always in the prompt
//!   memory/            history log, daily logs, session notes, typed memories
//!   sessions/          one JSONL log per session key
//!   mnemo.toml         configuration
//!   .mnemo/            derived state (indexes, caches): always rebuildable
//! ```

use std::path::{Path, PathBuf};

/// Environment variable naming the workspace when `--workspace` is not given.
pub const WORKSPACE_ENV: &str = "MNEMO_WORKSPACE";

/// A workspace root and the paths derived from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// A workspace rooted at `root` (which need not exist yet).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Workspace { root: root.into() }
    }

    /// Resolves the workspace root: the explicit flag, else `MNEMO_WORKSPACE`,
    /// else `~/.mnemo`. The environment is passed in so callers (and tests)
    /// control it.
    pub fn resolve(flag: Option<&Path>, env_value: Option<&str>) -> Option<Self> {
        if let Some(p) = flag {
            return Some(Self::new(p));
        }
        if let Some(v) = env_value.filter(|v| !v.is_empty()) {
            return Some(Self::new(v));
        }
        dirs::home_dir().map(|h| Self::new(h.join(".mnemo")))
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `MEMORY.md`.
    pub fn memory_md(&self) -> PathBuf {
        self.root.join("MEMORY.md")
    }

    /// `memory/`.
    pub fn memory_dir(&self) -> PathBuf {
        self.root.join("memory")
    }

    /// The append-only consolidation history log, `memory/HISTORY.md`.
    pub fn history_md(&self) -> PathBuf {
        self.memory_dir().join("HISTORY.md")
    }

    /// `sessions/`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// `mnemo.toml`.
    pub fn config_path(&self) -> PathBuf {
        self.root.join("mnemo.toml")
    }

    /// `.mnemo/`: derived state.
    pub fn state_dir(&self) -> PathBuf {
        self.root.join(".mnemo")
    }

    /// True when `MEMORY.md` or `mnemo.toml` exists at the root.
    pub fn is_initialised(&self) -> bool {
        self.config_path().exists() || self.memory_md().exists()
    }
}
