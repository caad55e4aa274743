//! `mnemo chat` (the interactive agent) and `mnemo run` (one turn, for
//! scripts): a thin terminal layer over [`Engine::run_turn`] with the
//! service's memory tools ([`Service::tools`]). This module owns the slash
//! commands, how turns and engine events are printed, the spinner on
//! stderr while the model works, and the memory work a turn leaves running
//! in the background (`[engine] memory_work`): its report at the next
//! prompt, and the wait for it on leaving.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use clap::Args;
use mnemo::engine::{
    AgentStep, AgentTurn, Engine, EngineEvent, MemoryWorkMode, MemoryWorkReport, TurnOptions,
    WorkState, DEFAULT_MAX_ITERATIONS,
};
use mnemo_service::args::{ForgetArgs, SearchArgs};
use mnemo_service::Service;
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::engine::{describe, service_with_model, ModelArgs};
use crate::ctx::GlobalArgs;
use crate::output::{with_download_bar, Activity, UsageError};

/// The session key when none is given (the key nanobot's CLI uses).
pub const DEFAULT_SESSION: &str = "cli:direct";

/// What `mnemo chat` and `mnemo run` share: the session, the turn's bounds
/// and the model.
#[derive(Debug, Args)]
pub struct TurnArgs {
    /// Session key: the conversation to continue (its log is sessions/<key>.jsonl)
    #[arg(long, short = 's', default_value = DEFAULT_SESSION, value_name = "KEY")]
    pub session: String,
    /// Model calls per turn at most (up to 32); at the bound the turn stops with a notice
    #[arg(long, default_value_t = DEFAULT_MAX_ITERATIONS as u16, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=mnemo_service::args::MAX_TURN_ITERATIONS as i64))]
    pub max_iterations: u16,
    /// Skip the recall side query (the model picking memory files for each turn)
    #[arg(long)]
    pub no_recall: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Arguments of `mnemo chat`.
#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub turn: TurnArgs,
}

/// Arguments of `mnemo run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The user's message; `-` reads it from stdin
    pub message: String,
    /// Print one JSON object: {"session", "answer", "tool_calls": [{"id", "name",
    /// "arguments", "result", "is_error"}], "events": [...], "iterations",
    /// "hit_iteration_limit", "selected_memories", "prompt_tokens": {"before", "after"},
    /// "memory_work": "inline" | "background"}; with "background", consolidation
    /// and the memory flush run after the answer is printed, their events on stderr
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub turn: TurnArgs,
}

/// The service a turn runs through, its engine (for the memory work
/// between turns) and the runtime.
struct Agent {
    engine: Arc<Engine>,
    service: Arc<Service>,
    options: TurnOptions,
    rt: tokio::runtime::Runtime,
    /// Ctrl-C during a turn cancels it (interactive chat only).
    interrupt: Option<Interrupt>,
    /// Memory work may be left to do in the background: a turn ran (or
    /// memory work was stopped) since memory work last finished.
    due: AtomicBool,
}

impl Agent {
    /// `text` as the service's turn request, with this chat's bounds.
    fn turn_args(&self, text: &str) -> mnemo_service::args::TurnArgs {
        mnemo_service::args::TurnArgs {
            message: text.to_string(),
            max_iterations: Some(self.options.max_iterations),
            recall: Some(self.options.recall),
        }
    }
}

/// Ctrl-C in the interactive chat: during a turn (or the wait for memory
/// work on leaving) it cancels it; at the prompt it leaves, as it did
/// before a turn ever ran, after stopping memory work still running.
#[derive(Clone)]
struct Interrupt {
    in_turn: Arc<AtomicBool>,
    cancel: Arc<Notify>,
}

impl Interrupt {
    /// Installs the Ctrl-C listener on `rt`; `work` is the session whose
    /// memory work is stopped before leaving.
    fn install(rt: &tokio::runtime::Runtime, work: (Arc<Engine>, String)) -> Self {
        let it = Interrupt {
            in_turn: Arc::new(AtomicBool::new(false)),
            cancel: Arc::new(Notify::new()),
        };
        let listener = it.clone();
        rt.spawn(async move {
            while tokio::signal::ctrl_c().await.is_ok() {
                if listener.in_turn.load(Ordering::SeqCst) {
                    // Only a turn waiting now is woken: no permit is left over
                    // to cancel the next turn.
                    listener.cancel.notify_waiters();
                } else {
                    // Leaving anyway: a closed stdout changes nothing.
                    let (engine, key) = &work;
                    if running(engine, key).is_some() {
                        // Stopped at a model call, never between two writes.
                        let _ = crate::output::write_out(format_args!(
                            "\n[mnemo] stopping the memory work; the rest runs after your next turn in session {key}"
                        ));
                        engine.stop_memory_work(key).await;
                    }
                    let _ = crate::output::write_out(format_args!("\n"));
                    std::process::exit(130);
                }
            }
        });
        it
    }
}

