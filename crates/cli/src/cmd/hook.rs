//! `mnemo hook claude-code EVENT`: the hooks `mnemo setup claude-code`
//! installs, run by Claude Code with the event's JSON on stdin.
//!
//! What each reads of Claude Code's payload (the "Hook input" of its hooks
//! reference, 2.1.x; every other field is ignored):
//!
//! - all: `session_id`, `transcript_path` (the session's JSONL transcript,
//!   `~/.claude/projects/<project>/<session id>.jsonl`), `hook_event_name`
//!   (checked against the event on the command line, for the message when
//!   they differ), `cwd` (named in messages only);
//! - SessionStart: `source` (`startup`, `resume`, `clear`, `compact`): the
//!   memory is put in front of the session for every source, and a resumed
//!   or compacted session's transcript is recorded first;
//! - UserPromptSubmit: `prompt`, the text searched for;
//! - PreCompact: `trigger` (`manual`, `auto`) and `custom_instructions`,
//!   named in the message only: the transcript is recorded either way;
//! - Stop: `stop_hook_active`: these hooks never ask Claude to go on
//!   (no `decision: block`), so there is no loop to stop; ignored. Nor is
//!   `last_assistant_message`: the reply is recorded from the transcript
//!   once Claude Code has written it there, as an import would read it;
//! - SessionEnd: `reason`, named in the message only.
//!
//! What they answer: SessionStart and UserPromptSubmit print
//! `{"hookSpecificOutput": {"hookEventName", "additionalContext"}}` on
//! stdout (nothing at all when there is nothing to add), which Claude Code
//! adds to the session's context. The others print nothing on stdout.
//!
//! A hook never gets in Claude Code's way: whatever goes wrong (no
//! workspace, a payload it cannot read, an error, a panic, running past
//! its own time limit) it says so on stderr and exits 0, so that the
//! prompt and the session go on without it; it never blocks (exit 2).
//! Each keeps within a time limit well inside the `timeout` setup gives
//! it. The recording hooks (PreCompact, Stop, SessionEnd, and
//! SessionStart for a resumed session) hand their work to a process of
//! its own (`flush`, in its own process group, writing what it did to
//! `.mnemo/claude-code-hooks.log`): recording the transcript (which reads
//! all of it: a second or more for a long session), indexing the new
//! turns and distilling them with the chat model. Neither Claude Code's
//! next turn nor its exit waits for that, and the exit does not cut it
//! short. Recordings take turns (one at a time in the workspace, each
//! appending only what the log lacks); the distilling of a session runs
//! once at a time and goes round again while new turns arrive. `--wait`
//! does all of it in the hook instead.

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context as _, Result};
use clap::{Args, Subcommand, ValueEnum};
use mnemo::Mnemo;
use mnemo_service::output::{Hit, HitSource, SearchOutput};
use mnemo_service::Service;
use serde::Deserialize;
use serde_json::json;
use sha2::Digest;

use crate::ctx::{Ctx, GlobalArgs};

/// The hook events setup installs: Claude Code's name and the event's
/// name on the command line.
pub const HOOK_EVENTS: [(&str, &str); 5] = [
    ("SessionStart", "session-start"),
    ("UserPromptSubmit", "user-prompt-submit"),
    ("PreCompact", "pre-compact"),
    ("Stop", "stop"),
    ("SessionEnd", "session-end"),
];

/// Tokens of memory the session-start hook puts in front of a session,
/// unless `--tokens` says otherwise. Claude Code's documentation gives
/// hook context no limit, but it is reported to show more than about
/// 10,000 characters as a preview only, so the default stays under that
/// (a token is taken as 4 characters, as mnemo estimates).
pub const START_TOKENS: usize = 2_000;

/// Tokens the prompt hook recalls at most, unless `--tokens` says otherwise.
pub const PROMPT_TOKENS: usize = 1_000;

/// The longest prompt searched for, in characters (a long paste searches
/// by its start).
const MAX_QUERY_CHARS: usize = 2_000;

/// Hits asked of the search before they are fitted into the budget.
const SEARCH_HITS: usize = 12;

/// How long the background work waits for another one recording.
const RECORD_LOCK_WAIT: Duration = Duration::from_secs(120);

/// Rounds of the background flush while new turns keep arriving.
const MAX_FLUSH_PASSES: usize = 5;

/// The background flush's log, in the workspace's `.mnemo/`, and the
/// size at which it is rotated to `<name>.1`.
const FLUSH_LOG: &str = "claude-code-hooks.log";
const FLUSH_LOG_MAX_BYTES: u64 = 1 << 20;

