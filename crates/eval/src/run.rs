//! The harness: replay each conversation into a fresh workspace through the
//! session store, index it with the normal indexer, ask every question
//! through search, map hits back to sessions and turns, and score.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use mnemo_core::{Embedder, Workspace};
use mnemo_engine::EngineSettings;
use mnemo_index::{
    IndexSettings, MemoryIndex, SearchHit, SearchMode, SearchRequest, SearchResponse, SyncProgress,
};
use mnemo_store::fsutil::atomic_write;
use mnemo_store::memory::sanitize_slug;
use mnemo_store::{FsyncPolicy, MemorySettings, MemoryStore, SessionOptions, SessionStore};

use crate::dataset::{Conversation, Dataset, Question};
use crate::dialogue::{as_engine_queries, derive, QueryShape};
use crate::error::{EvalError, Result};
use crate::metrics::{
    budget_recall, estimate_tokens, unit_ranking, MetricMean, MetricSpec, RankedHit,
};
use crate::replay::{session_key, session_messages, session_note, UnitMap};
use crate::report::{
    CategoryReport, EvalCounts, EvalReport, EvalSettings, EvalTimings, EvalUnit, Layout,
    QuestionReport, RetrievalMode,
};

/// How token budgets are measured; stated in every report.
pub const TOKEN_ESTIMATE: &str =
    "estimated from the hit snippet: 4 characters per token, 1 per CJK/wide character; fit@N cuts each hit as memory_search's budget_tokens does";

/// Re-orders one question's search response before it is scored (for
/// `mnemo eval retrieval --rerank`, which asks a chat model): called with
/// the question and the response as the index gave it.
pub type Rerank = Arc<dyn Fn(&str, &mut SearchResponse) + Send + Sync>;

/// What a chat model writes for a query, searched beside it: the question
/// behind it (`mnemo eval retrieval --need`, [`EvalOptions::need`]) or a
/// passage that would answer it (`--expand`, [`EvalOptions::expand`]);
/// `None` searches the query alone.
pub type Need = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// What to evaluate and how.
#[derive(Clone)]
pub struct EvalOptions {
    /// The benchmark file (used by [`run_retrieval_eval`]).
    pub dataset: PathBuf,
    /// Unit ranked and scored.
    pub unit: EvalUnit,
    /// How the index is asked.
    pub mode: RetrievalMode,
    /// Session logs (default) or Markdown session notes.
    pub layout: Layout,
    /// Only the first `n` conversations (and their questions).
    pub limit_conversations: Option<usize>,
    /// Hits asked for per question: large, so the unit ranking reaches k = 50.
    pub max_results: usize,
    /// Minimum score passed to search: 0 keeps the whole ranking.
    pub min_score: f32,
    /// Index settings (chunking, fusion). The mode overrides the weights:
    /// vector = 1/0, hybrid keeps the configured weights.
    pub index_settings: IndexSettings,
    /// The embedder for vector and hybrid modes, shared by every
    /// conversation so the model is loaded once.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Metrics computed.
    pub metrics: MetricSpec,
    /// Applied to every response before scoring, when set.
    pub rerank: Option<Rerank>,
    /// Asked for every query before it is searched, when set.
    pub need: Option<Need>,
    /// Asked for every query before it is searched, when set: its answer
    /// (a passage that would answer the query) is searched with the query
    /// as an expansion ([`SearchRequest::expansions`]).
    pub expand: Option<Need>,
    /// The shape of the queries: the benchmark's questions, or dialogue
    /// derived from them ([`crate::dialogue`]).
    pub queries: QueryShape,
    /// Ask each query as the engine's automatic recall would build it from
    /// the same turns ([`crate::dialogue::as_engine_queries`]).
    pub engine_queries: bool,
    /// Opens each conversation's index (the default: `mnemo_index_sqlite::open`,
    /// SQLite in the workspace's `.mnemo/`). The CLI passes
    /// `mnemo::open_index` with a schema of its own per workspace to measure
    /// the PostgreSQL backend.
    pub open_index: Option<IndexOpener>,
}

