//! The Markdown long-term memory: `MEMORY.md`, the append-only history log,
//! daily logs, session notes and typed memory files with YAML front matter.
//!
//! Rewritten files (MEMORY.md, typed memories, notes) are replaced
//! atomically; append-only files (history, daily logs) get single-write
//! appends.

mod frontmatter;

use std::fs;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use mnemo_core::{resolve_in_workspace, Config, Workspace};
use serde::{Deserialize, Serialize};

pub use frontmatter::{
    render as render_front_matter, split as split_front_matter, FrontMatter, FrontMatterError,
    MemoryType,
};

use crate::error::{Error, Result};
use crate::fsutil;

/// Settings of the memory store: the `[memory]` section of `mnemo.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct MemorySettings {
    /// IANA time zone for daily logs (`Europe/Paris`), or `local`.
    pub timezone: String,
    /// Lines of MEMORY.md injected into the prompt at most.
    pub memory_md_max_lines: usize,
    /// Bytes of MEMORY.md injected into the prompt at most.
    pub memory_md_max_bytes: usize,
    /// Bytes of each daily log injected into the prompt at most (the newest
    /// part is kept).
    pub daily_log_max_bytes: usize,
    /// Characters one daily-log append may add.
    pub daily_append_max_chars: usize,
}

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            timezone: "local".into(),
            memory_md_max_lines: 200,
            memory_md_max_bytes: 25_000,
            daily_log_max_bytes: 8_000,
            daily_append_max_chars: 4_000,
        }
    }
}

/// MEMORY.md as injected into a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RenderedMemory {
    /// The text to inject (with a warning line when it was cut).
    pub text: String,
    /// True when the file was longer than the cap.
    pub truncated: bool,
    /// Lines in the whole file.
    pub total_lines: usize,
    /// Bytes in the whole file.
    pub total_bytes: usize,
}

/// A daily log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DailyLog {
    /// Its date.
    pub date: NaiveDate,
    /// Path relative to the workspace.
    pub path: String,
    /// Its content.
    pub text: String,
}

/// A typed memory file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypedMemory {
    /// Path relative to the workspace.
    pub path: String,
    /// Front matter.
    pub front: FrontMatter,
    /// The Markdown body.
    pub body: String,
}

/// What a daily-log append did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AppendOutcome {
    /// Path relative to the workspace.
    pub path: String,
    /// Lines written.
    pub written: usize,
    /// Lines skipped because the log already had them.
    pub duplicates: usize,
}

/// A memory file seen by a scan (for the recall side query).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MemoryFileHeader {
    /// Path relative to the workspace.
    pub path: String,
    /// Modification time.
    pub modified: DateTime<Utc>,
    /// Front matter, when the file has valid front matter.
    pub front: Option<FrontMatter>,
    /// The first lines of the file.
    pub head: String,
}

/// The memory files of one workspace.
#[derive(Debug, Clone)]
pub struct MemoryStore {
    workspace: Workspace,
    settings: MemorySettings,
}

impl MemoryStore {
    /// A store over `workspace`.
    pub fn new(workspace: &Workspace, settings: MemorySettings) -> Self {
        MemoryStore {
            workspace: workspace.clone(),
            settings,
        }
    }

    /// A store whose settings come from the `[memory]` section of `config`.
    pub fn from_config(workspace: &Workspace, config: &Config) -> Result<Self> {
        Ok(Self::new(workspace, config.section("memory")?))
    }

    /// The settings.
    pub fn settings(&self) -> &MemorySettings {
        &self.settings
    }

    /// The workspace.
    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    // ----- MEMORY.md -----

    /// MEMORY.md's content (empty when missing).
    pub fn read_memory_md(&self) -> Result<String> {
        Ok(fsutil::read_text_opt(&self.workspace.memory_md())?.unwrap_or_default())
    }

    /// Replaces MEMORY.md atomically; returns false (and writes nothing)
    /// when the content is unchanged.
    pub fn write_memory_md(&self, text: &str) -> Result<bool> {
        if self.read_memory_md()? == text {
            return Ok(false);
        }
        fsutil::atomic_write(&self.workspace.memory_md(), text.as_bytes())?;
        Ok(true)
    }