/// `mnemo hook`.
#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Run one of the hooks `mnemo setup claude-code` installs (Claude Code runs them)
    ///
    /// Reads the event's JSON from stdin, as Claude Code sends it
    /// (session_id, transcript_path, cwd, hook_event_name, and prompt for
    /// UserPromptSubmit, source for SessionStart, …):
    ///
    ///   session-start       prints MEMORY.md, the current facts and today's and
    ///                       yesterday's daily logs, within --tokens, as the session's
    ///                       additionalContext; records a resumed session's transcript
    ///   user-prompt-submit  searches memory with the prompt and prints the hits that fit
    ///                       in --tokens as additionalContext (nothing when nothing is
    ///                       relevant; MEMORY.md and this session's own turns are left out,
    ///                       they are in the context already)
    ///   pre-compact, stop,  record the transcript into sessions/claude-code_<project>_<id>.jsonl
    ///   session-end         (only what is new; the reply Claude Code may still be writing
    ///                       waits for the next hook, session-end takes all), index it and
    ///                       distil it into memory with the chat model ([provider] in
    ///                       mnemo.toml; without one: recorded only), all in a process of
    ///                       its own, so that the hook returns at once (--wait: in the hook)
    ///
    /// A hook always exits 0: a problem is said on stderr and the session
    /// goes on without it. What the background work did is in
    /// WORKSPACE/.mnemo/claude-code-hooks.log.
    ///
    /// Example: echo '{"session_id":"s1","prompt":"what do I drink?"}' |
    ///   mnemo hook claude-code user-prompt-submit
    #[command(name = "claude-code", verbatim_doc_comment)]
    ClaudeCode(ClaudeCodeHookArgs),
}

/// Arguments of `mnemo hook claude-code`.
#[derive(Debug, Args)]
pub struct ClaudeCodeHookArgs {
    /// The hook event
    #[arg(value_enum)]
    pub event: Event,
    /// session-start: at most this many tokens of memory [default: 2000];
    /// user-prompt-submit: at most this many tokens recalled [default: 1000]
    #[arg(long, value_name = "TOKENS")]
    pub tokens: Option<usize>,
    /// session-start, pre-compact, stop, session-end: record, index and
    /// distil in this process before returning, instead of in the background
    #[arg(long)]
    pub wait: bool,
    /// flush: the transcript to record first (the hooks pass theirs)
    #[arg(long, value_name = "PATH", hide = true)]
    pub transcript: Option<PathBuf>,
    /// flush: record the whole transcript, not only what Claude Code has
    /// finished writing (the session has ended)
    #[arg(long, hide = true)]
    pub all: bool,
}

/// A hook event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Event {
    /// SessionStart
    SessionStart,
    /// UserPromptSubmit
    UserPromptSubmit,
    /// PreCompact
    PreCompact,
    /// Stop
    Stop,
    /// SessionEnd
    SessionEnd,
    /// The background work of the hooks: record the transcript, index
    /// the new turns and distil them into memory
    #[value(hide = true)]
    Flush,
}

impl Event {
    fn slug(self) -> &'static str {
        match self {
            Event::SessionStart => "session-start",
            Event::UserPromptSubmit => "user-prompt-submit",
            Event::PreCompact => "pre-compact",
            Event::Stop => "stop",
            Event::SessionEnd => "session-end",
            Event::Flush => "flush",
        }
    }

    fn claude_name(self) -> &'static str {
        match self {
            Event::SessionStart => "SessionStart",
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::PreCompact => "PreCompact",
            Event::Stop => "Stop",
            Event::SessionEnd => "SessionEnd",
            Event::Flush => "",
        }
    }

    /// How long the hook may take before it gives up and lets the session
    /// go on (inside the `timeout` setup writes: 15 s for the prompt, 30 s
    /// for the others); `None`: as long as it needs.
    fn limit(self, wait: bool) -> Option<Duration> {
        match self {
            Event::UserPromptSubmit => Some(Duration::from_secs(10)),
            Event::SessionStart if !wait => Some(Duration::from_secs(20)),
            Event::PreCompact | Event::Stop | Event::SessionEnd if !wait => {
                Some(Duration::from_secs(25))
            }
            _ => None,
        }
    }
}