/// How [`EvalOptions::open_index`] opens an index over a workspace.
pub type IndexOpener = Arc<
    dyn Fn(&Workspace, IndexSettings, Option<Arc<dyn Embedder>>) -> mnemo_index::Result<MemoryIndex>
        + Send
        + Sync,
>;

impl std::fmt::Debug for EvalOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvalOptions")
            .field("dataset", &self.dataset)
            .field("unit", &self.unit)
            .field("mode", &self.mode)
            .field("layout", &self.layout)
            .field("limit_conversations", &self.limit_conversations)
            .field("max_results", &self.max_results)
            .field("min_score", &self.min_score)
            .field("index_settings", &self.index_settings)
            .field("embedder", &self.embedder.as_ref().map(|e| e.id()))
            .field("metrics", &self.metrics)
            .field("rerank", &self.rerank.is_some())
            .field("need", &self.need.is_some())
            .field("expand", &self.expand.is_some())
            .field("queries", &self.queries)
            .field("engine_queries", &self.engine_queries)
            .field("open_index", &self.open_index.is_some())
            .finish()
    }
}

impl EvalOptions {
    /// Defaults for `dataset`: session unit, keyword mode unless an embedder
    /// is set, 100 hits per question, min score 0.
    pub fn new(dataset: impl Into<PathBuf>) -> Self {
        EvalOptions {
            dataset: dataset.into(),
            unit: EvalUnit::Session,
            mode: RetrievalMode::Keyword,
            layout: Layout::Sessions,
            limit_conversations: None,
            max_results: 100,
            min_score: 0.0,
            index_settings: IndexSettings::default(),
            embedder: None,
            metrics: MetricSpec::default(),
            rerank: None,
            need: None,
            expand: None,
            queries: QueryShape::Question,
            engine_queries: false,
            open_index: None,
        }
    }

    /// Sets the embedder and switches to hybrid mode.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(embedder);
        self.mode = RetrievalMode::Hybrid;
        self
    }

    /// The index settings for `mode`.
    fn settings_for(&self, mode: RetrievalMode) -> IndexSettings {
        let mut s = self.index_settings.clone();
        // Every search re-walking the folder would only cost time: nothing
        // changes between the sync and the questions.
        s.search.sync_on_search = false;
        s.search.min_score = self.min_score;
        s.index.sessions = true;
        if mode == RetrievalMode::Vector {
            s.search.vector_weight = 1.0;
            s.search.text_weight = 0.0;
        }
        s
    }
}

/// Where a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalStage {
    /// Writing a conversation's session logs.
    Writing,
    /// Indexing it (embedding, for vector modes).
    Indexing,
    /// Asking its questions.
    Searching,
    /// All done.
    Finished,
}

/// A progress event, for progress bars.
#[derive(Debug, Clone)]
pub struct EvalProgress {
    /// What is being done.
    pub stage: EvalStage,
    /// The conversation being worked on.
    pub conv_id: String,
    /// Conversations finished so far.
    pub conversations_done: usize,
    /// Conversations in the run.
    pub conversations_total: usize,
    /// Questions asked so far (over all modes).
    pub questions_done: usize,
    /// Questions to ask in the run (over all modes).
    pub questions_total: usize,
    /// Chunks embedded so far in the current sync.
    pub chunks_embedded: usize,
}

/// Loads `opts.dataset` and evaluates it with `opts.mode` and `opts.unit`.
pub fn run_retrieval_eval(
    opts: &EvalOptions,
    progress: &dyn Fn(&EvalProgress),
) -> Result<EvalReport> {
    let mut ds = derive(&Dataset::load(&opts.dataset)?, opts.queries);
    if opts.engine_queries {
        ds = as_engine_queries(&ds);
    }
    let mut reports = run_on_dataset(&ds, opts, &[opts.mode], &[opts.unit], progress)?;
    reports
        .pop()
        .ok_or_else(|| EvalError::Options("the run produced no report".into()))
}

