//! `mnemo session append | show | list`.

use std::io::{BufRead, Write};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use mnemo::core::{Message, Role};
use mnemo::store::{session::replay, SessionStore};

use crate::ctx::GlobalArgs;
use crate::output::UsageError;

/// Session commands.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Append messages to a session's log
    ///
    /// Reads messages as JSON lines on stdin, one message object per line
    /// ({"role":"user","content":"…"}; also tool_calls, tool_call_id, name,
    /// timestamp), or takes one message from --role and --content. All or
    /// nothing: a malformed line stops the command with its line number and
    /// nothing is written. With --ack each line is written as soon as it is
    /// read instead (the lines before a malformed one stay written).
    Append(AppendArgs),
    /// Print a session's messages
    Show(ShowArgs),
    /// List the sessions of the workspace, newest first
    List(ListArgs),
}

/// Arguments of `mnemo session append`.
#[derive(Debug, Args)]
pub struct AppendArgs {
    /// Session key, e.g. `cli:direct` or `telegram:123`
    pub key: String,
    /// Role of a single message: user, assistant, system or tool
    #[arg(long, requires = "content")]
    pub role: Option<String>,
    /// Text of a single message (with --role)
    #[arg(long, requires = "role")]
    pub content: Option<String>,
    /// Write each line as soon as it is read and print `ok N` after it
    /// (N counts from 1), for a writer that streams its messages
    #[arg(long, conflicts_with = "json")]
    pub ack: bool,
    /// Print one JSON object when done: {"key", "appended", "path"}
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mnemo session show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Session key
    pub key: String,
    /// Print one JSON message per line instead of text
    #[arg(long)]
    pub json: bool,
    /// Only the history a model would see: messages since the consolidation
    /// cursor, with orphaned tool results dropped
    #[arg(long)]
    pub since_cursor: bool,
}

/// Arguments of `mnemo session list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print one JSON object per session
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: SessionCommand, global: &GlobalArgs) -> Result<()> {
    let mut ctx = global.ctx()?;
    // Sessions are read and written without embedding anything.
    ctx.config.set("embedder.kind", "none");
    let mnemo = ctx.open()?;
    let store = mnemo.sessions();
    match command {
        SessionCommand::Append(args) => append(store, args),
        SessionCommand::Show(args) => show(store, args),
        SessionCommand::List(args) => list(store, args),
    }
}

fn append(store: &SessionStore, args: AppendArgs) -> Result<()> {
    if let (Some(role), Some(content)) = (&args.role, &args.content) {
        let role: Role = role.parse().map_err(UsageError)?;
        let mut log = store.open(&args.key)?;
        log.append(&[Message::new(role, content.clone())])?;
        log.sync()?;
        return appended(store, &args, &log, 1);
    }
    if args.ack {
        return append_acked(store, &args);
    }
    // All or nothing: every line is read and checked before the first is
    // written, so a script that fixes a bad line and runs again does not
    // write the lines before it twice.
    let mut messages = Vec::new();
    read_messages(&mut |_line_no, msg| {
        messages.push(msg);
        Ok(())
    })
    .map_err(|e| match e {
        ReadError::Bad(why) => UsageError(format!("{why}; nothing was written")).into(),
        ReadError::Other(e) => e,
    })?;
    if messages.is_empty() {
        bail!(UsageError(
            "no messages on stdin: pipe JSON lines, or use --role R --content TEXT".into()
        ));
    }
    let mut log = store.open(&args.key)?;
    log.append(&messages)?;
    log.sync()?;
    appended(store, &args, &log, messages.len())
}

/// `session append --ack`: each line written as soon as it is read and
/// acknowledged with `ok N`, for a writer that streams its messages.
fn append_acked(store: &SessionStore, args: &AppendArgs) -> Result<()> {
    let mut log = store.open(&args.key)?;
    let stdout = std::io::stdout();
    let mut n = 0usize;
    let read = read_messages(&mut |_line_no, msg| {
        log.append(std::slice::from_ref(&msg))?;
        n += 1;
        let mut out = stdout.lock();
        writeln!(out, "ok {n}")?;
        out.flush()?;
        Ok(())
    });
    log.sync()?;
    read.map_err(|e| match e {
        ReadError::Bad(why) => {
            UsageError(format!("{why}; {n} message(s) before it were written")).into()
        }
        ReadError::Other(e) => e,
    })
}

