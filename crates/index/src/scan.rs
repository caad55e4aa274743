//! The workspace walk: which files are indexed (MEMORY.md, memory/**.md,
//! configured extra paths, sessions/*.jsonl), without leaving the workspace
//! through links and without looping; the folders it went through (whose
//! change times tell the freshness check where to look again); and the same
//! rules applied to one folder or one file. A link is followed only to a
//! file of the same kind: a memory file may lead to another memory file,
//! never to `mnemo.toml` or to a session log (whose index copy is redacted),
//! and a session log only to another session log.

// This module reads text a user or a model wrote: no byte-offset slicing
// or indexing that could land inside a character or past the end.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::fresh::{times, Times};
use crate::settings::IndexOptions;
use crate::types::{FileIssue, Source};

/// A file the index should contain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// Workspace-relative, `/`-separated.
    pub rel: String,
    /// Absolute path to read.
    pub abs: PathBuf,
    /// Memory or sessions.
    pub source: Source,
    /// Modification time, ms since the epoch.
    pub mtime_ms: i64,
    /// Size in bytes.
    pub size: u64,
}

/// What a walk found: the files, and every folder it listed
/// (workspace-relative, `""` for the root) with its times taken just before
/// listing it, so a change made while it was read shows at the next check.
#[derive(Debug, Default)]
pub(crate) struct Walked {
    pub files: Vec<Found>,
    pub dirs: Vec<(String, Option<Times>)>,
}

struct Walker<'a> {
    real_root: PathBuf,
    opts: &'a IndexOptions,
    /// Folders walked, per source: a link from memory/ to sessions/ must
    /// not stop sessions/ from being walked as sessions.
    seen_dirs: HashSet<(PathBuf, Source)>,
    seen_files: HashSet<PathBuf>,
    out: Vec<Found>,
    dirs: Vec<(String, Option<Times>)>,
    /// Sub-folders not to enter (a rescan of one folder leaves the folders
    /// below it to their own change times).
    skip: HashSet<String>,
    issues: &'a mut Vec<FileIssue>,
}

