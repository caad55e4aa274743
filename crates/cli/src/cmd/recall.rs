//! `mnemo index | search | get | status`: the recall side.

use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use mnemo::index::{MemoryIndex, SyncProgress, SyncReport};
use mnemo::Mnemo;
use mnemo_service::output::{HitSource, Mode};
use mnemo_service::Service;

use crate::ctx::GlobalArgs;
use crate::output::{stderr_bar, with_download_bar};

/// Arguments of `mnemo index`.
#[derive(Debug, Args)]
pub struct IndexArgs {
    /// Keep running and re-index whenever memory or session files change
    #[arg(long)]
    pub watch: bool,
    /// Rebuild the whole index (into a new database, swapped in when done;
    /// searches keep working meanwhile)
    #[arg(long)]
    pub force: bool,
    /// Copy the index into a PostgreSQL database with pgvector
    /// (postgres://user:password@host:5432/database): the vectors are
    /// copied and the files indexed there from them, so nothing is embedded
    /// again. The workspace keeps using its own index until mnemo.toml says
    /// `[index] backend = "postgres"` and `url`
    #[arg(long, value_name = "URL", conflicts_with = "watch")]
    pub copy_to: Option<String>,
    /// The schema of --copy-to [default: [index] schema, "mnemo"]
    #[arg(long, value_name = "NAME", requires = "copy_to")]
    pub copy_schema: Option<String>,
    /// Print one JSON object per sync (with --watch, one line each): the
    /// report ({"full_rebuild", "files_scanned", "indexed", "removed",
    /// "touched", "chunks_written", "chunks_embedded", "cache_hits",
    /// "cache_pruned", "issues"}) and "warnings"; with --copy-to also
    /// "copied_to" and "copied_vectors"
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `mnemo search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for: words, a phrase, an identifier
    pub query: String,
    /// Print one JSON object, the shape of the HTTP API and MCP's
    /// memory_search: {"mode", "results": [{"path", "start_line", "end_line",
    /// "score", "snippet", "source", "citation", "session_key"?, "date"?}],
    /// "warnings", "dates"?, "reranked"?}
    #[arg(long)]
    pub json: bool,
    /// Results at most, 1 to 100 [default: [search] max_results, 6 unless configured]
    #[arg(long, short = 'n')]
    pub limit: Option<usize>,
    /// Drop results scoring below this, 0 to 1 [default: [search] min_score]
    #[arg(long)]
    pub min_score: Option<f32>,
    /// Let the chat model re-order the best hits ([engine] rerank_candidates
    /// of them); needs a chat model (--provider, or [provider] in mnemo.toml)
    #[arg(long)]
    pub rerank: bool,
    /// Let the chat model write a passage that would answer the query, and
    /// search it beside the query: finds what shares no word with the
    /// question ("activities" against "pottery"); about 1.5 s with the
    /// local model ([engine] expand_timeout_ms, [search] expansion_weight)
    #[arg(long)]
    pub expand: bool,
    /// Answer as of this day (YYYY-MM-DD): the facts that were true then
    /// (memory/facts.md) and nothing said after it
    #[arg(long)]
    pub as_of: Option<String>,
    /// Show how each score was made: keyword (normalised BM25), vector
    /// (cosine), fused, the date lift, the age decay, an exact match, the
    /// place before a re-rank; with --json, each hit's "parts"
    #[arg(long)]
    pub explain: bool,
    /// Fit the hits into about this many tokens (4 Latin characters or 1
    /// CJK character each), as an agent's prompt would take them: each cut
    /// to its lines that share the query's words, repeats left out, nothing
    /// past the budget
    #[arg(long, value_name = "TOKENS")]
    pub budget: Option<usize>,
    #[command(flatten)]
    pub model: crate::cmd::ModelArgs,
}

/// Arguments of `mnemo get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// A path relative to the workspace (MEMORY.md, memory/…md, or a
    /// session log sessions/…jsonl), or a citation a search printed
    /// (memory/2026-01-31.md#L3-L4 reads just those lines)
    pub path: String,
    /// Print one JSON object: {"path", "text", "from", "lines", "total_lines"}
    #[arg(long)]
    pub json: bool,
    /// First line to print (1-based)
    #[arg(long)]
    pub from: Option<usize>,
    /// Number of lines to print
    #[arg(long)]
    pub lines: Option<usize>,
}

/// Arguments of `mnemo status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON object
    #[arg(long)]
    pub json: bool,
}

