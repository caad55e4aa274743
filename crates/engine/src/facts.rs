//! The fact-level write path, end to end: the messages of a round become
//! proposals ([`crate::extract`], one constrained model call per batch of
//! messages that fits the window), the code checks and decides them
//! ([`crate::adjudicate`]: evidence, junk, dates, keys, supersession,
//! retraction, said-again), asking the model one yes/no question only
//! for a pair of facts it cannot tell apart, and the decisions are
//! applied to `memory/facts.md` under the memory lock, each change and
//! each refusal (with why) in `memory/audit.jsonl`, the round in
//! `memory/HISTORY.md`.
//!
//! The model is asked without the lock ([`Engine::plan_facts`]); under the
//! lock ([`Engine::apply_facts`]) the decisions are made again against the
//! facts file as it is then, with the model's answers already given (a
//! question the changed file raises is answered "no": nothing is ended on
//! a guess). Nothing is deleted: an ended fact stays under "No longer
//! true" with the day it ended and what replaced or retracted it.
//!
//! Consolidation (`consolidation_mode = "facts"`) runs it on the round's
//! messages and moves the cursor; the memory flush (`flush_mode =
//! "facts"`) runs it on the messages not yet consolidated. Both keep the
//! round's guarantees ([`crate::rounds`]): a failed model call leaves the
//! cursor and counts one failed run, a crash repeats at most the round,
//! whose facts are then said again (a source added, no line).

use mnemo_core::Message;
use mnemo_llm::{
    is_tool_choice_unsupported_text, ChatRequest, ChatResponse, ErrorKind, ToolChoice,
};
use mnemo_store::memory::facts::AuditRecord;
use serde::Serialize;
use serde_json::Value;

use crate::adjudicate::{self, Answers, Checked, Decision, Refusal};
use crate::engine::Engine;
use crate::error::Result;
use crate::extract::{self, Question};

/// What a fact-level round did to the facts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FactRound {
    /// Facts the model proposed.
    pub extracted: usize,
    /// Facts added (ids).
    pub added: Vec<String>,
    /// Facts that replaced another: `(old, new)` ids.
    pub updated: Vec<(String, String)>,
    /// Facts ended without a replacement (retracted).
    pub deleted: Vec<String>,
    /// Proposals that changed nothing (said again, a retraction naming
    /// nothing current).
    pub unchanged: usize,
    /// Proposals a current fact already said: it gained their source.
    pub duplicates: usize,
    /// Proposals not stored, each with why.
    pub refused: Vec<String>,
    /// Proposals whose sentence was written again from their checked
    /// subject, attribute and value.
    pub rewritten: usize,
    /// Yes/no questions the model answered.
    pub questions: usize,
    /// Model calls the round took.
    pub model_calls: usize,
}

/// What the model proposed for a round and what the code made of it,
/// before anything is written.
#[derive(Debug, Clone, Default)]
pub struct FactPlan {
    /// Proposals made.
    pub proposed: usize,
    /// Proposals that passed the checks, in message order.
    pub checked: Vec<Checked>,
    /// The session ordinal of each checked fact's message.
    pub ordinals: Vec<usize>,
    /// Proposals refused, with why.
    pub refused: Vec<Refusal>,
    /// The model's answers to the yes/no questions.
    pub answers: Answers,
    /// Model calls made.
    pub calls: usize,
    /// A call fell back from a forced tool to `auto`.
    pub fell_back: bool,
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

    /// Tokens of messages one extraction request may show: the window
    /// less the answer, the prompt and a margin for counting.
    pub(crate) fn extraction_budget(&self) -> usize {
        let t = self.thresholds();
        let fixed = self
            .counter
            .count_text(crate::templates::FACTS_EXTRACT_PROMPT)
            + self
                .counter
                .count_text(crate::templates::FACTS_EXTRACT_USER)
            + extract::EXTRACT_MAX_TOKENS as usize;
        t.context_window
            .saturating_sub(fixed)
            .saturating_sub(t.context_window / 10)
            .max(256)
    }

