//! Dream (`mnemo dream`): tidies long-term memory between conversations.
//! [`Engine::dream`] reads the memory under its lock, runs six passes in
//! turn over one working state (`state.rs`: the facts file, the typed
//! memories the dream writes into, the items it folded, and the report and
//! audit records the passes add to), then checks what they did and writes
//! it. Each pass only ends, adds or moves lines. In order:
//!
//! 1. Fold the daily logs (`fold.rs`). Daily logs older than `[engine]
//!    dream_fold_days` are folded in: each of their items not already a
//!    fact becomes one, dated by its log (the log itself stays: it is
//!    append-only), except retractions (carried out as their log is
//!    folded, see 2) and items whose home is a typed memory.
//!
//!    Typed memories (`typed.rs`): one home per folded item. A fact about
//!    a topic that has a typed memory (`memory/<name>.md`, user / feedback
//!    / project / reference) would otherwise be said twice, once in the
//!    facts file and once in the topic file the recall side query picks,
//!    so an item goes to exactly one of them ([`typed_home`]): when its key
//!    (the words before a colon, or its [`subject`]) is an existing typed
//!    memory's name (compared by [`core_words`]), it is appended to that
//!    memory's body as a dated line (`- text (since DAY; from
//!    memory/DAY.md)`, the file otherwise untouched); when it carries a
//!    type tag (`[feedback] Code review: ...`), it goes into the typed
//!    memory of that key, or `<Type> notes` without one, made when missing
//!    (front matter from the item, its index line added to MEMORY.md's `##
//!    Memory files`); every other item is a fact. An item the memory holds
//!    already is accounted for, not written again. Only the facts file
//!    supersedes and dates facts; a typed memory's lines are dated so a
//!    reader sees the newest (and so that a retraction can end them, see
//!    2). (The types are never guessed from an untagged item's words: a
//!    rule that misfiles is worse than a fact in the facts file.)
//! 2. Carry out the retractions (`retract.rs`; the rules in `rules.rs`,
//!    [`retraction`], by rule like the subjects): an item that asks to
//!    forget something ("Please forget that my city is Paris", "The user
//!    asked to forget their city") is an instruction, not a fact: folded
//!    from a log (pass 1) it ends the current facts it names (the same
//!    statement, or the same [`subject`]) that began on or before the
//!    log's day, on that day, `retracted by` the log, and is not added;
//!    found among the current facts (this pass: a flush's, or a fold from
//!    before retractions were read) it ends them `retracted by` its own
//!    id, then ends itself. An item that says something is "no longer" so
//!    is a fact, and supersedes the facts that say it without "no longer".
//!    A retraction also ends the dated lines a dream wrote into typed
//!    memories (`- text (since DAY; from memory/DAY.md)`,
//!    [`DatedLine`](mnemo_store::memory::facts::DatedLine)) that it names
//!    by the same rule ([`statement_words`], or the same [`subject`]) and
//!    that began on or before its day: each moves, in the same file, under
//!    a `## No longer true` section (made at the end of the body when
//!    missing), dated as an ended fact is (`- ~~text~~ (since DAY; until
//!    DAY; retracted by ID; from memory/DAY.md)`). The lines a person or an
//!    agent wrote into a typed memory (no such dating) are never cut by
//!    rule, whatever they say. Nothing is deleted: the ended facts and
//!    lines stay under "No longer true", and a retraction that names
//!    nothing current changes nothing (the report lists it); forgetting a
//!    whole typed memory stays `mnemo memory forget`.
//! 3. Merge the near-duplicates (`duplicates.rs`): exact duplicates among
//!    the current facts (same words, any case or punctuation) and near
//!    duplicates (one says everything the other says, in at least three
//!    words, or nine tenths of their words are shared, [`near_duplicate`])
//!    are merged by supersession: the fuller fact stays, the other ends,
//!    replaced by it.
//! 4. Supersede the contradictions (`supersede.rs`): two current facts
//!    about the same subject with different values are resolved by
//!    supersession: the newer (later `since`, then the later id) stays, the
//!    older ends on the newer's date, replaced by it. "Same subject" is
//!    decided conservatively, by rule and without a model (a model's
//!    judgement would make the dream neither repeatable nor free): both
//!    facts must have the same leading key ([`subject`]): the words before
//!    a colon (`Employer: Acme`), or before the first ` is ` / ` are ` when
//!    that key has two to six words (`The user's city is Paris`; a one-word
//!    key such as `Caroline is ...` says too little to tell two facts
//!    apart), and both values must be short (at most eight words).
//!    Anything else is left alone.
//! 5. Fit MEMORY.md within its caps (`memory_md.rs`), once the typed
//!    memories the dream makes have their index lines: over its caps (the
//!    smaller of `[memory] memory_md_max_lines` / `memory_md_max_bytes`,
//!    what the prompt shows, and `[engine] memory_max_lines` /
//!    `memory_max_bytes`, what consolidation keeps), bullet lines are moved
//!    into the facts file, as current facts, until it fits. The lines
//!    consolidation wrote go first, then the others, oldest (highest in the
//!    file) first; index lines of typed memories, headings and prose never
//!    move. (mnemo keeps no use counts of MEMORY.md lines, so "least used"
//!    is not a criterion.)
//! 6. Record the typed memories written (`typed.rs`): a memory nothing was
//!    added to or ended in is left alone, the others are audited.
//!
//! A loss guard (`guard.rs`) checks the result before anything is written:
//! every fact that was current is still current, ends replaced by a
//! current fact, or ends `retracted by` a retraction the dream read, every
//! other line of the facts file is still there, and every line of
//! MEMORY.md is still there or is a current fact now ([`unaccounted`],
//! [`unaccounted_memory_md`]); a dream that would drop anything it cannot
//! account for is refused with what it would have lost. It also checks
//! that every folded item has a home (a fact, current or not, or a typed
//! memory's line) and that a typed memory the dream writes keeps every
//! line it had, or has it under "No longer true", ended `retracted by` a
//! retraction the dream read ([`unaccounted_typed`]). The change goes into
//! `memory/HISTORY.md` (`history.rs`) as a diff (one per file; a typed
//! memory the dream makes is listed `[created path]`) before the files are
//! replaced atomically (typed memories first, then the facts file, then
//! MEMORY.md), and a last `dream applied: ID` line follows them. A dream
//! killed at any point leaves each file as it was before or after (an item
//! or a moved line at worst in two places, never in none); a dream without
//! its `applied` line marks no daily log folded, so the next dream folds
//! them again and finishes its work (what is held already is not written
//! twice). [`undo_dream`] (`undo.rs`) reverses the newest dream, in every
//! file it changed (a typed memory it made is removed); one killed before
//! its `applied` line is undone only if every file is as it left it.