fn open(global: &GlobalArgs) -> Result<(Arc<Mnemo>, Arc<MemoryIndex>, Option<String>)> {
    let m = global.ctx()?.open()?;
    let choice = with_download_bar(|p| m.embedder_with_progress(p))?;
    for note in &choice.notes {
        eprintln!("note: {note}");
    }
    let index = m.index()?;
    Ok((m, index, choice.warning))
}

fn sync_with_bar(index: &MemoryIndex, force: bool) -> Result<SyncReport> {
    let bar = stderr_bar("{spinner} indexing [{bar:30}] {pos}/{len} files {msg}");
    let progress = |p: SyncProgress| match p {
        SyncProgress::Started { total, .. } => bar.set_length(total as u64),
        SyncProgress::File { done, .. } => bar.set_position(done as u64),
        SyncProgress::Embedded { chunks } => bar.set_message(format!("({chunks} chunks embedded)")),
        SyncProgress::Finished => {}
    };
    let report = index.reindex(force, &progress)?;
    bar.finish_and_clear();
    Ok(report)
}

fn print_report(report: &SyncReport) {
    eprintln!(
        "{}indexed {} file(s), removed {}, {} chunk(s) written, {} embedded, {} from cache{}",
        if report.full_rebuild {
            "full rebuild: "
        } else {
            ""
        },
        report.indexed.len(),
        report.removed.len(),
        report.chunks_written,
        report.chunks_embedded,
        report.cache_hits,
        if report.cache_pruned > 0 {
            format!(", {} unused cached vector(s) dropped", report.cache_pruned)
        } else {
            String::new()
        }
    );
    for issue in &report.issues {
        eprintln!("warning: {}: {}", issue.path, issue.message);
    }
}

/// One sync's answer for `index --json`: its report and the warnings.
fn report_json(report: &SyncReport, warnings: &[String]) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(report)?;
    if let Some(obj) = v.as_object_mut() {
        obj.insert("warnings".into(), serde_json::json!(warnings));
    }
    Ok(v)
}

pub fn index(args: IndexArgs, global: &GlobalArgs) -> Result<()> {
    let (m, index, warning) = open(global)?;
    let mut warnings: Vec<String> = warning.into_iter().collect();
    if !args.json {
        for w in &warnings {
            eprintln!("warning: {w}");
        }
    }
    let report = sync_with_bar(&index, args.force)?;
    if !args.json {
        print_report(&report);
    }
    if let Some(url) = args.copy_to {
        return copy_to(&m, &index, url, args.copy_schema, args.json, &warnings);
    }
    let status = index.status()?;
    if status.chunks == 0 {
        let w = "0 chunks indexed: the workspace has no memory or session text yet";
        if args.json {
            warnings.push(w.into());
        } else {
            eprintln!("warning: {w}");
        }
    }
    if args.json {
        outln!("{}", report_json(&report, &warnings)?);
    }
    if args.watch {
        eprintln!("watching for changes (Ctrl-C to stop) ...");
        let json = args.json;
        let _handle = index.watch(move |r| match r {
            Ok(report) if !report.indexed.is_empty() || !report.removed.is_empty() => {
                if json {
                    // A closed stdout ends nothing here: the watch goes on.
                    if let Ok(v) = report_json(&report, &[]) {
                        let _ = crate::output::write_out(format_args!("{v}\n"));
                    }
                } else {
                    print_report(&report)
                }
            }
            Ok(_) => {}
            Err(e) => eprintln!("error: re-index failed: {e}"),
        })?;
        loop {
            std::thread::park();
        }
    }
    Ok(())
}

/// `mnemo index --copy-to URL`: the vectors first, then a sync of the
/// target, which finds every chunk's vector in its cache.
fn copy_to(
    m: &Mnemo,
    index: &MemoryIndex,
    url: String,
    schema: Option<String>,
    json: bool,
    warnings: &[String],
) -> Result<()> {
    let mut settings = mnemo::index::IndexSettings::from_config(m.config())?;
    settings.index.backend = mnemo::index::BackendKind::POSTGRES;
    settings.index.url = Some(mnemo::index::DatabaseUrl(url));
    if let Some(schema) = schema {
        settings.index.schema = schema;
    }
    let schema = settings.index.schema.clone();
    let target = mnemo::open_index(m.workspace(), settings, m.embedder()?.embedder)?;
    let bar = stderr_bar("{spinner} copying vectors: {pos} {msg}");
    let copied = index.copy_embeddings_to(&target, &|n| bar.set_position(n as u64))?;
    bar.finish_and_clear();
    if !json {
        eprintln!("copied {copied} cached vector(s)");
    }
    let report = sync_with_bar(&target, false)?;
    let st = target.status()?;
    if json {
        let mut v = report_json(&report, warnings)?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert("copied_to".into(), serde_json::json!(st.location));
            obj.insert("copied_vectors".into(), serde_json::json!(copied));
        }
        outln!("{v}");
        return Ok(());
    }
    print_report(&report);
    outln!(
        "copied to {}: {} file(s), {} chunk(s), {} with vectors, {} embedded anew",
        st.location,
        st.files,
        st.chunks,
        st.vectors,
        report.chunks_embedded
    );
    eprintln!(
        "to use it, set in mnemo.toml:\n  [index]\n  backend = \"postgres\"\n  url = \"postgres://...\"\n  schema = \"{schema}\""
    );
    Ok(())
}