fn mtime_ms(meta: &std::fs::Metadata) -> i64 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Walker<'_> {
    /// Resolves links; `None` when the target leaves the workspace or is gone.
    fn real(&mut self, abs: &Path, rel: &str) -> Option<PathBuf> {
        let real = abs.canonicalize().ok()?;
        if !real.starts_with(&self.real_root) {
            self.issues.push(FileIssue {
                path: rel.to_string(),
                message: "skipped: it is a link that leads out of the workspace".into(),
            });
            return None;
        }
        Some(real)
    }

    fn file(&mut self, abs: &Path, rel: String, source: Source) {
        let Some(real) = self.real(abs, &rel) else {
            return;
        };
        let target = real
            .strip_prefix(&self.real_root)
            .map(mnemo_core::paths::slash_join)
            .unwrap_or_default();
        let Ok(meta) = std::fs::metadata(&real) else {
            return;
        };
        self.add(abs, rel, real, &target, &meta, source);
    }

    /// Records a file whose real path (`real`, workspace-relative `target`)
    /// is known, if it is of the kind the place indexes.
    fn add(
        &mut self,
        abs: &Path,
        rel: String,
        real: PathBuf,
        target: &str,
        meta: &std::fs::Metadata,
        source: Source,
    ) {
        let same_kind = match source {
            Source::Memory => is_memory_path(target, self.opts),
            Source::Sessions => is_session_path(target),
        };
        if !same_kind {
            self.issues.push(FileIssue {
                path: rel,
                message: format!(
                    "skipped: it is a link to {target}, which is not a {} file",
                    match source {
                        Source::Memory => "memory",
                        Source::Sessions => "session",
                    }
                ),
            });
            return;
        }
        if !meta.is_file() || !self.seen_files.insert(real) {
            return;
        }
        self.out.push(Found {
            rel,
            abs: abs.to_path_buf(),
            source,
            mtime_ms: mtime_ms(meta),
            size: meta.len(),
        });
    }

    fn dir(&mut self, abs: &Path, rel: &str, ext: &str, source: Source, recursive: bool) {
        let Some(real) = self.real(abs, rel) else {
            return;
        };
        if !self.seen_dirs.insert((real.clone(), source)) {
            return; // a link loop or a second link to the same folder
        }
        let real_rel = real
            .strip_prefix(&self.real_root)
            .map(mnemo_core::paths::slash_join)
            .unwrap_or_default();
        let before = times(abs);
        let Ok(entries) = std::fs::read_dir(abs) else {
            return;
        };
        self.dirs.push((rel.to_string(), before));
        // Names are read once (`sort_by_key` would build one per comparison).
        let mut entries: Vec<(String, std::fs::DirEntry)> = entries
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e))
            .filter(|(name, _)| !name.starts_with('.'))
            .collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        for (name, e) in entries {
            let child_rel = format!("{rel}/{name}");
            let child = e.path();
            let named = name.len() > ext.len() && name.to_ascii_lowercase().ends_with(ext);
            // The entry's type comes with the listing: a plain file in a
            // folder already resolved needs no link resolution, only its own
            // times (one `stat` relative to the folder). At 10,000 files
            // this is most of what a full comparison costs.
            match e.file_type() {
                Ok(t) if t.is_file() => {
                    if !named {
                        continue;
                    }
                    let Ok(meta) = e.metadata() else {
                        continue;
                    };
                    let target = if real_rel.is_empty() {
                        name.clone()
                    } else {
                        format!("{real_rel}/{name}")
                    };
                    self.add(&child, child_rel, real.join(&name), &target, &meta, source);
                    continue;
                }
                Ok(t) if t.is_dir() => {
                    if recursive && !self.skip.contains(&child_rel) {
                        self.dir(&child, &child_rel, ext, source, true);
                    }
                    continue;
                }
                _ => {}
            }
            // A link (or a type the listing did not give): followed.
            let Ok(meta) = std::fs::metadata(&child) else {
                continue;
            };
            if meta.is_dir() {
                if recursive && !self.skip.contains(&child_rel) {
                    self.dir(&child, &child_rel, ext, source, true);
                }
            } else if named {
                self.file(&child, child_rel, source);
            }
        }
    }
}

impl<'a> Walker<'a> {
    fn new(root: &Path, opts: &'a IndexOptions, issues: &'a mut Vec<FileIssue>) -> Self {
        Walker {
            real_root: root.canonicalize().unwrap_or_else(|_| root.to_path_buf()),
            opts,
            seen_dirs: HashSet::new(),
            seen_files: HashSet::new(),
            out: Vec::new(),
            dirs: Vec::new(),
            skip: HashSet::new(),
            issues,
        }
    }

    fn finish(self) -> Walked {
        let mut files = self.out;
        files.sort_by(|a, b| a.rel.cmp(&b.rel));
        Walked {
            files,
            dirs: self.dirs,
        }
    }
}

/// The top-level place a workspace-relative path belongs to: what it
/// indexes, and how.
struct Place {
    /// Its folder (or file, for an extra path naming one).
    rel: String,
    ext: &'static str,
    source: Source,
    recursive: bool,
}

fn places(opts: &IndexOptions) -> Vec<Place> {
    let mut out = vec![Place {
        rel: "memory".into(),
        ext: ".md",
        source: Source::Memory,
        recursive: true,
    }];
    for extra in &opts.extra_paths {
        let rel = extra.trim_matches('/').replace('\\', "/");
        if !rel.is_empty() {
            out.push(Place {
                rel,
                ext: ".md",
                source: Source::Memory,
                recursive: true,
            });
        }
    }
    if opts.sessions {
        out.push(Place {
            rel: "sessions".into(),
            ext: ".jsonl",
            source: Source::Sessions,
            recursive: false,
        });
    }
    out
}

/// The place `rel` lies in or is, if any.
fn place_of<'p>(places: &'p [Place], rel: &str) -> Option<&'p Place> {
    places
        .iter()
        .find(|p| rel == p.rel || rel.starts_with(&format!("{}/", p.rel)))
}

