//! The operations behind every tool and endpoint (search, get, write, forget,
//! session append/history/context, consolidation, compaction), shared by the
//! MCP server and the HTTP API so both surfaces behave the same. The
//! workspace parts are synchronous (SQLite, local model, files): every
//! operation runs on tokio's blocking pool.

use std::sync::{Arc, OnceLock};

use chrono::Utc;
use mnemo::Mnemo;
use mnemo_core::Message;
use mnemo_engine::{Engine, Passage, RerankOutcome};
use mnemo_index::{GetResponse, SearchHit, SearchRequest, SearchResponse};
use mnemo_llm::{BoxFuture, ChatModel, ChatRequest, ChatResponse, LlmError, ModelInfo};
use mnemo_store::{FrontMatter, MemoryType, SaveMode};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{Error, Result};

/// Arguments of `memory_search`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// Maximum hits (default `[search] max_results`).
    #[serde(default, alias = "maxResults")]
    pub max_results: Option<usize>,
    /// Minimum score (default `[search] min_score`).
    #[serde(default, alias = "minScore")]
    pub min_score: Option<f32>,
}

/// Arguments of `memory_get`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GetArgs {
    /// Workspace-relative path.
    pub path: String,
    /// First line, 1-based.
    #[serde(default)]
    pub from: Option<usize>,
    /// Number of lines.
    #[serde(default)]
    pub lines: Option<usize>,
}

/// Arguments of `memory_write`, by mode.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum WriteArgs {
    /// Append lines to today's daily log.
    Daily {
        /// The fact(s), one per line.
        text: String,
    },
    /// Save a typed memory file and its MEMORY.md index line.
    Typed {
        /// Short name (also the file name). A name already taken is refused
        /// unless `replace` is set.
        name: String,
        /// One specific line saying what it holds.
        description: String,
        /// user, feedback, project or reference.
        #[serde(rename = "type")]
        kind: String,
        /// The memory's body.
        body: String,
        /// Update the memory of this name if there is one.
        #[serde(default)]
        replace: bool,
    },
    /// Replace (or add) one `## heading` section of MEMORY.md.
    MemorySection {
        /// The section's heading, without `## `.
        heading: String,
        /// The section's new body.
        body: String,
    },
}

/// Arguments of an agent turn.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TurnArgs {
    /// The user's message.
    pub message: String,
    /// Model calls at most (default 8, at most 32).
    #[serde(default)]
    pub max_iterations: Option<usize>,
    /// Run the recall side query first (default true).
    #[serde(default)]
    pub recall: Option<bool>,
}

/// Arguments of `memory_forget`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ForgetArgs {
    /// Name (or `memory/…md` path) of the typed memory; nothing else is
    /// ever removed.
    pub name: String,
}

/// Arguments of `session_append`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AppendArgs {
    /// Session key.
    pub key: String,
    /// Messages in the OpenAI shape (`role`, `content`, …).
    pub messages: Vec<Message>,
}

/// Arguments of `session_context`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ContextArgs {
    /// Session key.
    pub key: String,
    /// The user's next message, if any.
    #[serde(default)]
    pub message: Option<String>,
}

/// The engine, or why there is none.
enum EngineSlot {
    /// With a configured chat model: everything works.
    Ready(Arc<Engine>),
    /// Without a model: the context builder works (no recall side query),
    /// consolidation and compaction are refused with this reason.
    Offline(Arc<Engine>, String),
}

/// One opened workspace plus what the servers add on top: the engine. The
/// memory store serialises its own edits (across processes too).
pub struct Backend {
    mnemo: Arc<Mnemo>,
    engine: OnceLock<std::result::Result<EngineSlot, String>>,
    search_permits: tokio::sync::Semaphore,
    /// `[engine] rerank`, read once: a search without it never builds the
    /// engine.
    rerank: bool,
}

impl Backend {
    /// Wraps an opened workspace.
    pub fn new(mnemo: Arc<Mnemo>) -> Arc<Self> {
        // Searches are CPU-bound (scoring, vector scan): running more at once
        // than there are cores only makes every one of them slower.
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        let rerank = mnemo
            .config()
            .section::<mnemo_engine::EngineSettings>("engine")
            .is_ok_and(|s| s.rerank);
        Arc::new(Backend {
            mnemo,
            rerank,
            engine: OnceLock::new(),
            search_permits: tokio::sync::Semaphore::new(cores),
        })
    }