pub fn search(args: SearchArgs, global: &GlobalArgs) -> Result<()> {
    let request = mnemo_service::args::SearchArgs {
        query: args.query,
        max_results: args.limit,
        min_score: args.min_score,
        rerank: args.rerank.then_some(true),
        expand: args.expand.then_some(true),
        as_of: args.as_of,
        explain: args.explain.then_some(true),
        mode: None,
        budget_tokens: args.budget,
    };
    // A server of this workspace, with these settings, has the model and
    // the index open already: ask it (a re-rank's or an expansion's model
    // flags are the CLI's own, so those stay here).
    let asks_model = args.rerank || args.expand;
    if !asks_model && global.database.is_none() {
        let ctx = global.ctx()?;
        ctx.require_initialised()?;
        if let Some((found, addr)) = super::warm::search(&ctx.workspace, &ctx.config, &request) {
            eprintln!("(answered by mnemo serve at {addr})");
            return print_found(&found, None, args.json);
        }
    }
    // Why a search runs keyword-only is among the answer's warnings.
    let (m, _index, _warning) = open(global)?;
    let service = Service::with_provider(m, args.model.overrides());
    if asks_model {
        // A local model is loaded (and the first time downloaded) now, with a bar.
        crate::output::with_download_bar_for("the chat model", |p| {
            service.engine_with_progress(p)
        })?;
    }
    let found = crate::ctx::runtime()?.block_on(service.search(request))?;
    print_found(&found, None, args.json)
}

/// Prints a search's answer: one JSON object, or the hits for a person.
fn print_found(
    found: &mnemo_service::output::SearchOutput,
    warning: Option<String>,
    json: bool,
) -> Result<()> {
    if json {
        outln!("{}", serde_json::to_string(&found)?);
        return Ok(());
    }
    out!("{}", render_found(found, warning.as_deref()));
    Ok(())
}

/// A search's answer as a person reads it: warnings, how dates were read,
/// then each hit (citation, score, source, day), a fact that is no longer
/// true marked as such above its lines, and up to 8 lines of its snippet.
pub(crate) fn render_found(
    found: &mnemo_service::output::SearchOutput,
    warning: Option<&str>,
) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    if let Some(w) = warning {
        let _ = writeln!(out, "({w})");
    }
    for w in &found.warnings {
        let _ = writeln!(out, "({w})");
    }
    if let Some(note) = dates_note(&found.dates) {
        let _ = writeln!(out, "{note}");
    }
    if let (Some(passage), Some(ms)) = (&found.expansion, found.expand_ms) {
        let _ = writeln!(
            out,
            "(searched beside the chat model's passage, written in {ms} ms: {})",
            mnemo::engine::pipeline::clip(passage, 200)
        );
    }
    if let (Some(true), Some(ms)) = (found.reranked, found.rerank_ms) {
        let _ = writeln!(out, "(re-ranked by the chat model in {ms} ms)");
    }
    let mode = match found.mode {
        Mode::Hybrid => "hybrid",
        Mode::Keyword => "keyword",
        Mode::Vector => "vector",
    };
    if found.results.is_empty() {
        let _ = writeln!(out, "no results ({mode} search)");
    }
    for hit in &found.results {
        let date = hit
            .date
            .as_deref()
            .map(|d| format!("  {d}"))
            .unwrap_or_default();
        let source = match hit.source {
            HitSource::Memory => "memory",
            HitSource::Sessions => "sessions",
        };
        let parts = hit
            .parts
            .as_ref()
            .map(|p| {
                let part = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
                let mut parts = format!("keyword {}, vector {}", part(p.keyword), part(p.vector));
                if let Some(f) = p.fused {
                    parts.push_str(&format!(", fused {f:.3}"));
                }
                if let Some(d) = p.date {
                    parts.push_str(&format!(", date {d:.2}"));
                }
                if let Some(d) = p.decay {
                    parts.push_str(&format!(", decay x{d:.3}"));
                }
                if p.exact {
                    parts.push_str(", exact match");
                }
                if let Some(r) = p.before_rerank {
                    parts.push_str(&format!(", #{r} before re-ranking"));
                }
                if let Some(j) = p.judged {
                    parts.push_str(&format!(", judged {j:.2}"));
                }
                format!("  ({parts})")
            })
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{}  score {:.3}{parts}  [{source}]{date}",
            hit.citation, hit.score
        );
        if let Some(note) = validity_note(hit) {
            let _ = writeln!(out, "    {note}");
        }
        for line in hit.snippet.lines().take(8) {
            let _ = writeln!(out, "    {line}");
        }
        let _ = writeln!(out);
    }
    out
}

