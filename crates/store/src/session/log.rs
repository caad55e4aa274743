//! Opening, appending to, loading and listing session logs.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use mnemo_core::{Config, Message, Workspace};
use serde::{Deserialize, Serialize};

use std::sync::Arc;

use super::budget::{self, ToolResultBudget};
use super::key;
use super::record::{now_iso, CompactionRecord, Record, SessionMetadata};
use crate::error::{Error, Result};
use crate::fsutil;
use crate::storage::{FileStorage, SessionWriter, SharedStorage};

/// When appends are flushed to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FsyncPolicy {
    /// fsync after every append (every turn): nothing acknowledged is lost
    /// even on power failure.
    Always,
    /// fsync every `fsync_batch` appends and when the log is closed.
    #[default]
    Batch,
    /// Leave it to the OS: survives a process crash, not a power cut.
    Never,
}

/// Options of the session store: the `[session]` section of `mnemo.toml`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(default)]
pub struct SessionOptions {
    /// Durability of appends.
    pub fsync: FsyncPolicy,
    /// With `fsync = "batch"`: appends between two fsyncs.
    pub fsync_batch: usize,
    /// A tool result over this many characters is persisted to its own file.
    pub tool_result_max_chars: usize,
    /// Bytes of a persisted result's preview kept in the log.
    pub tool_result_preview_bytes: usize,
    /// Characters of tool results allowed in one appended turn.
    pub turn_tool_results_max_chars: usize,
    /// A message line larger than this (after the tool-result budget) is
    /// refused with an error rather than written.
    pub max_line_bytes: usize,
    /// Metadata records appended before they are folded by a rewrite.
    pub fold_after_metadata_records: usize,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            fsync: FsyncPolicy::Batch,
            fsync_batch: 16,
            tool_result_max_chars: 50_000,
            tool_result_preview_bytes: 2_000,
            turn_tool_results_max_chars: 200_000,
            max_line_bytes: 16 * 1024 * 1024,
            fold_after_metadata_records: 256,
        }
    }
}

impl SessionOptions {
    /// Refuses a message whose encoded `line` is over `max_line_bytes`: the
    /// check of every append, and of imports that place whole logs.
    pub fn check_line(&self, m: &Message, line: &[u8]) -> Result<()> {
        if line.len() > self.max_line_bytes {
            return Err(Error::Invalid(format!(
                "a {} message of {} bytes is over the {}-byte line limit; nothing was written. \
                 Store large content as a file and reference it, or raise [session] max_line_bytes",
                m.role.as_str(),
                line.len(),
                self.max_line_bytes
            )));
        }
        Ok(())
    }

    fn budget(&self) -> ToolResultBudget {
        ToolResultBudget {
            max_chars: self.tool_result_max_chars,
            preview_bytes: self.tool_result_preview_bytes,
            per_turn_chars: self.turn_tool_results_max_chars,
        }
    }
}

/// What kind of problem a load ran into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// A complete line that is not valid JSON or not a known record; skipped
    /// by the load, left in the file.
    Malformed,
    /// A line that is not UTF-8; skipped by the load, left in the file.
    InvalidUtf8,
    /// The file ends in a partial line that is not a whole record (a crash
    /// mid-write, or a write in progress); it is not loaded. A writer sets
    /// it aside before appending. A last line that parses is loaded.
    TornTail,
}

/// A problem found while loading; the rest of the file still loads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LoadWarning {
    /// 1-based line number.
    pub line: usize,
    /// The kind of problem.
    pub kind: WarningKind,
    /// Details for a person.
    pub message: String,
}

/// A session log read into memory.
#[derive(Debug, Clone)]
pub struct LoadedSession {
    /// The log file.
    pub path: PathBuf,
    /// The effective metadata (the last metadata record).
    pub meta: SessionMetadata,
    /// Every message, in order; a message's ordinal is its index here.
    pub messages: Vec<Message>,
    /// Compaction records, each with the number of messages before it.
    pub compactions: Vec<(usize, CompactionRecord)>,
    /// Records of unknown kinds, with the number of messages before each.
    pub other: Vec<(usize, serde_json::Value)>,
    /// Lines that could not be loaded.
    pub warnings: Vec<LoadWarning>,
    /// Number of metadata records in the file.
    pub metadata_records: usize,
}

