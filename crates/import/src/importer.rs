//! The writing half of an import: sessions, MEMORY.md sections, history
//! entries and files, each decided against what the workspace already holds
//! (so that a second run changes nothing) and written only outside a dry run.
//!
//! A session is held in memory once, as its records: it is compared with
//! the workspace's log by the digests of their lines (the log is read a line
//! at a time) and a new log is written a line at a time into a temp file
//! renamed into place, so that memory stays within a small multiple of the
//! largest conversation whatever the number of conversations, in a dry run
//! too.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use mnemo_core::{resolve_in_workspace, Content, Message, Workspace};
use mnemo_store::{fsutil, MemorySettings, MemoryStore, Record, SessionMetadata, SessionStore};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::manifest::{Manifest, Written};
use crate::report::{Kind, Report, Verb};
use crate::Tool;

/// Decides and performs the writes of one import run.
pub(crate) struct Importer<'a> {
    ws: &'a Workspace,
    sessions: SessionStore,
    memory: MemoryStore,
    tool: Tool,
    /// The source folder as shown in MEMORY.md headings and the manifest.
    source_display: String,
    dry_run: bool,
    manifest: Manifest,
    manifest_dirty: bool,
    /// What this dry run would have written so far, by path, so that its
    /// later decisions (a second daily log into the same file, an index
    /// line after a merged MEMORY.md) are those of the real run.
    overlay: HashMap<PathBuf, Vec<u8>>,
    /// The same for session logs, as their [`LogShape`]: all a later
    /// decision reads of them, and a few bytes a line rather than the log.
    dry_logs: HashMap<PathBuf, LogShape>,
    pub(crate) report: Report,
    /// The key of the log the last [`Importer::session`] went to (created,
    /// appended to or found already imported): its own key, or the
    /// alternative one when another conversation holds that.
    pub(crate) last_session_key: Option<String>,
}

/// The sha-256 of one log line as the store encodes it (see
/// [`normalise`]): what a session's lines and a log's are compared by.
type LineDigest = [u8; 32];

fn line_digest(line: &str) -> LineDigest {
    Sha256::digest(line.as_bytes()).into()
}

/// What a comparison needs of a session log: the digests of its lines
/// after the metadata, and its cursor.
#[derive(Debug, Clone, Default)]
struct LogShape {
    lines: Vec<LineDigest>,
    cursor: usize,
}

/// A session's lines within the limits of an append
/// ([`Importer::bound_lines`]).
struct Bounded {
    lines: Vec<SessionLine>,
    /// The digest of each line.
    digests: Vec<LineDigest>,
    /// The sha-256 of the lines (as the store encodes them) joined by
    /// newlines, which the manifest records.
    sha256: String,
}

/// A line to merge into MEMORY.md, with the text that shows it is already
/// there when that is not the line itself (an index line is present when
/// its link target is).
pub(crate) struct MergeLine {
    pub text: String,
    pub needle: Option<String>,
}

/// One line of a session to import.
pub(crate) struct SessionLine {
    pub record: Record,
    /// The source's own JSON, written instead of the record's encoding: the
    /// store drops `"content": null`, which nanobot's tool-call messages
    /// carry.
    pub verbatim: Option<Value>,
}

impl SessionLine {
    fn text(&self) -> Result<String, serde_json::Error> {
        match &self.verbatim {
            Some(v) => serde_json::to_string(v),
            None => self.record.to_line(),
        }
    }

    fn is_message(&self) -> bool {
        matches!(self.record, Record::Message(_))
    }
}

impl From<Record> for SessionLine {
    fn from(record: Record) -> Self {
        SessionLine {
            record,
            verbatim: None,
        }
    }
}

/// One history entry.
pub(crate) struct HistoryEntry {
    pub text: String,
}

