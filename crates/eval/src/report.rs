//! The evaluation report and its two renderings: an aligned text table and
//! one JSON object.

use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::dialogue::QueryShape;
use crate::metrics::Metrics;

/// What is ranked and scored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvalUnit {
    /// Whole sessions (`evidence_sessions`).
    #[default]
    Session,
    /// Single turns (`evidence_turns`).
    Turn,
}

impl EvalUnit {
    /// `session` or `turn`.
    pub fn as_str(self) -> &'static str {
        match self {
            EvalUnit::Session => "session",
            EvalUnit::Turn => "turn",
        }
    }
}

impl std::str::FromStr for EvalUnit {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "session" | "sessions" => Ok(EvalUnit::Session),
            "turn" | "turns" => Ok(EvalUnit::Turn),
            other => Err(format!("unknown unit `{other}`: use session or turn")),
        }
    }
}

/// How a conversation is written into the workspace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// One session log per session, one message per turn: what an agent
    /// records.
    #[default]
    Sessions,
    /// One Markdown session note per session (`memory/YYYY-MM-DD-<slug>.md`),
    /// one list item per turn: what long-term memory looks like once
    /// consolidated, and what a person writes by hand. Measures Markdown
    /// chunking and search.
    Notes,
}

impl Layout {
    /// `sessions` or `notes`.
    pub fn as_str(self) -> &'static str {
        match self {
            Layout::Sessions => "sessions",
            Layout::Notes => "notes",
        }
    }

    /// What the turns were written as, for report headers.
    pub fn described(self) -> &'static str {
        match self {
            Layout::Sessions => "session logs",
            Layout::Notes => "Markdown notes",
        }
    }
}

impl std::str::FromStr for Layout {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sessions" | "session" => Ok(Layout::Sessions),
            "notes" | "markdown" => Ok(Layout::Notes),
            other => Err(format!("unknown layout `{other}`: use sessions or notes")),
        }
    }
}

/// How the index is asked.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalMode {
    /// No embedder: BM25 only, as mnemo runs without a model.
    Keyword,
    /// Vector similarity only (text weight 0).
    Vector,
    /// Vectors and BM25 fused with the configured weights.
    #[default]
    Hybrid,
}

impl RetrievalMode {
    /// `keyword`, `vector` or `hybrid`.
    pub fn as_str(self) -> &'static str {
        match self {
            RetrievalMode::Keyword => "keyword",
            RetrievalMode::Vector => "vector",
            RetrievalMode::Hybrid => "hybrid",
        }
    }

    /// True when the mode needs an embedder.
    pub fn needs_embedder(self) -> bool {
        self != RetrievalMode::Keyword
    }
}

impl std::str::FromStr for RetrievalMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "keyword" | "bm25" => Ok(RetrievalMode::Keyword),
            "vector" => Ok(RetrievalMode::Vector),
            "hybrid" => Ok(RetrievalMode::Hybrid),
            other => Err(format!(
                "unknown mode `{other}`: use keyword, vector or hybrid"
            )),
        }
    }
}

/// Scores of one category.
#[derive(Debug, Clone, Serialize)]
pub struct CategoryReport {
    /// Category as in the file (numbers as strings).
    pub category: String,
    /// Label from the file's `source.category_names`, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Questions scored.
    pub questions: usize,
    /// Mean scores.
    pub metrics: Metrics,
}

/// The outcome of one question.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionReport {
    /// Question id (generated as `<conv_id>#<n>` when the file has none).
    pub qid: String,
    /// Its conversation.
    pub conv_id: String,
    /// Its category, if any.
    pub category: Option<String>,
    /// The evidence units scored against.
    pub evidence: Vec<String>,
    /// 1-based rank of the first evidence unit in the unit ranking.
    pub first_evidence_rank: Option<usize>,
    /// 1-based rank of each evidence unit, in the order of `evidence` (`None`: not retrieved).
    pub evidence_ranks: Vec<Option<usize>>,
    /// The first ten units of the ranking.
    pub top_units: Vec<String>,
    /// Its scores.
    pub metrics: Metrics,
}

/// Counts of what was read and scored.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EvalCounts {
    /// Conversations replayed.
    pub conversations: usize,
    /// Sessions written.
    pub sessions: usize,
    /// Turns written (one message each).
    pub turns: usize,
    /// Questions asked.
    pub questions_asked: usize,
    /// Questions scored (those with evidence of the chosen unit).
    pub questions_scored: usize,
    /// Questions skipped because they have no evidence of the chosen unit.
    pub questions_skipped_no_evidence: usize,
}