impl LoadedSession {
    /// Messages since the consolidation cursor, replayed for a model.
    pub fn replay(&self) -> Vec<Message> {
        super::replay::replay(&self.messages, self.meta.last_consolidated)
    }
}

/// One line of `mnemo session list`.
#[derive(Debug, Clone, Serialize)]
pub struct SessionInfo {
    /// Session key.
    pub key: String,
    /// Log file, relative to the workspace.
    pub file: String,
    /// When the session was created.
    pub created_at: String,
    /// When the log was last written (file modification time).
    pub updated_at: String,
    /// Number of messages.
    pub messages: usize,
    /// Consolidation cursor.
    pub last_consolidated: usize,
}

/// The session logs of a workspace, in its [`Storage`] (the `sessions/`
/// folder by default).
#[derive(Debug, Clone)]
pub struct SessionStore {
    storage: SharedStorage,
    options: SessionOptions,
}

impl SessionStore {
    /// A store over `workspace/sessions/`.
    pub fn new(workspace: &Workspace, options: SessionOptions) -> Self {
        Self::with_storage(Arc::new(FileStorage::new(workspace)), options)
    }

    /// A store over the session logs of `storage`.
    pub fn with_storage(storage: SharedStorage, options: SessionOptions) -> Self {
        SessionStore { storage, options }
    }

    /// A store whose options come from the `[session]` section of `config`.
    pub fn from_config(workspace: &Workspace, config: &Config) -> Result<Self> {
        Ok(Self::new(workspace, config.section("session")?))
    }

    /// The store's options.
    pub fn options(&self) -> &SessionOptions {
        &self.options
    }

    /// The storage the logs are kept in.
    pub fn storage(&self) -> &SharedStorage {
        &self.storage
    }

    /// The log file for `key` in a file workspace (the workspace folder
    /// joined with [`session_rel`](crate::Storage::session_rel)); a database
    /// workspace has none.
    pub fn path_for(&self, key: &str) -> Result<PathBuf> {
        match self.storage.root() {
            Some(root) => Ok(root.join(self.storage.session_rel(key)?)),
            None => Err(Error::Invalid(format!(
                "the sessions of {} are rows in a database, not files",
                self.storage.location()
            ))),
        }
    }

    /// Applies the tool-result budget of an append to `messages` bound for
    /// the log of `key` (an oversized result is persisted beside the log
    /// and replaced by a preview), for writers that place whole logs
    /// themselves (imports). With `dry_run` nothing is written: the
    /// messages become what they would be.
    pub fn apply_budget(&self, key: &str, messages: &mut [Message], dry_run: bool) -> Result<()> {
        budget::apply(
            self.options.budget(),
            messages,
            &*self.storage,
            &spill_dir(&*self.storage, key)?,
            dry_run,
        )
    }

    /// True when a log exists for `key`.
    pub fn exists(&self, key: &str) -> Result<bool> {
        self.storage.session_exists(key)
    }

    /// Opens the log of `key` for appending; the log is created on the
    /// first append.
    pub fn open(&self, key: &str) -> Result<SessionLog> {
        Ok(SessionLog {
            key: key.to_string(),
            spill_dir: spill_dir(&*self.storage, key)?,
            writer: self.storage.open_session(key, &self.options)?,
            storage: self.storage.clone(),
            options: self.options.clone(),
        })
    }

    /// Loads the log of `key`; a missing log is [`Error::NotFound`].
    pub fn load(&self, key: &str) -> Result<LoadedSession> {
        self.storage.load_session(key)?.ok_or_else(|| {
            Error::NotFound(format!(
                "no session {key:?} in {}: `mnemo session list` shows the sessions there are",
                self.storage.location()
            ))
        })
    }

    /// Every session, newest first.
    pub fn list(&self) -> Result<Vec<SessionInfo>> {
        self.storage.list_sessions()
    }
}

