//! `mnemo consolidate | compact | context | new`: the memory engine, which
//! calls a chat model.

use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use mnemo::engine::{EngineEvent, RunProgress};
use mnemo::llm::ProviderOverrides;
use mnemo_service::output::EventsOutput;
use mnemo_service::Service;

use crate::ctx::GlobalArgs;

/// Which chat model to use (else `[provider]` in mnemo.toml, then
/// MNEMO_PROVIDER / MNEMO_BASE_URL / MNEMO_MODEL / MNEMO_API_KEY).
#[derive(Debug, Args)]
pub struct ModelArgs {
    /// openai (any OpenAI-compatible API: OpenAI, Ollama, vLLM, DeepSeek, …),
    /// anthropic, local (a GGUF model run by mnemo itself: offline, no key;
    /// downloaded once), or the name of a [providers.NAME] section
    #[arg(long, global = true)]
    pub provider: Option<String>,
    /// The API's base URL, e.g. http://127.0.0.1:11434/v1 for Ollama
    #[arg(long, global = true, value_name = "URL")]
    pub base_url: Option<String>,
    /// The model name; with --provider local, a known model
    /// (qwen2.5-coder-1.5b-instruct-q4_k_m, the default;
    /// qwen2.5-coder-0.5b-instruct-q4_k_m; smollm2-135m-instruct-q4_1) or
    /// the path of a .gguf file
    #[arg(long, global = true)]
    pub model: Option<String>,
}