/// What `session append` says when it is done (nothing with --ack, which
/// said `ok N` for each message).
fn appended(
    store: &SessionStore,
    args: &AppendArgs,
    log: &mnemo::store::SessionLog,
    n: usize,
) -> Result<()> {
    if args.json {
        // Workspace-relative, as every other answer names its files.
        let path = store.storage().session_rel(&args.key)?;
        outln!(
            "{}",
            serde_json::json!({"key": args.key, "appended": n, "path": path})
        );
    } else if args.ack {
        writeln!(std::io::stdout().lock(), "ok {n}")?;
    } else {
        eprintln!("appended {n} message(s) to {}", log.path().display());
    }
    Ok(())
}

/// Why reading the messages on stdin stopped.
enum ReadError {
    /// A line is not a message: what is wrong with it.
    Bad(String),
    /// Reading stdin, or what was done with a message, failed.
    Other(anyhow::Error),
}

impl From<anyhow::Error> for ReadError {
    fn from(e: anyhow::Error) -> Self {
        ReadError::Other(e)
    }
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Other(e.into())
    }
}

impl From<mnemo::store::Error> for ReadError {
    fn from(e: mnemo::store::Error) -> Self {
        ReadError::Other(e.into())
    }
}

/// Reads the JSON message lines on stdin (blank lines skipped), giving
/// each to `each` with its line number.
fn read_messages(
    each: &mut dyn FnMut(usize, Message) -> std::result::Result<(), ReadError>,
) -> std::result::Result<(), ReadError> {
    let stdin = std::io::stdin();
    let mut reader = stdin.lock();
    let mut line = Vec::new();
    let mut line_no = 0usize;
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .context("cannot read stdin")?
            == 0
        {
            return Ok(());
        }
        line_no += 1;
        let text = std::str::from_utf8(&line).map_err(|e| {
            ReadError::Bad(format!(
                "stdin line {line_no}: invalid UTF-8 at byte {}",
                e.valid_up_to()
            ))
        })?;
        if text.trim().is_empty() {
            continue;
        }
        let msg: Message = serde_json::from_str(text).map_err(|e| {
            ReadError::Bad(format!(
                "stdin line {line_no} is not a message object ({e}); \
                 expected e.g. {{\"role\":\"user\",\"content\":\"hello\"}}"
            ))
        })?;
        each(line_no, msg)?;
    }
}

fn show(store: &SessionStore, args: ShowArgs) -> Result<()> {
    let loaded = store.load(&args.key)?;
    for w in &loaded.warnings {
        eprintln!(
            "warning: {}:{}: {}",
            loaded.path.display(),
            w.line,
            w.message
        );
    }
    let messages = if args.since_cursor {
        replay(&loaded.messages, loaded.meta.last_consolidated)
    } else {
        loaded.messages
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for m in &messages {
        if args.json {
            serde_json::to_writer(&mut out, m)?;
            writeln!(out)?;
        } else {
            writeln!(out, "{}", render_message(m))?;
        }
    }
    out.flush()?;
    Ok(())
}

fn render_message(m: &Message) -> String {
    let ts = m
        .timestamp
        .as_deref()
        .map(|t| format!("[{}] ", t.get(..16).unwrap_or(t)))
        .unwrap_or_default();
    let mut s = format!("{ts}{}: {}", m.role.as_str(), m.text());
    for c in m.tool_calls.iter().flatten() {
        s.push_str(&format!(
            "\n    -> {}({}) [{}]",
            c.function.name,
            c.function.arguments_string(),
            c.id
        ));
    }
    if let Some(id) = &m.tool_call_id {
        s.push_str(&format!("  [result of {id}]"));
    }
    s
}

fn list(store: &SessionStore, args: ListArgs) -> Result<()> {
    let sessions = store.list()?;
    if args.json {
        for s in &sessions {
            outln!("{}", serde_json::to_string(s)?);
        }
        return Ok(());
    }
    if sessions.is_empty() {
        outln!("no sessions yet: `mnemo session append KEY --role user --content TEXT` starts one");
        return Ok(());
    }
    let width = sessions
        .iter()
        .map(|s| s.key.chars().count())
        .max()
        .unwrap_or(3)
        .max(3);
    outln!(
        "{:<width$}  {:>8}  {:>6}  UPDATED",
        "KEY",
        "MESSAGES",
        "CURSOR"
    );
    for s in &sessions {
        outln!(
            "{:<width$}  {:>8}  {:>6}  {}",
            s.key,
            s.messages,
            s.last_consolidated,
            s.updated_at
        );
    }
    Ok(())
}
