//! `memory_search`: candidates from keywords, vectors and the periods the
//! query names; their scores (fusion, file context, dates, exact
//! identifiers); and the hits (the minimum score, MMR, the split into
//! messages and blocks).

use super::*;

impl MemoryIndex {
    /// `memory_search`: hybrid (or keyword-only, or vector-only) search
    /// over the index.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResponse> {
        let query = req.query.trim();
        if query.is_empty() {
            return Err(IndexError::InvalidInput(
                "the query is empty: give a few words to search for".into(),
            ));
        }
        let mut warnings = Vec::new();
        let opts = &*options_for(&self.inner.settings.search, req.mode);
        let readings = readings(
            query,
            opts.dialogue_focus,
            &req.expansions,
            opts.expansion_weight,
        );
        // The query's embedding does not depend on the index: it is
        // computed on a second thread while the freshness check runs (in a
        // one-shot process whose check compares every file, the two take
        // about as long as each other).
        let wanted = self.inner.embedder.as_ref().filter(|e| {
            opts.vector_weight > 0.0
                && !(text::mostly_cjk(query) && e.multilingual() == Some(false))
        });
        let embed = || match wanted {
            Some(emb) => embed_readings(emb.as_ref(), &readings),
            // Unused: the search is keyword-only (`vectors_usable`).
            None => Err("no query embedding".into()),
        };
        // A process that watches the workspace never compares every file in
        // a search: it needs no second thread.
        let mut live = None;
        let embedded = if opts.sync_on_search && wanted.is_some() && self.watching().is_none() {
            std::thread::scope(|s| {
                let job = s.spawn(embed);
                live = self.refresh(&mut warnings);
                job.join()
                    .unwrap_or_else(|_| Err("the embedding thread stopped".into()))
            })
        } else {
            if opts.sync_on_search {
                live = self.refresh(&mut warnings);
            }
            embed()
        };
        let once = |live, warnings: &mut Vec<String>| {
            self.search_once(req, opts, &readings, &embedded, live, warnings)
        };
        match once(live, &mut warnings) {
            Ok(r) => Ok(r),
            // A generation swapped by another process can vanish under an
            // old connection; resolve the live one and retry once.
            Err(IndexError::Database { .. }) => once(None, &mut warnings),
            Err(e) => Err(e),
        }
    }

    /// One try of [`Self::search`] for `req`, whose query is trimmed and
    /// not empty.
    fn search_once(
        &self,
        req: &SearchRequest,
        opts: &SearchOptions,
        readings: &[Reading],
        embedded: &Embedded,
        live: Option<Live>,
        warnings: &mut Vec<String>,
    ) -> Result<SearchResponse> {
        let query = req.query.trim();
        let live = match live {
            Some(live) => live,
            None => self.live()?,
        };
        let backend = live.backend.as_ref();
        let max_results = req.max_results.unwrap_or(opts.max_results).max(1);
        let min_score = req.min_score.unwrap_or(opts.min_score);
        let sources: Vec<Source> = req.sources.clone().unwrap_or_default();
        let n_cand = (max_results * opts.candidate_multiplier)
            .clamp(50, 1000)
            .max(max_results);
        let mut hybrid = self.vectors_usable(backend, &live.meta, query, opts, warnings)?;

        // Candidates: keyword and phrase hits, vector hits, and what was
        // said in the periods the query names.
        let today = chrono::Local::now().date_naive();
        // Dates count where the need is: in the focus of a dialogue.
        let periods = if opts.date_boost > 0.0 {
            when::dates(&readings[0].text, today).periods
        } else {
            Vec::new()
        };
        let keyword_side = || -> Result<KeywordSide> {
            let mut keyword: Vec<(i64, f64)> = Vec::new();
            let mut tokens: Vec<String> = Vec::new();
            for r in readings {
                let keyword_query = if opts.date_boost > 0.0 {
                    when::dates(&r.text, today).rest
                } else {
                    r.text.clone()
                };
                let toks = text::query_tokens(&keyword_query);
                if !toks.is_empty() && (opts.text_weight > 0.0 || !hybrid) {
                    let hits =
                        keyword_candidates(backend, &toks, &keyword_query, opts, n_cand, &sources)?;
                    search::blend_keyword(&mut keyword, &hits, r.weight);
                }
                for t in toks {
                    if !tokens.contains(&t) {
                        tokens.push(t);
                    }
                }
            }
            Ok((keyword, tokens))
        };
        let vector_side = |warnings: &mut Vec<String>| match hybrid {
            true => self.vector_candidates(backend, readings, embedded, n_cand, &sources, warnings),
            false => Ok(None),
        };
        let ((keyword, tokens), vector) = if hybrid && backend.concurrent_sides() {
            let mut said = Vec::new();
            let (keyword, vector) = std::thread::scope(|s| {
                let vector = s.spawn(|| vector_side(&mut said));
                let keyword = keyword_side();
                let vector = vector
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (keyword, vector)
            });
            warnings.extend(said);
            (keyword?, vector?)
        } else {
            (keyword_side()?, vector_side(warnings)?)
        };
        hybrid = vector.is_some();
        if self.inner.embedder.is_none() {
            warnings.push("no embedding model configured: keyword-only search".into());
        }
        let mut cands = search::merge(&keyword, vector.as_deref().unwrap_or_default());
        if !periods.is_empty() {
            period_candidates(backend, &periods, &mut cands, n_cand, &sources)?;
        }

        // Scores: fusion, then what the chunks' files, identifiers, dates
        // and ages say about them.
        search::fuse(&mut cands, opts, hybrid);
        let mut records = records_of(backend, &cands)?;
        cands.retain(|c| records.contains_key(&c.id));
        if opts.file_context > 0.0 {
            let file_of: HashMap<i64, &str> = records
                .iter()
                .map(|(id, r)| (*id, r.path.as_str()))
                .collect();
            search::file_context(&mut cands, &file_of, opts.file_context);
        }
        for c in cands.iter_mut() {
            c.trace.fused = c.score;
        }
        let (_, tw) = search::weights(opts, hybrid);
        let idents = text::identifiers(query);
        if tw > 0.0 && !idents.is_empty() {
            for c in cands.iter_mut() {
                if let Some(r) = records.get(&c.id) {
                    let lower = r.text.to_lowercase();
                    c.exact = idents.iter().any(|i| lower.contains(i.as_str()));
                }
            }
        }
        // The best keyword hit that holds the whole query word for word is
        // an exact match too: in a large index, notes that merely resemble
        // the query can have closer vectors ("project 2567" for "project 7").
        // (A dialogue's focus: its latest turn.)
        if let Some(phrase) = (tw > 0.0)
            .then(|| text::Phrase::of(&readings[0].text))
            .flatten()
        {
            for c in cands.iter_mut().filter(|c| c.text == Some(1.0) && !c.exact) {
                c.exact = records.get(&c.id).is_some_and(|r| phrase.is_in(&r.text));
            }
        }
        if !periods.is_empty() {
            search::date_boost(&mut cands, &records, &periods, opts.date_boost);
        }
        if opts.temporal_decay {
            for c in cands.iter_mut().filter(|c| !c.exact) {
                if let Some(r) = records.get(&c.id) {
                    let factor = search::decay_factor(r, today, opts.half_life_days);
                    c.score *= factor;
                    c.trace.decay = factor;
                }
            }
        }
        search::protect_exact(&mut cands);
        for c in cands.iter_mut() {
            c.trace.exact = c.exact;
        }
        search::sort(&mut cands);

        // Hits: the minimum, MMR, and the split into messages and blocks.
        cands.retain(|c| search::passes(c, min_score, opts.vector_scale, tw > 0.0));
        set_parts(&mut records, &cands, opts);
        if opts.mmr {
            let texts: HashMap<i64, String> = cands
                .iter()
                .filter_map(|c| records.get(&c.id).map(|r| (c.id, r.text.clone())))
                .collect();
            cands = search::mmr(cands, &texts, opts.mmr_lambda);
        }
        let ranked: Vec<search::Ranked> = if opts.message_hits || opts.block_hits {
            let how = search::MessageFocus {
                query: &tokens,
                idents: &idents,
                focus: opts.message_focus,
                answer_lift: opts.answer_lift,
                min_score,
            };
            search::message_hits(&cands, &records, &how, max_results, opts.mmr)
        } else {
            cands
                .iter()
                .take(max_results)
                .map(|c| search::Ranked {
                    cand: c,
                    part: None,
                    score: c.score,
                })
                .collect()
        };
        let results = ranked
            .iter()
            .filter_map(|x| {
                records
                    .get(&x.cand.id)
                    .map(|r| hit(x, r, &tokens, opts.snippet_chars))
            })
            .collect();
        Ok(SearchResponse {
            mode: match (hybrid, tw > 0.0) {
                (true, true) => SearchMode::Hybrid,
                (true, false) => SearchMode::Vector,
                (false, _) => SearchMode::Keyword,
            },
            results,
            warnings: std::mem::take(warnings),
            dates: periods.iter().map(when::Period::describe).collect(),
            focus: (readings.len() > 1).then(|| readings[0].text.clone()),
        })
    }

    /// Whether this search can use vectors: an embedder, a vector weight,
    /// an index built for the embedder's dimensions, and a model that
    /// knows the query's language. Says why not in `warnings`.
    fn vectors_usable(
        &self,
        backend: &dyn IndexBackend,
        meta: &HashMap<String, String>,
        query: &str,
        opts: &SearchOptions,
        warnings: &mut Vec<String>,
    ) -> Result<bool> {
        let Some(emb) = self.inner.embedder.as_ref() else {
            return Ok(false);
        };
        if opts.vector_weight <= 0.0 {
            return Ok(false);
        }
        if self.needs_full_reindex_in(backend, meta)? {
            warnings.push("the index was built with other settings (model or chunking); run `mnemo index` to rebuild it".into());
            let dims = meta.get("dims").cloned();
            if dims != Some(emb.dims().to_string()) {
                return Ok(false);
            }
        }
        if text::mostly_cjk(query) && emb.multilingual() == Some(false) {
            warnings.push(format!(
                "the embedding model {} knows English only, so this query in Chinese, Japanese or Korean was \
                 searched by keywords; for vector search in those languages set [embedder] model = \
                 \"multilingual-e5-small-q4\" (README: Configuration)",
                emb.id().model
            ));
            return Ok(false);
        }
        Ok(true)
    }

    /// Vector candidates `(chunk id, cosine)`, best first; `None` (with a
    /// warning) when the query could not be embedded.
    fn vector_candidates(
        &self,
        backend: &dyn IndexBackend,
        readings: &[Reading],
        embedded: &Embedded,
        n_cand: usize,
        sources: &[Source],
        warnings: &mut Vec<String>,
    ) -> Result<Option<Vec<(i64, f32)>>> {
        if self.inner.embedder.is_none() {
            return Ok(None);
        }
        match embedded {
            Ok(vs) if vs.len() == readings.len() => {
                let mut out: Vec<(i64, f32)> = Vec::new();
                for (v, r) in vs.iter().zip(readings) {
                    let hits = backend.vector_search(v, n_cand, sources)?;
                    search::blend_vector(&mut out, &hits, r.weight);
                }
                Ok(Some(out))
            }
            Ok(_) => {
                warnings.push(
                    "the embedder returned no vector for the query; keyword results only".into(),
                );
                Ok(None)
            }
            Err(e) => {
                warnings.push(format!(
                    "query embedding failed ({e}); keyword results only"
                ));
                Ok(None)
            }
        }
    }
}

