//! `mnemo eval retrieval`: the retrieval benchmark on any file in the
//! benchmark schema; `mnemo eval write-path`: the write-path suite
//! (`mnemo_eval::write_path`) with the chat model the user picks; `mnemo
//! eval consolidation`: what a chat model's consolidation keeps of the
//! same conversations.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context as _, Result};
use clap::{Args, Subcommand, ValueEnum};
use mnemo_eval::{EvalOptions, EvalReport, EvalStage, EvalUnit, Layout, QueryShape, RetrievalMode};

use crate::ctx::GlobalArgs;
use crate::output::{stderr_bar, with_download_bar};

/// Evaluations.
#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Score memory_search on a conversation benchmark (LoCoMo, MemoryBank,
    /// or any file in the same JSON schema)
    ///
    /// Each conversation is written into a fresh workspace (one session log
    /// per session, one message per turn; or, with `--layout notes`, one
    /// Markdown session note per session), indexed with the normal indexer,
    /// and every question runs through memory_search. Prints any@k, all@k,
    /// recall@k (k = 1, 3, 5, 10, 25, 50), MRR, NDCG@10 per category, and
    /// evidence recall within 500 / 1,000 / 2,000 / 4,000 retrieved tokens. The
    /// embedder and index settings come from the workspace configuration.
    Retrieval(RetrievalArgs),
    /// Print a benchmark file with its questions rewritten as dialogue
    ///
    /// The same derivation `mnemo eval retrieval --queries` uses, written
    /// out as JSON in the benchmark schema, to read the queries or to score
    /// them elsewhere. Each rewritten question lists the session its turns
    /// come from in `exclude_sessions` (the conversation happening now, not
    /// memory); questions without a query of the shape are left out.
    Derive(DeriveArgs),
    /// Score the write path of every memory profile on a conversation file
    ///
    /// Scripted statements with known truth (facts stated then changed, the
    /// same fact stated many times, a fact retracted, many distinct facts)
    /// are interleaved into the file's real turns; for each `[memory]
    /// profile` a fresh workspace replays the conversation session by
    /// session through that profile's real write path (flush,
    /// consolidation) with the chat model given by --provider / the
    /// configuration. Prints, per profile: current-value accuracy,
    /// retractions honoured, duplicates, contradictions left, old values
    /// kept in history, memory size, whether MEMORY.md stayed within its
    /// caps, model calls and tokens per 100 turns.
    WritePath(WritePathArgs),
    /// Score what consolidation keeps: valid forced calls, seconds per
    /// consolidation, and answers still found
    ///
    /// Each conversation (a sample: --limit-conversations, --limit-sessions)
    /// is replayed into a fresh workspace one session at a time, and each
    /// session is consolidated by the chat model (--provider / --model, or
    /// the configured [provider]; `--provider local` runs the GGUF model
    /// offline). Then every question whose evidence was replayed is searched
    /// in what consolidation wrote, in the raw session logs, and in the raw
    /// archive a model outage leaves (the real fallback, against a provider
    /// that cannot be reached): an answer is kept when the top hits hold
    /// three fifths of its words.
    Consolidation(ConsolidationArgs),
}

/// Arguments of `mnemo eval consolidation`.
#[derive(Debug, Args)]
pub struct ConsolidationArgs {
    /// The benchmark file (JSON, see the README's data schema)
    pub file: PathBuf,
    /// Only the first N conversations
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub limit_conversations: usize,
    /// Only the first N sessions of each conversation
    #[arg(long, value_name = "N")]
    pub limit_sessions: Option<usize>,
    /// Hits read per question
    #[arg(long, value_name = "K", default_value_t = 5)]
    pub top_k: usize,
    /// Skip the raw-archive baseline
    #[arg(long)]
    pub no_raw_archive: bool,
    /// Keep each conversation's workspaces in DIR (CONV/memory: what the
    /// model wrote, with the session logs; CONV/raw-archive: the outage's
    /// archive) to read them; DIR must be new or empty
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Print one JSON object (with each question and where its answer was found)
    #[arg(long)]
    pub json: bool,
    /// Also save the report as JSON under the workspace's .mnemo/eval/,
    /// where the memory inspector (mnemo inspect) draws it
    #[arg(long)]
    pub save: bool,
    #[command(flatten)]
    pub model: crate::cmd::engine::ModelArgs,
}

