//! Confinement of paths to the workspace, for reads and writes alike.
//!
//! Every path that comes from a user or a model (`memory_get`, imports, MCP
//! resources) goes through [`resolve_in_workspace`]: no absolute paths, no
//! `..`, no NUL, and no symbolic link that leads outside the root. Every
//! file the stores read or write goes through [`confine`]: the one rule for
//! both directions is that a path is used only when it really leads (links
//! followed) inside the workspace, and into the area it belongs to, so a
//! memory file cannot be a link to `mnemo.toml` or to a session log.

use std::path::{Component, Path, PathBuf};

/// Why a path was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    /// The path is empty.
    #[error(
        "the path is empty: give a path relative to the workspace, such as memory/2026-01-31.md"
    )]
    Empty,
    /// The path contains a NUL byte.
    #[error("the path `{0}` contains a NUL byte")]
    Nul(String),
    /// The path is absolute.
    #[error("the path `{0}` is absolute: give a path relative to the workspace")]
    Absolute(String),
    /// The path climbs with `..`.
    #[error("the path `{0}` contains `..`: paths may not leave the workspace")]
    ParentDir(String),
    /// A symbolic link along the path leads out of the workspace.
    #[error("the path `{0}` leads out of the workspace through a link: mnemo reads and writes only inside the workspace; replace the link with the file itself")]
    Escapes(String),
    /// A link inside the workspace leads to a file of another kind (a memory
    /// file to `mnemo.toml` or to a session log, say).
    #[error("the path `{path}` is a link to `{target}`, which is not {expected}: replace the link with the file itself")]
    WrongArea {
        /// The path as given (workspace-relative).
        path: String,
        /// Where it really leads (workspace-relative).
        target: String,
        /// What it had to lead to.
        expected: &'static str,
    },
}

impl crate::error::Coded for PathError {
    /// A path that would leave the workspace, or leads where it may not, is
    /// refused.
    fn code(&self) -> crate::ErrorCode {
        crate::ErrorCode::Forbidden
    }
}

/// The part of a workspace a stored file belongs to: links may lead within
/// it, never from one part into another.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Area {
    /// `MEMORY.md` (or `memory.md`) and everything under `memory/`.
    Memory,
    /// Everything under `sessions/`.
    Sessions,
}

impl Area {
    /// True when the real workspace-relative path `rel` (`/`-separated) lies
    /// in this area.
    pub fn holds(self, rel: &str) -> bool {
        match self {
            Area::Memory => {
                rel == "MEMORY.md"
                    || rel == "memory.md"
                    || rel == "memory"
                    || rel.starts_with("memory/")
            }
            Area::Sessions => rel == "sessions" || rel.starts_with("sessions/"),
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Area::Memory => "a memory file (MEMORY.md or under memory/)",
            Area::Sessions => "a session file (under sessions/)",
        }
    }
}

/// Where `path` (a path under `root`, existing or not) really leads: its
/// deepest existing ancestor with every link resolved, plus the part that
/// does not exist yet. Refused when that lies outside the real root, or when
/// the path ends in a dangling link (writing through it would create the
/// target, wherever it points).
pub fn real_path(root: &Path, path: &Path) -> Result<PathBuf, PathError> {
    let shown = || display_rel(root, path);
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    let mut cur = path;
    loop {
        // Ancestors above the root are the caller's business, not ours (the
        // root itself may not exist yet).
        if !cur.starts_with(root) || cur == root {
            return Ok(path.to_path_buf());
        }
        if cur.symlink_metadata().is_ok() {
            let mut real = cur
                .canonicalize()
                .map_err(|_| PathError::Escapes(shown()))?;
            if !real.starts_with(&real_root) {
                return Err(PathError::Escapes(shown()));
            }
            for part in rest.iter().rev() {
                real.push(part);
            }
            return Ok(real);
        }
        match (cur.file_name(), cur.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                cur = parent;
            }
            _ => return Ok(path.to_path_buf()),
        }
    }
}

/// [`real_path`], and the real path must lie in `area`: the path to read or
/// write instead of `path` (the same file, with links resolved, so writing
/// keeps a link pointing where it did).
pub fn confine(root: &Path, path: &Path, area: Area) -> Result<PathBuf, PathError> {
    let real = real_path(root, path)?;
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let target = match real.strip_prefix(&real_root) {
        Ok(r) => slash_join(r),
        // The root does not exist yet: nothing can be a link.
        Err(_) => return Ok(real),
    };
    if area.holds(&target) {
        Ok(real)
    } else {
        Err(PathError::WrongArea {
            path: display_rel(root, path),
            target,
            expected: area.describe(),
        })
    }
}