/// The mark of a hit whose fact is no longer true, `[no longer true since
/// …, replaced by f8: …]`; none for anything else.
pub(crate) fn validity_note(hit: &mnemo_service::output::Hit) -> Option<String> {
    let v = hit.validity.as_ref().filter(|v| !v.current)?;
    Some(format!(
        "[{}]",
        v.note.as_deref().unwrap_or("no longer true")
    ))
}

/// The line that says how a search read the dates its query named.
pub(crate) fn dates_note(dates: &[String]) -> Option<String> {
    (!dates.is_empty()).then(|| {
        format!(
            "(dates understood: {}; what was said then ranks higher)",
            dates.join(", ")
        )
    })
}

fn mode_name(mode: &mnemo::index::SearchMode) -> String {
    serde_json::to_value(mode)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

pub fn get(args: GetArgs, global: &GlobalArgs) -> Result<()> {
    let mut ctx = global.ctx()?;
    // Reading needs no embedder: keep `get` fast and offline.
    ctx.config.set("embedder.kind", "none");
    let service = Service::new(ctx.open()?);
    let request = mnemo_service::args::GetArgs {
        path: args.path,
        from: args.from,
        lines: args.lines,
    };
    let got = crate::ctx::runtime()?.block_on(service.read(request))?;
    // An agent asking for a file not written yet gets an empty answer; a
    // person or a script asked for a file that is not there: an error.
    if got.total_lines == 0 && !exists(&service, &got.path)? {
        return Err(mnemo_service::Error::NotFound(format!(
            "{} does not exist: `mnemo search` finds what memory holds and cites its files, \
             `mnemo memory list` lists the typed memories",
            got.path
        ))
        .into());
    }
    if args.json {
        outln!("{}", serde_json::to_string(&got)?);
        return Ok(());
    }
    out!("{}", got.text);
    if !got.text.is_empty() && !got.text.ends_with('\n') {
        outln!();
    }
    // An empty file or a range past its end prints nothing: say why.
    if got.text.is_empty() {
        if got.total_lines == 0 {
            eprintln!("note: {} is empty", got.path);
        } else {
            eprintln!(
                "note: {} has {} line(s); --from {} is past its end",
                got.path, got.total_lines, got.from
            );
        }
    }
    Ok(())
}

/// Whether the workspace file `path` (a memory file or a session log,
/// as [`Service::read`] normalised it) exists.
fn exists(service: &Service, path: &str) -> Result<bool> {
    let mnemo = service.mnemo();
    if path.starts_with("sessions/") {
        return Ok(mnemo
            .sessions()
            .storage()
            .read_session_file(path)?
            .is_some());
    }
    Ok(mnemo.memory().read_document(path)?.is_some())
}

pub fn status(args: StatusArgs, global: &GlobalArgs) -> Result<()> {
    let (_m, index, warning) = open(global)?;
    let st = index.status()?;
    if args.json {
        let mut v = serde_json::to_value(&st)?;
        if let (Some(obj), Some(w)) = (v.as_object_mut(), &warning) {
            obj.insert("warning".into(), serde_json::Value::String(w.clone()));
        }
        outln!("{v}");
        return Ok(());
    }
    outln!("mode:    {}", mode_name(&st.mode));
    outln!(
        "model:   {}",
        st.model.as_deref().unwrap_or("(none: keyword-only)")
    );
    outln!(
        "dims:    {}",
        st.dims.map(|d| d.to_string()).unwrap_or_else(|| "-".into())
    );
    outln!("files:   {}", st.files);
    outln!("chunks:  {} ({} with vectors)", st.chunks, st.vectors);
    outln!(
        "index:   {} at {}{}",
        st.backend,
        st.location,
        if st.dirty {
            " (files changed since the last sync)"
        } else {
            ""
        }
    );
    if st.needs_full_reindex {
        outln!("note:    the model or chunking changed: `mnemo index --force` rebuilds");
    }
    if let Some(w) = warning {
        outln!("warning: {w}");
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use mnemo_service::output::{FactRef, Hit, SearchOutput, Validity};

    fn hit(citation: &str, score: f64, snippet: &str, validity: Option<Validity>) -> Hit {
        let (path, _) = citation.split_once('#').unwrap();
        Hit {
            path: path.into(),
            start_line: 1,
            end_line: 1,
            score,
            validity,
            snippet: snippet.into(),
            source: if path.starts_with("sessions/") {
                HitSource::Sessions
            } else {
                HitSource::Memory
            },
            citation: citation.into(),
            session_key: path.starts_with("sessions/").then(|| "cli:direct".into()),
            date: path.starts_with("sessions/").then(|| "2026-11-02".into()),
            parts: None,
        }
    }

    #[test]
    fn explain_prints_the_parts_of_each_score() {
        let mut with_parts = hit("memory/facts.md#L2-L2", 0.61, "- Berlin.", None);
        with_parts.parts = Some(mnemo_service::output::ScoreParts {
            keyword: Some(1.0),
            vector: None,
            fused: Some(0.7),
            date: None,
            decay: Some(0.5),
            exact: false,
            before_rerank: None,
            judged: None,
        });
        let found = SearchOutput {
            mode: Mode::Keyword,
            results: vec![with_parts],
            warnings: Vec::new(),
            dates: Vec::new(),
            focus: None,
            reranked: Some(true),
            rerank_ms: Some(2150),
            expansion: Some("Ana moved to Berlin in May.".into()),
            expand_ms: Some(1480),
            tokens: None,
        };
        let text = render_found(&found, None);
        assert!(
            text.contains("(re-ranked by the chat model in 2150 ms)"),
            "{text}"
        );
        assert!(
            text.contains(
                "(searched beside the chat model's passage, written in 1480 ms: Ana moved to Berlin in May.)"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "memory/facts.md#L2-L2  score 0.610  (keyword 1.000, vector -, fused 0.700, decay x0.500)  [memory]"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_fact_no_longer_true_says_so_above_its_lines() {
        let berlin = FactRef {
            id: "f6".into(),
            text: "The user lives in Berlin.".into(),
            current: true,
        };
        let found = SearchOutput {
            mode: Mode::Hybrid,
            results: vec![
                hit(
                    "memory/facts.md#L7-L7",
                    0.8123,
                    "- The user lives in Berlin. (f6; about user: home city; since 2026-11-25)",
                    Some(Validity {
                        current: true,
                        id: Some("f6".into()),
                        since: Some("2026-11-25".into()),
                        until: None,
                        replaced_by: None,
                        retracted: false,
                        note: None,
                    }),
                ),
                hit(
                    "sessions/cli_direct.jsonl#L2-L2",
                    0.7011,
                    "User: Hi, my name is Rui. I live in Lisbon.",
                    None,
                ),
                hit(
                    "memory/facts.md#L17-L17",
                    0.6504,
                    "- ~~I live in Lisbon~~ (f2; since 2026-11-02; until 2026-11-25; superseded by f6)",
                    Some(Validity {
                        current: false,
                        id: Some("f2".into()),
                        since: Some("2026-11-02".into()),
                        until: Some("2026-11-25".into()),
                        replaced_by: Some(berlin),
                        retracted: false,
                        note: Some(
                            "no longer true since 2026-11-25, replaced by f6: The user lives in Berlin."
                                .into(),
                        ),
                    }),
                ),
                hit(
                    "memory/facts.md#L19-L19",
                    0.4,
                    "- ~~The user has a dog called Bolt.~~ (f5; until 2026-12-03; retracted)",
                    Some(Validity {
                        current: false,
                        id: Some("f5".into()),
                        since: None,
                        until: Some("2026-12-03".into()),
                        replaced_by: None,
                        retracted: true,
                        note: Some("no longer true: retracted on 2026-12-03".into()),
                    }),
                ),
            ],
            warnings: Vec::new(),
            dates: Vec::new(),
            focus: None,
            reranked: None,
            rerank_ms: None,
            expansion: None,
            expand_ms: None,
            tokens: None,
        };
        insta::assert_snapshot!("search_marks_ended_facts", render_found(&found, None));
    }
}
