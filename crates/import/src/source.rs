//! Read-only access to the source tree: files are only read, links are never
//! followed, and every path is reported relative to the source folder.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::report::{Kind, Report, Verb};

/// The folder an import reads from.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    root: PathBuf,
}

/// `base/name`, or `name` when `base` is the root.
pub(crate) fn join(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_string()
    } else if name.is_empty() {
        base.to_string()
    } else {
        format!("{base}/{name}")
    }
}

/// What sits at a path of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    Missing,
    File,
    Dir,
    /// A symbolic link (or something else that is not a plain file or
    /// folder): never followed.
    Link,
}

impl Source {
    /// Opens `path`, which must be an existing folder.
    pub(crate) fn open(path: &Path) -> Result<Source> {
        let root = path.canonicalize().map_err(|e| Error::Source {
            path: path.to_path_buf(),
            message: format!("cannot open the source folder ({e}): check the path"),
        })?;
        if !root.is_dir() {
            return Err(Error::Source {
                path: path.to_path_buf(),
                message: "the source is not a folder: give the folder that holds the memory files"
                    .into(),
            });
        }
        Ok(Source { root })
    }

    /// The canonical source folder.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// The source one folder up, when the folder given is part of a larger
    /// layout (a nanobot workspace inside its data folder, an OpenClaw
    /// workspace inside its state folder).
    pub(crate) fn parent(&self) -> Option<Source> {
        self.root.parent().map(|p| Source {
            root: p.to_path_buf(),
        })
    }

