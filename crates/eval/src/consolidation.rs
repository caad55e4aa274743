//! `mnemo eval consolidation`: what survives when a chat model distils a
//! conversation into long-term memory.
//!
//! Each conversation of a benchmark file (a sample: the first N
//! conversations, the first M sessions of each) is replayed into a fresh
//! workspace one session at a time, and each session is closed the way an
//! agent ends one (`Engine::new_session`, `/new`): everything past the
//! cursor is consolidated with the forced tool call of the configured
//! consolidation mode, by the model given, and the session note is
//! written. Every round is timed and classified: a valid forced call, a
//! call that needed the provider's `auto` fallback, or a failure.
//!
//! Retention is then scored per question whose evidence lies in the
//! replayed sessions (adversarial questions, category 5, have no answer in
//! the text and are left out): the question is searched with the normal
//! `memory_search` and the answer counts as kept when the top hits hold at
//! least three fifths of its words ([`answer_found`]). Three memories are
//! searched alike:
//! - **memory**: what consolidation wrote (`MEMORY.md`, the history, the
//!   facts and notes: the `memory` source only);
//! - **transcript**: the raw session logs (the `sessions` source), the
//!   upper bound of a lossless record;
//! - **raw archive**: what mnemo writes during a model outage, made by the
//!   real fallback: the same replay consolidated against a provider that
//!   cannot be reached, with `consolidation_max_failures = 1`, so each
//!   session is archived raw into the history.
//!
//! The word match is strict: a model that rewrites "7 May 2023" as
//! "2023-05-07" loses that answer here, so the memory figure is a lower
//! bound.
//!
//! A file none of whose questions carries a reference answer (MemoryBank)
//! is scored on scripted questions instead ([`crate::consolidation_script`]):
//! statements with known answers are said by the user in each
//! conversation, in its language, and each is asked about; the three
//! memories are searched for them alike, and the report says so
//! (`scripted`).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use mnemo_core::{Config, Embedder, Message, Workspace};
use mnemo_engine::{Engine, EngineEvent};
use mnemo_index::{is_cjk, IndexSettings, MemoryIndex, SearchRequest, Source};
use mnemo_llm::ChatModel;
use mnemo_store::SessionStore;
use serde::Serialize;

use crate::dataset::{Conversation, Dataset, Question};
use crate::error::{EvalError, Result};
use crate::replay::{check_keep, scratch, session_key, session_messages};

/// What to run.
#[derive(Clone)]
pub struct ConsolidationOptions {
    /// The benchmark file.
    pub dataset: PathBuf,
    /// Only the first N conversations.
    pub limit_conversations: Option<usize>,
    /// Only the first N sessions of each conversation.
    pub limit_sessions: Option<usize>,
    /// Hits read per question.
    pub top_k: usize,
    /// The workspace configuration the engine and the index are built
    /// with (`[engine]`, `[memory]`, `[session]`, `[index]`, `[search]`).
    pub config: Config,
    /// Embeds the memories for search; keyword-only without one.
    pub embedder: Option<Arc<dyn Embedder>>,
    /// Skip the raw-archive baseline (it costs no model calls, only time).
    pub skip_raw_archive: bool,
    /// Keep each conversation's workspaces under this folder
    /// (`<conv_id>/memory`, `<conv_id>/raw-archive`) instead of temporary
    /// ones, to read what was written. It must not exist or be empty.
    pub keep: Option<PathBuf>,
}

impl ConsolidationOptions {
    /// Defaults: every conversation and session, 5 hits, the default
    /// configuration, keyword-only search.
    pub fn new(dataset: impl Into<PathBuf>) -> Self {
        ConsolidationOptions {
            dataset: dataset.into(),
            limit_conversations: None,
            limit_sessions: None,
            top_k: 5,
            config: Config::default(),
            embedder: None,
            skip_raw_archive: false,
            keep: None,
        }
    }
}

/// Where a run is, for a progress bar.
#[derive(Debug, Clone)]
pub struct ConsolidationProgress {
    /// Sessions consolidated so far, over all conversations.
    pub done: usize,
    /// Sessions to consolidate.
    pub total: usize,
    /// The conversation and session being consolidated.
    pub at: String,
}

