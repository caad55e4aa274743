//! Runs the retrieval benchmark in several modes and units at once and prints
//! the comparison table (and optionally every report as JSON). Used to fill
//! docs/BENCHMARKS.md; the `mnemo eval retrieval` command is the user-facing way.
//!
//! ```text
//! cargo run --release -p mnemo-eval --example retrieval -- FILE.json \
//!     [--units session,turn] [--modes keyword,vector,hybrid] [--limit-conversations N] \
//!     [--layout sessions|notes] [--max-results N] [--min-score S] [--chunk-tokens N] [--chunk-overlap N] [--fusion weighted|rrf] \
//!     [--vector-weight W] [--model DIR[+DIR]] [--engine fast|int8|candle] [--json-dir DIR]
//!     [--sweep SPEC;SPEC...] [--queries question,embedded,lead-up] [--query-from text|conversation]
//! ```
//!
//! `--queries` asks each question in the shapes given (the benchmark's own
//! question, or dialogue derived from it: `mnemo_eval::dialogue`), one table
//! per shape; vectors are shared between shapes.
//!
//! `--model` defaults to the default model's copy in
//! `.mnemo-models/multilingual-e5-small-q4` (scripts/fetch-models.sh).
//!
//! `--model A+B` pairs two local models (cosine = the mean of theirs), to
//! measure whether an ensemble beats either model alone.
//!
//! `--sweep` runs several configurations in one process, each SPEC a comma
//! list of `chunk=N`, `overlap=N`, `fusion=weighted|rrf`, `vw=W`, `date=B` (date_boost),
//! `context=C` (file_context), `redact=true|false` (redact_transcripts), `phrase=W`
//! (phrase_weight), `mmr=LAMBDA|off`, `focus=F|off` (message_focus, or whole-chunk
//! hits), `answer=W` (answer_lift), `dfocus=W` (dialogue_focus), `blocks=on|off`
//! (block_hits) applied on top of the other flags. Vectors are memoised by text across configurations and
//! conversations, so a sweep over fusion settings embeds each chunk once.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use mnemo_core::{EmbedError, EmbedKind, Embedder, EmbedderId};
use mnemo_eval::{
    as_engine_queries, derive, render_comparison, render_json, render_text, run_on_dataset,
    Dataset, EvalOptions, EvalStage, EvalUnit, QueryShape, RetrievalMode,
};
use mnemo_index::Fusion;

/// Two models side by side: unit vectors concatenated and scaled by
/// 1/sqrt(2), so a cosine is the mean of the two models' cosines.
struct Pair(Arc<dyn Embedder>, Arc<dyn Embedder>);

impl Embedder for Pair {
    fn id(&self) -> EmbedderId {
        let (a, b) = (self.0.id(), self.1.id());
        EmbedderId {
            provider: "pair".into(),
            model: format!("{}+{}", a.model, b.model),
            provider_key: String::new(),
        }
    }
    fn dims(&self) -> usize {
        self.0.dims() + self.1.dims()
    }
    fn max_batch(&self) -> usize {
        self.0.max_batch().min(self.1.max_batch())
    }
    fn max_input_tokens(&self) -> Option<usize> {
        self.0.max_input_tokens()
    }
    fn count_tokens(&self, text: &str) -> Option<usize> {
        self.0.count_tokens(text)
    }
    fn embed(&self, texts: &[&str], kind: EmbedKind) -> Result<Vec<Vec<f32>>, EmbedError> {
        let a = self.0.embed(texts, kind)?;
        let b = self.1.embed(texts, kind)?;
        let s = std::f32::consts::FRAC_1_SQRT_2;
        Ok(a.into_iter()
            .zip(b)
            .map(|(a, b)| a.iter().chain(b.iter()).map(|x| x * s).collect())
            .collect())
    }
}