/// Evaluates `ds` in several modes and units at once. Each conversation is
/// written and indexed once; every mode then asks all questions, and every
/// unit is scored from the same hit rankings. Returns one report per
/// (mode, unit), modes outermost, in the order given.
pub fn run_on_dataset(
    ds: &Dataset,
    opts: &EvalOptions,
    modes: &[RetrievalMode],
    units: &[EvalUnit],
    progress: &dyn Fn(&EvalProgress),
) -> Result<Vec<EvalReport>> {
    if modes.is_empty() || units.is_empty() {
        return Err(EvalError::Options(
            "give at least one mode and one unit".into(),
        ));
    }
    if opts.max_results == 0 {
        return Err(EvalError::Options("max_results must be at least 1".into()));
    }
    if let Some(m) = modes.iter().find(|m| m.needs_embedder()) {
        if opts.embedder.is_none() {
            return Err(EvalError::Options(format!(
                "{} mode needs an embedding model: load one (for instance mnemo_embed::LocalEmbedder) or use keyword mode",
                m.as_str()
            )));
        }
    }
    for m in modes {
        opts.settings_for(*m).validate().map_err(|e| {
            EvalError::Options(format!("index settings for {} mode: {e}", m.as_str()))
        })?;
    }
    // Keyword first: it needs no vectors, so opening it before the embedder
    // never throws away an embedded index.
    let mut order: Vec<RetrievalMode> = Vec::new();
    for m in [
        RetrievalMode::Keyword,
        RetrievalMode::Hybrid,
        RetrievalMode::Vector,
    ] {
        if modes.contains(&m) {
            order.push(m);
        }
    }

    let convs: Vec<&Conversation> = ds
        .conversations
        .iter()
        .take(opts.limit_conversations.unwrap_or(usize::MAX))
        .collect();
    let by_conv = ds.questions_by_conversation();
    let known: HashSet<&str> = ds
        .conversations
        .iter()
        .map(|c| c.conv_id.as_str())
        .collect();
    let mut warnings = Vec::new();
    let orphans = ds
        .questions
        .iter()
        .filter(|q| !known.contains(q.conv_id.as_str()))
        .count();
    if orphans > 0 {
        warnings.push(format!(
            "{orphans} questions name a conversation that is not in the file; they were skipped"
        ));
    }
    let q_index: HashMap<*const Question, usize> = ds
        .questions
        .iter()
        .enumerate()
        .map(|(i, q)| (q as *const Question, i))
        .collect();

    let total_q: usize = convs
        .iter()
        .map(|c| by_conv.get(c.conv_id.as_str()).map_or(0, Vec::len))
        .sum::<usize>()
        * order.len();
    let mut state = EvalProgress {
        stage: EvalStage::Writing,
        conv_id: String::new(),
        conversations_done: 0,
        conversations_total: convs.len(),
        questions_done: 0,
        questions_total: total_q,
        chunks_embedded: 0,
    };

    let mut counts = EvalCounts {
        conversations: convs.len(),
        ..Default::default()
    };
    let mut runs: BTreeMap<RetrievalMode, ModeRun> = BTreeMap::new();
    let mut write_seconds = 0.0;

    for conv in &convs {
        let questions: &[&Question] = by_conv
            .get(conv.conv_id.as_str())
            .map_or(&[], Vec::as_slice);
        state.conv_id = conv.conv_id.clone();
        state.stage = EvalStage::Writing;
        progress(&state);

        let tmp = tempfile::Builder::new()
            .prefix("mnemo-eval-")
            .tempdir()
            .map_err(EvalError::Workspace)?;
        let ws = Workspace::new(tmp.path());
        let t = Instant::now();
        let mut map = UnitMap::new(conv);
        match opts.layout {
            Layout::Sessions => write_conversation(&ws, conv)?,
            Layout::Notes => write_notes(&ws, conv, &mut map)?,
        }
        write_seconds += t.elapsed().as_secs_f64();
        counts.sessions += conv.sessions.len();
        counts.turns += conv.sessions.iter().map(|s| s.turns.len()).sum::<usize>();

        for mode in &order {
            let run = runs.entry(*mode).or_default();
            let embedder = if mode.needs_embedder() {
                opts.embedder.clone()
            } else {
                None
            };
            state.stage = EvalStage::Indexing;
            state.chunks_embedded = 0;
            progress(&state);
            let t = Instant::now();
            let settings = opts.settings_for(*mode);
            let index = match &opts.open_index {
                Some(open) => open(&ws, settings, embedder),
                None => mnemo_index_sqlite::open(&ws, settings, embedder),
            }
            .map_err(EvalError::Index)?;
            let report = {
                let base = state.clone();
                index
                    .sync(&|p: SyncProgress| {
                        if let SyncProgress::Embedded { chunks } = p {
                            let mut s = base.clone();
                            s.chunks_embedded = chunks;
                            progress(&s);
                        }
                    })
                    .map_err(EvalError::Index)?
            };
            run.index_seconds += t.elapsed().as_secs_f64();
            for issue in report.issues {
                run.warnings.push(format!(
                    "{}: {}: {}",
                    conv.conv_id, issue.path, issue.message
                ));
            }

            state.stage = EvalStage::Searching;
            progress(&state);
            let t = Instant::now();
            for q in questions {
                let qi = q_index.get(&(*q as *const Question)).copied().unwrap_or(0);
                if q.question.trim().is_empty() {
                    // Nothing to search for: the question scores zero rather
                    // than stopping the run.
                    run.questions.push(QuestionHits {
                        qi,
                        hits: Vec::new(),
                        fitted: opts
                            .metrics
                            .token_budgets
                            .iter()
                            .map(|_| Vec::new())
                            .collect(),
                        auto: match opts.layout {
                            Layout::Notes => (0..=opts.metrics.token_budgets.len())
                                .map(|_| Vec::new())
                                .collect(),
                            Layout::Sessions => Vec::new(),
                        },
                    });
                    run.warnings.push(format!(
                        "question {} has no text; it ranks nothing",
                        q.id_or(qi)
                    ));
                    continue;
                }
                let one = Instant::now();
                let mut req = SearchRequest::new(q.question.clone())
                    .max_results(opts.max_results)
                    .min_score(opts.min_score);
                if let Some(answer) = opts.expand.as_ref().and_then(|f| f(&q.question)) {
                    req = req.expansions(vec![answer]);
                }
                let mut resp = index.search(&req).map_err(EvalError::Index)?;
                if let Some(need) = opts.need.as_ref().and_then(|f| f(&q.question)) {
                    let req = SearchRequest::new(need)
                        .max_results(opts.max_results)
                        .min_score(opts.min_score);
                    let other = index.search(&req).map_err(EvalError::Index)?;
                    fuse_responses(&mut resp, other, opts.max_results);
                }
                if let Some(rerank) = &opts.rerank {
                    rerank(&q.question, &mut resp);
                }
                run.latencies_ms.push(one.elapsed().as_secs_f64() * 1000.0);
                if !run.modes_seen.contains(&resp.mode) {
                    run.modes_seen.push(resp.mode);
                }
                for w in std::mem::take(&mut resp.warnings) {
                    if run.warnings.len() < 20 && !run.warnings.contains(&w) {
                        run.warnings.push(w);
                    }
                }
                // The conversation a dialogue query comes from is not
                // memory yet.
                let excluded = |h: &SearchHit| {
                    to_units(&map, h)
                        .sessions
                        .iter()
                        .any(|s| q.exclude_sessions.contains(s))
                };
                resp.results.retain(|h| !excluded(h));
                let hits = resp.results.iter().map(|h| to_units(&map, h)).collect();
                // The hits as a budget takes them: cut to their useful
                // lines, repeats left out (`mnemo_engine::fit_budget`, what
                // `memory_search` with `budget_tokens` answers).
                let fitted = opts
                    .metrics
                    .token_budgets
                    .iter()
                    .map(|&b| {
                        let mut cut = resp.results.clone();
                        mnemo_engine::fit_budget(&mut cut, &q.question, b, |h| &mut h.snippet);
                        cut.iter().map(|h| fitted_units(&map, h)).collect()
                    })
                    .collect();
                let auto = match opts.layout {
                    Layout::Notes => auto_recall(&ws, &map, &q.question, &resp, &opts.metrics),
                    Layout::Sessions => Vec::new(),
                };
                run.questions.push(QuestionHits {
                    qi,
                    hits,
                    fitted,
                    auto,
                });
                state.questions_done += 1;
                if state.questions_done.is_multiple_of(16) {
                    progress(&state);
                }
            }
            run.search_seconds += t.elapsed().as_secs_f64();
            run.searches += questions.len();
        }
        state.conversations_done += 1;
        progress(&state);
        drop(tmp);
    }
    counts.questions_asked = convs
        .iter()
        .map(|c| by_conv.get(c.conv_id.as_str()).map_or(0, Vec::len))
        .sum();
    state.stage = EvalStage::Finished;
    progress(&state);

    let mut out = Vec::new();
    for mode in modes {
        let Some(run) = runs.get(mode) else { continue };
        for unit in units {
            out.push(score_run(
                ds,
                opts,
                *mode,
                *unit,
                run,
                &counts,
                write_seconds,
                &warnings,
            ));
        }
    }
    Ok(out)
}