/// Kept answers over asked questions in one memory.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Retention {
    /// Questions whose answer the top hits hold.
    pub kept: usize,
    /// Questions asked.
    pub asked: usize,
}

impl Retention {
    /// The kept fraction (0 when nothing was asked).
    pub fn rate(&self) -> f64 {
        if self.asked == 0 {
            0.0
        } else {
            self.kept as f64 / self.asked as f64
        }
    }
}

/// Where one question's answer was found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct QuestionOutcome {
    /// The conversation.
    pub conv_id: String,
    /// The question as asked.
    pub question: String,
    /// The reference answer.
    pub answer: String,
    /// Kept in what consolidation wrote.
    pub memory: bool,
    /// Kept in the raw session logs.
    pub transcript: bool,
    /// Kept in the raw archive (absent when skipped).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_archive: Option<bool>,
}

/// The figures of one run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConsolidationReport {
    /// `provider/model` of the consolidating model.
    pub model: String,
    /// Conversations replayed.
    pub conversations: usize,
    /// Sessions replayed and consolidated (one round each).
    pub sessions: usize,
    /// Rounds the model finished with a valid forced tool call.
    pub valid_calls: usize,
    /// Rounds that needed the provider's `auto` tool choice.
    pub auto_fallbacks: usize,
    /// Rounds that failed (the cursor stayed; the messages are kept).
    pub failed: usize,
    /// Seconds of each round.
    pub round_seconds: Vec<f64>,
    /// Bytes of Markdown under the workspace's memory after the run.
    pub memory_bytes: u64,
    /// Retention in what consolidation wrote.
    pub memory: Retention,
    /// Retention in the raw session logs.
    pub transcript: Retention,
    /// Retention in the raw archive an outage leaves (absent when skipped).
    pub raw_archive: Option<Retention>,
    /// Why rounds failed, one line each.
    pub errors: Vec<String>,
    /// Each scored question and where its answer was found.
    pub questions: Vec<QuestionOutcome>,
    /// The questions are the scripted ones: the file's carry no reference
    /// answers (see the module docs).
    pub scripted: bool,
}

impl ConsolidationReport {
    /// Share of rounds with a valid forced call.
    pub fn valid_rate(&self) -> f64 {
        if self.sessions == 0 {
            0.0
        } else {
            self.valid_calls as f64 / self.sessions as f64
        }
    }

    /// Median seconds per round.
    pub fn median_seconds(&self) -> f64 {
        let mut s = self.round_seconds.clone();
        s.sort_by(f64::total_cmp);
        match s.len() {
            0 => 0.0,
            n if n % 2 == 1 => s[n / 2],
            n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
        }
    }
}

