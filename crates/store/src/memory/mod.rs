//! The Markdown long-term memory: `MEMORY.md`, the append-only history log,
//! daily logs, session notes and typed memory files with YAML front matter.
//!
//! Rewritten files (MEMORY.md, typed memories, notes) are replaced
//! atomically; append-only files (history, daily logs) get single-write
//! appends. Every file is reached through [`mnemo_core::confine`]: a path
//! that a link leads out of the workspace, or out of the memory files, is
//! refused for reading and for writing alike. Every read-modify-write runs
//! under the workspace's memory lock ([`MemoryLock`]), so writers in other
//! threads and processes never undo each other. History, daily logs and
//! session notes are never deleted: forgetting removes typed memories and
//! facts, and a forgotten fact's text is redacted from the history, the
//! daily logs and the audit log (replaced by `[forgotten]`).

pub mod facts;
mod frontmatter;
mod lock;

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};
use mnemo_core::{Config, Workspace};
use serde::{Deserialize, Serialize};
use sha2::Digest;

pub use frontmatter::{
    render as render_front_matter, split as split_front_matter, FrontMatter, FrontMatterError,
    MemoryType,
};

pub use lock::MemoryLock;

use crate::error::{Error, Result};
use crate::failpoint;
use crate::storage::{Expect, FileStorage, Held, SharedStorage, Storage};

/// The core memory document.
const MEMORY_MD: &str = "MEMORY.md";
/// The folder of the other memory documents.
const MEMORY_DIR: &str = "memory";
/// The append-only consolidation history.
const HISTORY_MD: &str = "memory/HISTORY.md";

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
    /// The strategy profile: `mnemo` (the default), `nanobot`, `openclaw`,
    /// `claude-code` or `mem0`; it sets the `[engine]` defaults of how
    /// memory is written (settings given in `[engine]` win).
    pub profile: String,
}

/// MEMORY.md as a new workspace starts: `mnemo init` writes it into a
/// folder and a multi-tenant server into each workspace it creates, so
/// that the same lines score the same in both (keyword scores depend on
/// every indexed document).
pub const INITIAL_MEMORY_MD: &str =
    "# Memory\n\nCore facts that hold across sessions. This file is always in the prompt \
(up to 200 lines / 25,000 bytes): keep it short and move detail into memory/ files.\n";

/// The strategy profiles `[memory] profile` accepts.
pub const PROFILES: &[&str] = &["mnemo", "nanobot", "openclaw", "claude-code", "mem0"];

impl Default for MemorySettings {
    fn default() -> Self {
        MemorySettings {
            timezone: "local".into(),
            memory_md_max_lines: 200,
            memory_md_max_bytes: 25_000,
            daily_log_max_bytes: 8_000,
            daily_append_max_chars: 4_000,
            profile: "mnemo".into(),
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

/// How [`MemoryStore::save_typed`] treats a name that is already taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SaveMode {
    /// Refuse to change a memory of the same name (the default): a name is
    /// updated only when asked. Saving exactly what is there already
    /// succeeds without writing, so a retry after a crash is harmless.
    #[default]
    Create,
    /// Update the memory of that name, wherever its file is.
    Replace,
}

/// What [`MemoryStore::save_typed`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SaveAction {
    /// A new memory file.
    Created,
    /// The memory of that name was updated.
    Replaced,
    /// The memory was already there, word for word.
    Unchanged,
}

/// A saved typed memory and what the save did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SavedMemory {
    /// The memory as stored.
    pub memory: TypedMemory,
    /// Created, replaced or unchanged.
    pub action: SaveAction,
}

/// What a `## heading` section write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SectionWrite {
    /// True when an existing section was replaced (false: added).
    pub replaced: bool,
    /// False when MEMORY.md already held exactly this.
    pub changed: bool,
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
    /// Why the front matter could not be read (`line N: …`), when the file
    /// opens a front matter block that is broken.
    pub front_error: Option<String>,
    /// The first lines of the file.
    pub head: String,
}

/// The memory documents of one workspace, in its [`Storage`] (the
/// workspace folder by default).
#[derive(Debug, Clone)]
pub struct MemoryStore {
    workspace: Workspace,
    settings: MemorySettings,
    storage: SharedStorage,
}

impl MemoryStore {
    /// A store over the files of `workspace`.
    pub fn new(workspace: &Workspace, settings: MemorySettings) -> Self {
        Self::with_storage(workspace, settings, Arc::new(FileStorage::new(workspace)))
    }