/// Hits of one mode, per question, reduced to units.
#[derive(Default)]
struct ModeRun {
    questions: Vec<QuestionHits>,
    modes_seen: Vec<SearchMode>,
    warnings: Vec<String>,
    index_seconds: f64,
    search_seconds: f64,
    searches: usize,
    /// Each question's search (and re-rank), in milliseconds.
    latencies_ms: Vec<f64>,
}

/// One question's hits: as ranked, and as each token budget takes them
/// (in the order of [`MetricSpec::token_budgets`]).
struct QuestionHits {
    qi: usize,
    hits: Vec<HitUnits>,
    fitted: Vec<Vec<HitUnits>>,
    /// What automatic recall puts in the prompt (Markdown notes only): the
    /// files search found, within each budget, then whole.
    auto: Vec<Vec<HitUnits>>,
}

/// One hit: the session and turns it covers, and its size.
struct HitUnits {
    sessions: Vec<String>,
    turns: Vec<String>,
    tokens: usize,
}

fn to_units(map: &UnitMap, h: &SearchHit) -> HitUnits {
    let tokens = estimate_tokens(&h.snippet);
    let Some(key) = h.session_key.as_deref() else {
        // A Markdown hit: a session note's lines, or nothing the
        // benchmark wrote.
        let (sessions, turns) = map
            .note_units(&h.path, h.start_line, h.end_line)
            .unwrap_or_default();
        return HitUnits {
            sessions,
            turns,
            tokens,
        };
    };
    let sessions = map
        .session(key)
        .map(|s| vec![s.to_string()])
        .unwrap_or_default();
    let turns = match h.message_range {
        Some((a, b)) => map.turns(key, a.min(b), a.max(b)),
        None => Vec::new(),
    };
    HitUnits {
        sessions,
        turns,
        tokens,
    }
}