/// The fields of Claude Code's hook input these hooks read (see the module
/// documentation); the rest is ignored.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Payload {
    session_id: Option<String>,
    transcript_path: Option<String>,
    cwd: Option<String>,
    hook_event_name: Option<String>,
    /// UserPromptSubmit.
    prompt: Option<String>,
    /// SessionStart.
    source: Option<String>,
    /// PreCompact.
    trigger: Option<String>,
    /// PreCompact.
    custom_instructions: Option<String>,
    /// SessionEnd.
    reason: Option<String>,
}

impl Payload {
    /// The transcript's path (a leading `~/` is the home folder).
    fn transcript(&self) -> Option<PathBuf> {
        let t = self.transcript_path.as_deref()?.trim();
        if t.is_empty() {
            return None;
        }
        match t.strip_prefix("~/") {
            Some(rest) => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(rest)),
            None => Some(PathBuf::from(t)),
        }
    }

    /// The key of this session's log, from the transcript's path.
    fn session_key(&self) -> Option<String> {
        mnemo_import::claude_code_session_key(&self.transcript()?)
    }

    /// How the session is named in messages.
    fn who(&self) -> String {
        let id = self.session_id.as_deref().unwrap_or("(no session_id)");
        match self.cwd.as_deref() {
            Some(cwd) => format!("session {id} in {cwd}"),
            None => format!("session {id}"),
        }
    }
}

pub fn run(command: HookCommand, global: &GlobalArgs) -> Result<()> {
    let HookCommand::ClaudeCode(args) = command;
    let event = args.event;
    let tag = format!("mnemo hook claude-code {}", event.slug());
    let payload = match read_payload(event) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{tag}: {e:#}; the session goes on without it");
            return Ok(());
        }
    };
    if let Some(name) = payload.hook_event_name.as_deref() {
        if event != Event::Flush && name != event.claude_name() {
            eprintln!(
                "{tag}: Claude Code sent a {name} event to the {} hook; answering it as {}",
                event.claude_name(),
                event.claude_name()
            );
        }
    }
    let ctx = match global.ctx() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{tag}: {e:#}; the session goes on without it");
            return Ok(());
        }
    };
    if ctx.require_initialised().is_err() {
        eprintln!(
            "{tag}: workspace {} does not exist: run `mnemo setup claude-code` again (it creates it) \
             or `mnemo init`; the session goes on without memory",
            ctx.workspace.root().display()
        );
        return Ok(());
    }
    let overrides = global.all_overrides();
    let limit = event.limit(args.wait);
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .name(format!("hook {}", event.slug()))
        .spawn(move || {
            let _ = tx.send(handle(event, &args, &payload, &ctx, &overrides));
        });
    if let Err(e) = worker {
        eprintln!("{tag}: cannot start ({e}); the session goes on without it");
        return Ok(());
    }
    let outcome = match limit {
        Some(l) => rx.recv_timeout(l).map_err(|e| match e {
            mpsc::RecvTimeoutError::Timeout => format!(
                "did not finish within {} s and was left; the session goes on without it",
                l.as_secs()
            ),
            mpsc::RecvTimeoutError::Disconnected => {
                "stopped unexpectedly; the session goes on without it".to_string()
            }
        }),
        None => rx
            .recv()
            .map_err(|_| "stopped unexpectedly; the session goes on without it".to_string()),
    };
    match outcome {
        Ok(Ok(Some(out))) => {
            let mut stdout = std::io::stdout().lock();
            if let Err(e) = stdout
                .write_all(out.as_bytes())
                .and_then(|()| stdout.flush())
            {
                eprintln!("{tag}: cannot write its answer ({e})");
            }
        }
        Ok(Ok(None)) => {}
        Ok(Err(e)) => eprintln!("{tag}: {e:#}; the session goes on without it"),
        Err(why) => eprintln!("{tag}: {why}"),
    }
    Ok(())
}

/// The event's JSON from stdin (nothing to read for `flush`, or from a
/// terminal: a person trying the hook by hand gets an empty payload).
fn read_payload(event: Event) -> Result<Payload> {
    let stdin = std::io::stdin();
    if event == Event::Flush || stdin.is_terminal() {
        return Ok(Payload::default());
    }
    let mut text = String::new();
    stdin
        .lock()
        .read_to_string(&mut text)
        .context("cannot read the event from stdin")?;
    if text.trim().is_empty() {
        return Ok(Payload::default());
    }
    serde_json::from_str(&text).context(
        "the event on stdin is not the JSON object Claude Code sends (session_id, transcript_path, …)",
    )
}