    /// The workspace handle.
    pub fn mnemo(&self) -> &Arc<Mnemo> {
        &self.mnemo
    }

    /// `memory_search`.
    pub async fn search(self: &Arc<Self>, args: SearchArgs) -> Result<Value> {
        if args.query.trim().is_empty() {
            return Err(Error::Invalid(
                "`query` is empty: give a few words to search for".into(),
            ));
        }
        if let Some(s) = args.min_score {
            if !(0.0..=1.0).contains(&s) {
                return Err(Error::Invalid(format!(
                    "`min_score` is {s}: give a number between 0 and 1"
                )));
            }
        }
        if args.max_results == Some(0) {
            return Err(Error::Invalid(
                "`max_results` is 0: ask for at least 1 result".into(),
            ));
        }
        let _permit = self
            .search_permits
            .acquire()
            .await
            .map_err(|e| Error::Internal(format!("search queue closed: {e}")))?;
        // `[engine] rerank`: the side model orders a wider set of hits.
        let rerank = if self.rerank {
            Some(match self.engine() {
                Ok(EngineSlot::Ready(e)) => Ok(e.clone()),
                Ok(EngineSlot::Offline(_, why)) => Err(why.clone()),
                Err(e) => Err(e.to_string()),
            })
        } else {
            None
        };
        let me = self.clone();
        let query = args.query.clone();
        let wider = rerank
            .as_ref()
            .and_then(|r| r.as_ref().ok())
            .map(|e| e.settings().rerank_candidates);
        let (mut resp, wanted): (SearchResponse, usize) = blocking(move || {
            let index = me.mnemo.index()?;
            let wanted = args
                .max_results
                .unwrap_or(index.settings().search.max_results)
                .min(100);
            let mut req = SearchRequest::new(args.query);
            req.max_results = Some(wider.map_or(wanted, |w| w.clamp(wanted, 100)));
            req.min_score = args.min_score;
            Ok((index.search(&req)?, wanted))
        })
        .await?;
        let reranked = match rerank {
            None => None,
            Some(Err(why)) => {
                resp.warnings
                    .push(format!("[engine] rerank is on but unused: {why}"));
                Some(false)
            }
            Some(Ok(engine)) => {
                let passages = rerank_passages(&resp, resp.results.len());
                let outcome = engine.rerank(&query, &passages).await;
                Some(apply_rerank(&mut resp, outcome))
            }
        };
        resp.results.truncate(wanted);
        let mut out = search_json(&resp);
        if let Some(r) = reranked {
            out["reranked"] = json!(r);
        }
        Ok(out)
    }

    /// `memory_get`.
    pub async fn get(self: &Arc<Self>, args: GetArgs) -> Result<GetResponse> {
        if args.from == Some(0) || args.lines == Some(0) {
            return Err(Error::Invalid("`from` and `lines` start at 1".into()));
        }
        let me = self.clone();
        blocking(move || Ok(me.mnemo.index()?.get(&args.path, args.from, args.lines)?)).await
    }

    /// `memory_write`.
    pub async fn write(self: &Arc<Self>, args: WriteArgs) -> Result<Value> {
        let me = self.clone();
        blocking(move || me.write_sync(args)).await
    }

    fn write_sync(&self, args: WriteArgs) -> Result<Value> {
        let memory = self.mnemo.memory();
        match args {
            WriteArgs::Daily { text } => {
                let out = memory.append_daily(&text, Utc::now(), true)?;
                Ok(
                    json!({"mode": "daily", "path": out.path, "written": out.written, "duplicates": out.duplicates}),
                )
            }
            WriteArgs::Typed {
                name,
                description,
                kind,
                body,
                replace,
            } => {
                let kind: MemoryType = kind.parse().map_err(Error::Invalid)?;
                if body.trim().is_empty() {
                    return Err(Error::Invalid(
                        "`body` is empty: say what to remember".into(),
                    ));
                }
                let front = FrontMatter {
                    name,
                    description,
                    kind,
                };
                let mode = if replace {
                    SaveMode::Replace
                } else {
                    SaveMode::Create
                };
                let saved = memory.save_typed(front, &body, mode)?;
                let m = &saved.memory;
                Ok(
                    json!({"mode": "typed", "path": m.path, "name": m.front.name, "type": m.front.kind.as_str(), "action": saved.action}),
                )
            }
            WriteArgs::MemorySection { heading, body } => {
                let out = memory.write_section(&heading, &body)?;
                let heading = heading.trim().trim_start_matches('#').trim();
                Ok(
                    json!({"mode": "memory_section", "path": "MEMORY.md", "heading": heading,
                          "action": if out.replaced { "replaced" } else { "added" }, "changed": out.changed}),
                )
            }
        }
    }