/// Arguments of `mnemo consolidate`.
#[derive(Debug, Args)]
pub struct ConsolidateArgs {
    /// Session key
    pub key: String,
    /// Print the answer as one JSON object (the HTTP API's shape)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Arguments of `mnemo dream`.
#[derive(Debug, Args)]
pub struct DreamArgs {
    /// Reverse the newest dream instead (from memory/HISTORY.md)
    #[arg(long)]
    pub undo: bool,
    /// Print the answer as one JSON object
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mnemo compact`.
#[derive(Debug, Args)]
pub struct CompactArgs {
    /// Session key
    pub key: String,
    /// Run only this level: 1 tool-result budget, 2 snip, 3 microcompact,
    /// 4 collapse, 5 autocompact (summary), 6 reactive; default: the whole
    /// pipeline, cheapest first, as far as needed
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=6))]
    pub level: Option<u8>,
    /// What the summary should keep above all, e.g. "the API decisions"
    /// (levels 5 and 6; the others keep the messages as they are)
    #[arg(long)]
    pub focus: Option<String>,
    /// Print the answer as one JSON object (the HTTP API's shape)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Arguments of `mnemo context`.
#[derive(Debug, Args)]
pub struct ContextArgs {
    /// Session key
    pub key: String,
    /// The user's next message
    #[arg(long, short = 'm')]
    pub message: String,
    /// Print the request and the token count of each part as JSON
    #[arg(long)]
    pub json: bool,
    // The chat model, for its context window, tokenizer and the recall
    // side query; without one the prompt is shown all the same (model
    // "none", no side query).
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Arguments of `mnemo new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// Session key
    pub key: String,
    /// Print the answer as one JSON object (the HTTP API's shape)
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub model: ModelArgs,
}

impl ModelArgs {
    /// The flags as provider overrides.
    pub fn overrides(&self) -> ProviderOverrides {
        ProviderOverrides {
            provider: self.provider.clone(),
            base_url: self.base_url.clone(),
            model: self.model.clone(),
        }
    }
}

/// The service with the chat model the flags name, for a command that
/// needs one: a local model is loaded (downloaded the first time, with a
/// bar) now, and no model at all is an error that says how to set one.
pub(crate) fn service_with_model(global: &GlobalArgs, model: &ModelArgs) -> Result<Arc<Service>> {
    let service = global.ctx()?.service(model)?;
    crate::output::with_download_bar_for("the chat model", |p| service.engine_with_progress(p))?;
    Ok(service)
}

/// One line per event, saying what ran and what it freed.
pub fn describe(event: &EngineEvent) -> String {
    match event {
        EngineEvent::Consolidated(r) if r.recovered => format!(
            "messages {}..{} were consolidated by a run that stopped before moving the cursor; \
             the cursor moved now (nothing written twice)",
            r.from, r.to
        ),
        EngineEvent::Consolidated(r) => {
            let mut line = format!(
                "consolidated messages {}..{} into long-term memory",
                r.from, r.to
            );
            if r.raw {
                line.push_str(" (archived raw after repeated failed runs; secrets redacted)");
            }
            if let Some(f) = &r.facts {
                line.push_str(&format!(
                    "; memory/facts.md: {} added, {} updated, {} ended, {} said again (every change is in memory/audit.jsonl)",
                    f.added.len(),
                    f.updated.len(),
                    f.deleted.len(),
                    f.duplicates
                ));
                if !f.refused.is_empty() {
                    line.push_str(&format!(
                        "\nnot saved: {} of the model's {} proposed fact(s), which the messages do not support (the messages stay in the session log):",
                        f.refused.len(),
                        f.extracted
                    ));
                    for x in &f.refused {
                        line.push_str(&format!("\n  - {x}"));
                    }
                }
            } else if r.memory_changed {
                line.push_str("; MEMORY.md updated (the change is in memory/HISTORY.md)");
            }
            if r.update_refused {
                line.push_str(
                    "; the model's MEMORY.md dropped most lines, so only its new lines were added",
                );
            } else if r.lines_kept > 0 {
                line.push_str(&format!(
                    "; kept {} line(s) the model left out (written by tools or people, or new)",
                    r.lines_kept
                ));
            }
            if r.messages_cut > 0 {
                line.push_str(&format!(
                    "; {} long message(s) cut for the model (the session log keeps them whole)",
                    r.messages_cut
                ));
            }
            if r.lines_copied + r.lines_echoed > 0 {
                line.push_str(&format!(
                    "; not saved: {} line(s) the model copied from the messages and {} repeating mnemo's instructions (not memory; the messages stay in the session log)",
                    r.lines_copied, r.lines_echoed
                ));
            }
            line
        }
        EngineEvent::ConsolidationFailed {
            from,
            to,
            failures,
            error,
        } => {
            format!("consolidation of messages {from}..{to} failed ({failures} failed run(s) in a row): {error}")
        }
        EngineEvent::Flushed(f) if f.echoed > 0 => format!(
            "{}; not saved: {} item(s) repeating mnemo's own instructions",
            describe(&EngineEvent::Flushed(mnemo::engine::FlushReport {
                echoed: 0,
                ..f.clone()
            })),
            f.echoed
        ),
        EngineEvent::Flushed(f) => match (&f.path, f.no_reply) {
            (_, true) | (None, _) if f.ignored > 0 => format!(
                "memory flush: nothing saved ({} line(s) of the answer were not `- ` items)",
                f.ignored
            ),
            (_, true) | (None, _) => "memory flush: nothing new to save".to_string(),
            (Some(p), false) => match &f.facts {
                Some(r) => format!(
                    "memory flush: {p}: {} added, {} updated, {} ended, {} said again{}",
                    r.added.len(),
                    r.updated.len(),
                    r.deleted.len(),
                    r.duplicates,
                    if r.refused.is_empty() {
                        String::new()
                    } else {
                        format!(
                            ", {} proposed fact(s) not saved (why: memory/audit.jsonl)",
                            r.refused.len()
                        )
                    }
                ),
                None => format!("memory flush: {} line(s) saved to {p}", f.written),
            },
        },
        EngineEvent::FlushFailed { error } => format!("memory flush failed: {error}"),
        EngineEvent::Compacted(c) => format!(
            "{}: {} -> {} tokens (freed {})",
            c.kind,
            c.tokens_before,
            c.tokens_after,
            c.tokens_before.saturating_sub(c.tokens_after)
        ),
        EngineEvent::CompactionFailed {
            kind,
            failures,
            error,
        } => {
            format!("{kind} failed ({failures} in a row): {error}")
        }
        EngineEvent::BreakerOpen { failures } => {
            format!("autocompact paused after {failures} consecutive failures (circuit breaker)")
        }
    }
}

fn print_events(out: &EventsOutput, json: bool) -> Result<()> {
    if json {
        outln!("{}", serde_json::to_string(out)?);
        return Ok(());
    }
    if out.events.is_empty() {
        outln!("nothing to do");
    }
    for e in &out.events {
        outln!("{}", describe(e));
    }
    Ok(())
}

pub fn consolidate(args: ConsolidateArgs, global: &GlobalArgs) -> Result<()> {
    let service = service_with_model(global, &args.model)?;
    let engine = service.engine()?;
    if let Some(notice) = engine.model_notice() {
        eprintln!("warning: {notice}");
    }
    let rt = crate::ctx::runtime()?;
    // Which round, of how much: a local model takes a minute a round, and
    // a long imported session many rounds (only drawn on a terminal); and
    // within a round, the model's tokens, as chat shows them.
    let activity = crate::output::Activity::start("consolidating (the model is working)");
    activity.follow_model(&engine);
    let line = activity.clone();
    let on_round = move |p: &RunProgress| line.set(round_line(p));
    let out = rt.block_on(service.consolidate_with(args.key, &on_round));
    activity.done();
    let out = out?;
    fail_on_raw_archive(&out, args.json)?;
    print_events(&out, args.json)
}

/// What the progress line says of a round under way.
fn round_line(p: &RunProgress) -> String {
    let total = p.end.saturating_sub(p.start).max(1);
    let done = p.from.saturating_sub(p.start);
    format!(
        "consolidating messages {}..{} (round {}; {done} of {total} messages done, {}%; the model is working)",
        p.from,
        p.to,
        p.round,
        done * 100 / total
    )
}

/// A run that archived messages raw after repeated failed runs is a
/// failure (exit 6), though the cursor moved: it says what was archived,
/// after the events (on stdout; with `--json` the error alone).
fn fail_on_raw_archive(out: &EventsOutput, json: bool) -> Result<()> {
    match mnemo::engine::Error::from_raw_archive(&out.key, &out.events) {
        Some(err) => {
            if !json {
                print_events(out, false)?;
            }
            Err(err.into())
        }
        None => Ok(()),
    }
}

pub fn dream(args: DreamArgs, global: &GlobalArgs) -> Result<()> {
    let ctx = global.ctx()?;
    ctx.require_initialised()?;
    let (service, rt) = crate::cmd::memory::service(ctx)?;
    let out = rt.block_on(service.dream(args.undo))?;
    if args.json {
        outln!("{}", serde_json::to_string(&out)?);
    } else if let Some(n) = out.undone_lines {
        outln!(
            "undid dream {}: {n} line(s) of memory/facts.md, MEMORY.md and typed memories changed back",
            out.id
        );
    } else if !out.changed {
        outln!(
            "dream {}: nothing to change ({} current facts)",
            out.id,
            out.current
        );
    } else {
        outln!(
            "dream {}: {} duplicate(s) merged, {} contradiction(s) resolved, {} fact(s) or typed memory line(s) retracted, {} fact(s) added from {} daily log(s), {} item(s) into typed memories ({} new), {} MEMORY.md line(s) moved into memory/facts.md, {} current facts (undo: mnemo dream --undo)",
            out.id,
            out.merged.len(),
            out.superseded.len(),
            out.retracted.len(),
            out.added.len(),
            out.folded_logs.len(),
            out.typed.len(),
            out.typed_created.len(),
            out.moved.len(),
            out.current
        );
    }
    Ok(())
}

pub fn compact(args: CompactArgs, global: &GlobalArgs) -> Result<()> {
    let service = service_with_model(global, &args.model)?;
    let rt = crate::ctx::runtime()?;
    let out = crate::output::Activity::during_model("compacting", &service.engine()?, || {
        rt.block_on(service.compact(
            args.key,
            mnemo_service::args::CompactArgs {
                level: args.level,
                focus: args.focus,
            },
        ))
    })?;
    print_events(&out, args.json)
}

pub fn context(args: ContextArgs, global: &GlobalArgs) -> Result<()> {
    // As over HTTP, the prompt is shown without a chat model too: only the
    // recall side query needs one, and the notes say it was skipped. A
    // local model is loaded now (the first time downloaded, with a bar).
    let service = global.ctx()?.service(&args.model)?;
    match crate::output::with_download_bar_for("the chat model", |p| {
        service.engine_with_progress(p)
    }) {
        Ok(_) | Err(mnemo_service::Error::NotConfigured(_)) => {}
        Err(e) => return Err(e.into()),
    }
    let out = crate::ctx::runtime()?.block_on(service.context(
        args.key,
        mnemo_service::args::ContextArgs {
            message: Some(args.message),
        },
    ))?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let report = &out.report;
    for note in &out.notes {
        eprintln!("note: {note}");
    }
    outln!("# context for {} ({})", report.key, report.model);
    for p in &report.parts {
        outln!("{:>20}  {:>8} tokens", p.name, p.tokens);
    }
    outln!(
        "{:>20}  {:>8} tokens{}",
        "total",
        report.total_tokens,
        if report.exact { "" } else { " (estimated)" }
    );
    if !report.selected_memories.is_empty() {
        outln!("selected memories: {}", report.selected_memories.join(", "));
    }
    if let Some(r) = report.recall.as_ref().filter(|r| r.from_search) {
        if r.asked_model {
            let why = if r.timed_out { "was late" } else { "failed" };
            outln!("(the memory side query {why}; the files memory search found with the conversation are recalled instead)");
        } else {
            outln!("(recalled by memory search with the conversation; no side query asks the model: [engine] recall_mode)");
        }
    } else if report.recall_timed_out {
        outln!("(the memory side query timed out; the turn goes on without it)");
    }
    outln!("\n{}", report.system);
    Ok(())
}

pub fn new_session(args: NewArgs, global: &GlobalArgs) -> Result<()> {
    let service = service_with_model(global, &args.model)?;
    let rt = crate::ctx::runtime()?;
    let out = crate::output::Activity::during_model(
        "consolidating the conversation and writing its session note",
        &service.engine()?,
        || rt.block_on(service.close(args.key)),
    )?;
    // Messages archived raw after repeated failed runs: the note is
    // written and the cursor moved, but the command failed (exit 6).
    let raw = mnemo::engine::Error::from_raw_archive(&out.key, &out.events);
    if args.json {
        if let Some(err) = raw {
            return Err(err.into());
        }
        outln!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(());
    }
    let engine = service.engine()?;
    if !engine.settings().consolidation_enabled {
        outln!(
            "consolidation is off in this workspace (profile `{}`): nothing was consolidated; the messages stay in the session log",
            engine.memory().settings().profile
        );
    }
    for e in &out.events {
        outln!("{}", describe(e));
    }
    match &out.note {
        Some(note) => outln!(
            "session note written: {note}{}",
            if out.slug_fallback {
                " (the model gave no title, so the time names it)"
            } else {
                ""
            }
        ),
        None => outln!("no session note: the conversation had no messages since the last one"),
    }
    outln!(
        "the next turn starts a new conversation (cursor at message {})",
        out.cursor
    );
    match raw {
        Some(err) => Err(err.into()),
        None => Ok(()),
    }
}