pub(crate) fn sha256(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

impl<'a> Importer<'a> {
    pub(crate) fn new(
        ws: &'a Workspace,
        sessions: SessionStore,
        tool: Tool,
        source_display: String,
        dry_run: bool,
        manifest: Manifest,
    ) -> Self {
        Importer {
            ws,
            sessions,
            memory: MemoryStore::new(ws, MemorySettings::default()),
            tool,
            source_display,
            dry_run,
            manifest,
            manifest_dirty: false,
            overlay: HashMap::new(),
            dry_logs: HashMap::new(),
            report: Report {
                dry_run,
                ..Report::default()
            },
            last_session_key: None,
        }
    }

    /// Shows `display` as the source (when the import reads from a folder
    /// above the one given).
    pub(crate) fn set_source_display(&mut self, display: String) {
        self.source_display = display;
    }

    pub(crate) fn source_display(&self) -> &str {
        &self.source_display
    }

    fn abs_source(&self, rel: &str) -> String {
        format!("{}/{rel}", self.source_display.trim_end_matches('/'))
    }

    /// The `[session]` options the workspace's logs are written with.
    pub(crate) fn session_options(&self) -> &mnemo_store::SessionOptions {
        self.sessions.options()
    }

    pub(crate) fn tool(&self) -> Tool {
        self.tool
    }

    // ----- the workspace as this run leaves it -----

    /// A workspace file's bytes as this run leaves it (a dry run's would-be
    /// writes included); `None` when it does not exist.
    fn current(&self, path: &Path) -> std::io::Result<Option<Vec<u8>>> {
        if let Some(b) = self.overlay.get(path) {
            return Ok(Some(b.clone()));
        }
        match fs::read(path) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// [`current`](Self::current) as text (empty when missing).
    fn current_text(&self, path: &Path) -> mnemo_store::Result<String> {
        match self.overlay.get(path) {
            Some(b) => Ok(String::from_utf8_lossy(b).into_owned()),
            None => Ok(fsutil::read_text_opt(path)?.unwrap_or_default()),
        }
    }

    /// Records, in a dry run, that `bytes` would now be the file at `path`.
    fn would_write(&mut self, path: &Path, bytes: &[u8]) {
        if self.dry_run {
            self.overlay.insert(path.to_path_buf(), bytes.to_vec());
        }
    }

    /// Records, in a dry run, that `bytes` would be appended to `path`.
    fn would_append(&mut self, path: &Path, bytes: &[u8]) {
        if self.dry_run {
            let mut cur = self.current(path).ok().flatten().unwrap_or_default();
            cur.extend_from_slice(bytes);
            self.overlay.insert(path.to_path_buf(), cur);
        }
    }

    /// Says that no conversation was found where the tool keeps them
    /// (`looked_in`): a problem of the report unless the user allowed it.
    pub(crate) fn no_conversations(&mut self, looked_in: &[String], allowed: bool) {
        let places = if looked_in.is_empty() {
            "nowhere: this folder has none of the places it keeps them".to_string()
        } else {
            looked_in.join(", ")
        };
        let (verb, next) = if allowed {
            (Verb::Skip, "the memory files were imported alone, as asked")
        } else {
            (
                Verb::Error,
                "give the folder the conversations are in (see `mnemo import --help`), or pass --allow-no-sessions to import the memory files alone",
            )
        };
        let detail = format!(
            "no conversations found where {} keeps them (looked in: {places}); {next}",
            self.tool.as_str()
        );
        self.report.push(verb, Kind::Session, "", "", detail);
    }

    /// Writes the manifest when this run changed something.
    pub(crate) fn finish(mut self) -> crate::Result<Report> {
        if self.manifest_dirty && !self.dry_run {
            self.manifest.save(self.ws)?;
        }
        self.report.dry_run = self.dry_run;
        Ok(self.report)
    }

    // ----- sessions -----

    /// Imports one session: `lines` are its lines after the metadata.
    ///
    /// The session is compared with the workspace's log by the digests of
    /// their lines and written a line at a time, so that memory holds the
    /// session's records once (not also its text, the text compared and the
    /// whole log as one string).
    pub(crate) fn session(
        &mut self,
        key: &str,
        meta: SessionMetadata,
        lines: Vec<SessionLine>,
        source_rel: &str,
    ) {
        self.report.conversations += 1;
        self.last_session_key = None;
        let Some(bounded) = self.bound_lines(key, lines, source_rel) else {
            return;
        };
        let cmp = &bounded.digests;
        let messages = bounded.lines.iter().filter(|l| l.is_message()).count();
        let alt = format!(
            "{key}#{}-{}",
            self.tool.as_str(),
            &sha256(source_rel.as_bytes())[..8]
        );
        let mut conflicts = Vec::new();
        for candidate in [key, alt.as_str()] {
            let path = match self.sessions.path_for(candidate) {
                Ok(p) => p,
                Err(e) => {
                    self.report.push(
                        Verb::Error,
                        Kind::Session,
                        "",
                        source_rel,
                        format!("{e}; the session was skipped"),
                    );
                    return;
                }
            };
            let target = rel_to(self.ws, &path);
            let existing = match self.existing_log(&path) {
                Ok(Some(shape)) => shape,
                Ok(None) => {
                    self.last_session_key = Some(candidate.to_string());
                    let mut meta = meta;
                    meta.key = candidate.to_string();
                    self.create_session(
                        &path, &target, meta, &bounded, messages, source_rel, &conflicts,
                    );
                    return;
                }
                Err(e) => {
                    self.report.push(
                        Verb::Error,
                        Kind::Session,
                        target,
                        source_rel,
                        format!("cannot read the existing log ({e}); the session was skipped"),
                    );
                    return;
                }
            };
            let (existing, cursor) = (existing.lines, existing.cursor);
            if existing.len() <= cmp.len() && existing[..] == cmp[..existing.len()] {
                self.last_session_key = Some(candidate.to_string());
                let from = existing.len();
                let new_messages = bounded.lines[from..]
                    .iter()
                    .filter(|l| l.is_message())
                    .count();
                let move_cursor = meta.last_consolidated > cursor;
                if from == bounded.lines.len() && !move_cursor {
                    self.report.push(
                        Verb::Skip,
                        Kind::Session,
                        target,
                        source_rel,
                        format!("already imported ({messages} messages)"),
                    );
                    return;
                }
                let moved_to = move_cursor.then_some(meta.last_consolidated);
                self.append_session(
                    candidate,
                    &target,
                    &bounded,
                    from,
                    new_messages,
                    moved_to,
                    source_rel,
                );
                if self.dry_run {
                    // What the appends would leave, for the rest of the run.
                    let shape = LogShape {
                        lines: cmp.clone(),
                        cursor: moved_to.unwrap_or(cursor),
                    };
                    self.dry_logs.insert(path, shape);
                }
                return;
            }
            if cmp.len() < existing.len() && existing[..cmp.len()] == cmp[..] {
                self.last_session_key = Some(candidate.to_string());
                self.report.push(
                    Verb::Skip,
                    Kind::Session,
                    target,
                    source_rel,
                    format!(
                        "already imported ({messages} messages); the workspace log has {} more line(s) since",
                        existing.len() - cmp.len()
                    ),
                );
                return;
            }
            conflicts.push(target);
        }
        self.report.push(
            Verb::Error,
            Kind::Session,
            conflicts.join(", "),
            source_rel,
            format!(
                "the workspace already holds a different conversation under key {key:?} (and {alt:?}); nothing was written: move those logs out of sessions/ and run the import again"
            ),
        );
    }

    /// The log at `path` as this run leaves it (a dry run's would-be
    /// writes included), or `None` when there is none.
    fn existing_log(&self, path: &Path) -> mnemo_store::Result<Option<LogShape>> {
        match self.dry_logs.get(path) {
            Some(shape) => Ok(Some(shape.clone())),
            None => read_log_shape(path),
        }
    }

    /// Puts a session's lines through the limits of an append: the
    /// tool-result budget (an oversized result is persisted beside the log
    /// and replaced by a preview; a dry run only names its file) and the
    /// line limit (`[session] max_line_bytes`). A line over the limit is an
    /// error and left out, so the log never holds a line mnemo's own writers
    /// would refuse. Returns the lines kept with the digests they are
    /// compared by, or `None` when the session cannot be imported
    /// (reported).
    ///
    /// The budget applies per turn, as it does to an append (whose batch
    /// is a turn): an imported turn runs from a user message to the next,
    /// so one assistant turn of many large results keeps at most the
    /// per-turn characters inline (issue 43 N3). The budget runs before
    /// the session is compared with the workspace, so a result may be
    /// persisted for a session that turns out to conflict; the file names
    /// it, and a later import reuses it.
    fn bound_lines(
        &mut self,
        key: &str,
        mut lines: Vec<SessionLine>,
        source_rel: &str,
    ) -> Option<Bounded> {
        for turn in turns(&lines) {
            if let Err(e) = self.budget_turn(key, &mut lines, &turn) {
                self.report.push(
                    Verb::Error,
                    Kind::Session,
                    "",
                    source_rel,
                    format!("cannot persist a large tool result ({e}); the session was skipped"),
                );
                return None;
            }
        }
        let mut kept = Vec::with_capacity(lines.len());
        let mut digests = Vec::with_capacity(lines.len());
        let mut joined = Sha256::new();
        for (i, l) in lines.into_iter().enumerate() {
            let t = match l.text() {
                Ok(t) => t,
                Err(e) => {
                    self.report.push(
                        Verb::Error,
                        Kind::Session,
                        "",
                        source_rel,
                        format!("cannot encode a line ({e}); the session was skipped"),
                    );
                    return None;
                }
            };
            let options = self.sessions.options();
            let over = match &l.record {
                Record::Message(m) => options.check_line(m, t.as_bytes()).err().map(|e| e.to_string()),
                _ if t.len() > options.max_line_bytes => Some(format!(
                    "a record of {} bytes is over the {}-byte line limit; raise [session] max_line_bytes to import it",
                    t.len(),
                    options.max_line_bytes
                )),
                _ => None,
            };
            if let Some(why) = over {
                self.report.push(
                    Verb::Error,
                    Kind::Session,
                    "",
                    source_rel,
                    format!("line {} of the conversation: {why}; it was left out of the imported log, the rest imported", i + 1),
                );
                continue;
            }
            // Compared through the store's own encoding, so that a line
            // written verbatim and the same line read back compare equal.
            // The text itself is not kept: the line is encoded again when
            // it is written.
            let normal = normalise(&t);
            let normal = normal.as_deref().unwrap_or(&t);
            digests.push(line_digest(normal));
            if !kept.is_empty() {
                joined.update(b"\n");
            }
            joined.update(normal.as_bytes());
            kept.push(l);
        }
        Some(Bounded {
            lines: kept,
            digests,
            sha256: hex::encode(joined.finalize()),
        })
    }

    /// Applies the tool-result budget to the messages of one turn (`turn`:
    /// indices of `lines` holding messages), as one batch. A result the
    /// budget persisted is written as the budget left it, and the source's
    /// own entry kept beside it points at the file too (else the line
    /// would still carry the whole result).
    fn budget_turn(
        &self,
        key: &str,
        lines: &mut [SessionLine],
        turn: &[usize],
    ) -> mnemo_store::Result<()> {
        // Moved out and back, not copied: a turn may hold megabytes.
        let mut batch: Vec<Message> = turn
            .iter()
            .filter_map(|&i| match &mut lines.get_mut(i)?.record {
                Record::Message(m) => Some(std::mem::replace(m, Message::user(""))),
                _ => None,
            })
            .collect();
        let before: Vec<Option<String>> = batch
            .iter()
            .map(|m| {
                (m.role == mnemo_core::Role::Tool
                    && mnemo_store::session::persisted_path(m).is_none())
                .then(|| m.text())
            })
            .collect();
        let applied = self.sessions.apply_budget(key, &mut batch, self.dry_run);
        for ((&i, mut m), full) in turn.iter().zip(batch).zip(before) {
            let Some(l) = lines.get_mut(i) else { continue };
            if let Some(full) = full.filter(|_| mnemo_store::session::persisted_path(&m).is_some())
            {
                l.verbatim = None;
                let marker = m.text();
                // Strings of the entry at least half the result's length
                // (or half the single-result limit) are the result, not a
                // command or a path that happens to appear in it.
                let min = (self.sessions.options().tool_result_max_chars / 2).min(full.len() / 2);
                for tool in ["claude_code", "openclaw"] {
                    if let Some(v) = m.extra.get_mut(tool) {
                        point_at_file(v, &full, &marker, min);
                    }
                }
            }
            l.record = Record::Message(m);
        }
        applied
    }

    #[allow(clippy::too_many_arguments)]
    fn create_session(
        &mut self,
        path: &Path,
        target: &str,
        meta: SessionMetadata,
        bounded: &Bounded,
        messages: usize,
        source_rel: &str,
        conflicts: &[String],
    ) {
        let records = bounded.lines.len() - messages;
        let mut detail = format!(
            "{messages} message(s), {records} other record(s), cursor {}",
            meta.last_consolidated
        );
        if !conflicts.is_empty() {
            detail.push_str(&format!(
                "; key {:?} because {} holds a different conversation",
                meta.key,
                conflicts.join(", ")
            ));
        }
        let key = meta.key.clone();
        let cursor = meta.last_consolidated;
        let head = match Record::Metadata(meta).to_line() {
            Ok(l) => l,
            Err(e) => {
                self.report.push(
                    Verb::Error,
                    Kind::Session,
                    target,
                    source_rel,
                    format!("cannot encode the metadata ({e}); the session was skipped"),
                );
                return;
            }
        };
        // Written whole or not at all: a crash leaves no half-imported
        // session, and the original metadata (created_at, cursor, …) is
        // kept as is.
        if !self.report.write(
            self.dry_run,
            Kind::Session,
            target,
            source_rel,
            "the session was not imported",
            || write_log(path, &head, &bounded.lines),
        ) {
            return;
        }
        if self.dry_run {
            self.dry_logs.insert(
                path.to_path_buf(),
                LogShape {
                    lines: bounded.digests.clone(),
                    cursor,
                },
            );
        }
        self.note_session(&key, source_rel, &bounded.sha256);
        self.report.messages += messages;
        self.report.records += records;
        self.report
            .push(Verb::Create, Kind::Session, target, source_rel, detail);
    }

    /// Appends the lines of `bounded` from `from` on to the log of `key`
    /// (which holds the ones before), and moves its cursor to `cursor`.
    #[allow(clippy::too_many_arguments)]
    fn append_session(
        &mut self,
        key: &str,
        target: &str,
        bounded: &Bounded,
        from: usize,
        new_messages: usize,
        cursor: Option<usize>,
        source_rel: &str,
    ) {
        let new = &bounded.lines[from..];
        let sessions = &self.sessions;
        if !self.report.write(
            self.dry_run,
            Kind::Session,
            target,
            source_rel,
            "lines before the failure were appended, run the import again to finish",
            || -> mnemo_store::Result<()> {
                let mut log = sessions.open(key)?;
                for l in new {
                    match &l.verbatim {
                        Some(v) => log.append_record(&Record::Other(v.clone()))?,
                        None => log.append_record(&l.record)?,
                    }
                }
                if let Some(c) = cursor {
                    log.set_cursor(c)?;
                }
                log.sync()
            },
        ) {
            return;
        }
        self.note_session(key, source_rel, &bounded.sha256);
        self.report.messages += new_messages;
        self.report.records += new.len() - new_messages;
        let mut detail = format!(
            "{new_messages} new message(s), {} other record(s)",
            new.len() - new_messages
        );
        if let Some(c) = cursor {
            detail.push_str(&format!(", cursor moved to {c}"));
        }
        self.report
            .push(Verb::Append, Kind::Session, target, source_rel, detail);
    }

    /// True (and reported) when a source line is over the session line
    /// limit. Every imported line keeps its source entry, so such a line
    /// could only become a log line over the limit: it is left out before
    /// it is parsed, which would take several times its size in memory.
    pub(crate) fn over_line_limit(&mut self, rel: &str, index: usize, line: &str) -> bool {
        let limit = self.sessions.options().max_line_bytes;
        if line.len() <= limit {
            return false;
        }
        self.report.push(
            Verb::Error,
            Kind::Session,
            "",
            format!("{rel}:{}", index + 1),
            format!(
                "a line of {} bytes is over the {limit}-byte line limit of a session log; it was left out of the imported log, the rest imported (raise [session] max_line_bytes to import it)",
                line.len()
            ),
        );
        true
    }

    /// A source line that could not be read, kept verbatim as an
    /// `import_unparsed` record (the import loses nothing) and reported
    /// with where to look.
    pub(crate) fn unparsed_line(
        &mut self,
        rel: &str,
        index: usize,
        line: &str,
        why: impl std::fmt::Display,
    ) -> Record {
        self.report.push(
            Verb::Error,
            Kind::Session,
            "",
            format!("{rel}:{}", index + 1),
            if line.is_empty() {
                // A database row that could not be read: nothing of it is
                // kept but its place.
                format!("{why}; an `import_unparsed` record marks its place in the log")
            } else {
                format!("{why}; the line is kept verbatim as an `import_unparsed` record")
            },
        );
        Record::Other(serde_json::json!({
            "_type": "import_unparsed",
            "source": rel,
            "line": index + 1,
            "text": line,
        }))
    }

    /// Records in the manifest that `key` was imported from `source_rel`;
    /// `sha256` is that of its lines (see [`Bounded::sha256`]).
    fn note_session(&mut self, key: &str, source_rel: &str, sha256: &str) {
        self.manifest.sessions.insert(
            key.to_string(),
            Written {
                tool: self.tool.as_str().into(),
                source: self.abs_source(source_rel),
                sha256: sha256.to_string(),
            },
        );
        self.manifest_dirty = true;
    }

    // ----- MEMORY.md -----

    /// [`merge_memory_md`](Self::merge_memory_md) for a whole MEMORY.md of
    /// another tool, line by line.
    pub(crate) fn merge_memory_text(&mut self, source_rel: &str, text: &str) {
        let lines = text
            .lines()
            .map(|l| MergeLine {
                text: l.to_string(),
                needle: None,
            })
            .collect();
        self.merge_memory_md(source_rel, lines);
    }

    /// Appends the lines MEMORY.md does not hold yet under
    /// `## Imported from <tool> (<source>)`.
    pub(crate) fn merge_memory_md(&mut self, source_rel: &str, lines: Vec<MergeLine>) {
        let memory_md = self.ws.memory_md();
        // Held from the read to the write: another writer's lines survive.
        let read = if self.dry_run {
            Ok(None)
        } else {
            self.memory.lock().map(Some)
        }
        .and_then(|lock| Ok((lock, self.current_text(&memory_md)?)));
        let (_lock, existing) = match read {
            Ok(r) => r,
            Err(e) => {
                self.report.push(
                    Verb::Error,
                    Kind::MemoryMd,
                    "MEMORY.md",
                    source_rel,
                    format!("{e}; nothing was merged"),
                );
                return;
            }
        };
        let known: HashSet<&str> = existing.lines().map(str::trim).collect();
        let total = lines.iter().filter(|l| !l.text.trim().is_empty()).count();
        let mut kept: Vec<String> = Vec::new();
        for l in lines {
            let t = l.text.trim();
            if t.is_empty() {
                if kept.last().is_some_and(|p| !p.trim().is_empty()) {
                    kept.push(String::new());
                }
                continue;
            }
            let present = match &l.needle {
                Some(n) => existing.contains(n.as_str()),
                None => known.contains(t),
            };
            if !present {
                kept.push(l.text.trim_end().to_string());
            }
        }
        while kept.last().is_some_and(|l| l.is_empty()) {
            kept.pop();
        }
        let new = kept.iter().filter(|l| !l.is_empty()).count();
        if new == 0 {
            self.report.push(
                Verb::Skip,
                Kind::MemoryMd,
                "MEMORY.md",
                source_rel,
                format!("all {total} line(s) already there"),
            );
            return;
        }
        let heading = format!(
            "## Imported from {} ({})",
            self.tool.as_str(),
            self.source_display
        );
        let mut text = existing.trim_end().to_string();
        // Lines of the same import (an index line after the MEMORY.md it
        // merged) go under the heading already opened for them.
        let same_section = text
            .lines()
            .rev()
            .find(|l| l.starts_with("## "))
            .is_some_and(|l| l == heading);
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        if !same_section {
            text.push_str(&heading);
            text.push_str("\n\n");
        }
        text.push_str(&kept.join("\n"));
        text.push('\n');
        let memory = &self.memory;
        if !self.report.write(
            self.dry_run,
            Kind::MemoryMd,
            "MEMORY.md",
            source_rel,
            "nothing was merged",
            || memory.write_memory_md(&text).map(drop),
        ) {
            return;
        }
        self.would_write(&memory_md, text.as_bytes());
        self.report.memory_lines += new;
        let verb = if existing.is_empty() {
            Verb::Create
        } else {
            Verb::Append
        };
        self.report.push(
            verb,
            Kind::MemoryMd,
            "MEMORY.md",
            source_rel,
            format!(
                "{new} line(s) under \"## Imported from {}\" ({} already there)",
                self.tool.as_str(),
                total - new
            ),
        );
    }

    // ----- history -----

    /// Appends the entries `memory/HISTORY.md` does not hold yet, in order,
    /// in one write.
    pub(crate) fn history(&mut self, source_rel: &str, entries: Vec<HistoryEntry>) {
        if entries.is_empty() {
            return;
        }
        let target = "memory/HISTORY.md";
        let history = self.ws.history_md();
        let existing = match self.current_text(&history) {
            Ok(t) => t,
            Err(e) => {
                self.report.push(
                    Verb::Error,
                    Kind::History,
                    target,
                    source_rel,
                    format!("{e}; no entries were appended"),
                );
                return;
            }
        };
        let mut known: HashSet<String> =
            split_history(&existing).iter().map(|e| squash(e)).collect();
        let total = entries.len();
        let mut text = String::new();
        let mut new = 0;
        for e in &entries {
            let entry = e.text.trim();
            if entry.is_empty() || !known.insert(squash(entry)) {
                continue;
            }
            text.push_str(entry);
            text.push_str("\n\n");
            new += 1;
        }
        if new == 0 {
            self.report.push(
                Verb::Skip,
                Kind::History,
                target,
                source_rel,
                format!("all {total} entr(ies) already there"),
            );
            return;
        }
        if !existing.is_empty() && !existing.ends_with("\n\n") {
            text.insert_str(
                0,
                if existing.ends_with('\n') {
                    "\n"
                } else {
                    "\n\n"
                },
            );
        }
        if !self.report.write(
            self.dry_run,
            Kind::History,
            target,
            source_rel,
            "no entries were appended",
            || {
                fsutil::append(&history, text.as_bytes(), true)
                    .map(|()| mnemo_core::journal::note(self.ws, &history))
            },
        ) {
            return;
        }
        self.would_append(&history, text.as_bytes());
        self.report.history_entries += new;
        let verb = if existing.is_empty() {
            Verb::Create
        } else {
            Verb::Append
        };
        self.report.push(
            verb,
            Kind::History,
            target,
            source_rel,
            format!("{new} entr(ies) ({} already there)", total - new),
        );
    }

    // ----- files -----

    /// Puts a source file at `target_rel`. Returns where it ended up (or
    /// already was), or `None` when it could not be placed.
    ///
    /// - missing: created;
    /// - same bytes: skipped;
    /// - `merge_lines` (daily logs, which are append-only): the lines the
    ///   target lacks are appended;
    /// - written by an earlier import and untouched since: updated;
    /// - otherwise the user's file is kept and the import goes beside it,
    ///   as `<name>.from-<tool>.md`.
    pub(crate) fn file(
        &mut self,
        target_rel: &str,
        bytes: &[u8],
        kind: Kind,
        source_rel: &str,
        merge_lines: bool,
        note: Option<&str>,
    ) -> Option<String> {
        let first = self.place(target_rel, bytes, kind, source_rel, merge_lines, None, note)?;
        match first {
            Placed::Done => Some(target_rel.to_string()),
            Placed::Conflict => {
                let alt = alt_name(target_rel, self.tool);
                match self.place(&alt, bytes, kind, source_rel, false, Some(target_rel), note)? {
                    Placed::Done => Some(alt),
                    Placed::Conflict => {
                        self.report.push(
                            Verb::Error,
                            kind,
                            format!("{target_rel}, {alt}"),
                            source_rel,
                            "both already exist with other content; nothing was written: move one of them away and run the import again",
                        );
                        None
                    }
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn place(
        &mut self,
        target_rel: &str,
        bytes: &[u8],
        kind: Kind,
        source_rel: &str,
        merge_lines: bool,
        conflict_with: Option<&str>,
        note: Option<&str>,
    ) -> Option<Placed> {
        let path = match resolve_target(self.ws.root(), target_rel) {
            Ok(p) => p,
            Err(e) => {
                self.report
                    .push(Verb::Refuse, kind, target_rel, source_rel, e.to_string());
                return None;
            }
        };
        let mut beside = conflict_with
            .map(|c| format!(" (beside {c}, which holds other content)"))
            .unwrap_or_default();
        if let Some(n) = note {
            beside.push_str(&format!(": {n}"));
        }
        let current = match fs::symlink_metadata(&path) {
            _ if self.overlay.contains_key(&path) => self.overlay.get(&path).cloned(),
            Err(_) => None,
            Ok(m) if m.file_type().is_file() => match fs::read(&path) {
                Ok(b) => Some(b),
                Err(e) => {
                    self.report.push(
                        Verb::Error,
                        kind,
                        target_rel,
                        source_rel,
                        format!("cannot read the existing file ({e}); nothing was written"),
                    );
                    return None;
                }
            },
            Ok(_) => return Some(Placed::Conflict),
        };
        let Some(current) = current else {
            if !self.write_file(&path, target_rel, bytes, kind, source_rel) {
                return None;
            }
            self.report.push(
                Verb::Create,
                kind,
                target_rel,
                source_rel,
                format!("{} bytes{beside}", bytes.len()),
            );
            return Some(Placed::Done);
        };
        if current == bytes {
            self.report
                .push(Verb::Skip, kind, target_rel, source_rel, "already there");
            return Some(Placed::Done);
        }
        if merge_lines {
            if let (Ok(cur), Ok(src)) = (std::str::from_utf8(&current), std::str::from_utf8(bytes))
            {
                let have: HashSet<&str> = cur.lines().map(str::trim).collect();
                let missing: Vec<&str> = src
                    .lines()
                    .filter(|l| !l.trim().is_empty() && !have.contains(l.trim()))
                    .collect();
                if missing.is_empty() {
                    self.report.push(
                        Verb::Skip,
                        kind,
                        target_rel,
                        source_rel,
                        "every line already there",
                    );
                    return Some(Placed::Done);
                }
                let mut add = String::new();
                if !cur.is_empty() && !cur.ends_with('\n') {
                    add.push('\n');
                }
                for l in &missing {
                    add.push_str(l);
                    add.push('\n');
                }
                if !self.report.write(
                    self.dry_run,
                    kind,
                    target_rel,
                    source_rel,
                    "nothing was appended",
                    || {
                        fsutil::append(&path, add.as_bytes(), true)
                            .map(|()| mnemo_core::journal::note(self.ws, &path))
                    },
                ) {
                    return None;
                }
                self.would_append(&path, add.as_bytes());
                self.report.push(
                    Verb::Append,
                    kind,
                    target_rel,
                    source_rel,
                    format!("{} line(s) the workspace file lacked", missing.len()),
                );
                return Some(Placed::Done);
            }
        }
        let ours = self
            .manifest
            .files
            .get(target_rel)
            .is_some_and(|w| w.tool == self.tool.as_str() && w.sha256 == sha256(&current));
        if ours {
            if !self.write_file(&path, target_rel, bytes, kind, source_rel) {
                return None;
            }
            self.report.push(
                Verb::Update,
                kind,
                target_rel,
                source_rel,
                "imported earlier and unchanged since; replaced by the newer source",
            );
            return Some(Placed::Done);
        }
        Some(Placed::Conflict)
    }

    fn write_file(
        &mut self,
        path: &std::path::Path,
        target_rel: &str,
        bytes: &[u8],
        kind: Kind,
        source_rel: &str,
    ) -> bool {
        if !self.report.write(
            self.dry_run,
            kind,
            target_rel,
            source_rel,
            "nothing was written",
            || fsutil::atomic_write(path, bytes),
        ) {
            return false;
        }
        self.would_write(path, bytes);
        self.manifest.files.insert(
            target_rel.to_string(),
            Written {
                tool: self.tool.as_str().into(),
                source: self.abs_source(source_rel),
                sha256: sha256(bytes),
            },
        );
        self.manifest_dirty = true;
        true
    }
}

/// [`resolve_in_workspace`], also for a workspace that does not exist yet
/// (a dry run into a new folder): with no root there are no links to
/// follow, so the lexical checks are enough.
fn resolve_target(
    root: &std::path::Path,
    rel: &str,
) -> Result<std::path::PathBuf, mnemo_core::PathError> {
    if root.exists() {
        return resolve_in_workspace(root, rel);
    }
    let p = std::path::Path::new(rel);
    if rel.is_empty() || rel.contains('\0') || p.is_absolute() {
        return Err(mnemo_core::PathError::Absolute(rel.replace('\0', "\\0")));
    }
    if !p.components().all(|c| {
        matches!(
            c,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    }) {
        return Err(mnemo_core::PathError::ParentDir(rel.to_string()));
    }
    Ok(root.join(p))
}

enum Placed {
    Done,
    Conflict,
}

fn alt_name(rel: &str, tool: Tool) -> String {
    match rel.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() && !ext.contains('/') => {
            format!("{stem}.from-{}.{ext}", tool.as_str())
        }
        _ => format!("{rel}.from-{}", tool.as_str()),
    }
}

fn rel_to(ws: &Workspace, path: &std::path::Path) -> String {
    path.strip_prefix(ws.root())
        .unwrap_or(path)
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Re-encodes a line through [`Record`] so that lines written by this crate
/// and lines read back compare equal.
fn normalise(line: &str) -> Option<String> {
    Record::parse(line).ok()?.to_line().ok()
}

/// The shape of the log at `path`, read a line at a time (a log may be
/// large); `None` when there is none. Lines that do not parse are compared
/// as they are.
fn read_log_shape(path: &Path) -> mnemo_store::Result<Option<LogShape>> {
    let file = match fsutil::open_regular(path, fs::OpenOptions::new().read(true)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(mnemo_store::Error::io("read", path)(e)),
    };
    let mut reader = BufReader::new(file);
    let mut shape = LogShape::default();
    let mut buf = Vec::new();
    let mut number = 0;
    loop {
        buf.clear();
        reader
            .read_until(b'\n', &mut buf)
            .map_err(mnemo_store::Error::io("read", path))?;
        // A partial last line (a write in progress) is not part of the log
        // yet.
        if buf.pop() != Some(b'\n') {
            break;
        }
        number += 1;
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        let line = std::str::from_utf8(&buf).map_err(|e| mnemo_store::Error::Corrupt {
            path: path.to_path_buf(),
            line: number,
            message: format!(
                "invalid UTF-8 at byte {} of the line: the file was left unchanged; re-save it as UTF-8",
                e.valid_up_to()
            ),
        })?;
        if line.trim().is_empty() {
            continue;
        }
        match Record::parse(line) {
            Ok(Record::Metadata(m)) => shape.cursor = m.last_consolidated,
            Ok(r) => shape.lines.push(line_digest(
                &r.to_line().unwrap_or_else(|_| line.to_string()),
            )),
            Err(_) => shape.lines.push(line_digest(line)),
        }
    }
    Ok(Some(shape))
}

/// Writes a new session log, `head` (its metadata) then `lines`, into a
/// temp file beside `path`, a line at a time, then fsyncs it and renames it
/// into place: the log appears whole or not at all, and memory holds one
/// line of it, not the whole log.
fn write_log(path: &Path, head: &str, lines: &[SessionLine]) -> mnemo_store::Result<()> {
    use mnemo_store::Error;
    let (dir, tmp) = fsutil::temp_beside(path, "import")?;
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(Error::io("create", &tmp))?;
    let written = (|| {
        let mut out = BufWriter::with_capacity(64 * 1024, file);
        let mut put = |text: &str| {
            out.write_all(text.as_bytes())
                .and_then(|()| out.write_all(b"\n"))
                .map_err(Error::io("write", &tmp))
        };
        put(head)?;
        for l in lines {
            let text = l
                .text()
                .map_err(|e| Error::Invalid(format!("cannot encode a line: {e}")))?;
            put(&text)?;
        }
        let file = out
            .into_inner()
            .map_err(|e| Error::io("write", &tmp)(e.into_error()))?;
        file.sync_all().map_err(Error::io("fsync", &tmp))?;
        fs::rename(&tmp, path).map_err(Error::io("rename into place", path))?;
        fsutil::sync_dir(&dir)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    written
}

pub(crate) use mnemo_store::memory::has_stamp;

/// Splits a history log into entries: each starts at a stamped line; text
/// before the first stamp is an entry of its own.
pub(crate) fn split_history(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        if has_stamp(line) && !cur.trim().is_empty() {
            out.push(cur.trim().to_string());
            cur.clear();
        }
        cur.push_str(line);
        cur.push('\n');
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Replaces, in a tool's original entry, every string of at least `min`
/// bytes that is part of a persisted tool result (`full`) with the preview
/// that names the result's file (`marker`): the file holds the text.
/// The turns of an imported conversation, as the indices of the lines
/// holding their messages: a user message opens a turn, and everything up
/// to the next one belongs to it (the batch an append of that turn would
/// have been).
fn turns(lines: &[SessionLine]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Record::Message(m) = &l.record else {
            continue;
        };
        match out.last_mut() {
            Some(turn) if m.role != mnemo_core::Role::User => turn.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

fn point_at_file(v: &mut Value, full: &str, marker: &str, min: usize) {
    match v {
        Value::String(s) if s.len() >= min.max(1) && full.contains(s.as_str()) => {
            *s = marker.to_string();
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| point_at_file(i, full, marker, min)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|i| point_at_file(i, full, marker, min)),
        _ => {}
    }
}

/// A JSON value's string field.
pub(crate) fn str_field<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

/// A message's content from a tool's transcript: text parts become plain
/// text; anything else (images) stays as parts.
pub(crate) fn content_of(v: Option<&Value>) -> Option<Content> {
    match v? {
        Value::String(s) => Some(Content::Text(s.clone())),
        Value::Array(parts) => {
            if parts.iter().all(|p| str_field(p, "type") == Some("text")) {
                Some(Content::Text(
                    parts
                        .iter()
                        .filter_map(|p| str_field(p, "text"))
                        .collect::<Vec<_>>()
                        .join("\n"),
                ))
            } else {
                Some(Content::Parts(parts.clone()))
            }
        }
        Value::Null => None,
        other => Some(Content::Text(other.to_string())),
    }
}