/// A hit cut by a budget: the turns its excerpt still shows, its session
/// while it shows any (or, for a hit the benchmark did not write, as
/// [`to_units`] has it), and the excerpt's size.
fn fitted_units(map: &UnitMap, h: &SearchHit) -> HitUnits {
    let mut units = to_units(map, h);
    if !units.turns.is_empty() {
        units.turns.retain(|t| map.shows_turn(t, &h.snippet));
        if units.turns.is_empty() {
            units.sessions.clear();
        }
    }
    units
}

/// What automatic recall (`[engine] recall_mode = "search"`) puts in the
/// prompt for `query`, reduced to units: the passages of the Markdown hits
/// (the lines each cites), best first, fitted by the engine's own
/// [`mnemo_engine::fit_recall`] to each token budget of `spec`; then, to
/// compare, the first `recall_max_selected` files whole (each up to
/// `restore_file_tokens`), what recall showed before it had a budget. The
/// user's message, the query's last line, picks the lines kept.
fn auto_recall(
    ws: &Workspace,
    map: &UnitMap,
    query: &str,
    resp: &SearchResponse,
    spec: &MetricSpec,
) -> Vec<Vec<HitUnits>> {
    use mnemo_engine::{fit_recall, Recall};
    let engine = EngineSettings::default();
    let message = crate::replay::unlabelled(query.lines().last().unwrap_or_default());
    let mut texts: HashMap<String, String> = HashMap::new();
    let mut text_of = |path: &str| -> String {
        texts
            .entry(path.to_string())
            .or_insert_with(|| std::fs::read_to_string(ws.root().join(path)).unwrap_or_default())
            .clone()
    };
    let memory: Vec<&SearchHit> = resp
        .results
        .iter()
        .filter(|h| h.path.starts_with("memory/"))
        .collect();
    let passages: Vec<Recall> = memory
        .iter()
        .take(engine.recall_max_selected * mnemo_engine::recall::PASSAGES_PER_FILE)
        .map(|h| Recall {
            path: h.path.clone(),
            label: format!("{}#L{}-L{}", h.path, h.start_line, h.end_line),
            text: mnemo_engine::budget::cited_lines(&text_of(&h.path), h.start_line, h.end_line),
            passage: true,
        })
        .collect();
    let files: Vec<Recall> = resp
        .files()
        .into_iter()
        .filter(|p| p.starts_with("memory/"))
        .take(engine.recall_max_selected)
        .map(|p| Recall {
            text: text_of(&p),
            label: p.clone(),
            path: p,
            passage: false,
        })
        .collect();
    let units = |shown: Vec<mnemo_engine::Recalled>| -> Vec<HitUnits> {
        shown
            .iter()
            .map(|f| {
                let cited = mnemo_engine::split_citation(&f.label);
                let (first, last) = cited.map_or((1, usize::MAX), |(_, a, b)| (a, b));
                let (sessions, mut turns) =
                    map.note_units(&f.path, first, last).unwrap_or_default();
                // A passage or an excerpt shows the turns its lines hold.
                if cited.is_some() || f.excerpt {
                    turns.retain(|t| map.shows_turn(t, &f.text));
                }
                HitUnits {
                    sessions: if turns.is_empty() {
                        Vec::new()
                    } else {
                        sessions
                    },
                    turns,
                    tokens: estimate_tokens(&f.text),
                }
            })
            .collect()
    };
    let mut out: Vec<Vec<HitUnits>> = spec
        .token_budgets
        .iter()
        .map(|&budget| {
            units(fit_recall(
                message,
                passages.clone(),
                budget,
                engine.restore_file_tokens,
            ))
        })
        .collect();
    out.push(units(fit_recall(
        message,
        files,
        usize::MAX,
        engine.restore_file_tokens,
    )));
    out
}