/// Runs the evaluation with `model` consolidating; `progress` hears of
/// every round.
pub async fn run_consolidation_eval(
    opts: &ConsolidationOptions,
    model: Arc<dyn ChatModel>,
    progress: &(dyn Fn(&ConsolidationProgress) + Sync),
) -> Result<ConsolidationReport> {
    if opts.top_k == 0 {
        return Err(EvalError::Options("top_k must be at least 1".into()));
    }
    let ds = Dataset::load(&opts.dataset)?;
    check_keep(opts.keep.as_deref())?;
    let convs: Vec<&Conversation> = ds
        .conversations
        .iter()
        .take(opts.limit_conversations.unwrap_or(usize::MAX))
        .collect();
    let per_conv = opts.limit_sessions.unwrap_or(usize::MAX);
    let total: usize = convs.iter().map(|c| c.sessions.len().min(per_conv)).sum();
    let info = model.info();
    // A file whose questions carry no reference answer is scored on
    // scripted ones (see the module docs).
    let scripted = !ds
        .questions
        .iter()
        .any(|q| answer_of(q).is_some_and(|a| !words(&a).is_empty()));
    let mut report = ConsolidationReport {
        model: format!("{}/{}", info.provider, info.model),
        conversations: convs.len(),
        scripted,
        ..Default::default()
    };
    let outage = if opts.skip_raw_archive {
        None
    } else {
        Some(outage_model()?)
    };
    let mut raw = Retention::default();
    let mut done = 0;
    for conv in convs {
        let sessions: Vec<_> = conv.sessions.iter().take(per_conv).collect();
        let replayed: HashSet<&str> = sessions.iter().map(|s| s.session_id.as_str()).collect();
        let (said, own): (Vec<Vec<Message>>, Vec<Question>) = if scripted {
            let script = crate::consolidation_script::script_for(ds.language.as_deref(), conv);
            crate::consolidation_script::apply(conv, &sessions, script)
        } else {
            let said = sessions.iter().map(|s| session_messages(conv, s)).collect();
            (said, Vec::new())
        };
        let asked: Vec<&Question> = if scripted {
            own.iter().collect()
        } else {
            ds.questions
                .iter()
                .filter(|q| q.conv_id == conv.conv_id)
                .collect()
        };
        let questions: Vec<(&Question, String)> = asked
            .into_iter()
            .filter_map(|q| answerable(q, &replayed).map(|a| (q, a)))
            .collect();

        let (_tmp, ws) = scratch(opts.keep.as_deref(), &conv.conv_id, "memory")?;
        let engine = Engine::new(&ws, &opts.config, model.clone()).map_err(engine_err)?;
        for (s, messages) in sessions.iter().zip(&said) {
            progress(&ConsolidationProgress {
                done,
                total,
                at: format!("{} {}", conv.conv_id, s.session_id),
            });
            let key = session_key(&conv.conv_id, &s.session_id);
            append(&ws, &opts.config, &key, messages)?;
            let t = Instant::now();
            let outcome = engine.new_session(&key).await.map(|r| r.events);
            report.round_seconds.push(t.elapsed().as_secs_f64());
            report.sessions += 1;
            match outcome {
                Ok(events) => {
                    let round = events.iter().find_map(|e| match e {
                        EngineEvent::Consolidated(r) => Some(r),
                        _ => None,
                    });
                    match round {
                        Some(r) if !r.raw => {
                            report.valid_calls += 1;
                            report.auto_fallbacks += usize::from(r.fell_back_to_auto);
                        }
                        // Archived raw: the model failed its last allowed run.
                        Some(_) => report.failed += 1,
                        // Nothing past the cursor to consolidate.
                        None => report.sessions -= 1,
                    }
                }
                Err(e) => {
                    report.failed += 1;
                    report
                        .errors
                        .push(format!("{} {}: {e}", conv.conv_id, s.session_id));
                }
            }
            done += 1;
        }
        report.memory_bytes +=
            markdown_bytes(&ws.root().join("memory")) + file_len(&ws.root().join("MEMORY.md"));
        let index = index_of(&ws, opts)?;
        let memory = score(&index, &questions, Source::Memory, opts.top_k)?;
        let transcript = score(&index, &questions, Source::Sessions, opts.top_k)?;
        let first = report.questions.len();
        for (((q, answer), memory), transcript) in questions.iter().zip(memory).zip(transcript) {
            add(&mut report.memory, memory);
            add(&mut report.transcript, transcript);
            report.questions.push(QuestionOutcome {
                conv_id: conv.conv_id.clone(),
                question: q.question.clone(),
                answer: answer.clone(),
                memory,
                transcript,
                raw_archive: None,
            });
        }

        if let Some(outage) = &outage {
            let (_tmp, ws) = scratch(opts.keep.as_deref(), &conv.conv_id, "raw-archive")?;
            let mut config = opts.config.clone();
            config.set("engine.consolidation_max_failures", "1");
            for (s, messages) in sessions.iter().zip(&said) {
                let key = session_key(&conv.conv_id, &s.session_id);
                append(&ws, &config, &key, messages)?;
                // An engine per session, as one CLI run each: one engine's
                // breaker would stop trying after the first failure and
                // leave the later sessions in their logs, unarchived.
                let engine = Engine::new(&ws, &config, outage.clone()).map_err(engine_err)?;
                if let Err(e) = engine.new_session(&key).await {
                    return Err(EvalError::Options(format!(
                        "the raw archive of {key} was not written: {e}"
                    )));
                }
            }
            let index = index_of(&ws, opts)?;
            let kept = score(&index, &questions, Source::Memory, opts.top_k)?;
            for (q, kept) in report.questions[first..].iter_mut().zip(kept) {
                add(&mut raw, kept);
                q.raw_archive = Some(kept);
            }
        }
    }
    progress(&ConsolidationProgress {
        done,
        total,
        at: String::new(),
    });
    report.raw_archive = outage.map(|_| raw);
    Ok(report)
}