/// The keyword side of a search: its candidates `(chunk id, score)`, and
/// the query's tokens.
type KeywordSide = (Vec<(i64, f64)>, Vec<String>);

/// The query's readings embedded, or why not (said in the warnings).
type Embedded = std::result::Result<Vec<Vec<f32>>, String>;

fn embed_readings(emb: &dyn Embedder, readings: &[Reading]) -> Embedded {
    let texts: Vec<&str> = readings.iter().map(|r| r.text.as_str()).collect();
    emb.embed(&texts, EmbedKind::Query)
        .map_err(|e| e.to_string())
}

/// One way of reading the query, and how much its ranking weighs.
pub(crate) struct Reading {
    text: String,
    weight: f32,
}

/// The search options for a request's `mode`: the configured ones for a
/// hybrid search, or one side's weight alone (as `mnemo eval --mode` sets
/// them).
fn options_for(
    opts: &SearchOptions,
    mode: Option<SearchMode>,
) -> std::borrow::Cow<'_, SearchOptions> {
    use std::borrow::Cow;
    match mode {
        None | Some(SearchMode::Hybrid) => Cow::Borrowed(opts),
        Some(SearchMode::Keyword) => Cow::Owned(SearchOptions {
            vector_weight: 0.0,
            text_weight: 1.0,
            ..opts.clone()
        }),
        Some(SearchMode::Vector) => Cow::Owned(SearchOptions {
            vector_weight: 1.0,
            text_weight: 0.0,
            ..opts.clone()
        }),
    }
}