    /// `memory_forget`: typed memories only.
    pub async fn forget(self: &Arc<Self>, args: ForgetArgs) -> Result<Value> {
        if args.name.trim().is_empty() {
            return Err(Error::Invalid(
                "`name` is empty: give the typed memory's name".into(),
            ));
        }
        let me = self.clone();
        blocking(move || {
            let path = me.mnemo.memory().forget_typed(&args.name)?;
            Ok(json!({"removed": path}))
        })
        .await
    }

    /// `session_append`: returns the number of messages stored and the total.
    pub async fn append(self: &Arc<Self>, args: AppendArgs) -> Result<Value> {
        if args.messages.is_empty() {
            return Err(Error::Invalid(
                "`messages` is empty: send at least one message".into(),
            ));
        }
        let me = self.clone();
        blocking(move || {
            let mut log = me.mnemo.sessions().open(&args.key)?;
            let stored = log.append(&args.messages)?;
            let total = log.load()?.messages.len();
            Ok(json!({"key": args.key, "appended": stored.len(), "messages": total}))
        })
        .await
    }

    /// A session's messages: all of them, or those since the consolidation
    /// cursor replayed for a model. A missing session is not found.
    pub async fn history(self: &Arc<Self>, key: String, since_cursor: bool) -> Result<Value> {
        let me = self.clone();
        blocking(move || {
            let loaded = me.mnemo.sessions().load(&key)?;
            let messages = if since_cursor { loaded.replay() } else { loaded.messages.clone() };
            Ok(json!({
                "key": key,
                "last_consolidated": loaded.meta.last_consolidated,
                "total": loaded.messages.len(),
                "messages": messages,
                "warnings": loaded.warnings.iter().map(|w| format!("line {}: {}", w.line, w.message)).collect::<Vec<_>>(),
            }))
        })
        .await
    }

    /// Every session, newest first.
    pub async fn sessions(self: &Arc<Self>) -> Result<Value> {
        let me = self.clone();
        blocking(move || Ok(json!({"sessions": me.mnemo.sessions().list()?}))).await
    }

    /// `session_context`: the request the engine would send for the next
    /// turn (system prompt with memory, replayed history, the message).
    pub async fn context(self: &Arc<Self>, args: ContextArgs) -> Result<Value> {
        let me = self.clone();
        let key = args.key.clone();
        let exists = blocking(move || Ok(me.mnemo.sessions().exists(&key)?)).await?;
        if !exists {
            return Err(Error::NotFound(format!(
                "no session {:?}: append messages to it first (session_append)",
                args.key
            )));
        }
        let message = args.message.unwrap_or_default();
        let (engine, offline) = match self.engine()? {
            EngineSlot::Ready(e) => (e.clone(), None),
            EngineSlot::Offline(e, why) => (e.clone(), Some(why.clone())),
        };
        let report = if offline.is_none() {
            engine.build_context(&args.key, &message).await?
        } else {
            let key = args.key.clone();
            tokio::task::spawn_blocking(move || engine.build_context_with(&key, &message, &[]))
                .await
                .map_err(|e| Error::Internal(e.to_string()))??
        };
        let mut v = serde_json::to_value(&report).map_err(|e| Error::Internal(e.to_string()))?;
        if let (Some(why), Some(obj)) = (offline, v.as_object_mut()) {
            obj.insert(
                "notes".into(),
                json!([format!("no recall side query: {why}")]),
            );
        }
        Ok(v)
    }

    /// Consolidates a session now (needs a chat model).
    pub async fn consolidate(self: &Arc<Self>, key: String) -> Result<Value> {
        let engine = self.ready_engine(&key).await?;
        let events = engine.consolidate_now(&key).await?;
        Ok(json!({"key": key, "events": events}))
    }