    /// MEMORY.md within the prompt cap (lines, then bytes, cut at a line
    /// boundary), with a visible warning line when cut.
    pub fn render_memory_md(&self) -> Result<RenderedMemory> {
        Ok(cap_memory(
            &self.read_memory_md()?,
            self.settings.memory_md_max_lines,
            self.settings.memory_md_max_bytes,
        ))
    }

    // ----- history -----

    /// Appends an entry to the history log. The entry gets a
    /// `[YYYY-MM-DD HH:MM]` prefix unless it already starts with one.
    pub fn append_history(&self, entry: &str, now: DateTime<Utc>) -> Result<()> {
        let entry = entry.trim();
        if entry.is_empty() {
            return Err(Error::Invalid("a history entry cannot be empty".into()));
        }
        let text = if has_stamp(entry) {
            format!("{entry}\n\n")
        } else {
            format!("[{}] {entry}\n\n", self.local(now).format("%Y-%m-%d %H:%M"))
        };
        let path = self.workspace.history_md();
        fsutil::append(&path, text.as_bytes(), true)?;
        mnemo_core::journal::note(&self.workspace, &path);
        Ok(())
    }

    /// The history log (empty when missing).
    pub fn read_history(&self) -> Result<String> {
        Ok(fsutil::read_text_opt(&self.workspace.history_md())?.unwrap_or_default())
    }

    // ----- daily logs -----

    /// Today's date in the configured time zone.
    pub fn today(&self, now: DateTime<Utc>) -> NaiveDate {
        self.local(now).date()
    }

    fn local(&self, now: DateTime<Utc>) -> chrono::NaiveDateTime {
        let tz = self.settings.timezone.trim();
        if tz.is_empty() || tz.eq_ignore_ascii_case("local") {
            return chrono::Local
                .from_utc_datetime(&now.naive_utc())
                .naive_local();
        }
        match tz.parse::<chrono_tz::Tz>() {
            Ok(z) => z.from_utc_datetime(&now.naive_utc()).naive_local(),
            Err(_) => now.naive_utc(),
        }
    }

    /// Checks the configured time zone.
    pub fn validate(&self) -> Result<()> {
        let tz = self.settings.timezone.trim();
        if !(tz.is_empty() || tz.eq_ignore_ascii_case("local"))
            && tz.parse::<chrono_tz::Tz>().is_err()
        {
            return Err(Error::Invalid(format!(
                "unknown time zone {tz:?} in [memory] timezone: use an IANA name such as Europe/Paris, or \"local\""
            )));
        }
        Ok(())
    }

    /// Path of the daily log of `date`.
    pub fn daily_path(&self, date: NaiveDate) -> PathBuf {
        self.workspace
            .memory_dir()
            .join(format!("{}.md", date.format("%Y-%m-%d")))
    }

    /// The daily log of `date`, if it exists.
    pub fn read_daily(&self, date: NaiveDate) -> Result<Option<DailyLog>> {
        let path = self.daily_path(date);
        Ok(fsutil::read_text_opt(&path)?.map(|text| DailyLog {
            date,
            path: format!("memory/{}.md", date.format("%Y-%m-%d")),
            text,
        }))
    }