/// The memory work of `key` while it runs.
fn running(engine: &Engine, key: &str) -> Option<MemoryWorkReport> {
    engine
        .memory_work_status(key)
        .filter(|r| r.state == WorkState::Running)
}

/// Sets `activity` to what a turn does after `step`.
fn follow(activity: &Activity, step: &AgentStep<'_>, recall: bool) {
    match step {
        AgentStep::Prepared(_) if recall => activity.set("recalling memory"),
        AgentStep::Prepared(_) | AgentStep::Recalled(_) | AgentStep::ToolFinished(_) => {
            activity.set("the model is answering")
        }
        AgentStep::ToolStarted { name, .. } => activity.set(format!("running {name}")),
        _ => {}
    }
}

fn agent(global: &GlobalArgs, args: &TurnArgs) -> Result<Agent> {
    let service = service_with_model(global, &args.model)?;
    Ok(Agent {
        engine: service.engine()?,
        service,
        options: TurnOptions {
            max_iterations: usize::from(args.max_iterations),
            recall: !args.no_recall,
        },
        rt: crate::ctx::runtime()?,
        interrupt: None,
        due: AtomicBool::new(false),
    })
}

/// The lines for one step of a turn, printed as it happens: what the
/// engine did before the turn (each event, then the prompt size it left and
/// the tokens freed), the memory files recalled, reactive compactions, and
/// each tool call with its result.
fn step_lines(step: &AgentStep<'_>) -> Vec<String> {
    match step {
        AgentStep::MemoryWorkStopped(r) => vec![format!(
            "[mnemo] memory work from the last turn stopped after {:.0} s{} so that this turn answers now; it runs again after the answer",
            r.seconds,
            r.doing
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )],
        AgentStep::Prepared(p) => {
            let mut out: Vec<String> = p
                .events
                .iter()
                .map(|e| format!("[mnemo] {}", describe(e)))
                .collect();
            if !p.events.is_empty() && p.tokens_before != p.tokens_after {
                out.push(format!(
                    "[mnemo] prompt before this turn: {} -> {} tokens (freed {})",
                    p.tokens_before,
                    p.tokens_after,
                    p.tokens_before.saturating_sub(p.tokens_after)
                ));
            }
            out
        }
        AgentStep::Recalled(r) => {
            let mut out = Vec::new();
            if !r.selected.is_empty() {
                out.push(format!("[mnemo] recalled {}", r.selected.join(", ")));
            }
            if r.timed_out {
                out.push(
                    "[mnemo] the memory side query timed out; the turn goes on without it".into(),
                );
            }
            out
        }
        AgentStep::Engine(e) => vec![format!("[mnemo] {}", describe(e))],
        AgentStep::Said(text) => vec![format!("mnemo> {text}")],
        AgentStep::ToolStarted { name, arguments } => vec![tool_line(name, arguments)],
        AgentStep::ToolFinished(r) => vec![result_line(r)],
    }
}

/// Lines for a finished run of memory work in the background: its events
/// as a turn's are printed, or why it failed.
fn memory_work_lines(r: &MemoryWorkReport) -> Vec<String> {
    match r.state {
        WorkState::Failed => vec![format!(
            "[mnemo] the memory work after the last answer failed after {:.0} s: {}; it runs again after the next turn",
            r.seconds,
            r.error.as_deref().unwrap_or("unknown error")
        )],
        _ if r.events.is_empty() => Vec::new(),
        _ => std::iter::once(format!(
            "[mnemo] memory work after the last answer ({:.0} s):",
            r.seconds
        ))
        .chain(r.events.iter().map(|e| format!("[mnemo] {}", describe(e))))
        .collect(),
    }
}