    /// Runs the compaction pipeline on a session (needs a chat model);
    /// `focus` is what its summary should keep above all.
    pub async fn compact(
        self: &Arc<Self>,
        key: String,
        level: Option<u8>,
        focus: Option<String>,
    ) -> Result<Value> {
        if let Some(l) = level {
            if !(1..=6).contains(&l) {
                return Err(Error::Invalid(format!(
                    "`level` is {l}: give 1 to 6, or omit it to run the whole pipeline"
                )));
            }
        }
        let engine = self.ready_engine(&key).await?;
        let events = engine
            .compact_with_focus(&key, level, focus.as_deref())
            .await?;
        Ok(json!({"key": key, "events": events}))
    }

    /// One agent turn: `message` from the user, answered by the chat model
    /// with the memory tools run on this backend (as `mnemo run` does). A
    /// new session key starts a conversation.
    pub async fn turn(self: &Arc<Self>, key: String, args: TurnArgs) -> Result<Value> {
        if args.message.trim().is_empty() {
            return Err(Error::Invalid(
                "`message` is empty: give the user's message".into(),
            ));
        }
        let engine = match self.engine()? {
            EngineSlot::Ready(e) => e.clone(),
            EngineSlot::Offline(_, why) => return Err(Error::NotConfigured(why.clone())),
        };
        let defaults = mnemo_engine::TurnOptions::default();
        let options = mnemo_engine::TurnOptions {
            max_iterations: args
                .max_iterations
                .unwrap_or(defaults.max_iterations)
                .clamp(1, 32),
            recall: args.recall.unwrap_or(defaults.recall),
        };
        let tools = crate::BackendTools(self.clone());
        let turn = engine
            .run_turn(&key, &args.message, &tools, &options, &|_| {})
            .await?;
        serde_json::to_value(turn).map_err(|e| Error::Internal(e.to_string()))
    }

    async fn ready_engine(self: &Arc<Self>, key: &str) -> Result<Arc<Engine>> {
        let engine = match self.engine()? {
            EngineSlot::Ready(e) => e.clone(),
            EngineSlot::Offline(_, why) => return Err(Error::NotConfigured(why.clone())),
        };
        let me = self.clone();
        let k = key.to_string();
        if !blocking(move || Ok(me.mnemo.sessions().exists(&k)?)).await? {
            return Err(Error::NotFound(format!(
                "no session {key:?}: append messages to it first"
            )));
        }
        Ok(engine)
    }

    /// The index as the engine's recall searches it.
    pub fn memory_search(&self) -> Arc<dyn mnemo_engine::MemorySearch> {
        Arc::new(IndexMemorySearch(self.mnemo.clone()))
    }

    fn engine(&self) -> Result<&EngineSlot> {
        let slot = self.engine.get_or_init(|| {
            let ws = self.mnemo.workspace();
            let config = self.mnemo.config();
            let env = |k: &str| std::env::var(k).ok();
            match mnemo_llm::ProviderConfig::resolve(config, None, &Default::default(), &env)
                .and_then(|p| mnemo::build_chat_model(&p, &mut |_| {}))
            {
                Ok(model) => Engine::new(ws, config, model)
                    .map(|e| EngineSlot::Ready(Arc::new(e.with_memory_search(self.memory_search())))),
                Err(e) => {
                    let why = format!(
                        "no chat model is configured ({e}); set the [provider] section of mnemo.toml \
                         (kind = \"local\" runs a model inside mnemo, offline and without a key; or kind, \
                         base_url, model, api_key_env for a remote one) to enable consolidation, compaction and recall"
                    );
                    let model: Arc<dyn ChatModel> = Arc::new(NoModel::new(why.clone()));
                    Engine::new(ws, config, model).map(|e| {
                        EngineSlot::Offline(Arc::new(e.with_memory_search(self.memory_search())), why)
                    })
                }
            }
            .map_err(|e| e.to_string())
        });
        slot.as_ref()
            .map_err(|e| Error::Invalid(format!("bad [engine] configuration: {e}")))
    }
}

/// The workspace's index as the recall side query's memory search: Markdown
/// memory only (the files recall can put into the prompt), the workspace's
/// minimum score.
pub struct IndexMemorySearch(pub Arc<Mnemo>);