    /// A store over the documents of `storage` (`workspace` names the
    /// workspace's folder for derived state).
    pub fn with_storage(
        workspace: &Workspace,
        settings: MemorySettings,
        storage: SharedStorage,
    ) -> Self {
        MemoryStore {
            workspace: workspace.clone(),
            settings,
            storage,
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

    /// The storage the documents are kept in.
    pub fn storage(&self) -> &SharedStorage {
        &self.storage
    }

    /// The memory document `rel` (`MEMORY.md`, `memory/….md`), if it
    /// exists. A path that leaves the memory files is refused.
    pub fn read_document(&self, rel: &str) -> Result<Option<String>> {
        Ok(self.storage.read(memory_rel(rel)?)?.map(|d| d.text))
    }

    /// The memory document `rel` when it is a typed memory (it opens a
    /// front matter block, checked on its first bytes), else `None`
    /// without reading the rest: a daily log or the history is not read.
    pub fn read_typed_document(&self, rel: &str) -> Result<Option<String>> {
        let rel = memory_rel(rel)?;
        if !has_front_matter(self.storage.as_ref(), rel) {
            return Ok(None);
        }
        Ok(self.storage.read(rel)?.map(|d| d.text))
    }

    /// Replaces the memory document `rel` atomically; a blind write: hold
    /// [`lock`](Self::lock) from the read it was made from.
    pub fn write_document(&self, rel: &str, text: &str) -> Result<()> {
        self.storage.write(memory_rel(rel)?, text, Expect::Any)?;
        Ok(())
    }

    /// Removes the memory document `rel`; false when there was none. Only
    /// for a writer holding the memory lock that knows what it removes
    /// (forget goes through [`forget_typed`](Self::forget_typed)).
    pub fn remove_document(&self, rel: &str) -> Result<bool> {
        self.storage.remove(memory_rel(rel)?)
    }

    /// Reads `rel`, passes its text (empty when missing) to `edit` and
    /// writes what `edit` returns (`None`: no change) only over the version
    /// it read: a write by someone who does not take the memory lock
    /// (another program, a person editing the file) is not overwritten, the
    /// write fails with [`Error::Conflict`] instead (for a file, but for the
    /// instant between the check and the rename). Call it holding the
    /// memory lock.
    fn swap(&self, rel: &str, edit: impl FnOnce(&str) -> Result<Option<String>>) -> Result<bool> {
        let current = self.storage.read(rel)?;
        let text = current.as_ref().map_or("", |d| d.text.as_str());
        let Some(updated) = edit(text)? else {
            return Ok(false);
        };
        if updated == text {
            return Ok(false);
        }
        let expect = match current {
            Some(d) => Expect::Version(d.version),
            None => Expect::Absent,
        };
        self.storage.write(rel, &updated, expect)?;
        Ok(true)
    }

    // ----- MEMORY.md -----

    /// MEMORY.md's content (empty when missing).
    pub fn read_memory_md(&self) -> Result<String> {
        Ok(self.read_document(MEMORY_MD)?.unwrap_or_default())
    }

    /// Takes the workspace's memory lock (see [`MemoryLock`]). Hold it
    /// around a read of MEMORY.md and the write that depends on it; the
    /// methods of this store that edit files take it themselves, so never
    /// call them while holding it.
    pub fn lock(&self) -> Result<Held> {
        self.storage.lock_memory()
    }

    /// Replaces MEMORY.md atomically; returns false (and writes nothing)
    /// when the content is unchanged. A blind write: when `text` was made
    /// from what MEMORY.md held, hold [`lock`](Self::lock) from that read
    /// to this write, or use [`update_memory_md`](Self::update_memory_md).
    pub fn write_memory_md(&self, text: &str) -> Result<bool> {
        self.swap(MEMORY_MD, |_| Ok(Some(text.to_string())))
    }

    /// Reads MEMORY.md, passes it to `edit` and writes what `edit` returns
    /// (`None`: no change), all under the memory lock. Returns whether the
    /// file changed.
    pub fn update_memory_md(
        &self,
        edit: impl FnOnce(&str) -> Result<Option<String>>,
    ) -> Result<bool> {
        let _lock = self.lock()?;
        self.swap(MEMORY_MD, edit)
    }

    /// Replaces the body of the `## heading` section of MEMORY.md, or adds
    /// the section at the end (see [`replace_section`]), under the memory
    /// lock.
    pub fn write_section(&self, heading: &str, body: &str) -> Result<SectionWrite> {
        let heading = heading.trim().trim_start_matches('#').trim();
        if heading.is_empty() || heading.contains('\n') {
            return Err(Error::Invalid(
                "`heading` must be one non-empty line, e.g. \"Preferences\" for the `## Preferences` section"
                    .into(),
            ));
        }
        let mut replaced = false;
        let changed = self.update_memory_md(|current| {
            let (updated, r) = replace_section(current, heading, body);
            replaced = r;
            Ok(Some(updated))
        })?;
        Ok(SectionWrite { replaced, changed })
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

    // ----- facts (memory/facts.md) and the audit log -----

    /// The facts file, parsed (empty when missing). Hold
    /// [`lock`](Self::lock) from this read to the write that depends on it.
    pub fn read_facts(&self) -> Result<facts::FactsFile> {
        Ok(facts::FactsFile::parse(
            &self.read_document(facts::FACTS_FILE)?.unwrap_or_default(),
        ))
    }

    /// Replaces the facts file atomically when its text changes; a blind
    /// write: hold the memory lock.
    pub fn write_facts(&self, file: &facts::FactsFile) -> Result<bool> {
        let text = file.render();
        self.swap(facts::FACTS_FILE, |_| Ok(Some(text)))
    }

    /// Appends records to the audit log.
    pub fn append_audit(&self, records: &[facts::AuditRecord]) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        self.storage
            .append(facts::AUDIT_FILE, &facts::audit_lines(records)?)
    }

    /// The audit records about `name` (a fact id or a typed memory's
    /// name), oldest first.
    pub fn memory_history(&self, name: &str) -> Result<Vec<facts::AuditRecord>> {
        Ok(
            facts::parse_audit(&self.read_document(facts::AUDIT_FILE)?.unwrap_or_default())
                .into_iter()
                .filter(|r| r.concerns(name))
                .collect(),
        )
    }

    /// Forgets fact `id` (a person's forget: "no search finds it"), under
    /// the memory lock, and returns it. Goes with it every fact that holds
    /// the same words (an ended duplicate, current or not) and every fact a
    /// dream merged into one of them (the audit log's `merge` records);
    /// their text is redacted (replaced by [`facts::FORGOTTEN`]) from the
    /// history (dream and consolidation diffs), the daily logs and the
    /// audit log, whose records stay, saying what happened when.
    ///
    /// The facts file is written last, so a crash anywhere before leaves
    /// the fact in place and forgetting it again does the whole job; every
    /// file is replaced atomically. The index drops the text at its next
    /// sync (the service syncs at once).
    pub fn forget_fact(&self, id: &str, now: DateTime<Utc>) -> Result<facts::Fact> {
        let _lock = self.lock()?;
        let mut file = self.read_facts()?;
        let main = file
            .get(id)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("no fact {id:?} in {}", facts::FACTS_FILE)))?;
        let audit = facts::parse_audit(&self.read_document(facts::AUDIT_FILE)?.unwrap_or_default());
        let gone = forget_group(&file, &main.id, &audit);
        let mut needles: Vec<String> = gone
            .iter()
            .filter_map(|g| file.get(g))
            .filter_map(|f| facts::forget_needle(&f.text))
            .collect();
        // Longest first: a shorter text inside a longer one is found after.
        needles.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        needles.dedup();
        failpoint::hit("memory.forget_fact_start");
        // Derived copies first, the fact itself last (see above). A list
        // item of MEMORY.md that says the same (a line a dream did not
        // move, one a person copied) goes, and the text goes from a line
        // that says more: MEMORY.md is in every prompt.
        let texts: Vec<String> = gone
            .iter()
            .filter_map(|g| file.get(g))
            .map(|f| f.text.clone())
            .collect();
        self.swap(MEMORY_MD, |memory| {
            Ok(Some(
                facts::redact(&without_items_saying(memory, &texts), &needles).0,
            ))
        })?;
        self.redact_document(HISTORY_MD, &needles)?;
        // Daily logs and session notes (`memory/YYYY-MM-DD-slug.md`) quote
        // what was said; a typed memory is the person's own page (forgotten
        // by its name), so one whose name starts with a date is left alone.
        for e in self.storage.list(MEMORY_DIR)? {
            let quoting = e
                .rel
                .strip_prefix("memory/")
                .and_then(|n| n.strip_suffix(".md"))
                .is_some_and(|stem| {
                    is_date(stem)
                        || (is_session_note_stem(stem) && !has_front_matter(&*self.storage, &e.rel))
                });
            if quoting {
                self.redact_document(&e.rel, &needles)?;
            }
        }
        if self.storage.exists(facts::AUDIT_FILE)? {
            self.swap(facts::AUDIT_FILE, |text| {
                let mut text = text.to_string();
                for g in &gone {
                    text = facts::scrub_audit(&text, g)?.0;
                }
                Ok(Some(facts::redact_audit(&text, &needles)?))
            })?;
        }
        failpoint::hit("memory.forget_fact_scrubbed");
        let records: Vec<facts::AuditRecord> = gone
            .iter()
            .map(|g| facts::AuditRecord {
                at: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                op: "forget".into(),
                memory: g.clone(),
                by: "forget".into(),
                why: (*g != main.id).then(|| format!("the same words as {}", main.id)),
                ..Default::default()
            })
            .collect();
        self.append_audit(&records)?;
        for g in &gone {
            file.forget(g)?;
        }
        self.write_facts(&file)?;
        Ok(main)
    }