fn handle(
    event: Event,
    args: &ClaudeCodeHookArgs,
    payload: &Payload,
    ctx: &Ctx,
    overrides: &[String],
) -> Result<Option<String>> {
    match event {
        Event::SessionStart => session_start(
            ctx,
            payload,
            args.tokens.unwrap_or(START_TOKENS),
            args.wait,
            overrides,
        ),
        Event::UserPromptSubmit => recall(ctx, payload, args.tokens.unwrap_or(PROMPT_TOKENS)),
        Event::PreCompact | Event::Stop | Event::SessionEnd => {
            record_and_flush(ctx, payload, event, args.wait, overrides)?;
            Ok(None)
        }
        Event::Flush => {
            work(ctx, args.transcript.as_deref(), args.all)?;
            Ok(None)
        }
    }
}

/// The JSON Claude Code reads from a hook's stdout to add `context` to
/// the session.
fn additional_context(event: Event, context: &str) -> String {
    let mut out = json!({
        "hookSpecificOutput": {
            "hookEventName": event.claude_name(),
            "additionalContext": context,
        }
    })
    .to_string();
    out.push('\n');
    out
}

// ----- SessionStart -----

fn session_start(
    ctx: &Ctx,
    payload: &Payload,
    tokens: usize,
    wait: bool,
    overrides: &[String],
) -> Result<Option<String>> {
    // A resumed or compacted session has turns already: they are recorded
    // (and distilled) in the background, and the index brought up to
    // date there, so that the first prompt's search finds it fresh.
    let transcript = payload.transcript().filter(|t| t.is_file());
    let background = if wait {
        work(ctx, transcript.as_deref(), false)
    } else {
        spawn_work(ctx, transcript.as_deref(), false, overrides)
    };
    if let Err(e) = background {
        eprintln!("mnemo hook claude-code session-start: {e:#}");
    }
    let mut config = ctx.config.clone();
    // Reading memory needs no embedder.
    config.set("embedder.kind", "none");
    let mnemo = ctx.open_with(config)?;
    let source = payload.source.as_deref().unwrap_or("startup");
    Ok(memory_context(&mnemo, tokens.saturating_mul(4), source)?
        .map(|text| additional_context(Event::SessionStart, &text)))
}

/// The memory put in front of a session, within `budget` characters, in
/// the order mnemo's own prompt takes it (most trusted first): MEMORY.md,
/// the facts that are true now (newest first), then the daily logs of
/// today and yesterday (their ends). A part cut to fit says what was left
/// out and where to read it. `None` when memory holds nothing yet.
pub(crate) fn memory_context(mnemo: &Mnemo, budget: usize, source: &str) -> Result<Option<String>> {
    let memory = mnemo.memory();
    let mut parts: Vec<(String, String, bool, String)> = Vec::new();
    let rendered = memory.render_memory_md()?;
    // Without the paragraph `mnemo init` opens the file with, which
    // explains MEMORY.md to the person who edits it.
    let template =
        mnemo::store::memory::without_memory_title(mnemo::store::memory::INITIAL_MEMORY_MD).trim();
    let body = mnemo::store::memory::without_memory_title(&rendered.text).trim();
    let body = body.strip_prefix(template).unwrap_or(body).trim();
    if !body.is_empty() {
        parts.push((
            "## Long-term memory (MEMORY.md)".into(),
            body.to_string(),
            false,
            "MEMORY.md".into(),
        ));
    }
    let facts = memory.read_facts()?;
    // As mnemo's own prompt lists them.
    let current = mnemo::engine::context::current_facts(&facts)
        .trim_end()
        .to_string();
    if !current.is_empty() {
        let file = mnemo::store::memory::facts::FACTS_FILE;
        parts.push((
            format!("## Facts true now ({file}, newest first)"),
            current,
            false,
            file.to_string(),
        ));
    }
    let today = memory.today(chrono::Utc::now());
    for (label, date) in [("today", Some(today)), ("yesterday", today.pred_opt())] {
        let Some(date) = date else { continue };
        if let Some(log) = memory.read_daily(date)? {
            if log.text.trim().is_empty() {
                continue;
            }
            parts.push((
                format!(
                    "## Daily log {} ({label}, {})",
                    date.format("%Y-%m-%d"),
                    log.path
                ),
                log.text.trim().to_string(),
                true,
                log.path.clone(),
            ));
        }
    }
    if parts.is_empty() {
        return Ok(None);
    }
    let why = match source {
        "compact" => " The conversation was just compacted: this is what memory holds, whatever the summary kept.",
        "resume" => " The session was resumed.",
        _ => "",
    };
    let mut out = format!(
        "# Memory (mnemo)\n\nWhat mnemo remembers from earlier sessions (workspace {}).{why} \
         The MCP server `mnemo` searches the rest of memory and past conversations \
         (memory_search), reads a file or a citation such as memory/tea.md#L1-L7 (memory_get) \
         and saves what should be remembered (memory_write).\n",
        mnemo.workspace().root().display()
    );
    for (header, body, from_end, file) in parts {
        let left = budget.saturating_sub(out.chars().count());
        match fit(&header, &body, from_end, &file, left) {
            Some(part) => {
                out.push('\n');
                out.push_str(&part);
                out.push('\n');
            }
            None => break,
        }
    }
    Ok(Some(out))
}