/// A relative path written with `/` between its parts, as workspace paths
/// are shown and stored on every platform.
pub fn slash_join(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn display_rel(root: &Path, path: &Path) -> String {
    match path.strip_prefix(root) {
        Ok(r) => slash_join(r),
        Err(_) => path.display().to_string(),
    }
}

/// Joins `rel` to `root` after checking that it stays inside.
///
/// The file need not exist. When it (or one of its ancestors) exists, it is
/// canonicalised and must still lie under the canonical root.
pub fn resolve_in_workspace(root: &Path, rel: &str) -> Result<PathBuf, PathError> {
    if rel.is_empty() {
        return Err(PathError::Empty);
    }
    if rel.contains('\0') {
        return Err(PathError::Nul(rel.replace('\0', "\\0")));
    }
    let p = Path::new(rel);
    if p.is_absolute() || rel.starts_with('\\') || rel.get(1..3) == Some(":\\") {
        return Err(PathError::Absolute(rel.to_string()));
    }
    let mut clean = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => clean.push(s),
            Component::CurDir => {}
            Component::ParentDir => return Err(PathError::ParentDir(rel.to_string())),
            Component::RootDir | Component::Prefix(_) => {
                return Err(PathError::Absolute(rel.to_string()));
            }
        }
    }
    if clean.as_os_str().is_empty() {
        return Err(PathError::Empty);
    }
    let joined = root.join(&clean);
    // The deepest existing ancestor must really lie under the real root, so
    // that a link inside the workspace cannot point outside it.
    real_path(root, &joined).map_err(|e| match e {
        PathError::Escapes(_) => PathError::Escapes(rel.to_string()),
        other => other,
    })?;
    Ok(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert!(matches!(
            resolve_in_workspace(root, "../x"),
            Err(PathError::ParentDir(_))
        ));
        assert!(matches!(
            resolve_in_workspace(root, "memory/../../x"),
            Err(PathError::ParentDir(_))
        ));
        assert!(matches!(
            resolve_in_workspace(root, "/etc/passwd"),
            Err(PathError::Absolute(_))
        ));
        assert!(matches!(
            resolve_in_workspace(root, "a\0b"),
            Err(PathError::Nul(_))
        ));
        assert!(matches!(
            resolve_in_workspace(root, ""),
            Err(PathError::Empty)
        ));
        assert_eq!(
            resolve_in_workspace(root, "./memory/a.md").unwrap(),
            root.join("memory/a.md")
        );
    }

    #[test]
    fn a_missing_root_is_not_an_escape() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("not-yet");
        assert_eq!(
            resolve_in_workspace(&root, "memory/a.md").unwrap(),
            root.join("memory/a.md")
        );
    }

    #[cfg(unix)]
    #[test]
    fn refuses_links_out() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("memory")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("memory/out")).unwrap();
        assert!(matches!(
            resolve_in_workspace(dir.path(), "memory/out/secret.md"),
            Err(PathError::Escapes(_))
        ));
    }

    #[cfg(unix)]
    #[test]
    fn confine_is_one_rule_for_reads_and_writes() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("memory")).unwrap();
        std::fs::create_dir_all(root.join("sessions")).unwrap();
        std::fs::write(root.join("mnemo.toml"), "api_key = 'k'").unwrap();
        std::fs::write(root.join("memory/core.md"), "core").unwrap();
        // A file that does not exist yet is where it says.
        let new = root.join("memory/2026-01-01.md");
        assert!(confine(root, &new, Area::Memory)
            .unwrap()
            .ends_with("memory/2026-01-01.md"));
        // Out of the workspace: refused whether the target exists or not.
        symlink(outside.path().join("x.md"), root.join("memory/dangling.md")).unwrap();
        std::fs::write(outside.path().join("y.md"), "y").unwrap();
        symlink(outside.path().join("y.md"), root.join("memory/out.md")).unwrap();
        symlink(outside.path(), root.join("memory/outdir")).unwrap();
        for p in [
            "memory/dangling.md",
            "memory/out.md",
            "memory/outdir/new.md",
        ] {
            assert!(
                matches!(
                    confine(root, &root.join(p), Area::Memory),
                    Err(PathError::Escapes(_))
                ),
                "{p}"
            );
        }
        // Inside, but into another area: refused.
        symlink(root.join("mnemo.toml"), root.join("memory/settings.md")).unwrap();
        let err = confine(root, &root.join("memory/settings.md"), Area::Memory).unwrap_err();
        assert!(
            matches!(&err, PathError::WrongArea { target, .. } if target == "mnemo.toml"),
            "{err:?}"
        );
        assert!(err.to_string().contains("mnemo.toml"), "{err}");
        symlink(root.join("memory/core.md"), root.join("sessions/a.jsonl")).unwrap();
        assert!(confine(root, &root.join("sessions/a.jsonl"), Area::Sessions).is_err());
        // Within the area: the link's target, so a write keeps the link.
        symlink(root.join("memory/core.md"), root.join("MEMORY.md")).unwrap();
        let real = confine(root, &root.join("MEMORY.md"), Area::Memory).unwrap();
        assert_eq!(real, root.canonicalize().unwrap().join("memory/core.md"));
    }
}