use chrono::{DateTime, NaiveDate, Utc};
use mnemo_store::memory::facts::{AuditRecord, FactsFile, FACTS_FILE};
use serde::Serialize;

use crate::engine::Engine;
use crate::error::{Error, Result};

mod duplicates;
mod fold;
mod guard;
mod history;
mod memory_md;
mod retract;
mod rules;
mod state;
mod supersede;
mod typed;
mod undo;

#[cfg(test)]
mod tests;

pub use guard::{unaccounted, unaccounted_memory_md, unaccounted_typed};
pub(crate) use rules::bullet_text;
pub use rules::{core_words, near_duplicate, retraction, statement_words, subject, Retraction};
pub use typed::typed_home;
pub use undo::undo_dream;

use fold::DueLog;
use history::{dream_entry, folded_logs, nothing_entry, APPLIED};
use memory_md::Caps;
use state::DreamState;
use typed::TypedHome;

/// What a dream did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DreamReport {
    /// The dream's id (its time), for the history and undo.
    pub id: String,
    /// Duplicates merged: `(ended, kept)` ids.
    pub merged: Vec<(String, String)>,
    /// Daily logs folded in.
    pub folded_logs: Vec<String>,
    /// Facts added from them.
    pub added: Vec<String>,
    /// Contradictions resolved: `(ended, kept)` ids, the older fact ended
    /// in favour of the newer one about the same subject.
    pub superseded: Vec<(String, String)>,
    /// MEMORY.md lines moved into the facts file to bring it under its
    /// caps: `(line, fact id)`.
    pub moved: Vec<(String, String)>,
    /// Facts and typed memories' dated lines ended by a retraction:
    /// `(ended, by)`, `ended` a fact id or `path: text` for a dated line,
    /// `by` the retraction's fact id or its daily log.
    pub retracted: Vec<(String, String)>,
    /// Retractions that named no current fact or dated line (left
    /// alone): their text.
    pub retractions_unmatched: Vec<String>,
    /// Folded items whose home is a typed memory: `(item, memory path)`.
    pub typed: Vec<(String, String)>,
    /// Typed memories the dream made (their index lines added to
    /// MEMORY.md).
    pub typed_created: Vec<String>,
    /// Current facts after the dream.
    pub current: usize,
    /// False when there was nothing to do (nothing written).
    pub changed: bool,
}