/// `header` and `body` within `left` characters: whole, or the lines of
/// `body` that fit (from its start, or from its end) with a line saying
/// how many were left out; `None` when not even that fits.
fn fit(header: &str, body: &str, from_end: bool, file: &str, left: usize) -> Option<String> {
    let whole = format!("{header}\n\n{body}\n");
    if whole.chars().count() < left {
        return Some(whole);
    }
    let lines: Vec<&str> = body.lines().collect();
    let note = |n: usize| {
        let which = if from_end { "earlier" } else { "more" };
        format!("({n} {which} lines of {file} are not shown here: memory_get reads them)")
    };
    let reserve = header.chars().count() + note(lines.len()).chars().count() + 6;
    let mut room = left.checked_sub(reserve)?;
    let mut kept: Vec<&str> = Vec::new();
    let ordered: Box<dyn Iterator<Item = &&str>> = if from_end {
        Box::new(lines.iter().rev())
    } else {
        Box::new(lines.iter())
    };
    for l in ordered {
        let n = l.chars().count() + 1;
        if n > room {
            break;
        }
        room -= n;
        kept.push(l);
    }
    if from_end {
        kept.reverse();
    }
    let cut = lines.len() - kept.len();
    if kept.is_empty() {
        return Some(format!("{header}\n\n{}\n", note(cut)));
    }
    let kept = kept.join("\n");
    Some(if from_end {
        format!("{header}\n\n{}\n{kept}\n", note(cut))
    } else {
        format!("{header}\n\n{kept}\n{}\n", note(cut))
    })
}

// ----- UserPromptSubmit -----

fn recall(ctx: &Ctx, payload: &Payload, tokens: usize) -> Result<Option<String>> {
    let prompt = payload.prompt.as_deref().unwrap_or("").trim();
    // Nothing to search for: an empty prompt, or a bare slash command.
    if prompt.is_empty() || (prompt.starts_with('/') && !prompt.contains(char::is_whitespace)) {
        return Ok(None);
    }
    let request = mnemo_service::args::SearchArgs {
        query: prompt.chars().take(MAX_QUERY_CHARS).collect(),
        max_results: Some(SEARCH_HITS),
        min_score: None,
        rerank: Some(false),
        // Automatic recall stays on the fast path: no model before the
        // agent's turn.
        expand: Some(false),
        as_of: None,
        explain: None,
        mode: None,
        budget_tokens: None,
    };
    let found = search(ctx, &request)?;
    for w in &found.warnings {
        eprintln!("mnemo hook claude-code user-prompt-submit: {w}");
    }
    let own = payload.session_key();
    let mut hits: Vec<Hit> = found
        .results
        .into_iter()
        // MEMORY.md is in the session's context from its start, and this
        // session's own turns are in its conversation.
        .filter(|h| h.path != "MEMORY.md")
        .filter(|h| {
            !matches!((&h.session_key, &own), (Some(k), Some(own)) if k.starts_with(own.as_str()))
        })
        .collect();
    // The hits cut to their lines that share the prompt's words, a hit
    // that says nothing new left out, as memory_search's budget_tokens
    // does; a quarter of the budget is left for the citations around them.
    mnemo::engine::fit_budget(&mut hits, prompt, tokens * 3 / 4, |h| &mut h.snippet);
    let hits: Vec<&Hit> = hits.iter().collect();
    Ok(recall_text(&hits, tokens.saturating_mul(4))
        .map(|text| additional_context(Event::UserPromptSubmit, &text)))
}