/// Writes every session of `conv` as one session log, one message per turn.
fn write_conversation(ws: &Workspace, conv: &Conversation) -> Result<()> {
    // Temporary workspace: durability is irrelevant, speed is not.
    let options = SessionOptions {
        fsync: FsyncPolicy::Never,
        ..SessionOptions::default()
    };
    let store = SessionStore::new(ws, options);
    for s in &conv.sessions {
        let messages = session_messages(conv, s);
        if messages.is_empty() {
            continue;
        }
        let mut log = store
            .open(&session_key(&conv.conv_id, &s.session_id))
            .map_err(EvalError::Store)?;
        log.append(&messages).map_err(EvalError::Store)?;
        log.sync().map_err(EvalError::Store)?;
    }
    Ok(())
}

/// Writes every session of `conv` as a Markdown session note through the
/// memory store, one list item per turn, and records in `map` which lines
/// hold which turn. A session without a readable date is written as an
/// undated note, `memory/<slug>.md`.
fn write_notes(ws: &Workspace, conv: &Conversation, map: &mut UnitMap) -> Result<()> {
    let store = MemoryStore::new(ws, MemorySettings::default());
    for s in &conv.sessions {
        let Some(note) = session_note(s) else {
            continue;
        };
        let slug = format!("{}-{}", conv.conv_id, s.session_id);
        let path = match note.date {
            Some(d) => store
                .write_session_note(d, &slug, &note.text)
                .map_err(EvalError::Store)?,
            None => {
                let rel = format!("memory/{}.md", sanitize_slug(&slug));
                atomic_write(&ws.root().join(&rel), note.text.as_bytes())
                    .map_err(EvalError::Store)?;
                rel
            }
        };
        map.add_note(path, s.session_id.clone(), note.lines);
    }
    Ok(())
}