/// Every indexable file, sorted by path; links out of the workspace are
/// reported in `issues` and skipped.
pub(crate) fn walk(root: &Path, opts: &IndexOptions, issues: &mut Vec<FileIssue>) -> Vec<Found> {
    walk_all(root, opts, issues).files
}

/// [`walk`], with the folders listed on the way.
pub(crate) fn walk_all(root: &Path, opts: &IndexOptions, issues: &mut Vec<FileIssue>) -> Walked {
    let mut w = Walker::new(root, opts, issues);
    w.dirs.push((String::new(), times(root)));
    for name in ["MEMORY.md", "memory.md"] {
        // On a case-insensitive file system both names are one file: the
        // walker de-duplicates by real path.
        let p = root.join(name);
        if p.exists() {
            w.file(&p, name.into(), Source::Memory);
        }
    }
    for place in places(opts) {
        let abs = root.join(&place.rel);
        if abs.is_dir() {
            w.dir(&abs, &place.rel, place.ext, place.source, place.recursive);
        } else if place.rel != "memory"
            && place.rel != "sessions"
            && abs.is_file()
            && place.rel.to_ascii_lowercase().ends_with(place.ext)
        {
            w.file(&abs, place.rel.clone(), place.source);
        }
    }
    w.finish()
}

/// The files directly in folder `rel` (recorded by an earlier walk), and
/// every file under its sub-folders that are not in `known` (new ones),
/// by the walk's rules. `None` when `rel` is the root or holds no indexed
/// place (the caller walks everything then).
pub(crate) fn rescan_dir(
    root: &Path,
    opts: &IndexOptions,
    rel: &str,
    known: &HashSet<String>,
    issues: &mut Vec<FileIssue>,
) -> Option<Walked> {
    let places = places(opts);
    let place = place_of(&places, rel)?;
    let mut w = Walker::new(root, opts, issues);
    w.skip = known
        .iter()
        .filter(|d| d.as_str() != rel)
        .cloned()
        .collect();
    let abs = root.join(rel);
    if abs.is_dir() {
        let recursive = place.recursive;
        w.dir(&abs, rel, place.ext, place.source, recursive);
    }
    Some(w.finish())
}

/// `rel` as the walk would find it: `None` when it is missing, not an
/// indexed path, or a link out of the workspace.
pub(crate) fn one_file(
    root: &Path,
    opts: &IndexOptions,
    rel: &str,
    issues: &mut Vec<FileIssue>,
) -> Option<Found> {
    let indexed = if rel == "MEMORY.md" || rel == "memory.md" {
        Some(Source::Memory)
    } else {
        let places = places(opts);
        place_of(&places, rel).and_then(|p| {
            let inside = rel.strip_prefix(&format!("{}/", p.rel)).unwrap_or(rel);
            let shallow = p.recursive || !inside.contains('/');
            let named = rel.to_ascii_lowercase().ends_with(p.ext);
            let hidden = rel.split('/').any(|c| c.starts_with('.'));
            (shallow && named && !hidden).then_some(p.source)
        })
    }?;
    let mut w = Walker::new(root, opts, issues);
    w.file(&root.join(rel), rel.to_string(), indexed);
    w.out.pop()
}

/// True when `rel` names a session log: `sessions/<name>.jsonl`.
pub(crate) fn is_session_path(rel: &str) -> bool {
    rel.strip_prefix("sessions/")
        .is_some_and(|name| !name.contains('/') && name.to_ascii_lowercase().ends_with(".jsonl"))
}