/// The workspace's hits for `request`: from a running `mnemo serve` of
/// this workspace when there is one (its model and index are open), else
/// searched here. The recording hooks bring the index up to date in the
/// background after each turn, so the search here seldom has more than a
/// memory or two written since to index first.
fn search(ctx: &Ctx, request: &mnemo_service::args::SearchArgs) -> Result<SearchOutput> {
    let warm = ctx
        .database
        .is_none()
        .then(|| super::warm::search(&ctx.workspace, &ctx.config, request))
        .flatten();
    if let Some((found, _)) = warm {
        return Ok(found);
    }
    let service = Service::new(ctx.open_with(ctx.config.clone())?);
    let request = request.clone();
    Ok(crate::ctx::runtime()?.block_on(service.search(request))?)
}

/// The hits that fit in `budget` characters, best first, each with its
/// citation; `None` when there are none.
fn recall_text(hits: &[&Hit], budget: usize) -> Option<String> {
    let mut out = String::from(
        "Recalled by mnemo from memory and past conversations for this prompt (search hits, \
         best first; memory_get reads more of a citation):\n",
    );
    let mut shown = 0;
    for h in hits {
        let source = match h.source {
            HitSource::Memory => "memory".to_string(),
            HitSource::Sessions => match &h.date {
                Some(d) => format!("conversation of {d}"),
                None => "conversation".to_string(),
            },
        };
        let mut entry = format!("\n- {} ({source}, score {:.2})\n", h.citation, h.score);
        if let Some(note) = super::recall::validity_note(h) {
            entry.push_str(&format!("  {note}\n"));
        }
        let snippet: String = h
            .snippet
            .lines()
            .map(|l| format!("  {}\n", l.trim_end()))
            .collect();
        let left = budget.saturating_sub(out.chars().count());
        if entry.chars().count() + snippet.chars().count() <= left {
            out.push_str(&entry);
            out.push_str(&snippet);
            shown += 1;
            continue;
        }
        // The first hit that does not fit whole is cut when a useful part
        // of it fits; the rest are left.
        let room = left.saturating_sub(entry.chars().count() + 4);
        if room >= 120 {
            let cut: String = snippet.chars().take(room).collect();
            out.push_str(&entry);
            out.push_str(cut.trim_end());
            out.push_str(" …\n");
            shown += 1;
        }
        break;
    }
    (shown > 0).then_some(out)
}

// ----- PreCompact, Stop, SessionEnd -----

/// Starts the background work of a recording hook: record the
/// transcript (what is new of it), index it and distil it (or does it
/// here, `wait`).
fn record_and_flush(
    ctx: &Ctx,
    payload: &Payload,
    event: Event,
    wait: bool,
    overrides: &[String],
) -> Result<()> {
    let tag = format!("mnemo hook claude-code {}", event.slug());
    let why = match event {
        Event::PreCompact => format!(
            " before {} compaction{}",
            match payload.trigger.as_deref() {
                Some("auto") => "an automatic",
                Some("manual") => "a manual",
                _ => "a",
            },
            payload
                .custom_instructions
                .as_deref()
                .filter(|i| !i.trim().is_empty())
                .map(|i| format!(" ({i})"))
                .unwrap_or_default()
        ),
        Event::SessionEnd => format!(
            " at the end of the session ({})",
            payload.reason.as_deref().unwrap_or("no reason given")
        ),
        _ => String::new(),
    };
    let Some(path) = payload.transcript().filter(|p| p.is_file()) else {
        eprintln!(
            "{tag}: {} has no transcript to record (transcript_path {})",
            payload.who(),
            payload.transcript_path.as_deref().unwrap_or("missing")
        );
        return Ok(());
    };
    if let Some(why) = no_chat_model(ctx) {
        eprintln!(
            "{tag}: {why}: the conversation is recorded and searchable, not distilled into memory"
        );
    }
    // SessionEnd takes everything: the session is over and its last reply
    // written. The others leave a reply Claude Code may still be writing
    // for the next hook.
    let all = event == Event::SessionEnd;
    eprintln!("{tag}: recording {}{why}", payload.who());
    if wait {
        return work(ctx, Some(&path), all);
    }
    spawn_work(ctx, Some(&path), all, overrides)
}

/// Prints `msg` about `what` with the time, on stderr (the background
/// work's log).
fn say(what: &str, msg: &str) {
    eprintln!(
        "[{}] {what}: {msg}",
        chrono::Utc::now().format("%Y-%m-%d %H:%M:%S UTC")
    );
}