/// Wall-clock times of the run (measurements, never asserted).
#[derive(Debug, Clone, Default, Serialize)]
pub struct EvalTimings {
    /// Writing the session logs, summed over conversations.
    pub write_seconds: f64,
    /// Index syncs (chunking, embedding, SQLite), summed over conversations.
    pub index_seconds: f64,
    /// Searches, summed.
    pub search_seconds: f64,
    /// Mean latency of one search in milliseconds.
    pub search_ms_mean: f64,
    /// Median latency of one question's search (with its re-rank).
    pub search_ms_p50: f64,
    /// 95th percentile of the same.
    pub search_ms_p95: f64,
}

/// The result of one evaluation (one unit, one mode).
#[derive(Debug, Clone, Serialize)]
pub struct EvalReport {
    /// `dataset` and `language` of the file, when it names them.
    pub dataset: Option<String>,
    /// The unit ranked.
    pub unit: EvalUnit,
    /// How the index was asked.
    pub mode: RetrievalMode,
    /// The mode the index reported answering in: `hybrid`, `vector`,
    /// `keyword`, or `mixed` (vectors on some questions only).
    pub index_mode: String,
    /// Settings used.
    pub settings: EvalSettings,
    /// Mean scores over all scored questions.
    pub overall: Metrics,
    /// Mean scores per category, in category order.
    #[serde(serialize_with = "categories_as_object")]
    pub per_category: Vec<CategoryReport>,
    /// Counts of what was read and scored.
    pub counts: EvalCounts,
    /// Run times.
    pub timings: EvalTimings,
    /// Anything worth knowing (questions for unknown conversations, index
    /// warnings, a mode the index could not honour).
    pub warnings: Vec<String>,
    /// Every scored question.
    pub questions: Vec<QuestionReport>,
}

/// The settings an evaluation ran with.
#[derive(Debug, Clone, Serialize)]
pub struct EvalSettings {
    /// How conversations were written.
    pub layout: Layout,
    /// The shape of the queries (`question`, `embedded`, `lead-up`).
    pub queries: &'static str,
    /// `text` (asked as written) or `conversation` (rebuilt the way the
    /// engine's recall builds its query).
    pub query_from: &'static str,
    /// Hits asked for per question.
    pub max_results: usize,
    /// Minimum score passed to search.
    pub min_score: f32,
    /// Conversation limit, if any.
    pub limit_conversations: Option<usize>,
    /// `provider/model` of the embedder, if one was used.
    pub embedder: Option<String>,
    /// How token budgets are measured.
    pub token_estimate: &'static str,
    /// The index settings as used (after the mode's weights were applied).
    pub index: Value,
}

fn categories_as_object<S: Serializer>(cats: &[CategoryReport], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(cats.len()))?;
    for c in cats {
        m.serialize_entry(&c.category, c)?;
    }
    m.end()
}

/// Preferred columns of the text table, when the report has them.
const TEXT_COLUMNS: &[(&str, &str)] = &[
    ("any@1", "any@1"),
    ("any@5", "any@5"),
    ("any@10", "any@10"),
    ("all@5", "all@5"),
    ("all@10", "all@10"),
    ("recall@5", "rec@5"),
    ("recall@10", "rec@10"),
    ("recall@50", "rec@50"),
    ("mrr", "mrr"),
    ("ndcg@10", "ndcg@10"),
    ("recall@500tok", "rec@.5kt"),
    ("recall@1000tok", "rec@1kt"),
    ("recall@2000tok", "rec@2kt"),
    ("recall@4000tok", "rec@4kt"),
    ("fit@500tok", "fit@.5kt"),
    ("fit@1000tok", "fit@1kt"),
    ("fit@2000tok", "fit@2kt"),
    ("auto@1000tok", "auto@1kt"),
    ("auto@2000tok", "auto@2kt"),
    ("auto@whole", "auto@all"),
];