/// True when `rel` (already confined to the workspace) may be read by
/// `memory_get`: MEMORY.md, memory/**, or an extra path; Markdown only.
pub(crate) fn is_memory_path(rel: &str, opts: &IndexOptions) -> bool {
    if !rel.to_ascii_lowercase().ends_with(".md") {
        return false;
    }
    if rel == "MEMORY.md" || rel == "memory.md" || rel.starts_with("memory/") {
        return true;
    }
    opts.extra_paths.iter().any(|e| {
        let e = e.trim_matches('/').replace('\\', "/");
        !e.is_empty() && (rel == e || rel.starts_with(&format!("{e}/")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_memory_sessions_and_skips_links_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("memory/people")).unwrap();
        std::fs::create_dir_all(root.join("sessions")).unwrap();
        std::fs::create_dir_all(root.join(".mnemo")).unwrap();
        std::fs::write(root.join("MEMORY.md"), "core").unwrap();
        std::fs::write(root.join("memory/2026-01-01.md"), "a").unwrap();
        std::fs::write(root.join("memory/people/bob.md"), "b").unwrap();
        std::fs::write(root.join("memory/notes.txt"), "no").unwrap();
        std::fs::write(root.join("sessions/x.jsonl"), "{}").unwrap();
        std::fs::write(root.join(".mnemo/ignored.md"), "no").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.md"), "s").unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(outside.path(), root.join("memory/out")).unwrap();
            std::os::unix::fs::symlink(root.join("memory"), root.join("memory/people/loop"))
                .unwrap();
        }
        let mut issues = Vec::new();
        let found = walk(root, &IndexOptions::default(), &mut issues);
        let rels: Vec<&str> = found.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(
            rels,
            vec![
                "MEMORY.md",
                "memory/2026-01-01.md",
                "memory/people/bob.md",
                "sessions/x.jsonl"
            ]
        );
        #[cfg(unix)]
        assert!(issues.iter().any(|i| i.path == "memory/out"), "{issues:?}");
    }

    /// Links inside the workspace lead only to files of the same kind: a
    /// memory file that is a link to mnemo.toml (an API key) or to a session
    /// log (whose index copy is redacted) is not indexed as memory.
    #[cfg(unix)]
    #[test]
    fn links_lead_only_to_files_of_their_kind() {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("memory/sub")).unwrap();
        std::fs::create_dir_all(root.join("sessions")).unwrap();
        std::fs::write(root.join("mnemo.toml"), "api_key = \"sk-x\"").unwrap();
        std::fs::write(root.join("sessions/a.jsonl"), "{}\n").unwrap();
        std::fs::write(root.join("sessions/notes.md"), "n").unwrap();
        std::fs::write(root.join("memory/real.md"), "r").unwrap();
        symlink(root.join("mnemo.toml"), root.join("memory/settings.md")).unwrap();
        symlink(root.join("sessions/a.jsonl"), root.join("memory/chat.md")).unwrap();
        symlink(root.join("sessions"), root.join("memory/sub/logs")).unwrap();
        symlink(root.join("memory/real.md"), root.join("memory/alias.md")).unwrap();
        symlink(root.join("memory/real.md"), root.join("sessions/b.jsonl")).unwrap();
        symlink(root.join("mnemo.toml"), root.join("MEMORY.md")).unwrap();
        let mut issues = Vec::new();
        let found = walk(root, &IndexOptions::default(), &mut issues);
        let rels: Vec<&str> = found.iter().map(|f| f.rel.as_str()).collect();
        // alias.md and real.md are one file: it is indexed once.
        assert_eq!(
            rels,
            vec!["memory/alias.md", "sessions/a.jsonl"],
            "{issues:?}"
        );
        for skipped in [
            "MEMORY.md",
            "memory/settings.md",
            "memory/chat.md",
            "memory/sub/logs/notes.md",
            "sessions/b.jsonl",
        ] {
            assert!(
                issues.iter().any(|i| i.path == skipped),
                "{skipped}: {issues:?}"
            );
        }
    }

    #[test]
    fn memory_paths() {
        let mut o = IndexOptions::default();
        o.extra_paths.push("notes".into());
        assert!(is_memory_path("MEMORY.md", &o));
        assert!(is_memory_path("memory/a/b.md", &o));
        assert!(is_memory_path("notes/x.md", &o));
        assert!(!is_memory_path("notes.md", &o));
        assert!(!is_memory_path("memory/a.txt", &o));
        assert!(!is_memory_path("sessions/a.md", &o));
    }
}