/// The hooks' work: record `transcript` (all of it, or what Claude Code
/// has finished writing), then [`flush`] its session (or only the index,
/// without a transcript).
fn work(ctx: &Ctx, transcript: Option<&Path>, all: bool) -> Result<()> {
    let Some(path) = transcript else {
        return flush(ctx, None);
    };
    let what = path.display().to_string();
    let rec = record(ctx, path, !all)?;
    for a in &rec.report.actions {
        if matches!(
            a.verb,
            mnemo_import::Verb::Error | mnemo_import::Verb::Refuse
        ) {
            say(&what, &a.to_string());
        }
    }
    let Some(key) = rec.key else {
        say(&what, "nothing to record yet");
        return flush(ctx, None);
    };
    say(
        &what,
        &format!(
            "recorded {} new message(s) and {} other record(s) into session {key}",
            rec.messages, rec.records
        ),
    );
    flush(ctx, Some(&key))
}

/// Records the transcript at `path` into the workspace.
fn record(ctx: &Ctx, path: &Path, settled_only: bool) -> Result<mnemo_import::Recorded> {
    // Two hooks of one session (a Stop while a SessionStart records) must
    // not both append the same new lines: one recording at a time in the
    // workspace.
    let lock_path = ctx
        .workspace
        .state_dir()
        .join("locks")
        .join("claude-code-record.lock");
    let _lock = wait_for_lock(&lock_path, RECORD_LOCK_WAIT)?.ok_or_else(|| {
        anyhow!(
            "another recording has held {} for {} s; {} is left to the next hook",
            lock_path.display(),
            RECORD_LOCK_WAIT.as_secs(),
            path.display()
        )
    })?;
    let options = mnemo_import::RecordOptions {
        session: ctx.config.section("session")?,
        settled_only,
    };
    Ok(mnemo_import::record_claude_code(
        &ctx.workspace,
        path,
        &options,
    )?)
}

/// Why no chat model will distil the conversation, when none is
/// configured (nothing is loaded to find out).
fn no_chat_model(ctx: &Ctx) -> Option<String> {
    let env = |k: &str| std::env::var(k).ok();
    match mnemo::llm::ProviderConfig::resolve(
        &ctx.config,
        None,
        &mnemo::llm::ProviderOverrides::default(),
        &env,
    ) {
        Ok(_) => None,
        Err(e) => Some(format!(
            "no chat model is configured ({e}; set [provider] in mnemo.toml or MNEMO_PROVIDER)"
        )),
    }
}

// ----- the background flush -----

/// Starts [`work`] (`mnemo hook claude-code flush`) in a process of its
/// own (its own process group, so that Claude Code's exit does not end
/// it), writing what it does to `.mnemo/claude-code-hooks.log`.
fn spawn_work(ctx: &Ctx, transcript: Option<&Path>, all: bool, overrides: &[String]) -> Result<()> {
    let exe = std::env::current_exe().context("cannot tell where this mnemo is")?;
    let mut cmd = Command::new(exe);
    cmd.arg("--workspace").arg(ctx.workspace.root());
    for o in overrides {
        cmd.arg("--set").arg(o);
    }
    cmd.args(["hook", "claude-code", "flush"]);
    if let Some(t) = transcript {
        cmd.arg("--transcript").arg(t);
    }
    if all {
        cmd.arg("--all");
    }
    let log = open_flush_log(ctx)?;
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        cmd.process_group(0);
    }
    cmd.spawn().context("cannot start the background work")?;
    Ok(())
}

fn open_flush_log(ctx: &Ctx) -> Result<std::fs::File> {
    let dir = ctx.workspace.state_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(FLUSH_LOG);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > FLUSH_LOG_MAX_BYTES) {
        let _ = std::fs::rename(&path, dir.join(format!("{FLUSH_LOG}.1")));
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))
}