/// Arguments of `mnemo eval write-path`.
#[derive(Debug, Args)]
pub struct WritePathArgs {
    /// The conversation file (JSON, see the README's data schema)
    pub file: PathBuf,
    /// Profiles to score, comma-separated (default: all five)
    #[arg(long, value_delimiter = ',')]
    pub profiles: Vec<String>,
    /// Only the first N conversations
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub limit_conversations: usize,
    /// Only the first N sessions of each conversation
    #[arg(long, value_name = "N")]
    pub limit_sessions: Option<usize>,
    /// Distinct extra facts stated over the conversation (the long scenario)
    #[arg(long, value_name = "N", default_value_t = 40)]
    pub fillers: usize,
    /// `[engine] memory_max_lines` of the replay workspaces
    #[arg(long, value_name = "LINES", default_value_t = 30)]
    pub cap_lines: usize,
    /// `[engine] memory_max_bytes` of the replay workspaces
    #[arg(long, value_name = "BYTES", default_value_t = 25_000)]
    pub cap_bytes: usize,
    /// Run one dream pass (`mnemo dream`) at the end of each replay and score the memory it leaves
    #[arg(long)]
    pub dream: bool,
    /// Keep each replay's workspace in DIR (CONV/PROFILE: the session logs
    /// and the memory the profile wrote, with its audit log) to read why a
    /// subject scored as it did; DIR must be new or empty
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// Print one JSON object
    #[arg(long)]
    pub json: bool,
    /// Also save the report as JSON under the workspace's .mnemo/eval/,
    /// where the memory inspector (mnemo inspect) draws it
    #[arg(long)]
    pub save: bool,
    #[command(flatten)]
    pub model: crate::cmd::engine::ModelArgs,
}

/// The shape of the queries asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueriesArg {
    /// The benchmark's own questions
    Question,
    /// Dialogue: 2-4 speaker-tagged turns of other chat from the same
    /// conversation, then the question as the last turn
    Embedded,
    /// Dialogue without a question: the 2-4 turns leading up to a later turn
    /// that calls back to the evidence (what an agent's automatic recall sees)
    LeadUp,
}

impl QueriesArg {
    fn shape(self) -> QueryShape {
        match self {
            QueriesArg::Question => QueryShape::Question,
            QueriesArg::Embedded => QueryShape::Embedded,
            QueriesArg::LeadUp => QueryShape::LeadUp,
        }
    }
}

/// Where each query comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueryFromArg {
    /// The benchmark's (or the derivation's) text as it is
    Text,
    /// The turns rebuilt into a query the way the engine's recall does
    Conversation,
}

