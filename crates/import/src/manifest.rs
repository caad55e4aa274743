//! `.mnemo/imports.json`: what earlier imports wrote, so that a file the
//! user has not touched since can be refreshed from a newer source, and so
//! that a person can see where imported things came from.

use std::collections::BTreeMap;
use std::path::PathBuf;

use mnemo_core::Workspace;
use mnemo_store::fsutil;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One imported target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Written {
    /// `nanobot`, `openclaw` or `claude-code`.
    pub tool: String,
    /// The source file (absolute).
    pub source: String,
    /// SHA-256 of the target's content right after the import wrote it.
    pub sha256: String,
}

/// The manifest file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Manifest {
    /// Format version.
    #[serde(default = "one")]
    pub version: u32,
    /// Workspace-relative target path → what wrote it.
    #[serde(default)]
    pub files: BTreeMap<String, Written>,
    /// Session key → where it came from (`sha256` hashes the imported lines).
    #[serde(default)]
    pub sessions: BTreeMap<String, Written>,
}

fn one() -> u32 {
    1
}

pub(crate) fn path(ws: &Workspace) -> PathBuf {
    ws.state_dir().join("imports.json")
}

impl Manifest {
    pub(crate) fn load(ws: &Workspace) -> Result<Manifest> {
        let p = path(ws);
        match fsutil::read_text_opt(&p)? {
            None => Ok(Manifest {
                version: 1,
                ..Manifest::default()
            }),
            Some(text) => serde_json::from_str(&text).map_err(|e| Error::Manifest {
                path: p,
                message: format!(
                    "cannot read the import manifest ({e}); it was left as it is: fix it, or move it away to start a fresh one (imports stay idempotent without it)"
                ),
            }),
        }
    }

    pub(crate) fn save(&self, ws: &Workspace) -> Result<()> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| Error::Manifest {
            path: path(ws),
            message: format!("cannot encode the import manifest: {e}"),
        })?;
        text.push('\n');
        fsutil::atomic_write(&path(ws), text.as_bytes())?;
        Ok(())
    }
}