fn apply_spec(opts: &mut EvalOptions, spec: &str) -> anyhow::Result<()> {
    for kv in spec.split(',').filter(|s| !s.is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("bad sweep item {kv}"))?;
        match k {
            "chunk" => opts.index_settings.index.chunk_tokens = v.parse()?,
            "overlap" => opts.index_settings.index.chunk_overlap = v.parse()?,
            "fusion" => {
                opts.index_settings.search.fusion = match v {
                    "rrf" => Fusion::Rrf,
                    _ => Fusion::Weighted,
                }
            }
            "vw" => {
                let w: f32 = v.parse()?;
                opts.index_settings.search.vector_weight = w;
                opts.index_settings.search.text_weight = 1.0 - w;
            }
            "date" => opts.index_settings.search.date_boost = v.parse()?,
            "context" => opts.index_settings.search.file_context = v.parse()?,
            "redact" => opts.index_settings.index.redact_transcripts = v.parse()?,
            "phrase" => opts.index_settings.search.phrase_weight = v.parse()?,
            "mmr" => {
                // mmr=LAMBDA turns MMR on with that trade-off; mmr=off turns it off.
                opts.index_settings.search.mmr = v != "off";
                if v != "off" {
                    opts.index_settings.search.mmr_lambda = v.parse()?;
                }
            }
            "focus" => {
                // focus=F splits transcript hits into messages with that
                // message_focus; focus=off keeps whole chunks.
                opts.index_settings.search.message_hits = v != "off";
                if v != "off" {
                    opts.index_settings.search.message_focus = v.parse()?;
                }
            }
            "answer" => opts.index_settings.search.answer_lift = v.parse()?,
            "dfocus" => opts.index_settings.search.dialogue_focus = v.parse()?,
            "blocks" => opts.index_settings.search.block_hits = v != "off",
            other => anyhow::bail!("unknown sweep key {other}"),
        }
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut file = None;
    let mut units = vec![EvalUnit::Session, EvalUnit::Turn];
    let mut modes = vec![
        RetrievalMode::Keyword,
        RetrievalMode::Vector,
        RetrievalMode::Hybrid,
    ];
    let mut opts = EvalOptions::new("");
    let mut model: Option<PathBuf> = None;
    let mut json_dir: Option<PathBuf> = None;
    let mut verbose = false;
    let mut sweep: Vec<String> = vec![String::new()];
    let mut engine = mnemo_embed::Engine::Auto;
    let mut shapes = vec![QueryShape::Question];
    while let Some(a) = args.next() {
        let mut val = || {
            args.next()
                .ok_or_else(|| anyhow::anyhow!("{a} needs a value"))
        };
        match a.as_str() {
            "--units" => {
                units = val()?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(anyhow::Error::msg)?
            }
            "--modes" => {
                modes = val()?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(anyhow::Error::msg)?
            }
            "--limit-conversations" => opts.limit_conversations = Some(val()?.parse()?),
            "--max-results" => opts.max_results = val()?.parse()?,
            "--min-score" => opts.min_score = val()?.parse()?,
            "--layout" => opts.layout = val()?.parse().map_err(anyhow::Error::msg)?,
            "--chunk-tokens" => opts.index_settings.index.chunk_tokens = val()?.parse()?,
            "--chunk-overlap" => opts.index_settings.index.chunk_overlap = val()?.parse()?,
            "--fusion" => {
                opts.index_settings.search.fusion = match val()?.as_str() {
                    "rrf" => Fusion::Rrf,
                    _ => Fusion::Weighted,
                }
            }
            "--vector-weight" => {
                let w: f32 = val()?.parse()?;
                opts.index_settings.search.vector_weight = w;
                opts.index_settings.search.text_weight = 1.0 - w;
            }
            "--model" => model = Some(PathBuf::from(val()?)),
            "--engine" => {
                engine = match val()?.as_str() {
                    "int8" => mnemo_embed::Engine::Int8,
                    "fast" => mnemo_embed::Engine::Fast,
                    "candle" => mnemo_embed::Engine::Candle,
                    other => anyhow::bail!("unknown engine {other}: fast, int8 or candle"),
                }
            }
            "--json-dir" => json_dir = Some(PathBuf::from(val()?)),
            "--verbose" => verbose = true,
            "--sweep" => sweep = val()?.split(';').map(str::to_string).collect(),
            "--query-from" => {
                opts.engine_queries = match val()?.as_str() {
                    "conversation" => true,
                    "text" => false,
                    other => anyhow::bail!("unknown --query-from {other}: text or conversation"),
                }
            }
            "--queries" => {
                shapes = val()?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(anyhow::Error::msg)?
            }
            other if file.is_none() && !other.starts_with("--") => {
                file = Some(PathBuf::from(other))
            }
            other => anyhow::bail!("unknown argument {other}"),
        }
    }
    let file = file.ok_or_else(|| anyhow::anyhow!("give the benchmark file"))?;
    let ds = Dataset::load(&file)?;
    if modes.iter().any(|m| m.needs_embedder()) {
        // The default model, as scripts/fetch-models.sh stores it.
        let dir = model.unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../.mnemo-models/multilingual-e5-small-q4")
        });
        let load = |dir: &std::path::Path| -> anyhow::Result<Arc<dyn Embedder>> {
            Ok(Arc::new(
                mnemo_embed::LocalEmbedder::load_on(dir, engine).map_err(|e| {
                    anyhow::anyhow!("{e} (run scripts/fetch-models.sh or pass --model DIR)")
                })?,
            ))
        };
        let s = dir.to_string_lossy().into_owned();
        let e = match s.split_once('+') {
            Some((a, b)) => {
                Arc::new(Pair(load(a.as_ref())?, load(b.as_ref())?)) as Arc<dyn Embedder>
            }
            None => load(&dir)?,
        };
        opts = opts.with_embedder(Arc::new(mnemo_test_support::Memo::new(e)));
    }
    let base = opts;
    for spec in &sweep {
        for shape in &shapes {
            let mut opts = base.clone();
            apply_spec(&mut opts, spec)?;
            opts.queries = *shape;
            if !spec.is_empty() {
                println!("\n### {spec}");
            }
            let derived = derive(&ds, *shape);
            let derived = if opts.engine_queries {
                as_engine_queries(&derived)
            } else {
                derived
            };
            run_one(
                &derived,
                &file,
                &opts,
                &modes,
                &units,
                verbose,
                json_dir.as_ref(),
            )?;
        }
    }
    Ok(())
}