    /// The name of the source folder itself.
    pub(crate) fn name(&self) -> String {
        self.root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The names directly in `dir` (sorted), or none when it is not a
    /// folder. Names that are not UTF-8 are left out (listing a folder for
    /// its files reports them).
    pub(crate) fn names(&self, dir: &str) -> Vec<String> {
        if self.entry(dir) != Entry::Dir {
            return Vec::new();
        }
        let mut out: Vec<String> = fs::read_dir(self.path(dir))
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .collect()
            })
            .unwrap_or_default();
        out.sort();
        out
    }

    /// The text of a small file, when it is a plain file that reads as
    /// UTF-8 (markers and ids); anything else is `None`, unreported.
    pub(crate) fn peek(&self, rel: &str) -> Option<String> {
        if self.entry(rel) != Entry::File {
            return None;
        }
        fs::read_to_string(self.path(rel)).ok()
    }

    /// True when the folder carries a mark only `tool` leaves: its name
    /// (`.nanobot`, `.openclaw`, `.claude`), its configuration file, or a
    /// folder only it makes. Used to refuse a source of another tool before
    /// anything is written.
    pub(crate) fn marked_as(&self, tool: crate::Tool) -> bool {
        let name = self.name();
        let dir = |rel: &str| self.entry(rel) == Entry::Dir;
        let file = |rel: &str| self.entry(rel) == Entry::File;
        match tool {
            crate::Tool::Nanobot => {
                name == ".nanobot"
                    || dir(".nanobot")
                    || (file("config.json") && dir("workspace") && !file("openclaw.json"))
            }
            crate::Tool::OpenClaw => {
                name == ".openclaw" || dir(".openclaw") || file("openclaw.json") || dir("agents")
            }
            crate::Tool::ClaudeCode => name == ".claude" || dir("projects"),
        }
    }

    /// A source-relative path joined to the root.
    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }

    /// What is at `rel`, without following a link.
    pub(crate) fn entry(&self, rel: &str) -> Entry {
        match fs::symlink_metadata(self.path(rel)) {
            Err(_) => Entry::Missing,
            Ok(m) if m.file_type().is_file() => Entry::File,
            Ok(m) if m.file_type().is_dir() => Entry::Dir,
            Ok(_) => Entry::Link,
        }
    }

    /// Reports a link found in the source: refused when it leads out of
    /// the source folder, skipped otherwise (its target, when inside, is
    /// imported under its own name).
    pub(crate) fn report_link(&self, rel: &str, kind: Kind, report: &mut Report) {
        let inside = self
            .path(rel)
            .canonicalize()
            .map(|p| p.starts_with(&self.root))
            .unwrap_or(false);
        if inside {
            report.push(
                Verb::Skip,
                kind,
                "",
                rel,
                "a symbolic link: links are not followed (its target inside the source is imported on its own)",
            );
        } else {
            report.push(
                Verb::Refuse,
                kind,
                "",
                rel,
                "a symbolic link that leads out of the source folder: not followed; copy the file into the folder if it belongs to this memory",
            );
        }
    }

    /// The plain files directly in `dir` (or in its whole subtree when
    /// `recursive`), sorted, as source-relative paths. Links met on the way
    /// are reported and not followed.
    pub(crate) fn files(
        &self,
        dir: &str,
        recursive: bool,
        kind: Kind,
        report: &mut Report,
    ) -> Vec<String> {
        let mut out = Vec::new();
        match self.entry(dir) {
            Entry::Dir => self.walk(dir, recursive, kind, report, &mut out),
            Entry::Link => self.report_link(dir, kind, report),
            Entry::File | Entry::Missing => {}
        }
        out.sort();
        out
    }

    fn walk(
        &self,
        dir: &str,
        recursive: bool,
        kind: Kind,
        report: &mut Report,
        out: &mut Vec<String>,
    ) {
        let path = self.path(dir);
        let entries = match fs::read_dir(&path) {
            Ok(e) => e,
            Err(e) => {
                report.push(
                    Verb::Error,
                    kind,
                    "",
                    dir,
                    format!("cannot list the folder ({e}); check its permissions"),
                );
                return;
            }
        };
        let mut names: Vec<String> = Vec::new();
        for entry in entries.flatten() {
            match entry.file_name().into_string() {
                Ok(n) => names.push(n),
                Err(raw) => report.push(
                    Verb::Error,
                    kind,
                    "",
                    format!("{dir}/{}", raw.to_string_lossy()),
                    "the file name is not valid UTF-8: rename it to import it",
                ),
            }
        }
        names.sort();
        for name in names {
            let rel = if dir.is_empty() {
                name
            } else {
                format!("{dir}/{name}")
            };
            match self.entry(&rel) {
                Entry::File => out.push(rel),
                Entry::Dir if recursive => self.walk(&rel, recursive, kind, report, out),
                Entry::Dir => {}
                Entry::Link => self.report_link(&rel, kind, report),
                Entry::Missing => {}
            }
        }
    }

    /// Reads a file's bytes; a failure is reported and yields `None`.
    pub(crate) fn read(&self, rel: &str, kind: Kind, report: &mut Report) -> Option<Vec<u8>> {
        match self.entry(rel) {
            Entry::File => {}
            Entry::Link => {
                self.report_link(rel, kind, report);
                return None;
            }
            _ => return None,
        }
        match fs::read(self.path(rel)) {
            Ok(b) => Some(b),
            Err(e) => {
                report.push(
                    Verb::Error,
                    kind,
                    "",
                    rel,
                    format!("cannot read the file ({e}); check its permissions, then run the import again"),
                );
                None
            }
        }
    }

    /// Reads a file as UTF-8 text; a failure names the line of the first bad
    /// byte, is reported and yields `None`.
    pub(crate) fn read_text(&self, rel: &str, kind: Kind, report: &mut Report) -> Option<String> {
        let bytes = self.read(rel, kind, report)?;
        match String::from_utf8(bytes) {
            Ok(s) => Some(s),
            Err(e) => {
                let valid = e.utf8_error().valid_up_to();
                let line = e.as_bytes()[..valid]
                    .iter()
                    .filter(|b| **b == b'\n')
                    .count()
                    + 1;
                report.push(
                    Verb::Error,
                    kind,
                    "",
                    format!("{rel}:{line}"),
                    "invalid UTF-8: the file was skipped; re-save it as UTF-8 and run the import again",
                );
                None
            }
        }
    }
}