/// The notice after a turn stopped at the iteration bound.
fn bound_notice(turn: &AgentTurn) -> Option<String> {
    turn.hit_iteration_limit.then(|| {
        format!(
            "[mnemo] the turn stopped at the bound of {} model calls without a final answer \
             (raise it with --max-iterations)",
            turn.iterations
        )
    })
}

/// Lines for the events of a command (`/compact`, `/new`), with the tokens
/// the compactions freed in total.
fn command_notices(events: &[EngineEvent]) -> Vec<String> {
    let mut out: Vec<String> = events.iter().map(describe).collect();
    let freed: usize = events
        .iter()
        .filter_map(|e| match e {
            EngineEvent::Compacted(c) => Some(c.tokens_before.saturating_sub(c.tokens_after)),
            _ => None,
        })
        .sum();
    if events
        .iter()
        .any(|e| matches!(e, EngineEvent::Compacted(_)))
    {
        out.push(format!("freed {freed} tokens in total"));
    }
    out
}

/// One line for a tool call as it starts.
fn tool_line(name: &str, arguments: &Value) -> String {
    format!("  · {name} {}", clip(&arguments.to_string(), 160))
}

/// One line for a tool's result.
fn result_line(r: &mnemo::engine::ToolCallRecord) -> String {
    if r.is_error {
        return format!("    ✗ {}", clip(&r.result, 200));
    }
    let v: Value = serde_json::from_str(&r.result).unwrap_or(Value::Null);
    let summary = if let Some(results) = v.get("results").and_then(Value::as_array) {
        format!("{} result(s)", results.len())
    } else if let Some(path) = v.get("path").and_then(Value::as_str) {
        match v.get("written").and_then(Value::as_u64) {
            Some(n) => format!("{n} line(s) written to {path}"),
            None if r.name == "memory_write" => format!("saved {path}"),
            None => format!(
                "{path}: {} line(s)",
                v.get("lines").and_then(Value::as_u64).unwrap_or(0)
            ),
        }
    } else {
        clip(&r.result, 120)
    };
    format!("    → {summary}")
}

fn clip(s: &str, max: usize) -> String {
    let one_line = s.replace('\n', " ");
    if one_line.chars().count() <= max {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max).collect();
    out.push('…');
    out
}

/// The REPL's help text.
pub fn help_text() -> String {
    "\
Type a message and press Enter; the agent answers, calling memory_search,
memory_get and memory_write as it needs. Commands:
  /new             close this conversation: consolidate it into long-term memory,
                   write a session note, and start afresh (the log keeps every message)
  /compact [focus] run the compaction pipeline now and say how many tokens it freed;
                   the summary keeps what the focus names above all
  /memory          print MEMORY.md
  /search QUERY    search memory and past sessions (citations path#Lx-Ly)
  /forget NAME     remove a typed memory (its file and index line in MEMORY.md),
                   or a fact of memory/facts.md by its id (f12)
  /help            show this help
  /exit            leave (also /quit or Ctrl-D)
Ctrl-C cancels a turn in progress; at the prompt it leaves.
With [engine] memory_work = \"background\" (the default with the local model),
consolidation and the memory flush run after each answer while you type; the
next turn stops them and they run again after it, and leaving waits for them
(Ctrl-C stops the wait; what was saved stays).
"
    .to_string()
}

/// `mnemo run`: one turn; the answer on stdout, everything else on stderr.
pub fn run(args: RunArgs, global: &GlobalArgs) -> Result<()> {
    let message = if args.message == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .context("cannot read the message from stdin")?;
        s
    } else {
        args.message.clone()
    };
    if message.trim().is_empty() {
        return Err(UsageError(
            "the message is empty: give the text to send, or - to read it from stdin".into(),
        )
        .into());
    }
    let a = agent(global, &args.turn)?;
    let activity = Activity::start("preparing the prompt");
    activity.follow_model(&a.engine);
    let recall = a.options.recall;
    let observe = |step: AgentStep<'_>| {
        follow(&activity, &step, recall);
        activity.print(|| {
            for line in step_lines(&step) {
                eprintln!("{line}");
            }
        });
    };
    let turn =
        a.rt.block_on(
            a.service
                .turn_observed(&args.turn.session, a.turn_args(&message), &observe),
        )
        .with_context(|| turn_failed(&args.turn.session));
    activity.done();
    let turn = turn?;
    if let Some(line) = bound_notice(&turn) {
        eprintln!("{line}");
    }
    if args.json {
        let out = json!({
            "session": turn.key,
            "answer": turn.answer,
            "tool_calls": turn.tool_calls,
            "events": turn.events,
            "iterations": turn.iterations,
            "hit_iteration_limit": turn.hit_iteration_limit,
            "selected_memories": turn.recall.selected,
            "prompt_tokens": {"before": turn.prepare.tokens_before, "after": turn.prepare.tokens_after},
            "memory_work": turn.memory_work,
        });
        outln!("{out}");
    } else {
        outln!("{}", turn.answer);
    }
    if turn.memory_work == MemoryWorkMode::Background {
        // The answer is out; the process stays for the memory work.
        let activity = Activity::start("saving memory");
        activity.follow_model(&a.engine);
        let done = a.rt.block_on(a.engine.memory_work(&args.turn.session));
        activity.done();
        match done {
            Ok(events) => {
                for e in &events {
                    eprintln!("[mnemo] {}", describe(e));
                }
            }
            Err(e) => eprintln!(
                "warning: the memory work after the answer failed: {e}; it runs again after the next turn"
            ),
        }
    }
    Ok(())
}

