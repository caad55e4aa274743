//! `mnemo export nanobot`: mnemo's session logs written where and how
//! nanobot 0.3.5 loads them.
//!
//! nanobot reads every line of a log that is not its metadata (or its
//! private `provider_state` record) as a message, so mnemo's compaction
//! records and the records imports keep (`openclaw_entry`, …) would reach
//! it as messages without a role (and fail in `get_history`). The export
//! writes, for each session, nanobot's metadata line (the cursor under both
//! of its names), then the messages exactly as mnemo's log holds them, to
//! `<data folder>/sessions/<workspace id>/<base64url of the key>.jsonl`,
//! creating the workspace id and the namespace's `.workspace` marker as
//! nanobot would. mnemo's own logs are only read.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine;
use mnemo_core::Workspace;
use mnemo_store::{fsutil, Record, SessionMetadata, SessionOptions, SessionStore};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::report::{Kind, Report, Verb};

/// How to export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// List what would be done and write nothing.
    pub dry_run: bool,
    /// The sessions to export (all when empty).
    pub keys: Vec<String>,
    /// The nanobot workspace the sessions belong to (default: the data
    /// folder's `workspace/`).
    pub nanobot_workspace: Option<PathBuf>,
    /// Replace a nanobot log that differs (nanobot's own later turns in it
    /// are lost); without it such a log is left alone and reported.
    pub overwrite: bool,
}

/// Writes the sessions of `workspace` into nanobot's data folder `dest`
/// (`~/.nanobot`).
pub fn export_nanobot(
    workspace: &Workspace,
    dest: &Path,
    options: &ExportOptions,
) -> Result<Report> {
    if !dest.is_dir() {
        return Err(Error::Source {
            path: dest.to_path_buf(),
            message: "not a folder: give nanobot's data folder (~/.nanobot)".into(),
        });
    }
    let mut report = Report {
        dry_run: options.dry_run,
        exporting: true,
        ..Report::default()
    };
    let nb_ws = match &options.nanobot_workspace {
        Some(given) => given.canonicalize().map_err(|e| Error::Source {
            path: given.clone(),
            message: format!(
                "no nanobot workspace here ({e}): check the path given to --nanobot-workspace"
            ),
        })?,
        None => default_workspace(dest, options.dry_run, &mut report)?,
    };
    let id_file = nb_ws.join(".nanobot").join("workspace-id");
    let id = match fsutil::read_text_opt(&id_file)? {
        Some(t) if is_id(t.trim()) => t.trim().to_string(),
        Some(_) => {
            return Err(Error::Source {
                path: id_file,
                message: "not a nanobot workspace id (32 hex digits): restore it before exporting"
                    .into(),
            })
        }
        None => {
            let id = new_id(&nb_ws);
            if !options.dry_run {
                fsutil::atomic_write(&id_file, format!("{id}\n").as_bytes())?;
            }
            report.push(
                Verb::Create,
                Kind::Other,
                id_file.display().to_string(),
                "",
                "the workspace's id, which names its session folder",
            );
            id
        }
    };
    let ns = dest.join("sessions").join(&id);
    let marker = ns.join(".workspace");
    if !marker.exists() {
        let occupied = std::fs::read_dir(&ns)
            .map(|mut d| d.next().is_some())
            .unwrap_or(false);
        if occupied {
            return Err(Error::Source {
                path: ns,
                message: "nanobot's session folder has files but no .workspace marker, which nanobot refuses to start with: check the folder before exporting".into(),
            });
        }
        if !options.dry_run {
            fsutil::atomic_write(&marker, format!("{}\n", nb_ws.display()).as_bytes())?;
        }
        report.push(
            Verb::Create,
            Kind::Other,
            marker.display().to_string(),
            "",
            "names the workspace this session folder belongs to",
        );
    }
    let store = SessionStore::new(workspace, SessionOptions::default());
    let keys: Vec<String> = if options.keys.is_empty() {
        store.list()?.into_iter().map(|s| s.key).collect()
    } else {
        options.keys.clone()
    };
    for key in keys {
        export_one(&store, workspace, &key, &ns, options, &mut report);
    }
    Ok(report)
}