/// The answer of a question that can be scored here: an answer in words,
/// not adversarial, every evidence session replayed.
fn answerable(q: &Question, replayed: &HashSet<&str>) -> Option<String> {
    let scored = q.category.as_deref() != Some("5")
        && !q.evidence_sessions.is_empty()
        && q.evidence_sessions
            .iter()
            .all(|s| replayed.contains(s.as_str()));
    answer_of(q).filter(|a| scored && !words(a).is_empty())
}

/// The reference answer as text (LoCoMo has numbers among its answers).
fn answer_of(q: &Question) -> Option<String> {
    match &q.answer {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The lower-cased words of `text` that carry meaning (no stop words). A
/// run of CJK characters, written without spaces, gives its overlapping
/// character pairs (a lone character itself), as the index does.
fn words(text: &str) -> Vec<String> {
    const STOP: &[&str] = &[
        "a", "an", "the", "and", "or", "of", "to", "in", "on", "at", "for", "with", "is", "was",
        "it", "her", "his", "she", "he", "they", "their", "by", "as", "from",
    ];
    let mut out = Vec::new();
    for token in text.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = token.chars().collect();
        for run in chars.chunk_by(|a, b| is_cjk(*a) == is_cjk(*b)) {
            if !is_cjk(run[0]) {
                out.push(run.iter().collect::<String>().to_lowercase());
            } else if run.len() == 1 {
                out.push(run[0].to_string());
            } else {
                out.extend(run.windows(2).map(|p| p.iter().collect::<String>()));
            }
        }
    }
    out.retain(|w| !w.is_empty() && !STOP.contains(&w.as_str()));
    out
}

/// Whether `texts` hold at least three fifths of the answer's words (all of
/// a one- or two-word answer).
pub fn answer_found(answer: &str, texts: &[&str]) -> bool {
    let want = words(answer);
    if want.is_empty() {
        return false;
    }
    let have: HashSet<String> = texts.iter().flat_map(|t| words(t)).collect();
    // CJK pieces are looked for as they are written, which also finds a
    // one-character answer inside a longer run.
    let kept = want
        .iter()
        .filter(|w| {
            have.contains(*w) || (w.chars().any(is_cjk) && texts.iter().any(|t| t.contains(*w)))
        })
        .count();
    kept * 5 >= want.len() * 3
}

/// Searches every question in one source: whether the top hits keep its
/// answer.
fn score(
    index: &MemoryIndex,
    questions: &[(&Question, String)],
    source: Source,
    top_k: usize,
) -> Result<Vec<bool>> {
    questions
        .iter()
        .map(|(q, answer)| {
            let mut req = SearchRequest::new(q.question.clone()).max_results(top_k);
            req.sources = Some(vec![source]);
            req.min_score = Some(0.0);
            let resp = index.search(&req).map_err(EvalError::Index)?;
            let texts: Vec<String> = resp.results.iter().map(|h| hit_text(index, h)).collect();
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            Ok(answer_found(answer, &texts))
        })
        .collect()
}

/// A hit's whole text (its snippet is cut): the lines it cites.
fn hit_text(index: &MemoryIndex, h: &mnemo_index::SearchHit) -> String {
    index
        .get(
            &h.path,
            Some(h.start_line),
            Some(h.end_line - h.start_line + 1),
        )
        .map(|g| g.text)
        .unwrap_or_else(|_| h.snippet.clone())
}

fn add(total: &mut Retention, kept: bool) {
    total.kept += usize::from(kept);
    total.asked += 1;
}

/// The index of a scratch workspace, synced.
fn index_of(ws: &Workspace, opts: &ConsolidationOptions) -> Result<MemoryIndex> {
    let settings = IndexSettings::from_config(&opts.config).map_err(EvalError::Index)?;
    let index =
        mnemo_index_sqlite::open(ws, settings, opts.embedder.clone()).map_err(EvalError::Index)?;
    index.sync(&|_| {}).map_err(EvalError::Index)?;
    Ok(index)
}

/// Appends one session's messages to its log.
fn append(ws: &Workspace, config: &Config, key: &str, messages: &[Message]) -> Result<()> {
    let store = SessionStore::from_config(ws, config)
        .map_err(|e| EvalError::Options(format!("the [session] settings: {e}")))?;
    let mut log = store.open(key).map_err(EvalError::Store)?;
    log.append(messages).map_err(EvalError::Store)?;
    log.sync().map_err(EvalError::Store)
}

/// An OpenAI-compatible provider on a loopback port nothing listens on,
/// without retries: every call fails at once, as in an outage.
fn outage_model() -> Result<Arc<dyn ChatModel>> {
    let mut cfg = mnemo_llm::ProviderConfig::openai("http://127.0.0.1:9/v1", "unreachable");
    cfg.max_retries = 0;
    cfg.timeout_secs = 5.0;
    let chat = mnemo_llm::OpenAiChat::new(&cfg)
        .map_err(|e| EvalError::Options(format!("the outage provider: {e}")))?;
    Ok(Arc::new(chat))
}

fn engine_err(e: mnemo_engine::Error) -> EvalError {
    EvalError::Options(format!("the engine: {e}"))
}

fn file_len(p: &std::path::Path) -> u64 {
    std::fs::metadata(p).map(|m| m.len()).unwrap_or(0)
}

/// Bytes of the Markdown files under `dir`, recursively.
fn markdown_bytes(dir: &std::path::Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                markdown_bytes(&p)
            } else if p.extension().is_some_and(|x| x == "md") {
                file_len(&p)
            } else {
                0
            }
        })
        .sum()
}