fn turn_failed(key: &str) -> String {
    format!(
        "the turn in session {key:?} failed; its log keeps the user message and any tool calls made so far \
         (`mnemo session show {key}`)"
    )
}

/// What a REPL line asks for.
#[derive(Debug, PartialEq, Eq)]
enum Line<'a> {
    Empty,
    Message(&'a str),
    New,
    Compact(Option<&'a str>),
    Memory,
    Search(&'a str),
    Forget(&'a str),
    Help,
    Exit,
    Unknown(&'a str),
}

fn parse_line(line: &str) -> Line<'_> {
    let line = line.trim();
    if line.is_empty() {
        return Line::Empty;
    }
    let Some(cmd) = line.strip_prefix('/') else {
        return Line::Message(line);
    };
    let (name, rest) = match cmd.split_once(char::is_whitespace) {
        Some((n, r)) => (n, r.trim()),
        None => (cmd, ""),
    };
    match name {
        "new" => Line::New,
        "compact" => Line::Compact(Some(rest).filter(|r| !r.is_empty())),
        "memory" => Line::Memory,
        "search" => Line::Search(rest),
        "forget" => Line::Forget(rest),
        "help" | "?" => Line::Help,
        "exit" | "quit" => Line::Exit,
        other => Line::Unknown(other),
    }
}

/// `mnemo chat`: the REPL.
pub fn chat(args: ChatArgs, global: &GlobalArgs) -> Result<()> {
    let mut a = agent(global, &args.turn)?;
    // A chat keeps running: files edited beside it are found at once.
    a.service.mnemo().keep_index_fresh();
    let key = args.turn.session;
    let tty = std::io::stdin().is_terminal();
    let background = a.engine.memory_work_mode() == MemoryWorkMode::Background;
    if tty {
        a.interrupt = Some(Interrupt::install(&a.rt, (a.engine.clone(), key.clone())));
        // The first search would otherwise fetch a missing model in silence.
        let choice = with_download_bar(|p| a.service.mnemo().embedder_with_progress(p))?;
        if let Some(w) = choice.warning {
            eprintln!("warning: {w}");
        }
        for note in &choice.notes {
            eprintln!("note: {note}");
        }
    }
    let out = std::io::stdout();
    if tty {
        outln!(
            "mnemo chat: session {key}, workspace {} (/help for commands, Ctrl-C cancels a turn, /exit or Ctrl-D to leave{})",
            a.engine.workspace().root().display(),
            if background {
                "; memory is saved after each answer, while you type"
            } else {
                ""
            }
        );
    }
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    loop {
        if tty {
            out!("you> ");
            let _ = out.lock().flush();
        }
        let Some(line) = lines.next() else {
            if tty {
                outln!();
            }
            break;
        };
        let line = line.context("cannot read from stdin")?;
        // What the memory work did while this line was typed.
        if let Some(r) = a.engine.take_memory_work_report(&key) {
            if r.state == WorkState::Done {
                a.due.store(false, Ordering::SeqCst);
            }
            for l in memory_work_lines(&r) {
                outln!("{l}");
            }
        }
        match parse_line(&line) {
            Line::Empty => {}
            Line::Exit => break,
            Line::Help => out!("{}", help_text()),
            Line::Message(text) => turn(&a, &key, text)?,
            Line::New => {
                pause_memory_work(&a, &key, "/new consolidates the conversation itself")?;
                match Activity::during_model(
                    "consolidating the conversation and writing its session note",
                    &a.engine,
                    || a.rt.block_on(a.engine.new_session(&key)),
                ) {
                    Ok(report) => {
                        a.due.store(false, Ordering::SeqCst);
                        for l in command_notices(&report.events) {
                            outln!("[mnemo] {l}");
                        }
                        if let Some(note) = &report.note {
                            outln!("[mnemo] session note written to {note}");
                        }
                        outln!(
                            "[mnemo] new conversation in session {key}: {} earlier message(s) are in long-term memory and stay in the log",
                            report.cursor
                        );
                    }
                    Err(e) => outln!("error: /new failed: {e}"),
                }
            }
            Line::Compact(focus) => {
                pause_memory_work(&a, &key, "it runs again after the compaction")?;
                match Activity::during_model("compacting", &a.engine, || {
                    a.rt.block_on(a.engine.compact_with_focus(&key, None, focus))
                }) {
                    Ok(events) if events.is_empty() => {
                        outln!("[mnemo] compaction: nothing to do")
                    }
                    Ok(events) => {
                        for l in command_notices(&events) {
                            outln!("[mnemo] {l}");
                        }
                    }
                    Err(e) => outln!("error: /compact failed: {e}"),
                }
                if background && a.due.load(Ordering::SeqCst) {
                    start_memory_work(&a, &key)?;
                }
            }
            Line::Memory => match a.engine.memory().read_memory_md() {
                Ok(text) if text.trim().is_empty() => outln!("(MEMORY.md is empty)"),
                Ok(text) => outln!("{}", text.trim_end()),
                Err(e) => outln!("error: cannot read MEMORY.md: {e}"),
            },
            Line::Search("") => outln!("usage: /search QUERY"),
            Line::Search(q) => search(&a, q)?,
            Line::Forget("") => {
                outln!("usage: /forget NAME (a typed memory's name or memory/<name>.md, or a fact's id such as f12)")
            }
            Line::Forget(name) => match a.rt.block_on(a.service.forget(ForgetArgs {
                name: name.to_string(),
            })) {
                Ok(v) => outln!("[mnemo] {}", super::memory::forgot(&v.removed)),
                Err(e) => outln!("error: /forget: {e}"),
            },
            Line::Unknown(c) => outln!("unknown command /{c}: /help lists the commands"),
        }
        let _ = out.lock().flush();
    }
    if background {
        finish_memory_work(&a, &key)?;
    }
    Ok(())
}

/// Starts the memory work of `key` after a turn (background mode).
fn start_memory_work(a: &Agent, key: &str) -> Result<()> {
    let _runtime = a.rt.enter();
    a.engine.spawn_memory_work(key)?;
    a.due.store(true, Ordering::SeqCst);
    Ok(())
}

/// Stops the memory work running in the background before a command that
/// needs the session, saying so; `then` says what happens to it.
fn pause_memory_work(a: &Agent, key: &str, then: &str) -> Result<()> {
    if let Some(r) = a.rt.block_on(a.engine.stop_memory_work(key)) {
        outln!(
            "[mnemo] memory work from the last turn stopped after {:.0} s; {then}",
            r.seconds
        );
    }
    Ok(())
}

/// On leaving: waits for the memory work still running (starting what a
/// stopped or failed turn left to do), showing what it does; Ctrl-C stops
/// it (at a model call, never between two writes).
fn finish_memory_work(a: &Agent, key: &str) -> Result<()> {
    match a.engine.memory_work_status(key) {
        Some(r) if r.state == WorkState::Running => {}
        Some(r) if r.state == WorkState::Done => {
            // Finished while the last line was typed: shown now.
            if let Some(r) = a.engine.take_memory_work_report(key) {
                for l in memory_work_lines(&r) {
                    outln!("{l}");
                }
            }
            return Ok(());
        }
        _ if a.due.load(Ordering::SeqCst) => start_memory_work(a, key)?,
        _ => return Ok(()),
    }
    outln!(
        "[mnemo] saving memory from this conversation before leaving (Ctrl-C stops it; the rest runs after your next turn in session {key})"
    );
    let activity = Activity::start("saving memory");
    activity.follow_model(&a.engine);
    let wait = async {
        while let Some(r) = running(&a.engine, key) {
            activity.set(r.doing.unwrap_or_else(|| "saving memory".into()));
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let finished = match &a.interrupt {
        Some(it) => {
            it.in_turn.store(true, Ordering::SeqCst);
            let r = a.rt.block_on(async {
                tokio::select! {
                    () = wait => true,
                    () = it.cancel.notified() => false,
                }
            });
            it.in_turn.store(false, Ordering::SeqCst);
            r
        }
        None => {
            a.rt.block_on(wait);
            true
        }
    };
    activity.done();
    if !finished {
        let stopped = a.rt.block_on(a.engine.stop_memory_work(key));
        outln!(
            "[mnemo] memory work stopped{}: what it finished is saved; the rest runs after your next turn in session {key}",
            stopped
                .map(|r| format!(" after {:.0} s", r.seconds))
                .unwrap_or_default()
        );
        return Ok(());
    }
    if let Some(r) = a.engine.take_memory_work_report(key) {
        for l in memory_work_lines(&r) {
            outln!("{l}");
        }
        if r.state == WorkState::Done {
            outln!("[mnemo] memory saved ({:.0} s)", r.seconds);
        }
    }
    Ok(())
}

fn turn(a: &Agent, key: &str, text: &str) -> Result<()> {
    let activity = Activity::start("preparing the prompt");
    activity.follow_model(&a.engine);
    let recall = a.options.recall;
    let observe = |step: AgentStep<'_>| {
        follow(&activity, &step, recall);
        activity.print(|| {
            for line in step_lines(&step) {
                // The turn goes on (and is logged) even if no one reads along.
                let _ = crate::output::write_out(format_args!("{line}\n"));
            }
        });
    };
    let run = a.service.turn_observed(key, a.turn_args(text), &observe);
    let outcome = match &a.interrupt {
        Some(it) => {
            it.in_turn.store(true, Ordering::SeqCst);
            let r = a.rt.block_on(async {
                tokio::select! {
                    r = run => Some(r),
                    () = it.cancel.notified() => None,
                }
            });
            it.in_turn.store(false, Ordering::SeqCst);
            r
        }
        None => Some(a.rt.block_on(run)),
    };
    activity.done();
    // The message is logged whatever happened: memory work may be due.
    a.due.store(true, Ordering::SeqCst);
    let Some(outcome) = outcome else {
        outln!(
            "[mnemo] turn cancelled (Ctrl-C); your message and what was logged after it stay in the session, and a tool call left without a result is dropped from the next request"
        );
        return Ok(());
    };
    match outcome {
        Ok(turn) => {
            outln!("mnemo> {}", turn.answer.trim_end());
            if let Some(line) = bound_notice(&turn) {
                outln!("{line}");
            }
            if turn.memory_work == MemoryWorkMode::Background {
                start_memory_work(a, key)?;
            }
        }
        Err(e) => outln!("error: {e}\n  ({})", turn_failed(key)),
    }
    Ok(())
}

fn search(a: &Agent, query: &str) -> Result<()> {
    match a.rt.block_on(a.service.search(SearchArgs::new(query))) {
        Ok(found) => {
            if let Some(note) = super::recall::dates_note(&found.dates) {
                outln!("{note}");
            }
            if found.results.is_empty() {
                outln!("no results for {query:?}");
            }
            for r in &found.results {
                let date = r
                    .date
                    .as_deref()
                    .map(|d| format!(", {d}"))
                    .unwrap_or_default();
                outln!("{}  (score {:.2}{date})", r.citation, r.score);
                if let Some(note) = super::recall::validity_note(r) {
                    outln!("    {note}");
                }
                outln!("    {}", clip(r.snippet.trim(), 200));
            }
            for w in &found.warnings {
                outln!("warning: {w}");
            }
        }
        Err(e) => outln!("error: /search: {e}"),
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_into_commands() {
        assert_eq!(parse_line("  hello "), Line::Message("hello"));
        assert_eq!(
            parse_line("/compact keep the API"),
            Line::Compact(Some("keep the API"))
        );
        assert_eq!(parse_line("/compact"), Line::Compact(None));
        assert_eq!(parse_line("/search deploy key"), Line::Search("deploy key"));
        assert_eq!(parse_line("/quit"), Line::Exit);
        assert_eq!(parse_line("/nope x"), Line::Unknown("nope"));
        assert_eq!(parse_line(""), Line::Empty);
    }
}
