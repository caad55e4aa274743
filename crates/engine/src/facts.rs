//! Fact-level consolidation (`[engine] consolidation_mode = "facts"`,
//! Mem0's design on mnemo's files): the model extracts facts from the
//! messages past the cursor (a forced `extract_facts` call), each fact is
//! compared with the most similar existing facts (the index's hybrid
//! search through [`MemorySearch::memory_hits`], and a word-overlap ranking
//! of the facts file, so it works without an index), and the model decides
//! ADD, UPDATE, DELETE or NOOP for each (a forced `update_memory` call).
//!
//! Nothing the model says is written unchecked: under the memory lock the
//! operations are checked against the facts file as it is then. An
//! operation on an id that does not exist (or no longer is true), an
//! UPDATE without text or an unknown operation is refused and reported,
//! and its fact is added instead, so an extracted fact is never dropped; an
//! ADD of a fact that is already there (a repeated round, a model that
//! ignored the list) is a duplicate and changes nothing. An UPDATE or a
//! DELETE never removes a line: the old fact is ended (`until`) and kept
//! under "No longer true" (see [`mnemo_store::memory::facts`]). Every
//! change is appended to the audit log with the session and messages that
//! caused it.
//!
//! The round keeps consolidation's guarantees ([`crate::rounds`]): one
//! round at a time per session, the model asked without the lock, a crash
//! repeats at most the round (whose duplicates change nothing), a failed
//! model call counts one failed run and the cursor stays.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, NaiveDate, Utc};
use mnemo_core::Message;
use mnemo_llm::{
    is_tool_choice_unsupported_text, ChatRequest, ChatResponse, ErrorKind, ToolChoice, ToolSpec,
};
use mnemo_store::memory::facts::{self, AuditRecord, Fact, FactsFile};
use serde::Serialize;
use serde_json::{json, Value};

use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::history::format_lines;
use crate::templates;

/// Most facts one extraction may list. The bounds below are part of the
/// schema, so a local model's constrained decoding must close the call
/// within them: a small model otherwise copies the excerpt into the call
/// line by line until its budget runs out.
pub const MAX_FACTS: usize = 16;
/// Longest fact, in characters.
pub const MAX_FACT_CHARS: usize = 300;
/// Longest one-line history entry of an extraction, in characters.
pub const MAX_ENTRY_CHARS: usize = 400;

/// The `extract_facts` tool.
pub fn extract_facts_tool() -> ToolSpec {
    ToolSpec::new(
        "extract_facts",
        "Save the durable facts of the conversation excerpt, one per item.",
        json!({
            "type": "object",
            "properties": {
                "facts": {"type": "array", "items": {"type": "string", "maxLength": MAX_FACT_CHARS}, "maxItems": MAX_FACTS, "description": "Short self-contained facts, one per item, in the conversation's language; empty when there is nothing durable."},
                "history_entry": {"type": "string", "maxLength": MAX_ENTRY_CHARS, "description": "One line on what the excerpt was about, starting with [YYYY-MM-DD HH:MM]."}
            },
            "required": ["facts", "history_entry"]
        }),
    )
}

/// The `update_memory` tool for `facts` new facts: at most two operations
/// each (a retraction may delete two memories), which the schema says, so
/// a local model is held to it.
pub fn update_memory_tool(facts: usize) -> ToolSpec {
    ToolSpec::new(
        "update_memory",
        "Decide, for each new fact, how the memory changes.",
        json!({
            "type": "object",
            "properties": {
                "operations": {
                    "type": "array",
                    "maxItems": facts.max(1) * 2,
                    "items": {
                        "type": "object",
                        "properties": {
                            "fact": {"type": "integer", "description": "The new fact's number."},
                            "event": {"type": "string", "enum": ["ADD", "UPDATE", "DELETE", "NOOP"]},
                            "id": {"type": "string", "maxLength": 40, "description": "The existing memory's id (UPDATE, DELETE, NOOP)."},
                            "text": {"type": "string", "maxLength": MAX_FACT_CHARS, "description": "The fact as it is to be stored (ADD, UPDATE)."}
                        },
                        "required": ["fact", "event"]
                    }
                }
            },
            "required": ["operations"]
        }),
    )
}

/// What the model extracted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extracted {
    /// The facts, in order, blank ones left out.
    pub facts: Vec<String>,
    /// Its one-line summary, when it wrote one.
    pub history_entry: Option<String>,
}