/// What [`undo_dream`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DreamUndone {
    /// The dream undone.
    pub id: String,
    /// Lines of the facts file changed back.
    pub lines: usize,
}

/// The words of `text` as the dream compares them (the write path's).
pub(crate) use crate::adjudicate::words;

/// What a dream reads, under the memory lock, before its passes run.
struct DreamInput {
    /// The facts file's text.
    facts: String,
    /// The typed memories, with their texts.
    typed: Vec<TypedHome>,
    /// The day of the dream, in the memory's time zone.
    today: NaiveDate,
    /// The daily logs due to be folded, oldest first.
    logs: Vec<DueLog>,
    /// MEMORY.md's text.
    memory_md: String,
}

/// The files a dream writes: each one's text before and after it.
struct Files {
    facts: (String, String),
    memory_md: (String, String),
    /// The typed memories: `(path, before, after)`, `before` empty for one
    /// the dream makes.
    typed: Vec<(String, String, String)>,
}

impl Engine {
    /// One dream (see the module docs), under the memory lock.
    pub fn dream(&self) -> Result<DreamReport> {
        let now = self.now();
        let _lock = self.memory.lock()?;
        let input = self.dream_input(now)?;
        let before = FactsFile::parse(&input.facts);
        let id = now.format("%Y%m%dT%H%M%S").to_string();
        let mut state = DreamState::new(&id, now, input.today, before.clone(), input.typed);

        // The passes, in the order of the module docs.
        let free_path = |name: &str| self.memory.free_typed_path(name);
        fold::fold_daily_logs(&mut state, input.logs, &free_path)?;
        retract::carry_out_retractions(&mut state)?;
        duplicates::merge_near_duplicates(&mut state)?;
        supersede::supersede_contradictions(&mut state)?;
        let md_indexed = memory_md::index_new_typed(&input.memory_md, &state.plans);
        let md_after =
            memory_md::fit_memory_md(&mut state, &md_indexed, self.memory_md_caps(), || {
                self.consolidated_lines()
            });
        typed::record_typed_memories(&mut state);

        self.record_dream(state, &before, input.facts, (input.memory_md, md_after))
    }

    /// What [`Engine::dream`] reads before its passes: the facts file, the
    /// typed memories, the daily logs due to be folded (older than the fold
    /// age and folded by no applied dream) and MEMORY.md.
    fn dream_input(&self, now: DateTime<Utc>) -> Result<DreamInput> {
        let facts = self.memory.read_document(FACTS_FILE)?.unwrap_or_default();
        let mut typed = Vec::new();
        for m in self.memory.list_typed()? {
            let text = self.memory.read_document(&m.path)?.unwrap_or_default();
            typed.push((m.path, m.front, Some(text)));
        }
        let folded = folded_logs(&self.memory.read_history()?);
        let today = self.memory.today(now);
        let fold_days = self.settings.dream_fold_days as i64;
        let logs = fold::due_logs(&self.memory, today, fold_days, &folded)?;
        let memory_md = self.memory.read_memory_md()?;
        Ok(DreamInput {
            facts,
            typed,
            today,
            logs,
            memory_md,
        })
    }