/// The report as text: one table.
pub fn render_consolidation(r: &ConsolidationReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "consolidation with {}: {} conversations, {} sessions\n",
        r.model, r.conversations, r.sessions
    ));
    out.push_str(&format!(
        "valid forced calls: {}/{} ({:.3}), auto fallbacks {}, failed {}\n",
        r.valid_calls,
        r.sessions,
        r.valid_rate(),
        r.auto_fallbacks,
        r.failed
    ));
    let total: f64 = r.round_seconds.iter().sum();
    out.push_str(&format!(
        "seconds per consolidation: median {:.1}, total {:.1}\n",
        r.median_seconds(),
        total
    ));
    out.push_str(&format!("memory written: {} bytes\n", r.memory_bytes));
    if r.scripted {
        out.push_str(&format!(
            "questions: {} scripted (the file's questions carry no reference answers, so the user said facts with known answers in each conversation and each is asked about)\n",
            r.memory.asked
        ));
    }
    out.push_str("retention (answer in the top hits of the question's search):\n");
    let row = |name: &str, x: &Retention| {
        format!("  {name:<12} {:.3} ({}/{})\n", x.rate(), x.kept, x.asked)
    };
    out.push_str(&row("memory", &r.memory));
    out.push_str(&row("transcript", &r.transcript));
    if let Some(raw) = &r.raw_archive {
        out.push_str(&row("raw archive", raw));
        let lost: Vec<&QuestionOutcome> = r
            .questions
            .iter()
            .filter(|q| q.raw_archive == Some(true) && !q.memory)
            .collect();
        if !lost.is_empty() {
            out.push_str(&format!(
                "kept by the raw archive, not by the memory ({}):\n",
                lost.len()
            ));
            for q in lost {
                out.push_str(&format!(
                    "  {}: {} -> {}\n",
                    q.conv_id, q.question, q.answer
                ));
            }
        }
    }
    for e in &r.errors {
        out.push_str(&format!("failed: {e}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_found_by_their_words() {
        assert!(answer_found("7 May 2023", &["She went on 7 May, 2023."]));
        assert!(answer_found("7 May 2023", &["in May 2023"]));
        assert!(!answer_found("7 May 2023", &["on 2023-05-07"]));
        assert!(answer_found(
            "Adoption agencies",
            &["she", "researched adoption agencies"]
        ));
        assert!(!answer_found("Adoption agencies", &["adoption papers"]));
        assert!(!answer_found("the", &["the"]));
        // CJK is matched by character pairs, not as one long "word".
        assert!(answer_found("北京大学", &["他去年考上了北京大学。"]));
        assert!(answer_found("喜欢游泳", &["用户说他很喜欢游泳和跑步"]));
        assert!(!answer_found("北京大学", &["他在北方上大学"]));
        assert!(answer_found("猫", &["我的猫叫米索"]));
        assert!(answer_found("猫叫Miso", &["我的猫叫 miso。"]));
    }
}