/// The query as searched: itself, or a dialogue's focus and context
/// ([`crate::dialogue`]) weighing `focus` and `1 - focus`; then the
/// request's expansions, which together take `weight` of the whole. The
/// first reading is the one dates are read from.
fn readings(query: &str, focus: f32, expansions: &[String], weight: f32) -> Vec<Reading> {
    let mut out = query_readings(query, focus);
    let expansions: Vec<&str> = expansions
        .iter()
        .map(|e| e.trim())
        .filter(|e| !e.is_empty())
        .collect();
    if weight > 0.0 && !expansions.is_empty() {
        for r in &mut out {
            r.weight *= 1.0 - weight;
        }
        let each = weight / expansions.len() as f32;
        out.extend(expansions.iter().map(|e| Reading {
            text: (*e).to_string(),
            weight: each,
        }));
    }
    out
}

fn query_readings(query: &str, focus: f32) -> Vec<Reading> {
    match crate::dialogue::parse(query).filter(|_| focus > 0.0) {
        Some(d) => vec![
            Reading {
                text: d.focus,
                weight: focus,
            },
            Reading {
                text: d.context,
                weight: 1.0 - focus,
            },
        ],
        None => vec![Reading {
            text: query.to_string(),
            weight: 1.0,
        }],
    }
}