fn columns(m: &Metrics) -> Vec<(String, String)> {
    let cols: Vec<(String, String)> = TEXT_COLUMNS
        .iter()
        .filter(|(n, _)| m.get(n).is_some())
        .map(|(n, h)| (n.to_string(), h.to_string()))
        .collect();
    if cols.is_empty() {
        m.iter()
            .map(|(n, _)| (n.to_string(), n.to_string()))
            .collect()
    } else {
        cols
    }
}

fn table(rows: &[(String, usize, &Metrics)], cols: &[(String, String)]) -> String {
    let label_w = rows
        .iter()
        .map(|(l, _, _)| l.chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    let mut out = format!("{:<label_w$} {:>6}", "", "n");
    for (_, h) in cols {
        out.push_str(&format!(" {:>w$}", h, w = h.len().max(5)));
    }
    out.push('\n');
    for (label, n, m) in rows {
        out.push_str(&format!("{label:<label_w$} {n:>6}"));
        for (name, h) in cols {
            let v = m.get(name).unwrap_or(f64::NAN);
            out.push_str(&format!(" {:>w$.3}", v, w = h.len().max(5)));
        }
        out.push('\n');
    }
    out
}

/// Renders a report as a header and an aligned table: overall, then each
/// category.
pub fn render_text(r: &EvalReport) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "retrieval eval{} | unit {} | mode {} (index answered {}) | {} conversations, {} turns as {}\n",
        r.dataset
            .as_deref()
            .map(|d| format!(" of {d}"))
            .unwrap_or_default(),
        r.unit.as_str(),
        r.mode.as_str(),
        r.index_mode,
        r.counts.conversations,
        r.counts.turns,
        r.settings.layout.described(),
    ));
    out.push_str(&format!(
        "{} questions scored, {} skipped (no {} evidence); max_results {}; embedder {}; tokens: {}\n",
        r.counts.questions_scored,
        r.counts.questions_skipped_no_evidence,
        r.unit.as_str(),
        r.settings.max_results,
        r.settings.embedder.as_deref().unwrap_or("none"),
        r.settings.token_estimate,
    ));
    if r.settings.queries != QueryShape::Question.as_str() {
        if let Ok(shape) = r.settings.queries.parse::<QueryShape>() {
            out.push_str(&format!("{}\n", shape.described()));
        }
    }
    if r.settings.query_from == "conversation" {
        out.push_str("each query rebuilt from its turns the way the engine's recall builds it\n");
    }
    out.push_str(&format!(
        "time: write {:.1}s, index {:.1}s, search {:.1}s ({:.1} ms/question, p50 {:.1}, p95 {:.1})\n\n",
        r.timings.write_seconds,
        r.timings.index_seconds,
        r.timings.search_seconds,
        r.timings.search_ms_mean,
        r.timings.search_ms_p50,
        r.timings.search_ms_p95
    ));
    let mut rows = vec![("overall".to_string(), r.counts.questions_scored, &r.overall)];
    for c in &r.per_category {
        let label = match &c.label {
            Some(l) => format!("{} {l}", c.category),
            None => c.category.clone(),
        };
        rows.push((label, c.questions, &c.metrics));
    }
    out.push_str(&table(&rows, &columns(&r.overall)));
    for w in &r.warnings {
        out.push_str(&format!("warning: {w}\n"));
    }
    out
}

/// Renders several runs (modes and units) side by side, overall scores only.
pub fn render_comparison(reports: &[EvalReport]) -> String {
    let Some(first) = reports.first() else {
        return String::new();
    };
    let labels: Vec<String> = reports
        .iter()
        .map(|r| format!("{} {}", r.unit.as_str(), r.mode.as_str()))
        .collect();
    let rows: Vec<(String, usize, &Metrics)> = reports
        .iter()
        .zip(labels)
        .map(|(r, l)| (l, r.counts.questions_scored, &r.overall))
        .collect();
    let mut out = format!(
        "retrieval eval{} | {} conversations as {} | {} queries\n",
        first
            .dataset
            .as_deref()
            .map(|d| format!(" of {d}"))
            .unwrap_or_default(),
        first.counts.conversations,
        first.settings.layout.described(),
        first.settings.queries,
    );
    out.push_str(&table(&rows, &columns(&first.overall)));
    out
}

/// Renders a report as one pretty-printed JSON object.
pub fn render_json(r: &EvalReport) -> String {
    serde_json::to_string_pretty(r)
        .unwrap_or_else(|e| format!("{{\"error\": \"cannot encode report: {e}\"}}"))
}