/// One operation of the model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Operation {
    /// The new fact it is about (0-based).
    pub fact: Option<usize>,
    /// `ADD`, `UPDATE`, `DELETE`, `NOOP`.
    pub event: String,
    /// The existing memory.
    pub id: Option<String>,
    /// The text to store.
    pub text: Option<String>,
}

/// What a fact-level round did to the facts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FactRound {
    /// Facts the model extracted.
    pub extracted: usize,
    /// Facts added (ids).
    pub added: Vec<String>,
    /// Facts that replaced another: `(old, new)` ids.
    pub updated: Vec<(String, String)>,
    /// Facts ended without a replacement (retracted).
    pub deleted: Vec<String>,
    /// Operations that changed nothing (NOOP, an ADD already there).
    pub unchanged: usize,
    /// ADDs of a fact the file already held, absorbed.
    pub duplicates: usize,
    /// Operations refused, each with why (their facts were added instead
    /// when they carried text).
    pub refused: Vec<String>,
    /// Model calls the round took.
    pub model_calls: usize,
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => ["text", "fact", "content"]
            .iter()
            .find_map(|k| o.get(*k).and_then(Value::as_str).map(str::to_string)),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Reads `extract_facts` arguments: `facts` must be a list (of strings, or
/// objects with a `text`); `history_entry` is optional.
pub fn parse_extracted(args: &Value) -> Result<Extracted> {
    let obj = crate::consolidate::tool_arguments(args, "extract_facts")?;
    let list = match obj.get("facts") {
        Some(Value::Array(a)) => a.clone(),
        // One fact as a string: a weak model's shortcut.
        Some(Value::String(s)) if !s.trim().is_empty() => vec![Value::String(s.clone())],
        Some(Value::String(_)) => Vec::new(),
        None | Some(Value::Null) => {
            return Err(Error::BadAnswer("extract_facts: `facts` is missing".into()))
        }
        Some(_) => {
            return Err(Error::BadAnswer(
                "extract_facts: `facts` is not a list".into(),
            ))
        }
    };
    let mut seen = HashSet::new();
    let facts = list
        .iter()
        .filter_map(as_text)
        .map(|s| facts::one_line(&s))
        .filter(|s| !s.is_empty() && seen.insert(norm(s)))
        .collect();
    let history_entry = obj
        .get("history_entry")
        .and_then(Value::as_str)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    Ok(Extracted {
        facts,
        history_entry,
    })
}

/// Reads `update_memory` arguments: `operations` must be a list of
/// objects; each is checked later, against the facts file.
pub fn parse_operations(args: &Value) -> Result<Vec<Operation>> {
    let obj = crate::consolidate::tool_arguments(args, "update_memory")?;
    let Some(Value::Array(list)) = obj.get("operations").or_else(|| obj.get("memory")) else {
        return Err(Error::BadAnswer(
            "update_memory: `operations` is missing or not a list".into(),
        ));
    };
    let mut out = Vec::new();
    for (n, item) in list.iter().enumerate() {
        let Value::Object(o) = item else {
            return Err(Error::BadAnswer(format!(
                "update_memory: operation {} is not an object",
                n + 1
            )));
        };
        let fact = match o.get("fact") {
            Some(Value::Number(x)) => x.as_u64().map(|x| x as usize),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        };
        let event = o
            .get("event")
            .or_else(|| o.get("op"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_uppercase();
        let id = o
            .get("id")
            .and_then(as_text)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty());
        let text = o.get("text").and_then(as_text).map(|s| facts::one_line(&s));
        out.push(Operation {
            fact,
            event,
            id,
            text,
        });
    }
    Ok(out)
}

/// Text compared for duplicates: lower case, words only.
fn norm(text: &str) -> String {
    words(text).join(" ")
}

/// Words for the overlap ranking: lower-cased alphanumeric runs, and each
/// character of scripts written without spaces.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() {
            continue;
        }
        if w.is_ascii() {
            out.push(w.to_lowercase());
        } else {
            out.extend(w.chars().map(|c| c.to_lowercase().to_string()));
        }
    }
    out
}