/// The log file of `key` under `workspace/sessions/`. Two keys that map to
/// the same file name are told apart by the key recorded in the file's
/// metadata. A log (or the folder) that a link leads out of `sessions/` is
/// refused, for reading and appending alike.
pub(crate) fn file_path_for(workspace: &Workspace, key: &str) -> Result<PathBuf> {
    let dir = workspace.sessions_dir();
    let path = confined(
        workspace,
        &dir.join(format!("{}.jsonl", key::file_stem(key)?)),
    )?;
    match first_key(&path)? {
        Some(existing) if existing != key => confined(
            workspace,
            &dir.join(format!("{}.jsonl", key::disambiguated_stem(key)?)),
        ),
        _ => Ok(path),
    }
}

fn confined(workspace: &Workspace, path: &Path) -> Result<PathBuf> {
    Ok(mnemo_core::confine(
        workspace.root(),
        path,
        mnemo_core::Area::Sessions,
    )?)
}

/// Every session log under `workspace/sessions/`, newest first.
pub(crate) fn list_files(workspace: &Workspace) -> Result<Vec<SessionInfo>> {
    let dir = workspace.sessions_dir();
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("list", &dir)(e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(Error::io("list", &dir))?;
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        let loaded = read_session_file(&confined(workspace, &path)?)?;
        let mtime = entry
            .metadata()
            .and_then(|m| m.modified())
            .map(|t| {
                chrono::DateTime::<chrono::Local>::from(t)
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, false)
            })
            .unwrap_or_default();
        out.push(SessionInfo {
            key: loaded.meta.key.clone(),
            file: format!("sessions/{}", entry.file_name().to_string_lossy()),
            created_at: loaded.meta.created_at.clone(),
            updated_at: mtime,
            messages: loaded.messages.len(),
            last_consolidated: loaded.meta.last_consolidated,
        });
    }
    sort_sessions(&mut out);
    Ok(out)
}

/// Newest first, then by key: the order of every session listing.
pub fn sort_sessions(sessions: &mut [SessionInfo]) {
    sessions.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then(a.key.cmp(&b.key)));
}

/// True when `lines` begin with a metadata record: a log copied whole
/// (an export, an import) brings its own and gets no second one.
pub fn opens_with_metadata(lines: &[u8]) -> bool {
    let first = lines.split(|b| *b == b'\n').next().unwrap_or_default();
    std::str::from_utf8(first).is_ok_and(|l| matches!(Record::parse(l), Ok(Record::Metadata(_))))
}

/// The first line of a new log: its metadata record.
pub fn first_record_line(key: &str) -> Result<Vec<u8>> {
    let mut head = Record::Metadata(SessionMetadata::new(key))
        .to_line()
        .map_err(|e| Error::Invalid(e.to_string()))?
        .into_bytes();
    head.push(b'\n');
    Ok(head)
}

/// Reads the key from a log's first line, if the file exists.
fn first_key(path: &Path) -> Result<Option<String>> {
    let mut f = match fsutil::open_regular(path, OpenOptions::new().read(true)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("open", path)(e)),
    };
    let mut buf = vec![0u8; 4096];
    let n = f.read(&mut buf).map_err(Error::io("read", path))?;
    let line = buf
        .get(..n)
        .unwrap_or_default()
        .split(|b| *b == b'\n')
        .next()
        .unwrap_or(&[]);
    Ok(std::str::from_utf8(line)
        .ok()
        .and_then(|l| match Record::parse(l) {
            Ok(Record::Metadata(m)) => Some(m.key),
            _ => None,
        }))
}

/// The open log of one session. Appends from several `SessionLog`s, in one
/// process or many, are serialised by the storage's lock on the session
/// (an advisory lock on the file).
#[derive(Debug)]
pub struct SessionLog {
    key: String,
    storage: SharedStorage,
    writer: Box<dyn SessionWriter>,
    /// Workspace-relative folder of this session's persisted tool results.
    spill_dir: String,
    options: SessionOptions,
}

impl SessionLog {
    /// The session key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The log file (or the log's name in a database).
    pub fn path(&self) -> &Path {
        self.writer.location()
    }

    /// Torn tails this handle set aside before appending: (offset, bytes).
    pub fn set_aside(&self) -> &[(u64, usize)] {
        self.writer.set_aside()
    }

    /// The sidecar file that keeps torn tails.
    pub fn torn_path(&self) -> PathBuf {
        torn_path(self.path())
    }