    /// Asks the model for the facts of `messages` (no lock held; `first`
    /// is the session ordinal of `messages[0]`, `ordinals` maps each to its
    /// own when they are not consecutive), checks them, and asks the yes/no
    /// questions the decisions need against the facts file as it is now.
    /// A failed extraction call is an error (the round fails and is tried
    /// again); a failed question is answered "no".
    pub(crate) async fn plan_facts(
        &self,
        messages: &[Message],
        ordinals: &[usize],
    ) -> Result<FactPlan> {
        let now = self.now();
        let today = self.memory.today(now);
        let mut plan = FactPlan::default();
        let budget = self.extraction_budget().min(extract::BATCH_TOKENS);
        let mut queue: std::collections::VecDeque<std::ops::Range<usize>> =
            extract::batches(messages, &*self.counter, budget).into();
        while let Some(range) = queue.pop_front() {
            let batch = &messages[range.clone()];
            let (args, fell_back, calls) = self
                .ask_tool(
                    &|choice| extract::extract_request(batch, choice),
                    "extract_facts",
                )
                .await?;
            plan.calls += calls;
            plan.fell_back |= fell_back;
            tracing::debug!(target: "mnemo::write_path", "extract_facts answered {args}");
            let proposed = extract::parse_extracted(&args)?;
            plan.proposed += proposed.len();
            let (checked, refused) = adjudicate::check(&proposed, batch, today);
            if let Some(rest) = unread_after_cap(proposed.len(), &checked, &refused, &range) {
                queue.push_front(rest);
            }
            for mut c in checked {
                c.message += range.start;
                plan.ordinals
                    .push(ordinals.get(c.message).copied().unwrap_or(c.message));
                plan.checked.push(c);
            }
            // Refusals name the session ordinal of their message.
            plan.refused.extend(refused.into_iter().map(|mut r| {
                r.message = r.message.map(|m| {
                    ordinals
                        .get(m + range.start)
                        .copied()
                        .unwrap_or(m + range.start)
                });
                r
            }));
        }
        // What the code reads that the model missed (requests to forget,
        // confirmed offers), in the round's message order.
        let code = adjudicate::unproposed(messages, &plan.checked, today);
        // A proposal the code reads again under another key ("Marisol's
        // move is Bilbao" for "Marisol moved to Bilbao"), or of the same
        // sentence saying nothing more, gives way to the code's reading.
        (plan.checked, plan.ordinals) = std::mem::take(&mut plan.checked)
            .into_iter()
            .zip(std::mem::take(&mut plan.ordinals))
            .filter(|(c, _)| !code.iter().any(|k| adjudicate::gives_way(k, c)))
            .unzip();
        for c in code {
            plan.ordinals
                .push(ordinals.get(c.message).copied().unwrap_or(c.message));
            plan.checked.push(c);
        }
        if plan.checked.is_empty() {
            return Ok(plan);
        }
        // The questions the decisions raise, answered until none is new.
        let names = adjudicate::user_names(messages);
        let snapshot = self.memory.read_facts()?;
        loop {
            let mut sim = snapshot.clone();
            adjudicate::decide(&mut sim, &plan.checked, &names, now, &[], &mut plan.answers)?;
            let open = std::mem::take(&mut plan.answers.open);
            if open.is_empty() {
                break;
            }
            for pair in open {
                let q: Question = pair.question.into();
                let yes = match self
                    .ask_tool(
                        &|choice| extract::judge_request(q, &pair.old, &pair.new, choice),
                        "judge",
                    )
                    .await
                {
                    Ok((args, _, calls)) => {
                        plan.calls += calls;
                        extract::parse_judge(&args).unwrap_or(false)
                    }
                    Err(e) => {
                        tracing::debug!("judge question failed ({e}); answered no");
                        plan.calls += 1;
                        false
                    }
                };
                plan.answers.asked += 1;
                plan.answers.known.insert(pair, yes);
            }
        }
        Ok(plan)
    }