/// The `limit` current facts that share the most words with `text`, best
/// first (those sharing none are left out).
pub fn lexical_similar<'a>(file: &'a FactsFile, text: &str, limit: usize) -> Vec<&'a Fact> {
    let q: HashSet<String> = words(text)
        .into_iter()
        .filter(|w| w.chars().count() > 1 || !w.is_ascii())
        .collect();
    let mut scored: Vec<(f64, &Fact)> = file
        .current()
        .filter_map(|f| {
            let fw: HashSet<String> = words(&f.text).into_iter().collect();
            let shared = q.intersection(&fw).count();
            (shared > 0).then(|| {
                (
                    shared as f64 / ((q.len() * fw.len()) as f64).sqrt().max(1.0),
                    f,
                )
            })
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(limit).map(|(_, f)| f).collect()
}

impl Engine {
    /// One request with a forced tool, falling back to `auto` where the
    /// provider refuses forced choices (as consolidation does).
    pub(crate) async fn ask_tool(
        &self,
        build: &(dyn Fn(ToolChoice) -> ChatRequest + Sync),
        tool: &str,
    ) -> Result<(Value, bool, usize)> {
        let forced = ToolChoice::Function(tool.into());
        let mut calls = 1;
        let resp: ChatResponse = match self.model.complete(build(forced)).await {
            Ok(r) if r.finish_reason == "error" && is_tool_choice_unsupported_text(&r.text()) => {
                calls += 1;
                self.model.complete(build(ToolChoice::Auto)).await?
            }
            Ok(r) => r,
            Err(e) if e.kind() == ErrorKind::ToolChoiceUnsupported => {
                calls += 1;
                self.model.complete(build(ToolChoice::Auto)).await?
            }
            Err(e) => return Err(e.into()),
        };
        let arguments = crate::consolidate::forced_call_arguments(&resp, tool)?;
        Ok((arguments.clone(), calls > 1, calls))
    }

    /// The extraction request for a chunk.
    pub(crate) fn extract_request(&self, chunk: &[Message], choice: ToolChoice) -> ChatRequest {
        let user = templates::render(
            templates::FACTS_EXTRACT_USER,
            &[
                ("count", &chunk.len().to_string()),
                ("lines", format_lines(chunk).trim_end()),
            ],
        );
        ChatRequest::new(vec![Message::user(user.trim_end().to_string())])
            .with_system(templates::FACTS_EXTRACT_PROMPT.trim_end().to_string())
            .with_tools(vec![extract_facts_tool()])
            .with_tool_choice(choice)
    }

    /// The decision request: the new facts and the existing memories most
    /// like them.
    pub(crate) fn update_request(
        &self,
        new: &[String],
        similar: &[Fact],
        choice: ToolChoice,
    ) -> ChatRequest {
        let memories = if similar.is_empty() {
            "(none)".to_string()
        } else {
            similar
                .iter()
                .map(|f| match f.since {
                    Some(s) => format!("- [{}] {} (since {s})", f.id, f.text),
                    None => format!("- [{}] {}", f.id, f.text),
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let facts: String = new
            .iter()
            .enumerate()
            .map(|(i, f)| format!("{i}. {f}"))
            .collect::<Vec<_>>()
            .join("\n");
        let user = templates::render(
            templates::FACTS_UPDATE_USER,
            &[("memories", &memories), ("facts", &facts)],
        );
        ChatRequest::new(vec![Message::user(user.trim_end().to_string())])
            .with_system(templates::FACTS_UPDATE_PROMPT.trim_end().to_string())
            .with_tools(vec![update_memory_tool(new.len())])
            .with_tool_choice(choice)
    }

    /// The existing current facts most like each new fact: the index's
    /// hits in the facts file first, then the word-overlap ranking; at
    /// most `facts_similar` per fact, each memory once.
    pub(crate) fn similar_facts(
        &self,
        file: &FactsFile,
        new: &[String],
        hits: &[Vec<crate::recall::MemoryHit>],
    ) -> Vec<Fact> {
        let per = self.settings.facts_similar.max(1);
        let mut out: Vec<Fact> = Vec::new();
        let mut seen = HashSet::new();
        for (n, text) in new.iter().enumerate() {
            let mut picked = 0;
            for h in hits
                .get(n)
                .into_iter()
                .flatten()
                .filter(|h| h.path == facts::FACTS_FILE)
            {
                for line in h.start_line..=h.end_line.max(h.start_line) {
                    if let Some(f) = file.fact_at_line(line) {
                        if f.is_current() && picked < per && seen.insert(f.id.clone()) {
                            out.push(f.clone());
                            picked += 1;
                        }
                    }
                }
            }
            for f in lexical_similar(file, text, per) {
                if picked >= per {
                    break;
                }
                if seen.insert(f.id.clone()) {
                    out.push(f.clone());
                    picked += 1;
                }
            }
        }
        out
    }

    /// Asks the model for facts and decisions (no lock held). Returns the
    /// extraction, the operations, whether a call fell back to `auto`, and
    /// the model calls made.
    pub(crate) async fn ask_facts(
        &self,
        chunk: &[Message],
    ) -> Result<(Extracted, Vec<Operation>, bool, usize)> {
        let (args, fb1, c1) = self
            .ask_tool(
                &|choice| self.extract_request(chunk, choice),
                "extract_facts",
            )
            .await?;
        let extracted = parse_extracted(&args)?;
        if extracted.facts.is_empty() {
            return Ok((extracted, Vec::new(), fb1, c1));
        }
        let (ops, fb2, c2) = self.decide_facts(&extracted.facts).await?;
        Ok((extracted, ops, fb1 || fb2, c1 + c2))
    }

    /// Asks the model what to do with each new fact, shown with the most
    /// similar current facts (no lock held): the `update_memory` call of
    /// consolidation and of the flush in `flush_mode = "facts"`. Returns
    /// the operations (unchecked), whether the call fell back to `auto`,
    /// and the model calls made.
    pub(crate) async fn decide_facts(
        &self,
        new: &[String],
    ) -> Result<(Vec<Operation>, bool, usize)> {
        let extracted = Extracted {
            facts: new.to_vec(),
            history_entry: None,
        };
        // The index is synchronous (SQLite, the embedding model): searched
        // off the async threads, one search per new fact.
        let hits = match self.searcher.clone() {
            Some(search) => {
                let texts = extracted.facts.clone();
                let limit = self.settings.facts_similar.max(1) * 3;
                tokio::task::spawn_blocking(move || {
                    texts
                        .iter()
                        .map(|t| {
                            search.memory_hits(t, limit).unwrap_or_else(|e| {
                                tracing::debug!("fact search: {e}; using word overlap only");
                                Vec::new()
                            })
                        })
                        .collect::<Vec<_>>()
                })
                .await
                .unwrap_or_default()
            }
            None => Vec::new(),
        };
        let file = self.memory.read_facts()?;
        let similar = self.similar_facts(&file, &extracted.facts, &hits);
        let (args, fb2, c2) = self
            .ask_tool(
                &|choice| self.update_request(&extracted.facts, &similar, choice),
                "update_memory",
            )
            .await?;
        let ops = parse_operations(&args)?;
        Ok((ops, fb2, c2))
    }

    /// Applies the operations to the facts file under the memory lock,
    /// checking each against the file as it is now, and records every
    /// change in the audit log. `since` is the day the facts were stated.
    pub(crate) fn apply_fact_operations(
        &self,
        extracted: &Extracted,
        ops: &[Operation],
        since: Option<NaiveDate>,
        session: Option<(&str, usize, usize)>,
        by: &str,
    ) -> Result<FactRound> {
        let now = self.now();
        let _lock = self.memory.lock()?;
        let mut file = self.memory.read_facts()?;
        let mut round = FactRound {
            extracted: extracted.facts.len(),
            ..Default::default()
        };
        let mut audit: Vec<AuditRecord> = Vec::new();
        let source = session.map(|(k, a, b)| format!("{k} {a}..{b}"));
        let record = |op: &str,
                      memory: &str,
                      supersedes: Option<&str>,
                      old: Option<&str>,
                      new: Option<&str>| AuditRecord {
            session: session.map(|(k, _, _)| k.to_string()),
            messages: session.map(|(_, a, b)| format!("{a}..{b}")),
            ..AuditRecord::change(now, by, op, memory, supersedes, old, new)
        };
        // Facts some valid operation accounted for.
        let mut covered: HashSet<usize> = HashSet::new();
        // Facts whose operation was refused although it carried text.
        let mut orphaned: Vec<usize> = Vec::new();
        let current_text = |file: &FactsFile| -> HashMap<String, String> {
            file.current()
                .map(|f| (norm(&f.text), f.id.clone()))
                .collect()
        };
        for (n, op) in ops.iter().enumerate() {
            let label = format!(
                "operation {} ({})",
                n + 1,
                if op.event.is_empty() {
                    "no event"
                } else {
                    &op.event
                }
            );
            let fact = op.fact.filter(|i| *i < extracted.facts.len());
            if let (Some(i), None) = (op.fact, fact) {
                if op.text.as_deref().is_none_or(str::is_empty) {
                    round
                        .refused
                        .push(format!("{label}: there is no new fact {i}"));
                    continue;
                }
            }
            let fact_text = fact.and_then(|i| extracted.facts.get(i)).cloned();
            let text = op.text.clone().filter(|t| !t.is_empty());
            let existing = op.id.as_deref().and_then(|id| file.get(id)).cloned();
            match op.event.as_str() {
                "ADD" => {
                    let Some(t) = text.or(fact_text) else {
                        round
                            .refused
                            .push(format!("{label}: ADD without a fact or text"));
                        continue;
                    };
                    if let Some(i) = fact {
                        covered.insert(i);
                    }
                    if current_text(&file).contains_key(&norm(&t)) {
                        round.duplicates += 1;
                        round.unchanged += 1;
                        continue;
                    }
                    let id = file.add(&t, since, now, source.clone());
                    audit.push(record("add", &id, None, None, Some(&t)));
                    round.added.push(id);
                }
                "UPDATE" => {
                    let Some(old) = existing.filter(Fact::is_current) else {
                        round.refused.push(format!(
                            "{label}: UPDATE of {}: no such current memory",
                            op.id
                                .as_deref()
                                .map_or("no id".to_string(), |i| format!("{i:?}"))
                        ));
                        if text.is_some() || fact_text.is_some() {
                            orphaned.extend(fact);
                        }
                        continue;
                    };
                    let Some(t) = text else {
                        round.refused.push(format!(
                            "{label}: UPDATE of {} with empty text: the memory is kept as it is",
                            old.id
                        ));
                        if let Some(i) = fact {
                            orphaned.push(i);
                        }
                        continue;
                    };
                    if let Some(i) = fact {
                        covered.insert(i);
                    }
                    if norm(&t) == norm(&old.text) {
                        round.unchanged += 1;
                        continue;
                    }
                    if let Some(dup) = current_text(&file).get(&norm(&t)).cloned() {
                        // The new value is already a fact: end the old one
                        // in its favour.
                        file.end(&old.id, since, Some(&dup))?;
                        audit.push(record(
                            "update",
                            &dup,
                            Some(&old.id),
                            Some(&old.text),
                            Some(&t),
                        ));
                        round.updated.push((old.id.clone(), dup));
                        continue;
                    }
                    let id = file.add(&t, since, now, source.clone());
                    file.end(&old.id, since, Some(&id))?;
                    audit.push(record(
                        "update",
                        &id,
                        Some(&old.id),
                        Some(&old.text),
                        Some(&t),
                    ));
                    round.updated.push((old.id.clone(), id));
                }
                "DELETE" => {
                    let Some(old) = existing.filter(Fact::is_current) else {
                        round.refused.push(format!(
                            "{label}: DELETE of {}: no such current memory",
                            op.id
                                .as_deref()
                                .map_or("no id".to_string(), |i| format!("{i:?}"))
                        ));
                        continue;
                    };
                    if let Some(i) = fact {
                        covered.insert(i);
                    }
                    file.end(&old.id, since, None)?;
                    audit.push(record("delete", &old.id, None, Some(&old.text), None));
                    round.deleted.push(old.id.clone());
                }
                "NOOP" => {
                    if let Some(id) = &op.id {
                        if file.get(id).is_none() {
                            round
                                .refused
                                .push(format!("{label}: NOOP on {id:?}: no such memory"));
                            orphaned.extend(fact);
                            continue;
                        }
                    }
                    if let Some(i) = fact {
                        covered.insert(i);
                    }
                    round.unchanged += 1;
                }
                other => {
                    round.refused.push(format!(
                        "{label}: unknown operation {other:?} (ADD, UPDATE, DELETE or NOOP)"
                    ));
                    orphaned.extend(fact);
                }
            }
        }
        // A fact no valid operation accounted for is added rather than
        // lost (unless it is already there).
        let mut missing: Vec<usize> = orphaned;
        missing.extend((0..extracted.facts.len()).filter(|i| !covered.contains(i)));
        let mut done = HashSet::new();
        for i in missing {
            if covered.contains(&i) || !done.insert(i) {
                continue;
            }
            let Some(t) = extracted.facts.get(i) else {
                continue;
            };
            if current_text(&file).contains_key(&norm(t)) {
                round.duplicates += 1;
                round.unchanged += 1;
                continue;
            }
            let id = file.add(t, since, now, source.clone());
            audit.push(record("add", &id, None, None, Some(t)));
            round.added.push(id);
        }
        // Facts first, then the audit: a crash between the two repeats the
        // round, whose duplicates change nothing.
        self.memory.write_facts(&file)?;
        mnemo_store::failpoint::hit("facts.after_write");
        self.memory.append_audit(&audit)?;
        Ok(round)
    }

    /// The day a chunk's facts were stated: its last message's, else today.
    pub(crate) fn chunk_day(&self, chunk: &[Message], now: DateTime<Utc>) -> NaiveDate {
        chunk
            .iter()
            .rev()
            .find_map(|m| m.timestamp.as_deref())
            .and_then(|t| {
                DateTime::parse_from_rfc3339(t)
                    .map(|d| d.date_naive())
                    .ok()
                    .or_else(|| t.get(..10).and_then(|d| d.parse().ok()))
            })
            .unwrap_or_else(|| self.memory.today(now))
    }
}

/// The history entry of a fact-level round: the model's summary, then what
/// changed.
pub(crate) fn history_entry(extracted: &Extracted, round: &FactRound, stamp: &str) -> String {
    let mut entry = extracted.history_entry.clone().unwrap_or_else(|| {
        format!(
            "[{stamp}] {} fact(s) from the conversation",
            extracted.facts.len()
        )
    });
    let mut parts = Vec::new();
    if !round.added.is_empty() {
        parts.push(format!("added {}", round.added.join(", ")));
    }
    if !round.updated.is_empty() {
        parts.push(format!(
            "updated {}",
            round
                .updated
                .iter()
                .map(|(a, b)| format!("{a} -> {b}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !round.deleted.is_empty() {
        parts.push(format!("ended {}", round.deleted.join(", ")));
    }
    if round.unchanged > 0 {
        parts.push(format!("{} unchanged", round.unchanged));
    }
    if !parts.is_empty() {
        entry.push_str(&format!("\n[{}: {}]", facts::FACTS_FILE, parts.join("; ")));
    }
    for r in &round.refused {
        entry.push_str(&format!("\n[refused: {r}]"));
    }
    entry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_weak_answers() {
        let e = parse_extracted(
            &json!({"facts": ["Likes tea.", "", {"text": "Has a cat."}, "likes tea"]}),
        )
        .unwrap();
        assert_eq!(e.facts, vec!["Likes tea.", "Has a cat."]);
        assert!(e.history_entry.is_none());
        assert!(parse_extracted(&json!({"history_entry": "x"})).is_err());
        assert!(parse_extracted(&json!({"facts": 3})).is_err());
        assert!(parse_extracted(&json!("not json")).is_err());
        let ops = parse_operations(&json!(json!({"operations": [{"fact": "0", "event": "add"}, {"event": "update", "id": "f1", "text": "x"}]}).to_string())).unwrap();
        assert_eq!(ops[0].fact, Some(0));
        assert_eq!(ops[0].event, "ADD");
        assert_eq!(ops[1].id.as_deref(), Some("f1"));
        assert!(parse_operations(&json!({"operations": "ADD"})).is_err());
        assert!(parse_operations(&json!({"operations": [3]})).is_err());
    }

    #[test]
    fn overlap_ranks_the_closest_fact_first() {
        let now = Utc::now();
        let mut f = FactsFile::parse("");
        f.add("Lives in Paris.", None, now, None);
        f.add("Has a cat named Biscuit.", None, now, None);
        f.add("住在上海。", None, now, None);
        let got: Vec<&str> = lexical_similar(&f, "The user lives in Berlin now", 5)
            .iter()
            .map(|f| f.id.as_str())
            .collect();
        assert_eq!(got, vec!["f1"]);
        let got: Vec<&str> = lexical_similar(&f, "现在住在北京", 5)
            .iter()
            .map(|f| f.id.as_str())
            .collect();
        assert_eq!(got, vec!["f3"]);
    }
}
