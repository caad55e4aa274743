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
    /// timestamp), or takes one message from --role and --content. Each line
    /// is written as soon as it is read; a malformed line stops the command
    /// with its line number, and the lines before it stay written.
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
    /// Print `ok N` after each message is written (N counts from 1)
    #[arg(long)]
    pub ack: bool,
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
    let ctx = global.ctx()?;
    ctx.require_initialised()?;
    let store = SessionStore::from_config(&ctx.workspace, &ctx.config)?;
    match command {
        SessionCommand::Append(args) => append(&store, args),
        SessionCommand::Show(args) => show(&store, args),
        SessionCommand::List(args) => list(&store, args),
    }
}

fn append(store: &SessionStore, args: AppendArgs) -> Result<()> {
    let mut log = store.open(&args.key)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let (Some(role), Some(content)) = (&args.role, &args.content) {
        let role: Role = role.parse().map_err(UsageError)?;
        log.append(&[Message::new(role, content.clone())])?;
        if args.ack {
            writeln!(out, "ok 1")?;
        }
        return Ok(());
    }
    let stdin = std::io::stdin();
    let mut reader = stdin.lock();
    let mut line = Vec::new();
    let (mut n, mut line_no) = (0usize, 0usize);
    loop {
        line.clear();
        if reader
            .read_until(b'\n', &mut line)
            .context("cannot read stdin")?
            == 0
        {
            break;
        }
        line_no += 1;
        let text = std::str::from_utf8(&line)
            .map_err(|e| UsageError(format!("stdin line {line_no}: invalid UTF-8 at byte {}; {n} message(s) before it were written", e.valid_up_to())))?;
        if text.trim().is_empty() {
            continue;
        }
        let msg: Message = serde_json::from_str(text).map_err(|e| {
            UsageError(format!(
                "stdin line {line_no} is not a message object ({e}); {n} message(s) before it were written. \
                 Expected e.g. {{\"role\":\"user\",\"content\":\"hello\"}}"
            ))
        })?;
        log.append(std::slice::from_ref(&msg))?;
        n += 1;
        if args.ack {
            writeln!(out, "ok {n}")?;
            out.flush()?;
        }
    }
    log.sync()?;
    if !args.ack {
        if n == 0 {
            bail!(UsageError(
                "no messages on stdin: pipe JSON lines, or use --role R --content TEXT".into()
            ));
        }
        eprintln!("appended {n} message(s) to {}", log.path().display());
    }
    Ok(())
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