    /// Appends messages as one write of whole lines. Messages without a
    /// timestamp are stamped now; oversized tool results are persisted to
    /// files first. Returns the messages as stored.
    pub fn append(&mut self, messages: &[Message]) -> Result<Vec<Message>> {
        let mut stored = messages.to_vec();
        let now = now_iso();
        for m in &mut stored {
            if m.timestamp.is_none() {
                m.timestamp = Some(now.clone());
            }
        }
        budget::apply(
            self.options.budget(),
            &mut stored,
            &*self.storage,
            &self.spill_dir,
            false,
        )?;
        let mut buf = Vec::with_capacity(256 * stored.len());
        for m in &stored {
            let line = serde_json::to_vec(m)
                .map_err(|e| Error::Invalid(format!("cannot encode message: {e}")))?;
            self.options.check_line(m, &line)?;
            buf.extend_from_slice(&line);
            buf.push(b'\n');
        }
        self.writer.append_lines(&buf, false)?;
        Ok(stored)
    }

    /// Moves the consolidation cursor by appending a metadata record.
    pub fn set_cursor(&mut self, last_consolidated: usize) -> Result<()> {
        let loaded = self.load()?;
        let mut meta = loaded.meta;
        meta.last_consolidated = last_consolidated;
        meta.updated_at = now_iso();
        self.append_record(&Record::Metadata(meta))?;
        if loaded.metadata_records + 1 > self.options.fold_after_metadata_records {
            self.fold()?;
        }
        Ok(())
    }

    /// Appends a record (metadata, compaction, or another kind).
    pub fn append_record(&mut self, record: &Record) -> Result<()> {
        let mut line = record
            .to_line()
            .map_err(|e| Error::Invalid(format!("cannot encode record: {e}")))?
            .into_bytes();
        line.push(b'\n');
        self.writer.append_lines(&line, true)
    }

    /// Flushes appends to stable storage now.
    pub fn sync(&mut self) -> Result<()> {
        self.writer.sync()
    }

    /// Reads the whole log.
    pub fn load(&self) -> Result<LoadedSession> {
        Ok(self
            .storage
            .load_session(&self.key)?
            .unwrap_or_else(|| LoadedSession {
                path: self.path().to_path_buf(),
                meta: SessionMetadata::new(&self.key),
                messages: Vec::new(),
                compactions: Vec::new(),
                other: Vec::new(),
                warnings: Vec::new(),
                metadata_records: 0,
            }))
    }

    /// Rewrites the log atomically with a single metadata record at the top,
    /// folding the appended metadata records. Messages and other records are
    /// kept byte for byte.
    pub fn fold(&mut self) -> Result<()> {
        self.writer.fold()
    }
}

/// The workspace-relative folder of the persisted tool results of `key`:
/// `sessions/<stem>.tool-results`.
fn spill_dir(storage: &dyn crate::storage::Storage, key: &str) -> Result<String> {
    let rel = storage.session_rel(key)?;
    let stem = rel.strip_suffix(".jsonl").unwrap_or(&rel);
    Ok(format!("{stem}.tool-results"))
}

fn torn_path(log: &Path) -> PathBuf {
    let mut p = log.to_path_buf().into_os_string();
    p.push(".torn");
    PathBuf::from(p)
}

/// A session log file: appends under an advisory lock on the file, torn
/// tails set aside, fsync by policy.
#[derive(Debug)]
pub(crate) struct FileLog {
    key: String,
    path: PathBuf,
    /// For the change journal (see `mnemo_core::journal`).
    workspace: Workspace,
    options: SessionOptions,
    file: Option<File>,
    unsynced: usize,
    set_aside: Vec<(u64, usize)>,
}

impl FileLog {
    pub(crate) fn new(workspace: &Workspace, key: &str, options: &SessionOptions) -> Result<Self> {
        Ok(FileLog {
            key: key.to_string(),
            path: file_path_for(workspace, key)?,
            workspace: workspace.clone(),
            options: options.clone(),
            file: None,
            unsynced: 0,
            set_aside: Vec::new(),
        })
    }

    fn torn_path(&self) -> PathBuf {
        torn_path(&self.path)
    }
}

