//! Confinement of user-supplied relative paths to the workspace.
//!
//! Every path that comes from a user or a model (`memory_get`, imports, MCP
//! resources) goes through [`resolve_in_workspace`]: no absolute paths, no
//! `..`, no NUL, and no symbolic link that leads outside the root.

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
    #[error("the path `{0}` leads out of the workspace through a link")]
    Escapes(String),
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
    // Check the deepest existing ancestor against the real root so that a
    // link inside the workspace cannot point outside it.
    let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    let mut probe = Some(joined.as_path());
    while let Some(cur) = probe {
        // Ancestors above the root are the caller's business, not ours (the
        // root itself may not exist yet).
        if !cur.starts_with(root) || cur == root {
            break;
        }
        if cur.symlink_metadata().is_ok() {
            let real = cur
                .canonicalize()
                .map_err(|_| PathError::Escapes(rel.to_string()))?;
            if !real.starts_with(&real_root) {
                return Err(PathError::Escapes(rel.to_string()));
            }
            break;
        }
        probe = cur.parent();
    }
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
}