    /// MEMORY.md's caps for the dream: the smaller of what the prompt
    /// shows and what consolidation keeps.
    fn memory_md_caps(&self) -> Caps {
        let ms = self.memory.settings();
        Caps {
            max_lines: ms.memory_md_max_lines.min(self.settings.memory_max_lines),
            max_bytes: ms.memory_md_max_bytes.min(self.settings.memory_max_bytes),
        }
    }

    /// Writes what the passes left in `state` (see the module docs): when
    /// there is something to change and the loss guard finds nothing lost,
    /// the history entry, the files and the `applied` line; else only the
    /// daily logs folded, when there are any.
    fn record_dream(
        &self,
        state: DreamState,
        before: &FactsFile,
        before_text: String,
        (md_before, md_after): (String, String),
    ) -> Result<DreamReport> {
        let now = state.now;
        let DreamState {
            file,
            plans,
            folded_items,
            mut report,
            audit,
            ..
        } = state;
        report.current = file.current().count();
        // Unchanged facts are not rendered again (a missing file stays
        // missing when only typed memories change).
        let after_text = if file == *before {
            before_text.clone()
        } else {
            file.render()
        };
        let nothing = report.merged.is_empty()
            && report.added.is_empty()
            && report.retracted.is_empty()
            && plans.is_empty()
            && report.superseded.is_empty()
            && report.moved.is_empty();
        if (after_text == before_text && md_after == md_before && plans.is_empty()) || nothing {
            if !report.folded_logs.is_empty() {
                // Logs whose items were all facts already: remember them.
                self.memory
                    .append_history(&nothing_entry(&report, now), now)?;
            }
            return Ok(report);
        }
        let after = FactsFile::parse(&after_text);
        let files = Files {
            typed: plans
                .iter()
                .map(|(path, plan)| {
                    let before = plan.before.clone().unwrap_or_default();
                    (path.clone(), before, plan.after())
                })
                .collect(),
            facts: (before_text, after_text),
            memory_md: (md_before, md_after),
        };
        let lost = guard::loss_guard(before, &after, &files, &plans, &folded_items, &report);
        if !lost.is_empty() {
            return Err(Error::Invalid(format!(
                "dream refused, nothing written: it would lose {}",
                lost.join("; ")
            )));
        }
        self.write_dream(&report, &files, &audit.records, now)?;
        report.changed = true;
        Ok(report)
    }

    /// Writes a dream that passed the loss guard: its history entry, the
    /// changed `files`, its `audit` records and its `applied` line.
    fn write_dream(
        &self,
        report: &DreamReport,
        files: &Files,
        audit: &[AuditRecord],
        now: DateTime<Utc>,
    ) -> Result<()> {
        // The diffs first, then the files (each atomic): killed anywhere,
        // each file is as before or as after, and the history says what
        // the dream was. Facts before MEMORY.md: a moved line is at worst
        // in both, never in neither.
        self.memory
            .append_history(&dream_entry(report, now, files), now)?;
        mnemo_store::failpoint::hit("dream.after_history");
        // Typed memories first: an item is at worst in its typed memory
        // and still unfolded in its log (the next dream finds it held).
        for (path, _, text) in &files.typed {
            self.memory.write_document(path, text)?;
        }
        mnemo_store::failpoint::hit("dream.after_typed");
        let (facts_before, facts_after) = &files.facts;
        if facts_after != facts_before {
            self.memory.write_document(FACTS_FILE, facts_after)?;
        }
        mnemo_store::failpoint::hit("dream.after_facts");
        let (md_before, md_after) = &files.memory_md;
        if md_after != md_before {
            self.memory.write_memory_md(md_after)?;
        }
        self.memory.append_audit(audit)?;
        self.memory.append_history(
            &format!("[{}{APPLIED}{}", now.format("%Y-%m-%d %H:%M"), report.id),
            now,
        )?;
        Ok(())
    }
}