/// Arguments of `mnemo eval derive`.
#[derive(Debug, Args)]
pub struct DeriveArgs {
    /// The benchmark file (JSON, see the README's data schema)
    pub file: PathBuf,
    /// The shape to rewrite the questions into
    #[arg(long, value_enum, default_value = "lead-up")]
    pub queries: QueriesArg,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum UnitArg {
    Session,
    Turn,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LayoutArg {
    /// One session log per session, one message per turn (what an agent records)
    Sessions,
    /// One Markdown session note per session, one list item per turn (what
    /// long-term memory looks like): measures Markdown search
    Notes,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    Hybrid,
    Keyword,
    Vector,
    /// Keyword, vector and hybrid side by side
    All,
}

/// Arguments of `mnemo eval retrieval`.
#[derive(Debug, Args)]
pub struct RetrievalArgs {
    /// The benchmark file (JSON, see the README's data schema)
    pub file: PathBuf,
    /// Rank sessions or single turns
    #[arg(long, value_enum, default_value = "session")]
    pub unit: UnitArg,
    /// Retrieval mode
    #[arg(long, value_enum, default_value = "hybrid")]
    pub mode: ModeArg,
    /// How each conversation is written into the workspace
    #[arg(long, value_enum, default_value = "sessions")]
    pub layout: LayoutArg,
    /// Only the first N conversations (for quick runs)
    #[arg(long, value_name = "N")]
    pub limit_conversations: Option<usize>,
    /// The shape of the queries: the benchmark's questions, or dialogue
    /// derived from them (see `mnemo eval derive --help`)
    #[arg(long, value_enum, default_value = "question")]
    pub queries: QueriesArg,
    /// Where each query comes from: the benchmark's text as it is, or the
    /// conversation as mnemo's automatic recall builds its query from it
    /// (`User:`/`Assistant:` turns, the latest few kept)
    #[arg(long, value_enum, default_value = "text")]
    pub query_from: QueryFromArg,
    /// Print one JSON object (with an `overall` object: any@5, all@10, recall@10, mrr, …)
    #[arg(long)]
    pub json: bool,
    /// Also save the report as JSON under the workspace's .mnemo/eval/,
    /// where the memory inspector (mnemo inspect) draws it
    #[arg(long)]
    pub save: bool,
    /// Re-rank each question's first hits with the chat model, as `[engine]
    /// rerank = true` does for memory_search (one model call per question;
    /// `[engine] rerank_candidates` hits are shown to it)
    #[arg(long)]
    pub rerank: bool,
    /// Ask the chat model for the question behind each dialogue-form query
    /// (`--queries dialogue` and the like) and search it beside the
    /// dialogue, the two rankings fused (one model call per query)
    #[arg(long)]
    pub need: bool,
    /// Ask the chat model for a passage that would answer each query, and
    /// search it beside the query (`[search] expansion_weight`, `[engine]
    /// expand_*`; one model call per query, answers kept in .mnemo/eval/answers.json so a second
    /// run costs nothing)
    #[arg(long)]
    pub expand: bool,
    #[command(flatten)]
    pub model: crate::cmd::engine::ModelArgs,
}

pub fn run(command: EvalCommand, global: &GlobalArgs) -> Result<()> {
    match command {
        EvalCommand::Retrieval(args) => retrieval(args, global),
        EvalCommand::Derive(args) => derive(args),
        EvalCommand::WritePath(args) => write_path(args, global),
        EvalCommand::Consolidation(args) => consolidation(args, global),
    }
}

fn write_path(args: WritePathArgs, global: &GlobalArgs) -> Result<()> {
    let ctx = global.ctx()?;
    // Before the model is loaded (or downloaded): a used folder fails now.
    mnemo_eval::replay::check_keep(args.keep.as_deref())?;
    let chat = crate::output::with_download_bar_for("the chat model", |p| {
        mnemo_service::chat_model(&ctx.config, &args.model.overrides(), p)
    })
    .map_err(|e| anyhow::Error::new(e).context(mnemo_service::NO_MODEL_HINT))?;
    let mut opts = mnemo_eval::WritePathOptions::new(&args.file);
    if !args.profiles.is_empty() {
        opts.profiles = args.profiles;
    }
    opts.limit_conversations = Some(args.limit_conversations);
    opts.limit_sessions = args.limit_sessions;
    opts.fillers = args.fillers;
    opts.cap_lines = args.cap_lines;
    opts.cap_bytes = args.cap_bytes;
    opts.dream = args.dream;
    opts.keep = args.keep;
    let bar = stderr_bar("{msg:>28} {elapsed}");
    let progress = |m: &str| bar.set_message(m.to_string());
    let report =
        crate::ctx::runtime()?.block_on(mnemo_eval::run_write_path(&opts, chat, &progress))?;
    bar.finish_and_clear();
    if args.save {
        save_report(
            &ctx.workspace,
            "write-path",
            &mnemo_eval::write_path::render_json(&report),
        )?;
    }
    if args.json {
        outln!("{}", mnemo_eval::write_path::render_json(&report));
    } else {
        out!("{}", mnemo_eval::write_path::render_text(&report));
    }
    Ok(())
}

fn consolidation(args: ConsolidationArgs, global: &GlobalArgs) -> Result<()> {
    let ctx = global.ctx()?;
    mnemo_eval::replay::check_keep(args.keep.as_deref())?;
    let chat = crate::output::with_download_bar_for("the chat model", |p| {
        mnemo_service::chat_model(&ctx.config, &args.model.overrides(), p)
    })
    .map_err(|e| anyhow::Error::new(e).context(mnemo_service::NO_MODEL_HINT))?;
    let mut opts = mnemo_eval::ConsolidationOptions::new(&args.file);
    opts.limit_conversations = Some(args.limit_conversations);
    opts.limit_sessions = args.limit_sessions;
    opts.top_k = args.top_k;
    opts.skip_raw_archive = args.no_raw_archive;
    opts.keep = args.keep;
    opts.config = ctx.config.clone();
    opts.embedder =
        with_download_bar(|p| mnemo::build_embedder_with_progress(&ctx.config, p))?.embedder;
    let bar = stderr_bar("{msg:>28} [{bar:30}] {pos}/{len} sessions {elapsed}");
    let progress = |p: &mnemo_eval::ConsolidationProgress| {
        bar.set_length(p.total as u64);
        bar.set_position(p.done as u64);
        bar.set_message(p.at.clone());
    };
    let report = crate::ctx::runtime()?
        .block_on(mnemo_eval::run_consolidation_eval(&opts, chat, &progress))?;
    bar.finish_and_clear();
    if args.save {
        save_report(
            &ctx.workspace,
            "consolidation",
            &serde_json::to_string_pretty(&report)?,
        )?;
    }
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        out!("{}", mnemo_eval::render_consolidation(&report));
    }
    Ok(())
}

fn derive(args: DeriveArgs) -> Result<()> {
    let ds = mnemo_eval::Dataset::load(&args.file)?;
    let asked = ds.questions.len();
    let out = mnemo_eval::derive(&ds, args.queries.shape());
    eprintln!(
        "{} of {asked} questions have a {} query",
        out.questions.len(),
        args.queries.shape().as_str()
    );
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// `[index] backend = "postgres"` in an eval: each conversation's index in
/// a schema of its own (`<schema>_e<n>x`), dropped when the eval ends.
struct PostgresSchemas {
    url: String,
    made: Arc<std::sync::Mutex<Vec<String>>>,
}

impl PostgresSchemas {
    fn for_settings(settings: &mnemo::index::IndexSettings) -> Option<PostgresSchemas> {
        let url = settings.index.url.as_ref()?;
        (settings.index.backend == mnemo::index::BackendKind::POSTGRES).then(|| PostgresSchemas {
            url: url.0.clone(),
            made: Arc::default(),
        })
    }

    fn opener(&self) -> mnemo_eval::IndexOpener {
        let made = self.made.clone();
        Arc::new(move |ws, mut settings, embedder| {
            let mut made = made.lock().unwrap_or_else(|e| e.into_inner());
            settings.index.schema = format!("{}_e{}x", settings.index.schema, made.len());
            made.push(settings.index.schema.clone());
            drop(made);
            mnemo::open_index(ws, settings, embedder)
        })
    }
}

impl Drop for PostgresSchemas {
    fn drop(&mut self) {
        use mnemo::index_postgres::{PostgresBackend, PostgresOptions};
        let made = self.made.lock().unwrap_or_else(|e| e.into_inner());
        for base in made.iter() {
            // The base schema names the live generation: drop that first.
            let live = mnemo::index_postgres::PostgresStore::open(
                &PostgresOptions {
                    url: self.url.clone(),
                    schema: base.clone(),
                },
                None,
            )
            .and_then(|s| s.live_schema());
            for schema in live.into_iter().chain([base.clone()]) {
                let opts = PostgresOptions {
                    url: self.url.clone(),
                    schema,
                };
                if let Err(e) = PostgresBackend::drop_schema(&opts) {
                    eprintln!(
                        "warning: cannot drop the eval's schema {}: {e}",
                        opts.schema
                    );
                }
            }
        }
    }
}

fn retrieval(args: RetrievalArgs, global: &GlobalArgs) -> Result<()> {
    let ctx = global.ctx()?;
    let mut base = EvalOptions::new(&args.file);
    base.unit = match args.unit {
        UnitArg::Session => EvalUnit::Session,
        UnitArg::Turn => EvalUnit::Turn,
    };
    base.layout = match args.layout {
        LayoutArg::Sessions => Layout::Sessions,
        LayoutArg::Notes => Layout::Notes,
    };
    base.limit_conversations = args.limit_conversations;
    base.queries = args.queries.shape();
    base.engine_queries = args.query_from == QueryFromArg::Conversation;
    base.index_settings = mnemo::index::IndexSettings::from_config(&ctx.config)?;
    let postgres = PostgresSchemas::for_settings(&base.index_settings);
    if let Some(p) = &postgres {
        base.open_index = Some(p.opener());
    }
    let modes: Vec<RetrievalMode> = match args.mode {
        ModeArg::Keyword => vec![RetrievalMode::Keyword],
        ModeArg::Vector => vec![RetrievalMode::Vector],
        ModeArg::Hybrid => vec![RetrievalMode::Hybrid],
        ModeArg::All => vec![
            RetrievalMode::Keyword,
            RetrievalMode::Vector,
            RetrievalMode::Hybrid,
        ],
    };
    let needs_model = modes.iter().any(|m| *m != RetrievalMode::Keyword);
    if needs_model {
        let choice = with_download_bar(|p| mnemo::build_embedder_with_progress(&ctx.config, p))?;
        match choice.embedder {
            Some(e) => base.embedder = Some(e),
            None => bail!(
                "{} — vector and hybrid modes need an embedding model (or use --mode keyword)",
                choice.warning.unwrap_or_else(|| "no embedder".into())
            ),
        }
    }
    // Judgements are kept in the workspace between runs: the same
    // questions asked again (another weight, another mode) cost nothing.
    let judgements_file = ctx
        .workspace
        .state_dir()
        .join("eval")
        .join("judgements.json");
    let judgements = args
        .rerank
        .then(|| Arc::new(mnemo::engine::JudgementCache::load(&judgements_file)));
    let answers_file = ctx.workspace.state_dir().join("eval").join("answers.json");
    let answers = args.expand.then(|| Arc::new(Answers::load(&answers_file)));
    if args.rerank || args.need || args.expand {
        let chat = crate::output::with_download_bar_for("the chat model", |p| {
            mnemo_service::chat_model(&ctx.config, &args.model.overrides(), p)
        })
        .map_err(|e| anyhow::Error::new(e).context(mnemo_service::NO_MODEL_HINT))?;
        let settings: mnemo::engine::EngineSettings = ctx.config.section("engine")?;
        settings.validate().map_err(anyhow::Error::msg)?;
        if let Some(judgements) = &judgements {
            base.rerank = Some(reranker(
                chat.clone(),
                settings.clone(),
                judgements.clone(),
            )?);
        }
        if let Some(answers) = &answers {
            base.expand = Some(expander(chat.clone(), &settings, answers.clone())?);
        }
        if args.need {
            base.need = Some(asker(chat, &settings)?);
        }
    }
    let mut reports: Vec<EvalReport> = Vec::new();
    for mode in modes {
        let mut opts = base.clone();
        opts.mode = mode;
        if mode == RetrievalMode::Keyword {
            opts.embedder = None;
        }
        let bar = stderr_bar("{msg:>28} [{bar:30}] {pos}/{len} conversations {elapsed}");
        let progress = |p: &mnemo_eval::EvalProgress| {
            bar.set_length(p.conversations_total as u64);
            bar.set_position(p.conversations_done as u64);
            let stage = match p.stage {
                EvalStage::Writing => "writing",
                EvalStage::Indexing => "indexing",
                EvalStage::Searching => "searching",
                EvalStage::Finished => "done",
            };
            bar.set_message(format!("{} {stage} {}", mode.as_str(), p.conv_id));
        };
        let report = mnemo_eval::run_retrieval_eval(&opts, &progress);
        bar.finish_and_clear();
        if let Some(judgements) = &judgements {
            if let Err(e) = judgements.save(&judgements_file) {
                eprintln!(
                    "warning: cannot keep the re-rank's judgements in {}: {e}",
                    judgements_file.display()
                );
            }
        }
        if let Some(answers) = &answers {
            if let Err(e) = answers.save(&answers_file) {
                eprintln!(
                    "warning: cannot keep the model's answers in {}: {e}",
                    answers_file.display()
                );
            }
        }
        reports.push(report?);
    }
    let json = || match reports.as_slice() {
        [one] => mnemo_eval::render_json(one),
        _ => {
            let all: Vec<serde_json::Value> = reports
                .iter()
                .filter_map(|r| serde_json::from_str(&mnemo_eval::render_json(r)).ok())
                .collect();
            serde_json::Value::Array(all).to_string()
        }
    };
    if args.save {
        save_report(&ctx.workspace, "retrieval", &json())?;
    }
    if args.json {
        outln!("{}", json());
    } else if reports.len() > 1 {
        out!("{}", mnemo_eval::render_comparison(&reports));
    } else if let Some(r) = reports.first() {
        out!("{}", mnemo_eval::render_text(r));
    }
    Ok(())
}

/// The chat model re-ranking each response with the `[engine] rerank_*`
/// settings, on a runtime of its own (the benchmark itself is synchronous).
fn reranker(
    chat: Arc<dyn mnemo::llm::ChatModel>,
    settings: mnemo::engine::EngineSettings,
    judgements: Arc<mnemo::engine::JudgementCache>,
) -> Result<mnemo_eval::Rerank> {
    let opts = settings.rerank_options();
    let rt = crate::ctx::runtime()?;
    Ok(Arc::new(
        move |query: &str, resp: &mut mnemo::index::SearchResponse| {
            let passages = mnemo_service::rerank_passages(resp, settings.rerank_candidates);
            let outcome = rt.block_on(mnemo::engine::rerank::rerank(
                chat.as_ref(),
                query,
                &passages,
                &opts,
                &judgements,
            ));
            mnemo_service::apply_rerank(resp, outcome);
        },
    ))
}

/// The chat model asked for the question behind each dialogue-form query
/// (two lines or more) within `[engine] recall_timeout_ms`.
fn asker(
    chat: Arc<dyn mnemo::llm::ChatModel>,
    settings: &mnemo::engine::EngineSettings,
) -> Result<mnemo_eval::Need> {
    let timeout = std::time::Duration::from_millis(settings.recall_timeout_ms);
    let max_tokens = settings.recall_max_tokens.min(48);
    let rt = crate::ctx::runtime()?;
    Ok(Arc::new(move |query: &str| {
        if query.trim().lines().count() < 2 {
            return None;
        }
        rt.block_on(mnemo::engine::recall::question_behind(
            chat.as_ref(),
            query,
            max_tokens,
            timeout,
        ))
    }))
}

/// The model's passages for `--expand`, by model and query, kept across
/// runs (a sweep of `[search] expansion_weight` asks the same queries).
#[derive(Default)]
struct Answers {
    seen: std::sync::Mutex<std::collections::HashMap<String, Option<String>>>,
}

impl Answers {
    fn load(path: &std::path::Path) -> Self {
        let seen = std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        Answers {
            seen: std::sync::Mutex::new(seen),
        }
    }

    fn save(&self, path: &std::path::Path) -> Result<()> {
        let json = serde_json::to_vec(&*self.seen.lock().unwrap_or_else(|e| e.into_inner()))?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        mnemo::store::fsutil::atomic_write(path, &json)?;
        Ok(())
    }
}

/// The chat model asked for a passage that would answer each query, within
/// `[engine] expand_timeout_ms`, through `answers`.
fn expander(
    chat: Arc<dyn mnemo::llm::ChatModel>,
    settings: &mnemo::engine::EngineSettings,
    answers: Arc<Answers>,
) -> Result<mnemo_eval::Need> {
    let timeout = std::time::Duration::from_millis(settings.expand_timeout_ms);
    let max_tokens = settings.expand_max_tokens;
    let rt = crate::ctx::runtime()?;
    Ok(Arc::new(move |query: &str| {
        // Of a dialogue, the model reads what its latest turn asks.
        let query = mnemo::index::need_of(query);
        let key = format!("{}\u{0}{query}", chat.info().model);
        if let Some(known) = answers
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return known.clone();
        }
        let answer = rt.block_on(mnemo::engine::recall::hypothetical_answer(
            chat.as_ref(),
            &query,
            max_tokens,
            timeout,
        ));
        answers
            .seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, answer.clone());
        answer
    }))
}

/// Writes a report to `.mnemo/eval/<kind>-<UTC time>.json` of the
/// workspace, for the inspector, and says where.
fn save_report(workspace: &mnemo::core::Workspace, kind: &str, json: &str) -> Result<()> {
    let dir = workspace.state_dir().join("eval");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!(
        "{kind}-{}.json",
        chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
    ));
    mnemo::store::fsutil::atomic_write(&path, json.as_bytes())?;
    eprintln!(
        "report saved to {} (mnemo inspect draws it)",
        path.display()
    );
    Ok(())
}