impl SessionWriter for FileLog {
    fn location(&self) -> &Path {
        &self.path
    }

    fn set_aside(&self) -> &[(u64, usize)] {
        &self.set_aside
    }

    fn append_lines(&mut self, lines: &[u8], force_sync: bool) -> Result<()> {
        self.write_locked(lines, force_sync)
    }

    fn sync(&mut self) -> Result<()> {
        if let Some(f) = &self.file {
            f.sync_data().map_err(Error::io("fsync", &self.path))?;
        }
        self.unsynced = 0;
        Ok(())
    }

    fn fold(&mut self) -> Result<()> {
        let file = self.open_current()?;
        file.lock().map_err(Error::io("lock", &self.path))?;
        let result = (|| {
            let bytes = fs::read(&self.path).map_err(Error::io("read", &self.path))?;
            let (complete, tail) = match bytes.iter().rposition(|b| *b == b'\n') {
                Some(i) => bytes.split_at(i + 1),
                None => return Ok(()),
            };
            // A last line without its newline is kept when it is a whole
            // record, else set aside like any torn tail: never dropped.
            let tail_is_record = !tail.is_empty() && parse_line(tail).is_ok();
            if !tail.is_empty() && !tail_is_record {
                fsutil::append(&self.torn_path(), &[tail, b"\n"].concat(), true)?;
            }
            let loaded = parse_bytes(&self.path, if tail_is_record { &bytes } else { complete });
            let mut out = Vec::with_capacity(complete.len());
            out.extend_from_slice(
                Record::Metadata(loaded.meta)
                    .to_line()
                    .map_err(|e| Error::Invalid(e.to_string()))?
                    .as_bytes(),
            );
            out.push(b'\n');
            for line in complete.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let is_meta = std::str::from_utf8(line)
                    .ok()
                    .is_some_and(|l| matches!(Record::parse(l), Ok(Record::Metadata(_))));
                if !is_meta {
                    out.extend_from_slice(line);
                    out.push(b'\n');
                }
            }
            if tail_is_record && !matches!(parse_line(tail), Ok(Record::Metadata(_))) {
                out.extend_from_slice(tail);
                out.push(b'\n');
            }
            fsutil::atomic_write(&self.path, &out)
        })();
        let _ = file.unlock();
        self.file = None;
        result
    }
}

impl FileLog {
    fn open_current(&mut self) -> Result<File> {
        if let Some(dir) = self.path.parent() {
            fs::create_dir_all(dir).map_err(Error::io("create folder", dir))?;
        }
        fsutil::open_regular(
            &self.path,
            OpenOptions::new().create(true).read(true).append(true),
        )
        .map_err(Error::io("open for append", &self.path))
    }

    /// Takes the lock, makes sure the handle still names the file at `path`
    /// (a fold may have replaced it), sets aside a torn tail, writes the
    /// metadata line into a new file, then `buf` in one write.
    fn write_locked(&mut self, buf: &[u8], force_sync: bool) -> Result<()> {
        loop {
            if self.file.is_none() {
                self.file = Some(self.open_current()?);
            }
            let Some(file) = self.file.as_ref() else {
                continue;
            };
            file.lock().map_err(Error::io("lock", &self.path))?;
            if !same_file(file, &self.path) {
                let _ = file.unlock();
                self.file = None;
                continue;
            }
            break;
        }
        let result = self.write_holding_lock(buf, force_sync);
        if let Some(f) = &self.file {
            let _ = f.unlock();
        }
        result
    }