    /// Appends to today's log: each non-empty line of `text` becomes a
    /// `- ` item (stamped with the time when `stamp` is set). Lines the log
    /// already holds are skipped, as are headings; the append is bounded.
    pub fn append_daily(
        &self,
        text: &str,
        now: DateTime<Utc>,
        stamp: bool,
    ) -> Result<AppendOutcome> {
        let text = text.trim();
        if text.is_empty() {
            return Err(Error::Invalid("nothing to log: the text is empty".into()));
        }
        if text.chars().count() > self.settings.daily_append_max_chars {
            return Err(Error::Invalid(format!(
                "a daily-log entry may hold at most {} characters (this one has {}); put long notes in a memory file",
                self.settings.daily_append_max_chars,
                text.chars().count()
            )));
        }
        let local = self.local(now);
        let date = local.date();
        let path = self.daily_path(date);
        let existing = fsutil::read_text_opt(&path)?.unwrap_or_default();
        let known: std::collections::HashSet<String> =
            existing.lines().map(normalise_item).collect();
        let mut out = String::new();
        if existing.is_empty() {
            out.push_str(&format!("# {}\n\n", date.format("%Y-%m-%d")));
        } else if !existing.ends_with('\n') {
            out.push('\n');
        }
        let (mut written, mut duplicates) = (0, 0);
        let mut seen = known;
        for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let line = line.trim_start_matches('#').trim();
            let item = line.strip_prefix("- ").unwrap_or(line);
            if item.is_empty() {
                continue;
            }
            let key = normalise_item(item);
            if !seen.insert(key) {
                duplicates += 1;
                continue;
            }
            if stamp {
                out.push_str(&format!("- [{}] {item}\n", local.format("%H:%M")));
            } else {
                out.push_str(&format!("- {item}\n"));
            }
            written += 1;
        }
        if written > 0 {
            fsutil::append(&path, out.as_bytes(), true)?;
            mnemo_core::journal::note(&self.workspace, &path);
        }
        Ok(AppendOutcome {
            path: format!("memory/{}.md", date.format("%Y-%m-%d")),
            written,
            duplicates,
        })
    }

    // ----- session notes -----

    /// Writes a session note `memory/YYYY-MM-DD-<slug>.md`, never replacing
    /// an existing note (a numeric suffix is added instead). Returns its
    /// workspace-relative path.
    pub fn write_session_note(&self, date: NaiveDate, slug: &str, text: &str) -> Result<String> {
        let slug = sanitize_slug(slug);
        let slug = if slug.is_empty() {
            "session".to_string()
        } else {
            slug
        };
        let dir = self.workspace.memory_dir();
        let base = format!("{}-{slug}", date.format("%Y-%m-%d"));
        let mut name = format!("{base}.md");
        let mut n = 2;
        while dir.join(&name).exists() {
            name = format!("{base}-{n}.md");
            n += 1;
        }
        fsutil::atomic_write(&dir.join(&name), text.as_bytes())?;
        Ok(format!("memory/{name}"))
    }

    // ----- typed memories -----

    /// Saves a typed memory as `memory/<slug of name>.md` (replacing the
    /// file of the same name) and puts its index line into MEMORY.md.
    pub fn save_typed(&self, front: FrontMatter, body: &str) -> Result<TypedMemory> {
        if front.name.trim().is_empty() {
            return Err(Error::Invalid("a memory needs a name: pass --name".into()));
        }
        if front.description.contains('\n') {
            return Err(Error::Invalid("the description must be one line".into()));
        }
        let slug = sanitize_slug(&front.name);
        if slug.is_empty() {
            return Err(Error::Invalid(format!(
                "the name {:?} has no letters or digits to make a file name from",
                front.name
            )));
        }
        let rel = format!("memory/{slug}.md");
        let path = self.workspace.root().join(&rel);
        fsutil::atomic_write(&path, frontmatter::render(&front, body).as_bytes())?;
        let memory = self.read_memory_md()?;
        let updated = upsert_index_line(&memory, &rel, &front);
        self.write_memory_md(&updated)?;
        Ok(TypedMemory {
            path: rel,
            front,
            body: body.trim_end().to_string(),
        })
    }

    /// Removes a typed memory (by name or path) and its index line. Returns
    /// the removed file's path.
    pub fn forget_typed(&self, name_or_path: &str) -> Result<String> {
        let rel = if name_or_path.ends_with(".md") {
            name_or_path.trim_start_matches("./").to_string()
        } else {
            format!("memory/{}.md", sanitize_slug(name_or_path))
        };
        let path = resolve_in_workspace(self.workspace.root(), &rel)?;
        if !rel.starts_with("memory/") || !path.exists() {
            return Err(Error::NotFound(format!(
                "no typed memory {name_or_path:?} (looked for {rel}): `mnemo memory list` shows them"
            )));
        }
        fs::remove_file(&path).map_err(Error::io("remove", &path))?;
        let memory = self.read_memory_md()?;
        let updated = remove_index_line(&memory, &rel);
        self.write_memory_md(&updated)?;
        Ok(rel)
    }

    /// Reads a typed memory file.
    pub fn read_typed(&self, rel: &str) -> Result<TypedMemory> {
        let path = resolve_in_workspace(self.workspace.root(), rel)?;
        let text = fsutil::read_text(&path)?;
        let (front, body) = frontmatter::split(&text);
        match front {
            Some(Ok(front)) => Ok(TypedMemory { path: rel.to_string(), front, body: body.to_string() }),
            Some(Err(e)) => Err(Error::Corrupt { path, line: e.line, message: e.message }),
            None => Err(Error::Corrupt {
                path,
                line: 1,
                message: "no front matter: a typed memory starts with a `---` block holding name, description and type".into(),
            }),
        }
    }

    /// Memory files under `memory/` (recursively), newest first, at most
    /// `max`, each with its front matter and first `head_lines` lines.
    /// Broken files are listed with `front: None`, never skipped silently.
    pub fn scan_memory_files(
        &self,
        max: usize,
        head_lines: usize,
    ) -> Result<Vec<MemoryFileHeader>> {
        let mut files = Vec::new();
        collect_md(&self.workspace.memory_dir(), &mut files)?;
        let mut stamped: Vec<(std::time::SystemTime, PathBuf)> = files
            .into_iter()
            .filter_map(|p| {
                fs::metadata(&p)
                    .and_then(|m| m.modified())
                    .ok()
                    .map(|t| (t, p))
            })
            .collect();
        stamped.sort_by_key(|s| std::cmp::Reverse(s.0));
        let mut out = Vec::new();
        for (mtime, path) in stamped.into_iter().take(max) {
            let bytes = fs::read(&path).map_err(Error::io("read", &path))?;
            let text = String::from_utf8_lossy(&bytes);
            let head: String = text.lines().take(head_lines).collect::<Vec<_>>().join("\n");
            let front = match frontmatter::split(&text).0 {
                Some(Ok(f)) => Some(f),
                _ => None,
            };
            out.push(MemoryFileHeader {
                path: rel_path(self.workspace.root(), &path),
                modified: DateTime::<Utc>::from(mtime),
                front,
                head,
            });
        }
        Ok(out)
    }

    /// The memory block injected into every prompt: MEMORY.md within its
    /// cap, then today's and yesterday's daily logs (newest part kept).
    pub fn render_prompt_block(&self, now: DateTime<Utc>) -> Result<String> {
        let memory = self.render_memory_md()?;
        let mut out = String::from("# Memory\n\n## Long-term memory (MEMORY.md)\n\n");
        if memory.text.trim().is_empty() {
            out.push_str("(empty)\n");
        } else {
            out.push_str(memory.text.trim_end());
            out.push('\n');
        }
        let today = self.today(now);
        for (label, date) in [("today", Some(today)), ("yesterday", today.pred_opt())] {
            let Some(date) = date else { continue };
            if let Some(log) = self.read_daily(date)? {
                let body = tail_within(&log.text, self.settings.daily_log_max_bytes);
                out.push_str(&format!(
                    "\n## Daily log {} ({label}, {})\n\n",
                    date.format("%Y-%m-%d"),
                    log.path
                ));
                out.push_str(body.trim_end());
                out.push('\n');
            }
        }
        Ok(out)
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

fn rel_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Caps MEMORY.md for the prompt: at most `max_lines` lines, then at most
/// `max_bytes` bytes, cut at a line boundary, with a warning line when cut.
pub fn cap_memory(text: &str, max_lines: usize, max_bytes: usize) -> RenderedMemory {
    let total_lines = text.lines().count();
    let total_bytes = text.len();
    let mut kept = String::new();
    let mut lines = 0;
    let mut truncated = false;
    for line in text.split_inclusive('\n') {
        if lines >= max_lines || kept.len() + line.len() > max_bytes {
            truncated = true;
            break;
        }
        kept.push_str(line);
        lines += 1;
    }
    if truncated {
        if !kept.ends_with('\n') {
            kept.push('\n');
        }
        kept.push_str(&format!(
            "\n> WARNING: MEMORY.md is {total_lines} lines / {total_bytes} bytes; only the first {lines} lines \
             ({} bytes) were loaded. Keep MEMORY.md short and move detail into memory/ topic files.\n",
            kept.len()
        ));
    }
    RenderedMemory {
        text: kept,
        truncated,
        total_lines,
        total_bytes,
    }
}

fn tail_within(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let mut start = text.len() - max_bytes;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let cut = &text[start..];
    let cut = cut.find('\n').map(|i| &cut[i + 1..]).unwrap_or(cut);
    format!("(… earlier entries omitted; the full log is in the file)\n{cut}")
}

fn has_stamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 18 && b[0] == b'[' && b[5] == b'-' && b[8] == b'-' && b[17] == b']'
}