impl mnemo_engine::MemorySearch for IndexMemorySearch {
    fn memory_files(&self, query: &str, limit: usize) -> std::result::Result<Vec<String>, String> {
        let index = self.0.index().map_err(|e| e.to_string())?;
        let req = SearchRequest::new(query)
            .sources(&[mnemo_index::Source::Memory])
            .max_results(limit.max(1));
        Ok(index.search(&req).map_err(|e| e.to_string())?.files())
    }
}

/// Stands in for a chat model when none is configured: the context builder
/// only reads its name, and any call fails with the reason.
struct NoModel {
    info: ModelInfo,
    why: String,
}

impl NoModel {
    fn new(why: String) -> Self {
        NoModel {
            info: ModelInfo {
                provider: "none".into(),
                model: "none".into(),
                context_window: 128_000,
                max_output: 8_192,
            },
            why,
        }
    }
}

impl ChatModel for NoModel {
    fn complete(
        &self,
        _req: ChatRequest,
    ) -> BoxFuture<'_, std::result::Result<ChatResponse, LlmError>> {
        let why = self.why.clone();
        Box::pin(async move { Err(LlmError::Config(why)) })
    }

    fn info(&self) -> &ModelInfo {
        &self.info
    }
}

/// The first `n` hits as the re-rank model reads them.
pub fn rerank_passages(resp: &SearchResponse, n: usize) -> Vec<Passage> {
    resp.results
        .iter()
        .take(n)
        .map(|h| Passage {
            // The day helps the model with "when" questions.
            label: match &h.date {
                Some(d) => format!("{} ({d})", h.citation),
                None => h.citation.clone(),
            },
            text: h.snippet.clone(),
        })
        .collect()
}

/// Applies a re-rank of the first hits (see [`mnemo_engine::rerank`]):
/// the model's order first, hits past the re-ranked ones after them. On a
/// failure the index's order stays and the warnings say why. True when the
/// model's order was applied.
pub fn apply_rerank(resp: &mut SearchResponse, outcome: RerankOutcome) -> bool {
    if outcome.timed_out {
        resp.warnings.push(
            "the re-rank model did not answer in time ([engine] rerank_timeout_ms); hits are in the index's order"
                .into(),
        );
        return false;
    }
    if let Some(e) = outcome.error {
        resp.warnings.push(format!(
            "the re-rank failed ({e}); hits are in the index's order"
        ));
        return false;
    }
    let mut slots: Vec<Option<SearchHit>> = std::mem::take(&mut resp.results)
        .into_iter()
        .map(Some)
        .collect();
    let mut out: Vec<SearchHit> = outcome
        .order
        .iter()
        .filter_map(|&i| slots.get_mut(i).and_then(Option::take))
        .collect();
    out.extend(slots.into_iter().flatten());
    resp.results = out;
    true
}

/// The `memory_search` result: OpenClaw's shape in snake_case, with the
/// mode stated and a `Source: path#Lx-Ly` citation per hit.
pub fn search_json(resp: &SearchResponse) -> Value {
    let mode = match resp.mode {
        mnemo_index::SearchMode::Hybrid => "hybrid",
        mnemo_index::SearchMode::Keyword => "keyword",
    };
    let results: Vec<Value> = resp
        .results
        .iter()
        .map(|h| {
            let mut v = json!({
                "path": h.path,
                "start_line": h.start_line,
                "end_line": h.end_line,
                "score": (h.score * 10_000.0).round() / 10_000.0,
                "snippet": h.snippet,
                "source": h.source.as_str(),
                "citation": format!("Source: {}", h.citation),
            });
            if let Some(obj) = v.as_object_mut() {
                if let Some(k) = &h.session_key {
                    obj.insert("session_key".into(), json!(k));
                }
                if let Some(d) = &h.date {
                    obj.insert("date".into(), json!(d));
                }
            }
            v
        })
        .collect();
    let mut out = json!({"mode": mode, "results": results, "warnings": resp.warnings});
    if !resp.dates.is_empty() {
        out["dates"] = json!(resp.dates);
    }
    out
}

/// Runs `f` on the blocking pool.
pub async fn blocking<T, F>(f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Internal(format!("blocking task failed: {e}")))?
}

#[cfg(test)]
#[path = "ops_tests.rs"]
mod tests;