/// The evidence of `q` for `unit`. Session evidence falls back to the
/// sessions of the evidence turns when a file gives only turns.
fn evidence_for(
    q: &Question,
    unit: EvalUnit,
    turn_session: &HashMap<(&str, &str), &str>,
) -> Vec<String> {
    match unit {
        EvalUnit::Turn => q.evidence_turns.clone(),
        EvalUnit::Session if !q.evidence_sessions.is_empty() => q.evidence_sessions.clone(),
        EvalUnit::Session => {
            let mut out: Vec<String> = Vec::new();
            for t in &q.evidence_turns {
                if let Some(s) = turn_session.get(&(q.conv_id.as_str(), t.as_str())) {
                    if !out.iter().any(|o| o == s) {
                        out.push(s.to_string());
                    }
                }
            }
            out
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn score_run(
    ds: &Dataset,
    opts: &EvalOptions,
    mode: RetrievalMode,
    unit: EvalUnit,
    run: &ModeRun,
    counts: &EvalCounts,
    write_seconds: f64,
    warnings: &[String],
) -> EvalReport {
    let names = ds.category_names();
    let turn_session: HashMap<(&str, &str), &str> = ds
        .conversations
        .iter()
        .flat_map(|c| {
            c.sessions.iter().flat_map(move |s| {
                s.turns.iter().map(move |t| {
                    (
                        (c.conv_id.as_str(), t.turn_id.as_str()),
                        s.session_id.as_str(),
                    )
                })
            })
        })
        .collect();
    let mut overall = MetricMean::default();
    let mut per_cat: HashMap<String, MetricMean> = HashMap::new();
    let mut questions = Vec::new();
    let mut skipped = 0;
    for QuestionHits {
        qi,
        hits,
        fitted,
        auto,
    } in &run.questions
    {
        let Some(q) = ds.questions.get(*qi) else {
            continue;
        };
        let evidence = evidence_for(q, unit, &turn_session);
        let ranked_of = |hits: &[HitUnits]| -> Vec<RankedHit> {
            hits.iter()
                .map(|h| RankedHit {
                    units: match unit {
                        EvalUnit::Session => h.sessions.clone(),
                        EvalUnit::Turn => h.turns.clone(),
                    },
                    tokens: h.tokens,
                })
                .collect()
        };
        let ranked = ranked_of(hits);
        let budgets = &opts.metrics.token_budgets;
        let mut extra: Vec<(String, f64)> = budgets
            .iter()
            .zip(fitted)
            .map(|(&b, f)| {
                (
                    format!("fit@{b}tok"),
                    budget_recall(&ranked_of(f), &evidence, b),
                )
            })
            .collect();
        for (i, shown) in auto.iter().enumerate() {
            let shown = ranked_of(shown);
            let tokens: usize = shown.iter().map(|h| h.tokens).sum();
            let (name, budget) = match budgets.get(i) {
                Some(&b) => (format!("{b}tok"), b),
                None => ("whole".to_string(), usize::MAX),
            };
            extra.push((
                format!("auto@{name}"),
                budget_recall(&shown, &evidence, budget),
            ));
            extra.push((format!("auto_tokens@{name}"), tokens as f64));
        }
        let Some(m) = opts.metrics.score_with(&ranked, &evidence, extra) else {
            skipped += 1;
            continue;
        };
        overall.add(&m);
        let cat = q.category.clone().unwrap_or_else(|| "none".to_string());
        per_cat.entry(cat).or_default().add(&m);
        let ranking = unit_ranking(&ranked);
        let evidence_ranks: Vec<Option<usize>> = evidence
            .iter()
            .map(|e| ranking.iter().position(|u| u == e).map(|p| p + 1))
            .collect();
        questions.push(QuestionReport {
            qid: q.id_or(*qi),
            conv_id: q.conv_id.clone(),
            category: q.category.clone(),
            first_evidence_rank: evidence_ranks.iter().flatten().min().copied(),
            evidence_ranks,
            top_units: ranking.into_iter().take(10).collect(),
            evidence,
            metrics: m,
        });
    }
    let mut cats: Vec<CategoryReport> = per_cat
        .into_iter()
        .map(|(category, mean)| CategoryReport {
            label: names.get(&category).cloned(),
            questions: mean.count(),
            metrics: mean.mean(),
            category,
        })
        .collect();
    // Numeric categories in numeric order, then the others alphabetically.
    cats.sort_by(
        |a, b| match (a.category.parse::<i64>(), b.category.parse::<i64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            (Ok(_), Err(_)) => std::cmp::Ordering::Less,
            (Err(_), Ok(_)) => std::cmp::Ordering::Greater,
            (Err(_), Err(_)) => a.category.cmp(&b.category),
        },
    );
    let mut all_warnings = warnings.to_vec();
    all_warnings.extend(run.warnings.iter().cloned());
    // What the index did: used vectors on every question (hybrid, or
    // vector alone when the keyword side weighs nothing), on none
    // (keyword), or on some only (mixed).
    let seen = |m| run.modes_seen.contains(&m);
    let index_mode = match (
        seen(SearchMode::Keyword),
        seen(SearchMode::Hybrid),
        seen(SearchMode::Vector),
    ) {
        (true, false, false) | (false, false, false) => "keyword",
        (true, _, _) => "mixed",
        (false, true, _) => "hybrid",
        (false, false, true) => "vector",
    };
    if mode.needs_embedder() && matches!(index_mode, "keyword" | "mixed") {
        all_warnings.push(format!(
            "{} mode was asked but the index answered in {index_mode} mode: vectors were not (all) used",
            mode.as_str()
        ));
    }
    let settings = opts.settings_for(mode);
    EvalReport {
        dataset: match (&ds.dataset, &ds.language) {
            (Some(d), Some(l)) => Some(format!("{d} ({l})")),
            (Some(d), None) => Some(d.clone()),
            (None, Some(l)) => Some(format!("({l})")),
            (None, None) => None,
        },
        unit,
        mode,
        index_mode: index_mode.to_string(),
        settings: EvalSettings {
            layout: opts.layout,
            queries: opts.queries.as_str(),
            query_from: if opts.engine_queries {
                "conversation"
            } else {
                "text"
            },
            max_results: opts.max_results,
            min_score: opts.min_score,
            limit_conversations: opts.limit_conversations,
            embedder: if mode.needs_embedder() {
                opts.embedder.as_ref().map(|e| {
                    let id = e.id();
                    format!("{}/{}", id.provider, id.model)
                })
            } else {
                None
            },
            token_estimate: TOKEN_ESTIMATE,
            index: serde_json::to_value(&settings).unwrap_or_default(),
        },
        overall: overall.mean(),
        per_category: cats,
        counts: EvalCounts {
            questions_scored: overall.count(),
            questions_skipped_no_evidence: skipped,
            ..counts.clone()
        },
        timings: EvalTimings {
            write_seconds,
            index_seconds: run.index_seconds,
            search_seconds: run.search_seconds,
            search_ms_mean: if run.searches > 0 {
                run.search_seconds * 1000.0 / run.searches as f64
            } else {
                0.0
            },
            search_ms_p50: percentile(&run.latencies_ms, 0.50),
            search_ms_p95: percentile(&run.latencies_ms, 0.95),
        },
        warnings: all_warnings,
        questions,
    }
}

/// The `q` quantile (nearest rank) of `values`; 0 when there are none.
fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// `other`'s hits fused into `resp` by reciprocal rank (k = 60): a hit
/// both lists hold gains, one only one holds keeps its place; at most
/// `max` hits.
fn fuse_responses(resp: &mut SearchResponse, other: SearchResponse, max: usize) {
    const K: f32 = 60.0;
    let mut fused: Vec<(mnemo_index::SearchHit, f32)> = Vec::new();
    for (list, hits) in [std::mem::take(&mut resp.results), other.results]
        .into_iter()
        .enumerate()
    {
        for (rank, hit) in hits.into_iter().enumerate() {
            let gain = 1.0 / (K + rank as f32 + 1.0);
            match fused.iter_mut().find(|(h, _)| h.citation == hit.citation) {
                Some((_, score)) => *score += gain,
                // The first list wins ties: it is the query as asked.
                None => fused.push((hit, gain + if list == 0 { 1e-6 } else { 0.0 })),
            }
        }
    }
    fused.sort_by(|a, b| b.1.total_cmp(&a.1));
    resp.results = fused.into_iter().take(max).map(|(h, _)| h).collect();
}