    fn write_holding_lock(&mut self, buf: &[u8], force_sync: bool) -> Result<()> {
        let path = self.path.clone();
        let torn_path = self.torn_path();
        let Some(file) = self.file.as_mut() else {
            return Err(Error::Invalid("session log is not open".into()));
        };
        let len = file.metadata().map_err(Error::io("stat", &path))?.len();
        let mut head = Vec::new();
        if len == 0 {
            if !opens_with_metadata(buf) {
                head = first_record_line(&self.key)?;
            }
        } else if let Some((offset, tail)) = torn_tail(file, len, &path)? {
            if parse_line(&tail).is_ok() {
                // A whole record without its newline (an editor saved the
                // file so): it is loaded, so it is finished, not set aside.
                head.push(b'\n');
            } else {
                fsutil::append(&torn_path, &[tail.as_slice(), b"\n"].concat(), true)?;
                file.set_len(offset)
                    .map_err(Error::io("truncate torn tail of", &path))?;
                file.sync_data().map_err(Error::io("fsync", &path))?;
                self.set_aside.push((offset, tail.len()));
            }
        }
        if head.is_empty() {
            file.write_all(buf).map_err(Error::io("append to", &path))?;
        } else {
            head.extend_from_slice(buf);
            file.write_all(&head)
                .map_err(Error::io("append to", &path))?;
        }
        self.unsynced += 1;
        let sync = force_sync
            || match self.options.fsync {
                FsyncPolicy::Always => true,
                FsyncPolicy::Batch => self.unsynced >= self.options.fsync_batch.max(1),
                FsyncPolicy::Never => false,
            };
        if sync && self.options.fsync != FsyncPolicy::Never {
            file.sync_data().map_err(Error::io("fsync", &path))?;
            self.unsynced = 0;
        }
        if len == 0 {
            if let Some(dir) = path.parent() {
                fsutil::sync_dir(dir)?;
            }
        }
        // An append leaves the folder's times as they were: the index
        // learns of it from the journal.
        mnemo_core::journal::note(&self.workspace, &path);
        Ok(())
    }
}

impl Drop for FileLog {
    fn drop(&mut self) {
        if self.unsynced > 0 && self.options.fsync != FsyncPolicy::Never {
            if let Some(f) = &self.file {
                let _ = f.sync_data();
            }
        }
    }
}

#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_file: &File, path: &Path) -> bool {
    path.exists()
}

/// If the file does not end with a newline, returns the offset where the
/// partial last line starts and its bytes.
fn torn_tail(file: &mut File, len: u64, path: &Path) -> Result<Option<(u64, Vec<u8>)>> {
    let mut last = [0u8; 1];
    file.seek(SeekFrom::Start(len - 1))
        .map_err(Error::io("seek", path))?;
    file.read_exact(&mut last)
        .map_err(Error::io("read", path))?;
    if last[0] == b'\n' {
        return Ok(None);
    }
    // Walk back in blocks to the previous newline.
    let mut end = len;
    let mut tail: Vec<u8> = Vec::new();
    loop {
        let start = end.saturating_sub(64 * 1024);
        let mut block = vec![0u8; (end - start) as usize];
        file.seek(SeekFrom::Start(start))
            .map_err(Error::io("seek", path))?;
        file.read_exact(&mut block)
            .map_err(Error::io("read", path))?;
        if let Some(i) = block.iter().rposition(|b| *b == b'\n') {
            let offset = start + i as u64 + 1;
            let mut t = block.get(i + 1..).unwrap_or_default().to_vec();
            t.extend_from_slice(&tail);
            return Ok(Some((offset, t)));
        }
        block.extend_from_slice(&tail);
        tail = block;
        if start == 0 {
            return Ok(Some((0, tail)));
        }
        end = start;
    }
}

/// Reads a session log file without locking or changing it. A partial last
/// line is reported as [`WarningKind::TornTail`] and not loaded; malformed
/// lines are reported and skipped.
pub fn read_session_file(path: &Path) -> Result<LoadedSession> {
    let bytes = fsutil::read_regular(path)?;
    Ok(parse_bytes(path, &bytes))
}

/// Parses the bytes of a session log as [`read_session_file`] does (`path`
/// names it in messages and gives the fallback key).
pub fn parse_session_bytes(path: &Path, bytes: &[u8]) -> LoadedSession {
    parse_bytes(path, bytes)
}