/// Keyword candidates `(chunk id, -bm25)`, best first, with the BM25 of the
/// query's adjacent word pairs added (`phrase_weight`).
fn keyword_candidates(
    backend: &dyn IndexBackend,
    tokens: &[String],
    keyword_query: &str,
    opts: &SearchOptions,
    n_cand: usize,
    sources: &[Source],
) -> Result<Vec<(i64, f64)>> {
    let phrases = match opts.phrase_weight > 0.0 {
        true => text::query_phrases(keyword_query),
        false => Vec::new(),
    };
    if phrases.is_empty() {
        return backend.keyword_search(tokens, n_cand, sources);
    }
    // Both in one call: they read the same words.
    let mut both = backend
        .keyword_searches(&[tokens, &phrases], n_cand, sources)?
        .into_iter();
    let mut keyword = both.next().unwrap_or_default();
    let hits = both.next().unwrap_or_default();
    if !keyword.is_empty() {
        search::add_phrases(&mut keyword, &hits, opts.phrase_weight);
    }
    Ok(keyword)
}

/// What was said in the periods the query names is a candidate even when
/// no word or vector matched ("what did we talk about on 3 June?").
fn period_candidates(
    backend: &dyn IndexBackend,
    periods: &[when::Period],
    cands: &mut Vec<search::Candidate>,
    n_cand: usize,
    sources: &[Source],
) -> Result<()> {
    let Some(range) = backend.day_range()? else {
        return Ok(());
    };
    let mut known: HashSet<i64> = cands.iter().map(|c| c.id).collect();
    for (first, last) in when::windows(periods, range) {
        for id in backend.chunks_in_days(first, last, n_cand, sources)? {
            if known.insert(id) {
                cands.push(search::blank(id));
            }
        }
    }
    Ok(())
}

/// The candidates' chunks by id.
fn records_of(
    backend: &dyn IndexBackend,
    cands: &[search::Candidate],
) -> Result<HashMap<i64, ChunkRecord>> {
    let ids: Vec<i64> = cands.iter().map(|c| c.id).collect();
    Ok(backend
        .chunks(&ids)?
        .into_iter()
        .map(|r| (r.id, r))
        .collect())
}

/// Sets the parts `message_hits` splits on the chunks of the candidates
/// left after the minimum score: transcripts stored their messages,
/// Markdown blocks are found here.
fn set_parts(
    records: &mut HashMap<i64, ChunkRecord>,
    cands: &[search::Candidate],
    opts: &SearchOptions,
) {
    for c in cands {
        let Some(r) = records.get_mut(&c.id) else {
            continue;
        };
        if r.messages.is_none() && opts.block_hits {
            r.parts = chunk::markdown_parts(&r.text, r.start_line);
        } else if r.messages.is_some() && !opts.message_hits {
            r.parts.clear();
        }
    }
}

/// The hit for a whole chunk, or for one of its messages.
fn hit(x: &search::Ranked, r: &ChunkRecord, tokens: &[String], snippet_chars: usize) -> SearchHit {
    let part = x.part.and_then(|i| r.parts.get(i).map(|p| (i, p)));
    let (start_line, end_line, body, messages) = match part {
        // A message: one JSONL line.
        Some((i, p)) if r.messages.is_some() => (
            p.line,
            p.line,
            MessagePart::text_of(&r.parts, i, &r.text),
            Some((p.ordinal, p.ordinal)),
        ),
        // A Markdown block: its lines, without the blank ones after it.
        Some((i, p)) => {
            let body = MessagePart::text_of(&r.parts, i, &r.text).trim_end();
            let end = p.line + body.lines().count().saturating_sub(1);
            (p.line, end.min(r.end_line), body, None)
        }
        None => (r.start_line, r.end_line, r.text.as_str(), r.messages),
    };
    SearchHit {
        path: r.path.clone(),
        start_line,
        end_line,
        score: x.score,
        vector_score: x.cand.vector,
        text_score: x.cand.text,
        snippet: text::snippet(body, tokens, snippet_chars),
        source: r.source,
        citation: format!("{}#L{start_line}-L{end_line}", r.path),
        session_key: r.session_key.clone(),
        message_range: messages,
        // A message's own day when it was stored, else the chunk's days.
        date: part
            .and_then(|(_, p)| p.day)
            .map(|d| (d, d))
            .or(r.days)
            .map(|(first, last)| {
                if first == last {
                    first.to_string()
                } else {
                    format!("{first}/{last}")
                }
            }),
        trace: Some(x.cand.trace),
    }
}