fn run_one(
    ds: &Dataset,
    file: &std::path::Path,
    opts: &EvalOptions,
    modes: &[RetrievalMode],
    units: &[EvalUnit],
    verbose: bool,
    json_dir: Option<&PathBuf>,
) -> anyhow::Result<()> {
    let t = Instant::now();
    let reports = run_on_dataset(ds, opts, modes, units, &|p| {
        if p.stage == EvalStage::Finished
            || (p.stage == EvalStage::Searching && p.questions_done % 256 == 0)
        {
            eprintln!(
                "{}/{} conversations, {}/{} questions",
                p.conversations_done, p.conversations_total, p.questions_done, p.questions_total
            );
        }
    })?;
    eprintln!("done in {:.1}s", t.elapsed().as_secs_f64());
    println!("{}", render_comparison(&reports));
    for r in &reports {
        println!(
            "{} {}: index {:.1}s, search {:.1}s ({:.1} ms/question)",
            r.unit.as_str(),
            r.mode.as_str(),
            r.timings.index_seconds,
            r.timings.search_seconds,
            r.timings.search_ms_mean
        );
    }
    if verbose {
        for r in &reports {
            println!("\n{}", render_text(r));
        }
    }
    if let Some(dir) = json_dir {
        std::fs::create_dir_all(dir)?;
        for r in &reports {
            let stem = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let p = dir.join(format!(
                "{stem}-{}-{}-{}.json",
                r.settings.queries,
                r.unit.as_str(),
                r.mode.as_str()
            ));
            std::fs::write(&p, render_json(r))?;
        }
    }
    Ok(())
}