fn parse_bytes(path: &Path, bytes: &[u8]) -> LoadedSession {
    let fallback_key = path
        .file_stem()
        .map(|s| s.to_string_lossy().replacen('_', ":", 1))
        .unwrap_or_default();
    let mut out = LoadedSession {
        path: path.to_path_buf(),
        meta: SessionMetadata::new(&fallback_key),
        messages: Vec::new(),
        compactions: Vec::new(),
        other: Vec::new(),
        warnings: Vec::new(),
        metadata_records: 0,
    };
    out.meta.created_at.clear();
    out.meta.updated_at.clear();
    for (_, read) in read_log_lines(path, bytes) {
        match read {
            LineRead::Blank => {}
            LineRead::Record(Record::Message(m)) => out.messages.push(m),
            LineRead::Record(Record::Metadata(m)) => {
                out.metadata_records += 1;
                out.meta = m;
            }
            LineRead::Record(Record::Compaction(c)) => {
                out.compactions.push((out.messages.len(), c))
            }
            LineRead::Record(Record::Other(v)) => out.other.push((out.messages.len(), v)),
            LineRead::Skipped(w) => out.warnings.push(w),
        }
    }
    out
}

/// How a load reads one line of a session log.
#[derive(Debug, Clone, PartialEq)]
pub enum LineRead {
    /// Empty or only whitespace: passed over without a warning.
    Blank,
    /// A record the load keeps: a message, metadata, a compaction, or a
    /// kind this version does not know.
    Record(Record),
    /// A line the load does not keep (not UTF-8, not a record, or a torn
    /// last line), and why.
    Skipped(LoadWarning),
}

/// Reads each line of a session log's bytes exactly as a load does: the
/// one rule for which lines are messages, so that every reader (the
/// engine, the inspector's timeline) gives a message the same ordinal.
/// One entry per line, in order (line `i + 1` is entry `i`), with its
/// bytes; the empty segment after a final newline is not a line. `path`
/// names the log in the messages.
pub fn read_log_lines<'a>(path: &Path, bytes: &'a [u8]) -> Vec<(&'a [u8], LineRead)> {
    let mut lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    let torn_tail = !bytes.ends_with(b"\n");
    let n = lines.len();
    let parsed = parse_lines_parallel(&lines);
    lines
        .into_iter()
        .zip(parsed)
        .enumerate()
        .map(|(i, (raw, result))| {
            let line_no = i + 1;
            if raw.is_empty() || raw.iter().all(|b| b.is_ascii_whitespace()) {
                return (raw, LineRead::Blank);
            }
            // The segment after the last newline is a partial line, unless
            // it is a whole record that only lacks its newline.
            if torn_tail && i + 1 == n && result.is_err() {
                let warning = LoadWarning {
                    line: line_no,
                    kind: WarningKind::TornTail,
                    message: format!(
                        "the last line ({} bytes) is incomplete: a crash cut it, or a write is in progress; \
                         it is not loaded and is set aside into {}.torn on the next append",
                        raw.len(),
                        path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
                    ),
                };
                return (raw, LineRead::Skipped(warning));
            }
            let read = match result {
                Ok(r) => LineRead::Record(r),
                Err((kind, message)) => LineRead::Skipped(LoadWarning {
                    line: line_no,
                    kind,
                    message,
                }),
            };
            (raw, read)
        })
        .collect()
}

type LineResult = std::result::Result<Record, (WarningKind, String)>;

fn parse_line(raw: &[u8]) -> LineResult {
    match std::str::from_utf8(raw) {
        Err(e) => Err((
            WarningKind::InvalidUtf8,
            format!(
                "invalid UTF-8 at byte {} of the line; the line is kept in the file but not loaded",
                e.valid_up_to()
            ),
        )),
        Ok(s) => Record::parse(s).map_err(|e| {
            (
                WarningKind::Malformed,
                format!("{e}; the line is kept in the file but not loaded"),
            )
        }),
    }
}

/// Parses lines on all cores: loading a long session is dominated by JSON
/// decoding, which splits cleanly by line.
fn parse_lines_parallel(lines: &[&[u8]]) -> Vec<LineResult> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    if threads <= 1 || lines.len() < 4096 {
        return lines.iter().map(|l| parse_line(l)).collect();
    }
    let per = lines.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = lines
            .chunks(per)
            .map(|chunk| s.spawn(move || chunk.iter().map(|l| parse_line(l)).collect::<Vec<_>>()))
            .collect();
        let mut out = Vec::with_capacity(lines.len());
        for h in handles {
            match h.join() {
                Ok(part) => out.extend(part),
                Err(_) => out.push(Err((
                    WarningKind::Malformed,
                    "parser thread panicked".into(),
                ))),
            }
        }
        out
    })
}
