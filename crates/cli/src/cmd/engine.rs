//! `mnemo consolidate | compact | context | new`: the memory engine, which
//! calls a chat model.

use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::Args;
use mnemo_engine::{Engine, EngineEvent};
use mnemo_llm::{ChatModel, ProviderConfig, ProviderOverrides};

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
    #[command(flatten)]
    pub model: ModelArgs,
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
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Arguments of `mnemo new`.
#[derive(Debug, Args)]
pub struct NewArgs {
    /// Session key
    pub key: String,
    #[command(flatten)]
    pub model: ModelArgs,
}

/// What to do when no chat model is configured.
pub(crate) const NO_MODEL_HINT: &str =
    "no chat model configured: run one inside mnemo, offline and without a key, with --provider local \
     (the first use downloads Qwen2.5-Coder-1.5B-Instruct, 1.1 GB; or set [provider] kind = \"local\" in \
     mnemo.toml), or use a remote one with --provider openai|anthropic --model NAME (and --base-url for a \
     server such as Ollama: --base-url http://127.0.0.1:11434/v1), the MNEMO_PROVIDER / MNEMO_MODEL / \
     MNEMO_BASE_URL / MNEMO_API_KEY variables, or a [provider] section (kind, base_url, model, api_key_env)";

/// The chat model the flags, the environment and mnemo.toml name, or an
/// error that says how to configure one.
pub(crate) fn chat_model(
    config: &mnemo_core::Config,
    model: &ModelArgs,
) -> Result<Arc<dyn ChatModel>> {
    let overrides = ProviderOverrides {
        provider: model.provider.clone(),
        base_url: model.base_url.clone(),
        model: model.model.clone(),
    };
    let env = |k: &str| std::env::var(k).ok();
    let provider =
        ProviderConfig::resolve(config, None, &overrides, &env).context(NO_MODEL_HINT)?;
    Ok(crate::output::with_download_bar_for(
        "the chat model",
        |progress| mnemo::build_chat_model(&provider, progress),
    )?)
}

fn engine(global: &GlobalArgs, model: &ModelArgs) -> Result<Engine> {
    let ctx = global.ctx()?;
    ctx.require_initialised()?;
    let chat = chat_model(&ctx.config, model)?;
    let engine = Engine::new(&ctx.workspace, &ctx.config, chat)?;
    // Recall (`mnemo context`) searches memory with the conversation.
    let mnemo = std::sync::Arc::new(mnemo::Mnemo::open(ctx.workspace, ctx.config)?);
    Ok(
        engine.with_memory_search(std::sync::Arc::new(mnemo_mcp::ops::IndexMemorySearch(
            mnemo,
        ))),
    )
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
            if r.memory_changed {
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
        EngineEvent::Flushed(f) => match (&f.path, f.no_reply) {
            (_, true) | (None, _) if f.ignored > 0 => format!(
                "memory flush: nothing saved ({} line(s) of the answer were not `- ` items)",
                f.ignored
            ),
            (_, true) | (None, _) => "memory flush: nothing new to save".to_string(),
            (Some(p), false) => format!("memory flush: {} line(s) saved to {p}", f.written),
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

fn print_events(events: &[EngineEvent]) -> Result<()> {
    if events.is_empty() {
        outln!("nothing to do");
    }
    for e in events {
        outln!("{}", describe(e));
    }
    Ok(())
}

pub fn consolidate(args: ConsolidateArgs, global: &GlobalArgs) -> Result<()> {
    let engine = engine(global, &args.model)?;
    let events = crate::ctx::runtime()?.block_on(engine.consolidate_now(&args.key))?;
    print_events(&events)?;
    Ok(())
}

pub fn compact(args: CompactArgs, global: &GlobalArgs) -> Result<()> {
    let engine = engine(global, &args.model)?;
    let events = crate::ctx::runtime()?.block_on(engine.compact_with_focus(
        &args.key,
        args.level,
        args.focus.as_deref(),
    ))?;
    print_events(&events)?;
    Ok(())
}

pub fn context(args: ContextArgs, global: &GlobalArgs) -> Result<()> {
    let engine = engine(global, &args.model)?;
    let report = crate::ctx::runtime()?.block_on(engine.build_context(&args.key, &args.message))?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
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
        let why = if r.timed_out { "was late" } else { "failed" };
        outln!("(the memory side query {why}; the files memory search found with the conversation are recalled instead)");
    } else if report.recall_timed_out {
        outln!("(the memory side query timed out; the turn goes on without it)");
    }
    outln!("\n{}", report.system);
    Ok(())
}

pub fn new_session(args: NewArgs, global: &GlobalArgs) -> Result<()> {
    let engine = engine(global, &args.model)?;
    let report = crate::ctx::runtime()?.block_on(engine.new_session(&args.key))?;
    outln!("{}", serde_json::to_string_pretty(&report)?);
    Ok(())
}