fn normalise_item(line: &str) -> String {
    let l = line.trim();
    let l = l.strip_prefix("- ").unwrap_or(l);
    // Ignore a leading "[HH:MM] " stamp when comparing.
    let l = if l.len() > 8 && l.as_bytes()[0] == b'[' && l.as_bytes()[6] == b']' {
        &l[8..]
    } else {
        l
    };
    l.trim().to_lowercase()
}

/// Makes a file-name slug: lower-case `[a-z0-9-]`, at most 60 characters.
pub fn sanitize_slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let mut out: String = out.trim_matches('-').chars().take(60).collect();
    while out.ends_with('-') {
        out.pop();
    }
    out
}

fn index_line(rel: &str, front: &FrontMatter) -> String {
    let hook: String = front.description.chars().take(120).collect();
    format!("- [{}]({rel}): {hook}", front.name.replace(['[', ']'], ""))
}

fn upsert_index_line(memory: &str, rel: &str, front: &FrontMatter) -> String {
    let needle = format!("]({rel})");
    let line = index_line(rel, front);
    let mut found = false;
    let mut out: Vec<String> = memory
        .lines()
        .map(|l| {
            if !found && l.trim_start().starts_with("- [") && l.contains(&needle) {
                found = true;
                line.clone()
            } else {
                l.to_string()
            }
        })
        .collect();
    if !found {
        while out.last().is_some_and(|l| l.trim().is_empty()) {
            out.pop();
        }
        if !out.iter().any(|l| l.trim() == "## Memory files") {
            if !out.is_empty() {
                out.push(String::new());
            }
            out.push("## Memory files".into());
            out.push(String::new());
        }
        out.push(line);
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

fn remove_index_line(memory: &str, rel: &str) -> String {
    let needle = format!("]({rel})");
    let mut s: String = memory
        .lines()
        .filter(|l| !(l.trim_start().starts_with("- [") && l.contains(&needle)))
        .collect::<Vec<_>>()
        .join("\n");
    if !s.is_empty() {
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_cuts_at_lines_then_bytes() {
        let text: String = (0..300).map(|i| format!("line {i}\n")).collect();
        let r = cap_memory(&text, 200, 25_000);
        assert!(r.truncated);
        assert!(r.text.starts_with("line 0\n"));
        assert!(r.text.contains("line 199\n") && !r.text.contains("line 200\n"));
        assert!(r.text.contains("WARNING"));
        let big: String = (0..100)
            .map(|i| format!("{i} {}\n", "x".repeat(500)))
            .collect();
        let r = cap_memory(&big, 200, 25_000);
        let body = r.text.split("\n> WARNING").next().unwrap();
        assert!(body.len() <= 25_000 && body.ends_with('\n'));
        assert!(!cap_memory("a\nb\n", 200, 25_000).truncated);
    }

    #[test]
    fn slugs() {
        assert_eq!(sanitize_slug("Likes Green Tea!"), "likes-green-tea");
        assert_eq!(sanitize_slug("../../etc"), "etc");
        assert_eq!(sanitize_slug("张三"), "");
    }

    #[test]
    fn index_lines_upsert_and_remove() {
        let fm = FrontMatter {
            name: "Tea".into(),
            description: "likes green tea".into(),
            kind: MemoryType::User,
        };
        let m = upsert_index_line("# Facts\n\n- works at ACME\n", "memory/tea.md", &fm);
        assert_eq!(m, "# Facts\n\n- works at ACME\n\n## Memory files\n\n- [Tea](memory/tea.md): likes green tea\n");
        let fm2 = FrontMatter {
            description: "now oolong".into(),
            ..fm
        };
        let m2 = upsert_index_line(&m, "memory/tea.md", &fm2);
        assert!(m2.contains("now oolong") && !m2.contains("likes green"));
        assert_eq!(
            remove_index_line(&m2, "memory/tea.md"),
            "# Facts\n\n- works at ACME\n\n## Memory files\n\n"
        );
    }
}