    /// Applies `plan` to the facts file under the memory lock, deciding
    /// again against the file as it is now, and records every change and
    /// refusal in the audit log. `key` names the session (the sources are
    /// `key ORDINAL..ORDINAL+1`); `by` is what ran it (`consolidation`,
    /// `flush`).
    pub(crate) fn apply_facts(
        &self,
        plan: &FactPlan,
        messages: &[Message],
        key: &str,
        range: (usize, usize),
        by: &str,
    ) -> Result<FactRound> {
        let now = self.now();
        let _lock = self.memory.lock()?;
        let mut file = self.memory.read_facts()?;
        let names = adjudicate::user_names(messages);
        let sources: Vec<Option<String>> = plan
            .ordinals
            .iter()
            .map(|o| Some(format!("{key} {o}..{}", o + 1)))
            .collect();
        let mut answers = plan.answers.clone();
        let before = file.clone();
        let decisions = adjudicate::decide(
            &mut file,
            &plan.checked,
            &names,
            now,
            &sources,
            &mut answers,
        )?;
        let mut round = FactRound {
            extracted: plan.proposed,
            rewritten: plan.checked.iter().filter(|c| c.rewritten).count(),
            questions: plan.answers.asked,
            model_calls: plan.calls,
            ..Default::default()
        };
        let mut audit: Vec<AuditRecord> = Vec::new();
        let record = |op: &str, memory: &str, message: Option<usize>| AuditRecord {
            session: Some(key.to_string()),
            messages: Some(match message {
                Some(o) => format!("{o}..{}", o + 1),
                None => format!("{}..{}", range.0, range.1),
            }),
            ..AuditRecord::change(now, by, op, memory, None, None, None)
        };
        for (((decision, id), c), ordinal) in
            decisions.iter().zip(&plan.checked).zip(&plan.ordinals)
        {
            let evidence = Some(c.evidence.clone());
            match decision {
                Decision::Add { why } => {
                    let id = id.clone().unwrap_or_default();
                    audit.push(AuditRecord {
                        new: Some(c.text.clone()),
                        evidence,
                        why: Some(why.clone()),
                        ..record("add", &id, Some(*ordinal))
                    });
                    round.added.push(id);
                }
                Decision::Supersede { ends, why } => {
                    let id = id.clone().unwrap_or_default();
                    for old in ends {
                        audit.push(AuditRecord {
                            supersedes: Some(old.clone()),
                            old: before.get(old).map(|f| f.text.clone()),
                            new: Some(c.text.clone()),
                            evidence: evidence.clone(),
                            why: Some(why.clone()),
                            ..record("update", &id, Some(*ordinal))
                        });
                        round.updated.push((old.clone(), id.clone()));
                    }
                }
                Decision::Retract { ends, why } => {
                    for old in ends {
                        audit.push(AuditRecord {
                            old: before.get(old).map(|f| f.text.clone()),
                            evidence: evidence.clone(),
                            why: Some(why.clone()),
                            ..record("delete", old, Some(*ordinal))
                        });
                        round.deleted.push(old.clone());
                    }
                }
                Decision::Confirm { id } => {
                    audit.push(AuditRecord {
                        evidence,
                        why: Some("said again: a source added".into()),
                        ..record("confirm", id, Some(*ordinal))
                    });
                    round.duplicates += 1;
                    round.unchanged += 1;
                }
                Decision::Unmatched => {
                    audit.push(AuditRecord {
                        new: Some(c.text.clone()),
                        evidence,
                        why: Some("a retraction that names no current fact".into()),
                        ..record("refuse", "", Some(*ordinal))
                    });
                    round.unchanged += 1;
                }
            }
        }
        for r in &plan.refused {
            audit.push(AuditRecord {
                new: Some(r.fact.clone()),
                evidence: (!r.quote.is_empty()).then(|| r.quote.clone()),
                why: Some(r.why.clone()),
                ..record("refuse", "", r.message)
            });
            round.refused.push(format!("{:?}: {}", r.fact, r.why));
        }
        // Facts first, then the audit: a crash between the two repeats the
        // round, whose facts are then said again and change nothing.
        if file != before {
            self.memory.write_facts(&file)?;
        }
        mnemo_store::failpoint::hit("facts.after_write");
        self.memory.append_audit(&audit)?;
        Ok(round)
    }
}

/// The history entry of a fact-level round: what changed, by id (the
/// texts are in the facts file and the audit log; a copy here would be
/// one more stale line for search to find).
pub(crate) fn history_entry(round: &FactRound, stamp: &str, what: &str) -> String {
    let mut parts = Vec::new();
    if !round.added.is_empty() {
        parts.push(format!("added {}", round.added.join(", ")));
    }
    if !round.updated.is_empty() {
        parts.push(format!(
            "replaced {}",
            round
                .updated
                .iter()
                .map(|(a, b)| format!("{a} by {b}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !round.deleted.is_empty() {
        parts.push(format!("ended {}", round.deleted.join(", ")));
    }
    if round.duplicates > 0 {
        parts.push(format!("{} said again", round.duplicates));
    }
    if !round.refused.is_empty() {
        parts.push(format!(
            "{} refused (why: {})",
            round.refused.len(),
            mnemo_store::memory::facts::AUDIT_FILE
        ));
    }
    if parts.is_empty() {
        parts.push("nothing to keep".into());
    }
    format!(
        "[{stamp}] {what}: {} fact(s) proposed\n[{}: {}]",
        round.extracted,
        mnemo_store::memory::facts::FACTS_FILE,
        parts.join("; ")
    )
}

/// The messages of `range` that a call which listed as many facts as it
/// may ([`extract::MAX_FACTS`]) did not reach: those after the last message
/// any of its facts came from. They are asked about again, so a round's
/// later messages are not lost to the cap (a small model lists the first
/// messages' facts, small talk included, until the list is full).
fn unread_after_cap(
    listed: usize,
    checked: &[adjudicate::Checked],
    refused: &[adjudicate::Refusal],
    range: &std::ops::Range<usize>,
) -> Option<std::ops::Range<usize>> {
    if listed < extract::MAX_FACTS {
        return None;
    }
    let last = checked
        .iter()
        .map(|c| c.message)
        .chain(refused.iter().filter_map(|r| r.message))
        .max()?;
    let next = range.start + last + 1;
    (next < range.end).then_some(next..range.end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_history_names_ids_not_texts() {
        let round = FactRound {
            extracted: 4,
            added: vec!["f3".into()],
            updated: vec![("f1".into(), "f3".into())],
            deleted: vec!["f2".into()],
            duplicates: 1,
            refused: vec!["\"Hi\": small talk".into()],
            ..Default::default()
        };
        insta::assert_snapshot!(
            history_entry(&round, "2026-12-05 10:00", "cli:direct messages 4..10"),
            @r"
        [2026-12-05 10:00] cli:direct messages 4..10: 4 fact(s) proposed
        [memory/facts.md: added f3; replaced f1 by f3; ended f2; 1 said again; 1 refused (why: memory/audit.jsonl)]
        "
        );
    }
}