/// The background work after a recording: bring the index up to date
/// (the prompt hook searches without indexing), then distil the session's
/// new turns into memory with the chat model (mnemo's consolidation: what
/// is past the session's cursor, up to its last answered turn, in rounds
/// that fit the model; the cursor moves, so nothing is distilled twice).
/// One flush of a session runs at a time; one that finds another running
/// leaves, and the running one goes round again while new turns arrive.
fn flush(ctx: &Ctx, key: Option<&str>) -> Result<()> {
    let what = key.unwrap_or("the index");
    let say = |msg: &str| say(what, msg);
    let lock_path = flush_lock(ctx, key.unwrap_or(""));
    let mnemo = ctx.open_with(ctx.config.clone())?;
    let service = Service::new(mnemo.clone());
    let rt = crate::ctx::runtime()?;
    let messages = |k: Option<&str>| -> usize {
        k.and_then(|k| mnemo.sessions().load(k).ok())
            .map_or(0, |s| s.messages.len())
    };
    for _ in 0..MAX_FLUSH_PASSES {
        let Some(lock) = try_lock(&lock_path)? else {
            say("another flush of it is running; it takes the new turns too");
            return Ok(());
        };
        let before = messages(key);
        let started = Instant::now();
        match mnemo.index().and_then(|i| Ok(i.reindex(false, &|_| {})?)) {
            Ok(r) => say(&format!(
                "index up to date ({} file(s) indexed, {} chunk(s) embedded, {} ms)",
                r.indexed.len(),
                r.chunks_embedded,
                started.elapsed().as_millis()
            )),
            Err(e) => say(&format!("cannot index: {e}")),
        }
        if let Some(key) = key {
            distil(&service, &rt, key, &say);
        }
        let done = messages(key) == before;
        if done {
            // No lock file per session left behind. One that another flush
            // opened meanwhile is harmless: the engine's own session lock
            // keeps two distillings of a session apart.
            let _ = std::fs::remove_file(&lock_path);
        }
        drop(lock);
        if done {
            break;
        }
    }
    Ok(())
}

fn distil(service: &Arc<Service>, rt: &tokio::runtime::Runtime, key: &str, say: &dyn Fn(&str)) {
    let engine = match service.engine() {
        Ok(e) => e,
        Err(e) => {
            say(&format!("recorded, not distilled into memory: {e}"));
            return;
        }
    };
    if !engine.settings().consolidation_enabled {
        say(&format!(
            "recorded, not distilled: consolidation is off in this workspace (profile `{}`); \
             the conversation stays in the session log, searchable",
            engine.memory().settings().profile
        ));
        return;
    }
    let started = Instant::now();
    match rt.block_on(service.consolidate(key.to_string())) {
        Ok(out) if out.events.is_empty() => say("nothing new to distil"),
        Ok(out) => {
            for e in &out.events {
                say(&super::engine::describe(e));
            }
            say(&format!("done in {} ms", started.elapsed().as_millis()));
        }
        Err(e) => say(&format!(
            "could not distil the new turns ({e}); they stay in the session log and the next \
             hook tries again"
        )),
    }
}

// ----- locks -----

/// `.mnemo/locks/claude-code-flush-<hash of key>.lock`.
fn flush_lock(ctx: &Ctx, key: &str) -> PathBuf {
    let hash = hex::encode(sha2::Sha256::digest(key.as_bytes()));
    ctx.workspace
        .state_dir()
        .join("locks")
        .join(format!("claude-code-flush-{}.lock", &hash[..16]))
}

/// The lock at `path` when no other process holds it.
fn try_lock(path: &Path) -> Result<Option<std::fs::File>> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open the lock {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(anyhow::Error::new(e).context(format!("cannot lock {}", path.display())))
        }
    }
}

/// The lock at `path`, waiting up to `wait` for another holder.
fn wait_for_lock(path: &Path, wait: Duration) -> Result<Option<std::fs::File>> {
    let started = Instant::now();
    loop {
        if let Some(f) = try_lock(path)? {
            return Ok(Some(f));
        }
        if started.elapsed() >= wait {
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn fits_whole_parts_and_cuts_the_others_by_lines() {
        let body = "one\ntwo\nthree";
        assert_eq!(
            fit("## H", body, false, "F", 1000).unwrap(),
            "## H\n\none\ntwo\nthree\n"
        );
        let long: Vec<String> = (1..=5)
            .map(|i| format!("line {i} {}", "x".repeat(30)))
            .collect();
        let long = long.join("\n");
        let cut = fit("## H", &long, false, "F", 120).unwrap();
        assert!(cut.chars().count() <= 120, "{cut}");
        assert!(cut.starts_with("## H\n\nline 1 "), "{cut}");
        assert!(cut.contains("(4 more lines of F are not shown"), "{cut}");
        let tail = fit("## H", &long, true, "F", 120).unwrap();
        assert!(tail.chars().count() <= 120, "{tail}");
        assert!(tail.contains("(4 earlier lines of F"), "{tail}");
        assert!(
            tail.trim_end().ends_with(&"x".repeat(30)) && tail.contains("line 5"),
            "{tail}"
        );
        assert!(fit("## H", &long, false, "F", 10).is_none());
    }
}