fn export_one(
    store: &SessionStore,
    workspace: &Workspace,
    key: &str,
    ns: &Path,
    options: &ExportOptions,
    report: &mut Report,
) {
    let path = match store.path_for(key) {
        Ok(p) => p,
        Err(e) => {
            report.push(
                Verb::Error,
                Kind::Session,
                "",
                key,
                format!("{e}; not exported"),
            );
            return;
        }
    };
    let source = path
        .strip_prefix(workspace.root())
        .unwrap_or(&path)
        .display()
        .to_string();
    let text = match fsutil::read_text_opt(&path) {
        Ok(Some(t)) => t,
        Ok(None) => {
            report.push(
                Verb::Error,
                Kind::Session,
                "",
                source,
                format!("no session {key:?} in this workspace (`mnemo session list` shows them); not exported"),
            );
            return;
        }
        Err(e) => {
            report.push(
                Verb::Error,
                Kind::Session,
                "",
                source,
                format!("{e}; not exported"),
            );
            return;
        }
    };
    report.conversations += 1;
    // A torn last line (a write in progress) is not part of the log.
    let complete = text.rfind('\n').map_or("", |i| &text[..=i]);
    let mut meta = SessionMetadata::new(key);
    let mut private: Vec<&str> = Vec::new();
    let mut messages: Vec<&str> = Vec::new();
    let mut left_out: BTreeMap<String, usize> = BTreeMap::new();
    for line in complete.lines().filter(|l| !l.trim().is_empty()) {
        match Record::parse(line) {
            Ok(Record::Metadata(m)) => meta = m,
            Ok(Record::Message(_)) => messages.push(line),
            Ok(Record::Other(v)) if v.get("_type") == Some(&json!("provider_state")) => {
                private.push(line)
            }
            Ok(Record::Compaction(_)) => *left_out.entry("compaction".into()).or_default() += 1,
            Ok(Record::Other(v)) => {
                let t = v.get("_type").and_then(Value::as_str).unwrap_or("record");
                *left_out.entry(t.to_string()).or_default() += 1;
            }
            Err(_) => *left_out.entry("unreadable line".into()).or_default() += 1,
        }
    }
    let mut head = Map::new();
    head.insert("_type".into(), json!("metadata"));
    head.insert("key".into(), json!(key));
    head.insert("created_at".into(), json!(meta.created_at));
    head.insert("updated_at".into(), json!(meta.updated_at));
    head.insert("metadata".into(), Value::Object(meta.metadata.clone()));
    // nanobot 0.3.5 reads `last_archived` first; older releases the other.
    head.insert("last_archived".into(), json!(meta.last_consolidated));
    head.insert("last_consolidated".into(), json!(meta.last_consolidated));
    for (k, v) in &meta.extra {
        head.entry(k.clone()).or_insert_with(|| v.clone());
    }
    let mut out = Value::Object(head).to_string();
    out.push('\n');
    for l in private.iter().chain(messages.iter()) {
        out.push_str(l);
        out.push('\n');
    }
    let file = ns.join(format!(
        "{}.jsonl",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(key.as_bytes())
    ));
    let target = file.display().to_string();
    let mut detail = format!(
        "{} message(s), cursor {}",
        messages.len(),
        meta.last_consolidated
    );
    if !left_out.is_empty() {
        let list: Vec<String> = left_out.iter().map(|(t, n)| format!("{t} {n}")).collect();
        detail.push_str(&format!(
            "; left out {} (nanobot reads every line as a message)",
            list.join(", ")
        ));
    }
    let verb = match std::fs::read(&file) {
        Ok(existing) if existing == out.as_bytes() => {
            report.push(
                Verb::Skip,
                Kind::Session,
                target,
                source,
                "already exported, unchanged",
            );
            return;
        }
        Ok(_) if !options.overwrite => {
            report.push(
                Verb::Error,
                Kind::Session,
                target,
                source,
                "nanobot's log differs (it may hold nanobot's own later turns); left alone: pass --overwrite to replace it",
            );
            return;
        }
        Ok(_) => Verb::Update,
        Err(_) => Verb::Create,
    };
    if !options.dry_run {
        if let Err(e) = fsutil::atomic_write(&file, out.as_bytes()) {
            report.push(
                Verb::Error,
                Kind::Session,
                target,
                source,
                format!("{e}; not exported"),
            );
            return;
        }
    }
    report.messages += messages.len();
    report.push(verb, Kind::Session, target, source, detail);
}

/// nanobot's default workspace, `DEST/workspace`, created as nanobot
/// would when it has not run yet (a dry run only reports it).
fn default_workspace(dest: &Path, dry_run: bool, report: &mut Report) -> Result<PathBuf> {
    let dest = dest.canonicalize().map_err(|e| Error::Source {
        path: dest.to_path_buf(),
        message: format!("cannot open nanobot's data folder ({e}): check the path"),
    })?;
    let nb_ws = dest.join("workspace");
    match std::fs::symlink_metadata(&nb_ws) {
        Ok(_) => nb_ws.canonicalize().map_err(|e| Error::Source {
            path: nb_ws.clone(),
            message: format!(
                "cannot open nanobot's workspace ({e}): check it, or pass the workspace the sessions belong to (--nanobot-workspace)"
            ),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if !dry_run {
                std::fs::create_dir_all(&nb_ws).map_err(|e| Error::Source {
                    path: nb_ws.clone(),
                    message: format!("cannot create nanobot's workspace folder ({e}): check the permissions of the data folder"),
                })?;
            }
            report.push(
                Verb::Create,
                Kind::Other,
                nb_ws.display().to_string(),
                "",
                "nanobot's workspace folder, which nanobot has not created yet",
            );
            Ok(nb_ws)
        }
        Err(e) => Err(Error::Source {
            path: nb_ws,
            message: format!("cannot open nanobot's workspace ({e}): check its permissions"),
        }),
    }
}

fn is_id(s: &str) -> bool {
    s.len() == 32
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A new workspace id (32 hex digits, as nanobot makes them): unique per
/// workspace path and moment.
fn new_id(workspace: &Path) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let digest = Sha256::digest(format!(
        "{}\n{now}\n{}",
        workspace.display(),
        std::process::id()
    ));
    hex::encode(&digest[..16])
}