    /// Replaces `needles` in the document `rel` by [`facts::FORGOTTEN`]
    /// (see [`facts::redact`]), atomically, when it holds any.
    fn redact_document(&self, rel: &str, needles: &[String]) -> Result<bool> {
        if needles.is_empty() {
            return Ok(false);
        }
        self.swap(rel, |text| {
            let (out, n) = facts::redact(text, needles);
            Ok((n > 0).then_some(out))
        })
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
        self.storage.append(HISTORY_MD, &text)
    }

    /// The history log (empty when missing).
    pub fn read_history(&self) -> Result<String> {
        Ok(self.read_document(HISTORY_MD)?.unwrap_or_default())
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
        if !PROFILES.contains(&self.settings.profile.as_str()) {
            return Err(Error::Invalid(format!(
                "unknown [memory] profile {:?}: use one of {}",
                self.settings.profile,
                PROFILES.join(", ")
            )));
        }
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

    /// Workspace-relative path of the daily log of `date`.
    pub fn daily_rel(date: NaiveDate) -> String {
        format!("memory/{}.md", date.format("%Y-%m-%d"))
    }

    /// The daily log of `date`, if it exists.
    pub fn read_daily(&self, date: NaiveDate) -> Result<Option<DailyLog>> {
        let rel = Self::daily_rel(date);
        Ok(self.read_document(&rel)?.map(|text| DailyLog {
            date,
            path: rel,
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
        let rel = Self::daily_rel(date);
        // Under the lock, two writers of the same line write it once.
        let _lock = self.lock()?;
        let existing = self.read_document(&rel)?.unwrap_or_default();
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
            self.storage.append(&rel, &out)?;
        }
        Ok(AppendOutcome {
            path: rel,
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
        let base = format!("memory/{}-{slug}", date.format("%Y-%m-%d"));
        // Under the lock, two notes of the same name never take one file;
        // creating it exclusively keeps one written by anything else.
        let _lock = self.lock()?;
        for n in 1.. {
            let rel = if n == 1 {
                format!("{base}.md")
            } else {
                format!("{base}-{n}.md")
            };
            match self.storage.write(&rel, text, Expect::Absent) {
                Ok(_) => return Ok(rel),
                Err(Error::Conflict(_)) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(Error::Invalid(format!("no free name for the note {base}")))
    }

    // ----- typed memories -----

    /// Saves a typed memory and puts its index line into MEMORY.md, under
    /// the memory lock. A memory is found by the name in its front matter,
    /// whatever its file is called; a memory of the same name is updated
    /// only with [`SaveMode::Replace`], else the save is refused (saving
    /// exactly what is there succeeds as [`SaveAction::Unchanged`]). A new
    /// memory's file is `memory/<name>.md` with the name's letters kept in
    /// any script ([`typed_slug`]); when that file is taken (another name
    /// with the same letters, a daily log's date, the history), a suffix
    /// made from the name's hash keeps them apart.
    pub fn save_typed(
        &self,
        front: FrontMatter,
        body: &str,
        mode: SaveMode,
    ) -> Result<SavedMemory> {
        if front.name.trim().is_empty() {
            return Err(Error::Invalid("a memory needs a name: pass --name".into()));
        }
        if front.description.contains('\n') {
            return Err(Error::Invalid("the description must be one line".into()));
        }
        if typed_slug(&front.name).is_empty() {
            return Err(Error::Invalid(format!(
                "the name {:?} has no letters or digits to make a file name from",
                front.name
            )));
        }
        let _lock = self.lock()?;
        let (rel, action) = match self.find_typed(&front.name)? {
            Some(old) if old.front == front && old.body.trim() == body.trim() => {
                (old.path, SaveAction::Unchanged)
            }
            Some(old) if mode == SaveMode::Replace => (old.path, SaveAction::Replaced),
            Some(old) => {
                return Err(Error::Exists(format!(
                    "a memory named {:?} already exists ({}): pass --replace (`\"replace\": true` in memory_write) \
                     to update it, or choose another name",
                    old.front.name, old.path
                )))
            }
            None => (self.free_typed_path(&front.name), SaveAction::Created),
        };
        if action != SaveAction::Unchanged {
            self.write_document(&rel, &frontmatter::render(&front, body))?;
        }
        failpoint::hit("memory.typed_file_written");
        self.swap(MEMORY_MD, |memory| {
            Ok(Some(upsert_index_line(memory, &rel, &front)))
        })?;
        Ok(SavedMemory {
            memory: TypedMemory {
                path: rel,
                front,
                body: body.trim_end().to_string(),
            },
            action,
        })
    }

    /// The typed memory whose front matter names `name` (case and runs of
    /// spaces aside), wherever under `memory/` its file is; the first by
    /// path when several share it.
    pub fn find_typed(&self, name: &str) -> Result<Option<TypedMemory>> {
        let wanted = name_key(name);
        // Usually the memory is in the file its name gives.
        let usual = format!("memory/{}.md", typed_slug(name));
        if let Some(found) = self.typed_named(&usual, &wanted) {
            return Ok(Some(found));
        }
        Ok(self
            .storage
            .list(MEMORY_DIR)?
            .iter()
            .filter(|e| e.rel != usual)
            .find_map(|e| self.typed_named(&e.rel, &wanted)))
    }

    /// The typed memory in `rel` when its front matter's name is `wanted`
    /// (a [`name_key`]).
    fn typed_named(&self, rel: &str, wanted: &str) -> Option<TypedMemory> {
        if !has_front_matter(&*self.storage, rel) {
            return None;
        }
        let text = self.storage.read(rel).ok()??.text;
        // Parsing YAML costs more than looking for the name's ASCII words
        // (other characters may be escaped in the YAML).
        let lower = text.to_lowercase();
        if !wanted
            .split(|c: char| !c.is_ascii_alphanumeric())
            .all(|w| lower.contains(w))
        {
            return None;
        }
        match frontmatter::split(&text) {
            (Some(Ok(front)), body) if name_key(&front.name) == wanted => Some(TypedMemory {
                path: rel.to_string(),
                front,
                body: body.to_string(),
            }),
            _ => None,
        }
    }

    /// The typed memories under `memory/` (files with valid front matter),
    /// by path.
    pub fn list_typed(&self) -> Result<Vec<TypedMemory>> {
        let mut out = Vec::new();
        for e in self.storage.list(MEMORY_DIR)? {
            if !has_front_matter(&*self.storage, &e.rel) {
                continue;
            }
            let Some(doc) = self.storage.read(&e.rel)? else {
                continue;
            };
            if let (Some(Ok(front)), body) = frontmatter::split(&doc.text) {
                out.push(TypedMemory {
                    path: e.rel,
                    front,
                    body: body.to_string(),
                });
            }
        }
        Ok(out)
    }

    /// A free `memory/…md` path for a new memory called `name` (see
    /// [`save_typed`](Self::save_typed)).
    pub fn free_typed_path(&self, name: &str) -> String {
        let slug = typed_slug(name);
        let taken = |rel: &str| self.storage.exists(rel).unwrap_or(true);
        let reserved = slug == "history" || is_date(&slug);
        let rel = format!("memory/{slug}.md");
        if !reserved && !taken(&rel) {
            return rel;
        }
        let hash = hex::encode(sha2::Sha256::digest(name.trim().as_bytes()));
        let base = format!("memory/{slug}-{}", hash.get(..8).unwrap_or(&hash));
        let mut rel = format!("{base}.md");
        let mut n = 2;
        while taken(&rel) {
            rel = format!("{base}-{n}.md");
            n += 1;
        }
        rel
    }

    /// Removes a typed memory (by its name, or its `memory/…md` path), its
    /// index line and its text in the audit log, under the memory lock.
    /// Anything else under `memory/` (the history, daily logs, session
    /// notes: append-only) is refused. Returns the removed file's path.
    ///
    /// The file goes last: a crash before leaves it in place, and
    /// forgetting it again finishes the job. An index line whose file is
    /// gone already (left by a crash of an older mnemo, or a file deleted
    /// by hand) is removed when its name or path is forgotten.
    pub fn forget_typed(&self, name_or_path: &str) -> Result<String> {
        let given = name_or_path.trim();
        let _lock = self.lock()?;
        let memory_md = self.read_memory_md()?;
        let by_path = given.ends_with(".md") || given.contains('/');
        let rel = if by_path {
            given.trim_start_matches("./").to_string()
        } else {
            match self.find_typed(given)? {
                Some(m) => m.path,
                None => index_line_named(&memory_md, given)
                    .unwrap_or_else(|| format!("memory/{}.md", typed_slug(given))),
            }
        };
        let doc = match rel.starts_with("memory/") {
            true => self.storage.read(memory_rel(&rel)?)?,
            false => None,
        };
        let Some(doc) = doc else {
            // No file: only a dangling index line is left to remove.
            if rel.starts_with("memory/") && has_index_line(&memory_md, &rel) {
                let name = if by_path { None } else { Some(given) };
                self.scrub_typed_audit(name)?;
                self.swap(MEMORY_MD, |memory| {
                    Ok(Some(remove_index_line(memory, &rel)))
                })?;
                return Ok(rel);
            }
            return Err(Error::NotFound(format!(
                "no typed memory {given:?} (looked for {rel}): `mnemo memory list` shows them"
            )));
        };
        let history = rel.eq_ignore_ascii_case(HISTORY_MD);
        if history || !opens_front_matter(doc.text.as_bytes()) {
            let what = if history {
                "the consolidation history"
            } else {
                "not a typed memory (it has no front matter): daily logs, session notes and the history are append-only and"
            };
            return Err(Error::Refused(format!(
                "{rel} is {what} never forgotten; forget removes typed memories only (`mnemo memory list` shows them)"
            )));
        }
        // Its text goes from the audit log too: the records stay, saying
        // what happened when, without what was said.
        if let (Some(Ok(front)), _) = frontmatter::split(&doc.text) {
            self.scrub_typed_audit(Some(&front.name))?;
        }
        // The index line before the file (issue 43 N8): the line is in
        // every prompt, and a retry finds the file by its name.
        self.swap(MEMORY_MD, |memory| {
            Ok(Some(remove_index_line(memory, &rel)))
        })?;
        failpoint::hit("memory.forget_typed_index_removed");
        self.storage.remove(&rel)?;
        Ok(rel)
    }

    /// Removes the text of the typed memory `name` from the audit log.
    fn scrub_typed_audit(&self, name: Option<&str>) -> Result<()> {
        let Some(name) = name else { return Ok(()) };
        if self.storage.exists(facts::AUDIT_FILE)? {
            self.swap(facts::AUDIT_FILE, |text| {
                Ok(Some(facts::scrub_audit(text, name)?.0))
            })?;
        }
        Ok(())
    }

    /// Reads a typed memory file.
    pub fn read_typed(&self, rel: &str) -> Result<TypedMemory> {
        let path = PathBuf::from(rel);
        let text = self.read_document(rel)?.ok_or_else(|| {
            Error::NotFound(format!(
                "no memory file {rel}: `mnemo memory list` shows the typed memories"
            ))
        })?;
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
        let mut entries = self.storage.list(MEMORY_DIR)?;
        entries.sort_by_key(|e| std::cmp::Reverse(e.modified));
        let mut out = Vec::new();
        for e in entries.into_iter().take(max) {
            let text = match self.storage.read(&e.rel) {
                Ok(Some(d)) => d.text,
                Ok(None) => continue,
                Err(Error::Corrupt { message, .. }) => {
                    out.push(MemoryFileHeader {
                        path: e.rel,
                        modified: e.modified,
                        front: None,
                        front_error: Some(message),
                        head: String::new(),
                    });
                    continue;
                }
                Err(err) => return Err(err),
            };
            let head: String = text.lines().take(head_lines).collect::<Vec<_>>().join("\n");
            let (front, front_error) = match frontmatter::split(&text).0 {
                Some(Ok(f)) => (Some(f), None),
                Some(Err(e)) => (None, Some(format!("line {}: {}", e.line, e.message))),
                None => (None, None),
            };
            out.push(MemoryFileHeader {
                path: e.rel,
                modified: e.modified,
                front,
                front_error,
                head,
            });
        }
        Ok(out)
    }

    /// The memory block injected into every prompt: MEMORY.md within its
    /// cap, then today's and yesterday's daily logs (newest part kept).
    pub fn render_prompt_block(&self, now: DateTime<Utc>) -> Result<String> {
        let memory = self.render_memory_md()?;
        let body = without_memory_title(&memory.text);
        let mut out = String::from("# Memory\n\n## Long-term memory (MEMORY.md)\n\n");
        if body.trim().is_empty() {
            out.push_str("(empty)\n");
        } else {
            out.push_str(body.trim_end());
            out.push('\n');
        }
        // The current facts of fact-level consolidation, when there are any
        // (the facts that stopped being true are searched, not shown).
        let facts = self.read_facts()?;
        let current: Vec<String> = facts
            .current()
            .map(|f| format!("- {} ({})", f.text, f.id))
            .collect();
        if !current.is_empty() {
            let text = cap_memory(
                &(current.join("\n") + "\n"),
                self.settings.memory_md_max_lines,
                self.settings.memory_md_max_bytes,
            );
            out.push_str(&format!("\n## Facts ({})\n\n", facts::FACTS_FILE));
            out.push_str(text.text.trim_end());
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

/// The ids forget removes with fact `id`: it, the facts with the same
/// words as any of them ([`facts::same_words`]), and the facts a dream
/// merged into any of them (an audit `merge` record: the kept fact as
/// `memory`, the merged one as `supersedes`), to a fixed point.
fn forget_group(file: &facts::FactsFile, id: &str, audit: &[facts::AuditRecord]) -> Vec<String> {
    let mut gone = vec![id.to_string()];
    loop {
        let before = gone.len();
        for f in file.facts() {
            if gone.iter().any(|g| g.eq_ignore_ascii_case(&f.id)) {
                continue;
            }
            let same = gone
                .iter()
                .filter_map(|g| file.get(g))
                .any(|g| facts::same_words(&g.text, &f.text));
            let merged = audit.iter().any(|r| {
                r.op == "merge"
                    && r.supersedes
                        .as_deref()
                        .is_some_and(|s| s.eq_ignore_ascii_case(&f.id))
                    && gone.iter().any(|g| g.eq_ignore_ascii_case(&r.memory))
            });
            if same || merged {
                gone.push(f.id.clone());
            }
        }
        if gone.len() == before {
            return gone;
        }
    }
}

/// `memory` without its list items (`- …`, `* …`) that hold the same
/// words as one of `texts` ([`facts::same_words`]); every other line as it
/// is.
fn without_items_saying(memory: &str, texts: &[String]) -> String {
    let mut out = String::with_capacity(memory.len());
    for line in memory.split_inclusive('\n') {
        let t = line.trim();
        let item = t.strip_prefix("- ").or_else(|| t.strip_prefix("* "));
        if item.is_some_and(|i| texts.iter().any(|x| facts::same_words(i, x))) {
            continue;
        }
        out.push_str(line);
    }
    out
}

/// `rel` as a path of the memory documents (`MEMORY.md`, `memory/…`);
/// anything else (a session file, a path leaving the workspace) is refused.
fn memory_rel(rel: &str) -> Result<&str> {
    let rel = rel.trim_start_matches("./");
    if !mnemo_core::Area::Memory.holds(rel) || rel.split('/').any(|c| c == ".." || c.is_empty()) {
        return Err(Error::Path(mnemo_core::PathError::WrongArea {
            path: rel.to_string(),
            target: rel.to_string(),
            expected: "a memory file (MEMORY.md or under memory/)",
        }));
    }
    Ok(rel)
}

/// MEMORY.md without its own `# Memory` title (the first line `mnemo
/// init` writes): a prompt's memory block is titled `# Memory` already,
/// and the title twice reads as two memories.
pub fn without_memory_title(text: &str) -> &str {
    match text.split_inclusive('\n').next() {
        Some(first) if first.trim().eq_ignore_ascii_case("# memory") => text
            .get(first.len()..)
            .unwrap_or_default()
            .trim_start_matches(['\n', '\r']),
        _ => text,
    }
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

/// The newest `max_bytes` of a log (a daily log in the prompt), cut at a
/// line start, with a line saying that earlier entries were left out.
pub fn tail_within(text: &str, max_bytes: usize) -> String {
    if text.len() <= max_bytes {
        return text.to_string();
    }
    let mut start = text.len() - max_bytes;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let cut = text.get(start..).unwrap_or_default();
    let cut = cut.split_once('\n').map_or(cut, |(_, rest)| rest);
    format!("(… earlier entries omitted; the full log is in the file)\n{cut}")
}

/// True when `s` opens with a `[YYYY-MM-DD HH:MM]` history stamp.
pub fn has_stamp(s: &str) -> bool {
    stamp_rest(s, "dddd-dd-dd dd:dd").is_some()
}

/// What follows a leading `[pattern]` in `s`, where `d` in the pattern is
/// an ASCII digit and any other character stands for itself. Works on
/// characters, so text from users of any script can be checked without
/// slicing inside a character.
fn stamp_rest<'s>(s: &'s str, pattern: &str) -> Option<&'s str> {
    let mut rest = s.strip_prefix('[')?.chars();
    for want in pattern.chars() {
        let got = rest.next()?;
        let ok = if want == 'd' {
            got.is_ascii_digit()
        } else {
            got == want
        };
        if !ok {
            return None;
        }
    }
    rest.as_str().strip_prefix(']')
}

/// A daily-log item as compared for duplicates: without its `- ` bullets
/// and `[HH:MM]` stamps, trimmed and lower-cased.
pub fn normalise_item(line: &str) -> String {
    // A logged text may open with a bullet or a stamp of its own ("- x" is
    // written "- [09:30] - x"): every leading bullet and stamp is left out,
    // so the line as written and the text as given compare equal.
    let mut l = line.trim();
    while let Some(rest) = l.strip_prefix("- ").or_else(|| stamp_rest(l, "dd:dd")) {
        l = rest.trim_start();
    }
    l.trim_end().to_lowercase()
}

/// True when a document opens a front matter block (`---` on its first line).
fn opens_front_matter(head: &[u8]) -> bool {
    head.starts_with(b"---\n") || head.starts_with(b"---\r")
}

/// True when the document `rel` opens a front matter block: its first
/// bytes are read, not the whole document.
fn has_front_matter(storage: &dyn Storage, rel: &str) -> bool {
    storage
        .read_head(rel, 4)
        .is_ok_and(|h| h.is_some_and(|h| opens_front_matter(&h)))
}

/// A memory's name as compared: lower case, runs of spaces as one.
fn name_key(name: &str) -> String {
    name.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// `YYYY-MM-DD`: the name of a daily log.
fn is_date(s: &str) -> bool {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok() && s.len() == 10
}

/// `YYYY-MM-DD-<slug>`: the name of a session note (see
/// [`MemoryStore::write_session_note`]).
fn is_session_note_stem(s: &str) -> bool {
    s.get(..10).is_some_and(is_date) && s.as_bytes().get(10) == Some(&b'-') && s.len() > 11
}

/// Bytes a typed memory's slug may take. A file name may take 255 bytes
/// (most file systems); the slug shares it with `.md`, the suffix that
/// keeps two names apart (`-1a2b3c4d-2`) and the temp file's name while it
/// is written (`.<name>.tmp-<pid>-<n>`), so 60 characters of four bytes
/// each (emoji, CJK Extension B) would not fit (issue 43 N10).
pub const MAX_SLUG_BYTES: usize = 150;

/// The file-name slug of a typed memory's name: lower case, letters and
/// digits of every script kept (`过敏`, `张三-phone`, `café`), every other
/// run of characters one `-`, at most 60 characters and
/// [`MAX_SLUG_BYTES`] bytes.
pub fn typed_slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if slug_char(c) {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let mut bytes = 0;
    let mut out: String = out
        .trim_matches('-')
        .chars()
        .take(60)
        .take_while(|c| {
            bytes += c.len_utf8();
            bytes <= MAX_SLUG_BYTES
        })
        .collect();
    while out.ends_with('-') {
        out.pop();
    }
    out
}

/// Letters and digits; outside ASCII also combining marks (which belong to
/// the letter before them), but not spaces, controls or punctuation.
fn slug_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric();
    }
    if c.is_alphanumeric() {
        return true;
    }
    let punctuation = matches!(c as u32,
        0x00A0..=0x00BF | 0x00D7 | 0x00F7 | 0x2000..=0x206F | 0x2E00..=0x2E7F
        | 0x3000..=0x303F | 0xFE30..=0xFE4F | 0xFF01..=0xFF0F | 0xFF1A..=0xFF20
        | 0xFF3B..=0xFF40 | 0xFF5B..=0xFF65);
    !c.is_whitespace() && !c.is_control() && !punctuation
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

/// Replaces the body of the `## heading` section of `text` (up to the next
/// heading of level 1 or 2), or appends the section when there is none.
/// Returns the new text and whether a section was replaced.
pub fn replace_section(text: &str, heading: &str, body: &str) -> (String, bool) {
    let lines: Vec<&str> = text.lines().collect();
    let wanted = heading.trim();
    let start = lines.iter().position(|l| {
        l.strip_prefix("## ")
            .map(|h| h.trim().eq_ignore_ascii_case(wanted))
            .unwrap_or(false)
    });
    let body = body.trim_end();
    // An existing heading keeps its spelling; only the body changes.
    let heading_line = start
        .and_then(|s| lines.get(s))
        .map(|l| l.trim_end().to_string())
        .unwrap_or_else(|| format!("## {wanted}"));
    let mut section = format!("{heading_line}\n");
    if !body.is_empty() {
        section.push('\n');
        section.push_str(body);
        section.push('\n');
    }
    match start {
        Some(s) => {
            let end = lines
                .iter()
                .skip(s + 1)
                .position(|l| l.starts_with("## ") || l.starts_with("# "))
                .map(|i| s + 1 + i)
                .unwrap_or(lines.len());
            let mut out = String::new();
            for l in lines.iter().take(s) {
                out.push_str(l);
                out.push('\n');
            }
            out.push_str(&section);
            if end < lines.len() {
                out.push('\n');
                for l in lines.iter().skip(end) {
                    out.push_str(l);
                    out.push('\n');
                }
            }
            (out, true)
        }
        None => {
            let mut out = text.trim_end().to_string();
            if !out.is_empty() {
                out.push_str("\n\n");
            }
            out.push_str(&section);
            (out, false)
        }
    }
}

fn index_line(rel: &str, front: &FrontMatter) -> String {
    let hook: String = front.description.chars().take(120).collect();
    format!("- [{}]({rel}): {hook}", front.name.replace(['[', ']'], ""))
}

/// MEMORY.md `memory` with the index line of the typed memory at `rel`
/// put in (replaced when it has one, else added at the end of `## Memory
/// files`, made when missing).
pub fn upsert_index_line(memory: &str, rel: &str, front: &FrontMatter) -> String {
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
        match out.iter().position(|l| l.trim() == "## Memory files") {
            // At the end of the index section, before whatever follows it.
            Some(h) => {
                let mut end = out
                    .iter()
                    .skip(h + 1)
                    .position(|l| l.starts_with("# ") || l.starts_with("## "))
                    .map_or(out.len(), |i| h + 1 + i);
                while end > h + 1 && out.get(end - 1).is_some_and(|l| l.trim().is_empty()) {
                    end -= 1;
                }
                if end == h + 1 {
                    out.insert(end, String::new());
                    end += 1;
                }
                out.insert(end, line);
            }
            None => {
                while out.last().is_some_and(|l| l.trim().is_empty()) {
                    out.pop();
                }
                if !out.is_empty() {
                    out.push(String::new());
                }
                out.push("## Memory files".into());
                out.push(String::new());
                out.push(line);
            }
        }
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

/// True when `memory` holds the index line of the file `rel`.
fn has_index_line(memory: &str, rel: &str) -> bool {
    let needle = format!("]({rel})");
    memory
        .lines()
        .any(|l| l.trim_start().starts_with("- [") && l.contains(&needle))
}

/// The file an index line of `memory` names for the memory called `name`
/// (`- [Name](memory/….md): …`, names compared as [`name_key`] does).
fn index_line_named(memory: &str, name: &str) -> Option<String> {
    let wanted = name_key(&name.replace(['[', ']'], ""));
    memory.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix("- [")?;
        let (n, rest) = rest.split_once("](")?;
        let (rel, _) = rest.split_once(')')?;
        (name_key(n) == wanted && rel.starts_with("memory/") && rel.ends_with(".md"))
            .then(|| rel.to_string())
    })
}

fn remove_index_line(memory: &str, rel: &str) -> String {
    let needle = format!("]({rel})");
    let mut lines: Vec<&str> = memory
        .lines()
        .filter(|l| !(l.trim_start().starts_with("- [") && l.contains(&needle)))
        .collect();
    // A "Memory files" heading with no line left under it goes too: every
    // prompt would carry an empty section.
    if let Some(h) = lines.iter().position(|l| l.trim() == "## Memory files") {
        let below = lines.get(h + 1..).unwrap_or_default();
        let end = below
            .iter()
            .position(|l| l.starts_with('#'))
            .unwrap_or(below.len());
        if below.iter().take(end).all(|l| l.trim().is_empty()) {
            lines.drain(h..h + 1 + end);
            while lines.last().is_some_and(|l| l.trim().is_empty()) {
                lines.pop();
            }
        }
    }
    let mut s: String = lines.join("\n");
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
    fn typed_slugs_keep_every_script() {
        assert_eq!(typed_slug("Likes Green Tea!"), "likes-green-tea");
        assert_eq!(typed_slug("../../etc"), "etc");
        assert_eq!(typed_slug("张三 phone"), "张三-phone");
        assert_eq!(typed_slug("李四 phone"), "李四-phone");
        assert_eq!(typed_slug("过敏"), "过敏");
        assert_eq!(typed_slug("Café «crème»"), "café-crème");
        assert_eq!(typed_slug("हिन्दी नोट"), "हिन्दी-नोट");
        assert_eq!(typed_slug("电话，地址。"), "电话-地址");
        assert_eq!(typed_slug("/\\:*?<>|"), "");
        // Issue 43 N10: capped in bytes, not only in characters.
        let emoji = typed_slug(&"\u{1F642}".repeat(56));
        assert!(
            emoji.len() <= MAX_SLUG_BYTES && !emoji.is_empty(),
            "{emoji}"
        );
        assert_eq!(emoji.chars().count(), MAX_SLUG_BYTES / 4);
        assert!(typed_slug(&"\u{20000}".repeat(60)).len() <= MAX_SLUG_BYTES);
        assert_eq!(typed_slug(&"a".repeat(80)).len(), 60);
        assert!(is_date("2026-11-28") && !is_date("2026-11-28-x") && !is_date("tea"));
        assert!(
            is_session_note_stem("2026-11-28-tea-talk") && is_session_note_stem("2026-11-28-x")
        );
        assert!(!is_session_note_stem("2026-11-28") && !is_session_note_stem("2026-11-28-"));
        assert!(!is_session_note_stem("2026-13-28-x") && !is_session_note_stem("tea-2026-11-28"));
        assert_eq!(name_key("  Tea   Time "), "tea time");
    }

    #[test]
    fn replaces_a_section_up_to_the_next_heading() {
        let text = "# Memory\n\n## Preferences\n\n- tea\n\n## People\n\n- Ana\n";
        let (out, replaced) = replace_section(text, "preferences", "- coffee");
        assert!(replaced);
        assert_eq!(
            out,
            "# Memory\n\n## Preferences\n\n- coffee\n\n## People\n\n- Ana\n"
        );
        let (out, replaced) = replace_section("## A\n\nx\n\n## B\n\ny\n", "B", "z");
        assert!(replaced);
        assert_eq!(out, "## A\n\nx\n\n## B\n\nz\n");
    }

    #[test]
    fn appends_a_missing_section() {
        let (out, replaced) = replace_section("# Memory\n", "Todos", "- ship");
        assert!(!replaced);
        assert_eq!(out, "# Memory\n\n## Todos\n\n- ship\n");
        let (out, _) = replace_section("", "Todos", "- ship");
        assert_eq!(out, "## Todos\n\n- ship\n");
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
        // The last line gone, its empty heading goes with it.
        assert_eq!(
            remove_index_line(&m2, "memory/tea.md"),
            "# Facts\n\n- works at ACME\n"
        );
        assert_eq!(
            remove_index_line(
                "# M\n\n## Memory files\n\n- [Tea](memory/tea.md): x\n\n## Later\n\n- y\n",
                "memory/tea.md"
            ),
            "# M\n\n## Later\n\n- y\n"
        );
        // A new line joins the index section, wherever it is.
        let fm3 = FrontMatter {
            name: "Cat".into(),
            ..fm2
        };
        let m3 = upsert_index_line(
            &format!("{m2}\n## Later\n\n- other\n"),
            "memory/cat.md",
            &fm3,
        );
        assert_eq!(
            m3,
            "# Facts\n\n- works at ACME\n\n## Memory files\n\n- [Tea](memory/tea.md): now oolong\n- [Cat](memory/cat.md): now oolong\n\n## Later\n\n- other\n"
        );
    }
}
