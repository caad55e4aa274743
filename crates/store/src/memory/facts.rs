//! The facts file, `memory/facts.md`: long-term memory as one Markdown list
//! item per fact, written by fact-level consolidation and readable and
//! editable by a person.
//!
//! ```markdown
//! - The user lives in Berlin. (f2; about user: home city; since 2026-03-05; recorded 2026-03-05 10:00; by cli:direct 4..8)
//!
//! ## No longer true
//!
//! - ~~The user lives in Paris.~~ (f1; about user: home city; since 2026-03-01; until 2026-03-05; superseded by f2; recorded 2026-03-01 10:00; by cli:direct 0..4)
//! ```
//!
//! `about SUBJECT: ATTRIBUTE` is what the fact is about (who, and which of
//! their attributes), as the write path read it: a later fact about the
//! same subject and attribute is what can replace it. `by` lists every
//! source that said it (`by cli:direct 0..4, cli:direct 10..12`): a fact
//! said again gains a source, not a second line.
//!
//! A fact is never deleted by consolidation: an update or a contradiction
//! ends the old fact (`until`, struck through, moved under `## No longer
//! true`) and adds the new one; only [`FactsFile::forget`] (a person's
//! explicit forget) removes a line. Every other line of the file (headings,
//! prose, a list item a person typed without the trailing metadata) is kept
//! exactly where it is; a person's list item is a current fact with a
//! stable id derived from its text (`h…`), so the model can refer to it.
//!
//! Every change is appended to the audit log `memory/audit.jsonl` (one JSON
//! object per line, [`AuditRecord`]), listed per memory by
//! [`parse_audit`].

use std::collections::HashSet;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// Workspace-relative path of the facts file.
pub const FACTS_FILE: &str = "memory/facts.md";
/// Workspace-relative path of the audit log.
pub const AUDIT_FILE: &str = "memory/audit.jsonl";
/// The heading under which facts that stopped being true are kept.
pub const PAST_HEADING: &str = "## No longer true";

const HEADER: &str = "# Facts\n\nWhat mnemo knows, one fact per line: `(id; about who: what; since; until; recorded; by session messages)`. \
Edit or add lines freely; facts that stopped being true move under \"No longer true\".\n";

/// One fact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    /// Stable id: `f<N>` for facts mnemo wrote, `h<hash>` for a list item a
    /// person typed.
    pub id: String,
    /// The fact, one line.
    pub text: String,
    /// The day it became true (as far as the conversation says).
    pub since: Option<NaiveDate>,
    /// The day it stopped being true; `None` while current.
    pub until: Option<NaiveDate>,
    /// The fact that replaced it.
    pub superseded_by: Option<String>,
    /// Retracted (deleted in the conversation) rather than replaced.
    pub retracted: bool,
    /// What retracted it, when a dream ended it for a retraction it read:
    /// the retraction's fact id or its daily log (`retracted by f12`,
    /// `retracted by memory/2026-01-05.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retracted_by: Option<String>,
    /// When mnemo recorded it (`YYYY-MM-DD HH:MM`, UTC).
    pub recorded: Option<String>,
    /// What caused it: `<session> <from>..<to>`, `dream`, `person`; more
    /// than one source separated by `, `.
    pub by: Option<String>,
    /// Who it is about (`user`, `Ana`), when the write path knew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// What about them (`home city`), when the write path knew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribute: Option<String>,
    /// The line as it was read, written back unchanged while the fact is.
    #[serde(skip)]
    raw: Option<String>,
}

impl Fact {
    /// A new current fact.
    pub fn new(
        id: String,
        text: &str,
        since: Option<NaiveDate>,
        now: DateTime<Utc>,
        by: Option<String>,
    ) -> Fact {
        Fact {
            id,
            text: one_line(text),
            since,
            until: None,
            superseded_by: None,
            retracted: false,
            retracted_by: None,
            recorded: Some(now.format("%Y-%m-%d %H:%M").to_string()),
            by,
            subject: None,
            attribute: None,
            raw: None,
        }
    }

    /// The same fact about `subject`'s `attribute` (blank parts left out;
    /// `;` and `)` would end the metadata, so they become `,`).
    pub fn about(mut self, subject: &str, attribute: &str) -> Fact {
        // "Ana (the user's sister)" reads "Ana, the user's sister" there.
        let clean = |s: &str| {
            let s = s
                .replace(" (", ", ")
                .replace([';', '('], ",")
                .replace(')', "");
            let s = one_line(&s);
            let s = s.trim_matches([',', ' ', ':']).to_string();
            (!s.is_empty()).then_some(s)
        };
        self.subject = clean(subject);
        self.attribute = clean(&attribute.replace(':', ","));
        self
    }

    /// The sources that said it (`by`, split).
    pub fn sources(&self) -> Vec<&str> {
        self.by
            .as_deref()
            .map(|b| {
                b.split(", ")
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// True while it has not stopped being true.
    pub fn is_current(&self) -> bool {
        self.until.is_none() && !self.retracted && self.superseded_by.is_none()
    }

    /// True when it was true on `day`: started on or before it (or has no
    /// start) and had not ended by it.
    pub fn valid_on(&self, day: NaiveDate) -> bool {
        self.since.is_none_or(|s| s <= day)
            && match self.until {
                Some(u) => day < u,
                None => self.is_current(),
            }
    }

    /// The list item.
    pub fn render(&self) -> String {
        if let Some(raw) = &self.raw {
            return raw.clone();
        }
        let mut meta = vec![self.id.clone()];
        if let Some(subject) = &self.subject {
            meta.push(match &self.attribute {
                Some(a) => format!("about {subject}: {a}"),
                None => format!("about {subject}"),
            });
        }
        meta.extend(dating(
            self.since,
            self.until,
            self.superseded_by.as_deref(),
            self.retracted.then_some(self.retracted_by.as_deref()),
        ));
        if let Some(r) = &self.recorded {
            meta.push(format!("recorded {r}"));
        }
        if let Some(b) = &self.by {
            meta.push(format!("by {b}"));
        }
        list_item(&self.text, self.is_current(), &meta)
    }

    fn touched(&mut self) {
        self.raw = None;
    }
}

/// The dating of a fact or a [`DatedLine`] as its list item says it:
/// `since …`, `until …`, `superseded by …`, `retracted` (`retracted by
/// …` when `retracted` names what retracted it).
fn dating(
    since: Option<NaiveDate>,
    until: Option<NaiveDate>,
    superseded_by: Option<&str>,
    retracted: Option<Option<&str>>,
) -> Vec<String> {
    let mut meta = Vec::new();
    if let Some(s) = since {
        meta.push(format!("since {s}"));
    }
    if let Some(u) = until {
        meta.push(format!("until {u}"));
    }
    if let Some(by) = superseded_by {
        meta.push(format!("superseded by {by}"));
    }
    match retracted {
        Some(Some(r)) => meta.push(format!("retracted by {r}")),
        Some(None) => meta.push("retracted".into()),
        None => {}
    }
    meta
}

/// A list item `- text (meta; …)`, the text struck through when it is no
/// longer true.
fn list_item(text: &str, current: bool, meta: &[String]) -> String {
    if current {
        format!("- {text} ({})", meta.join("; "))
    } else {
        format!("- ~~{text}~~ ({})", meta.join("; "))
    }
}

/// The day an ended fact or line ends: `until`, else its start, else
/// today; never before its start.
fn end_day(since: Option<NaiveDate>, until: Option<NaiveDate>) -> NaiveDate {
    let u = until.or(since).unwrap_or_else(|| Utc::now().date_naive());
    since.map_or(u, |s| u.max(s))
}

/// A dated line of a typed memory (`memory/<name>.md`): an item a dream
/// folded from a daily log into the memory its key names,
/// `- text (since DAY; from memory/DAY.md)`. A retraction the dream reads
/// ends it as it ends a fact: struck through, dated `until` and `retracted
/// by` the retraction (its fact id or daily log), and kept under
/// [`PAST_HEADING`] in the same file:
///
/// ```markdown
/// - ~~Hobby: chess~~ (since 2026-02-01; until 2026-02-05; retracted by memory/2026-02-05.md; from memory/2026-02-01.md)
/// ```
///
/// A line a person wrote (without that dating) is not one: nothing ends
/// it by rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatedLine {
    /// The item, one line.
    pub text: String,
    /// The day of the daily log it was folded from.
    pub since: NaiveDate,
    /// The day it stopped being true; `None` while current.
    pub until: Option<NaiveDate>,
    /// What retracted it: a retraction's fact id or its daily log.
    pub retracted_by: Option<String>,
    /// The daily log it was folded from (`memory/DAY.md`).
    pub from: String,
}

impl DatedLine {
    /// A current line for `text`, folded from the log `from` of `since`.
    pub fn new(text: &str, since: NaiveDate, from: &str) -> DatedLine {
        DatedLine {
            text: one_line(text),
            since,
            until: None,
            retracted_by: None,
            from: from.to_string(),
        }
    }

    /// The dated line `line` is, or `None` (a person's line, a heading,
    /// prose, a line struck through without an end).
    pub fn parse(line: &str) -> Option<DatedLine> {
        let body = line
            .strip_prefix("- ")
            .or_else(|| line.strip_prefix("* "))?
            .trim_end()
            .strip_suffix(')')?;
        let open = body.rfind(" (since ")?;
        let (text, meta) = (body.get(..open)?.trim(), body.get(open + 2..)?);
        let struck = text.strip_prefix("~~").and_then(|t| t.strip_suffix("~~"));
        let mut since = None;
        let mut d = DatedLine {
            text: struck.unwrap_or(text).to_string(),
            since: NaiveDate::MIN,
            until: None,
            retracted_by: None,
            from: String::new(),
        };
        for p in meta.split("; ").map(str::trim) {
            if let Some(s) = p.strip_prefix("since ") {
                since = Some(s.parse().ok()?);
            } else if let Some(u) = p.strip_prefix("until ") {
                d.until = Some(u.parse().ok()?);
            } else if let Some(r) = p.strip_prefix("retracted by ") {
                d.retracted_by = Some(r.to_string());
            } else if let Some(f) = p.strip_prefix("from ") {
                d.from = f.to_string();
            } else {
                return None;
            }
        }
        d.since = since?;
        // Ended in full (struck, until, retracted by) or not at all.
        let ended = struck.is_some();
        (!d.text.is_empty()
            && !d.from.is_empty()
            && d.until.is_some() == ended
            && d.retracted_by.is_some() == ended)
            .then_some(d)
    }

    /// True while it has not stopped being true.
    pub fn is_current(&self) -> bool {
        self.until.is_none() && self.retracted_by.is_none()
    }

    /// True when it was true on `day` (as [`Fact::valid_on`]).
    pub fn valid_on(&self, day: NaiveDate) -> bool {
        self.since <= day && self.until.is_none_or(|u| day < u)
    }

    /// This line ended on `until` (never before its start), retracted by
    /// `by`.
    pub fn retracted(&self, until: NaiveDate, by: &str) -> DatedLine {
        DatedLine {
            until: Some(end_day(Some(self.since), Some(until))),
            retracted_by: Some(by.to_string()),
            ..self.clone()
        }
    }

    /// The list item.
    pub fn render(&self) -> String {
        let mut meta = dating(
            Some(self.since),
            self.until,
            None,
            self.retracted_by.as_ref().map(|r| Some(r.as_str())),
        );
        meta.push(format!("from {}", self.from));
        list_item(&self.text, self.is_current(), &meta)
    }
}

/// `text` (a typed memory) as it stands now: without the dated lines
/// that ended, and without its [`PAST_HEADING`] when nothing else is under
/// it (up to the next heading). What the prompt shows; search still finds
/// the ended lines, as it finds the facts that ended.
pub fn current_text(text: &str) -> String {
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| DatedLine::parse(l).is_none_or(|d| d.is_current()))
        .collect();
    let mut out: Vec<&str> = Vec::new();
    for (i, line) in kept.iter().enumerate() {
        let empty_past = line.trim() == PAST_HEADING
            && kept
                .iter()
                .skip(i + 1)
                .take_while(|l| !l.trim_start().starts_with('#'))
                .all(|l| l.trim().is_empty());
        if !empty_past {
            out.push(line);
        }
    }
    while out.last().is_some_and(|l| l.trim().is_empty()) {
        out.pop();
    }
    let mut s = out.join("\n");
    if !s.is_empty() {
        s.push('\n');
    }
    s
}

/// A fact line, or any other line kept as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    Fact(usize),
    Other(String),
}

/// The facts file, parsed: its facts and every other line in place.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FactsFile {
    facts: Vec<Fact>,
    lines: Vec<Line>,
    /// Facts current when the file was read (they move under "No longer
    /// true" when they end).
    was_current: HashSet<String>,
    /// How many of `lines` were read from the file (the rest were added).
    read: usize,
}

impl FactsFile {
    /// Parses the file's text (empty: no facts).
    pub fn parse(text: &str) -> FactsFile {
        let mut f = FactsFile::default();
        let mut ids: HashSet<String> = HashSet::new();
        for line in text.lines() {
            match parse_fact_line(line) {
                Some(mut fact) => {
                    if !ids.insert(fact.id.clone()) {
                        // Two lines with one id (a person copied a line):
                        // the copy gets an id of its own.
                        fact.id = unique_id(&format!("{}#{}", fact.text, f.facts.len()), &ids);
                        ids.insert(fact.id.clone());
                        fact.raw = None;
                    }
                    if fact.is_current() {
                        f.was_current.insert(fact.id.clone());
                    }
                    f.lines.push(Line::Fact(f.facts.len()));
                    f.facts.push(fact);
                }
                None => f.lines.push(Line::Other(line.to_string())),
            }
        }
        f.read = f.lines.len();
        f
    }

    /// Every fact, in file order.
    pub fn facts(&self) -> &[Fact] {
        &self.facts
    }

    /// The facts still true.
    pub fn current(&self) -> impl Iterator<Item = &Fact> {
        self.facts.iter().filter(|f| f.is_current())
    }

    /// The fact with this id (ids compare without case).
    pub fn get(&self, id: &str) -> Option<&Fact> {
        self.facts
            .iter()
            .find(|f| f.id.eq_ignore_ascii_case(id.trim()))
    }

    fn get_mut(&mut self, id: &str) -> Option<&mut Fact> {
        self.facts
            .iter_mut()
            .find(|f| f.id.eq_ignore_ascii_case(id.trim()))
    }

    /// The fact whose list item is line `line` (1-based) of the file as
    /// parsed.
    pub fn fact_at_line(&self, line: usize) -> Option<&Fact> {
        match self.lines.get(line.checked_sub(1)?)? {
            Line::Fact(i) => self.facts.get(*i),
            Line::Other(_) => None,
        }
    }

    /// The next `f<N>` id.
    pub fn next_id(&self) -> String {
        let max = self
            .facts
            .iter()
            .filter_map(|f| f.id.strip_prefix('f').and_then(|n| n.parse::<u64>().ok()))
            .max()
            .unwrap_or(0);
        format!("f{}", max + 1)
    }

    /// Adds a current fact; returns its id.
    pub fn add(
        &mut self,
        text: &str,
        since: Option<NaiveDate>,
        now: DateTime<Utc>,
        by: Option<String>,
    ) -> String {
        let id = self.next_id();
        let fact = Fact::new(id.clone(), text, since, now, by);
        self.facts.push(fact);
        // Placed after the last current fact (or at the end of the facts
        // before "No longer true") when rendered.
        self.lines.push(Line::Fact(self.facts.len() - 1));
        id
    }

    /// Adds `fact` as a current fact under the next id (its own id is
    /// replaced); returns the id.
    pub fn add_fact(&mut self, mut fact: Fact) -> String {
        let id = self.next_id();
        fact.id = id.clone();
        fact.raw = None;
        self.facts.push(fact);
        self.lines.push(Line::Fact(self.facts.len() - 1));
        id
    }

    /// Records that `source` said the fact `id` again: it joins the
    /// fact's sources (`by`) unless it is there. Returns whether it was
    /// added.
    pub fn add_source(&mut self, id: &str, source: &str) -> Result<bool> {
        let fact = self
            .get_mut(id)
            .ok_or_else(|| Error::NotFound(format!("no fact {id:?} in {FACTS_FILE}")))?;
        if source.trim().is_empty() || fact.sources().contains(&source.trim()) {
            return Ok(false);
        }
        fact.by = Some(match fact.by.take().filter(|b| !b.trim().is_empty()) {
            Some(b) => format!("{b}, {}", source.trim()),
            None => source.trim().to_string(),
        });
        fact.touched();
        Ok(true)
    }

    /// Ends the current fact `id` (it stopped being true on `until`),
    /// replaced by `by` or retracted. Errors when there is no such current
    /// fact.
    pub fn end(
        &mut self,
        id: &str,
        until: Option<NaiveDate>,
        superseded_by: Option<&str>,
    ) -> Result<Fact> {
        let fact = self
            .get_mut(id)
            .ok_or_else(|| Error::NotFound(format!("no fact {id:?} in {FACTS_FILE}")))?;
        if !fact.is_current() {
            return Err(Error::Invalid(format!(
                "fact {} is no longer true already",
                fact.id
            )));
        }
        let old = fact.clone();
        fact.until = Some(end_day(fact.since, until));
        match superseded_by {
            Some(by) => fact.superseded_by = Some(by.to_string()),
            None => fact.retracted = true,
        }
        fact.touched();
        Ok(old)
    }

    /// Ends the current fact `id` as retracted by `by` (a retraction's fact
    /// id or daily log, written `retracted by …`), on `until`.
    pub fn retract(&mut self, id: &str, until: Option<NaiveDate>, by: &str) -> Result<Fact> {
        let old = self.end(id, until, None)?;
        if let Some(f) = self.get_mut(id) {
            f.retracted_by = Some(by.to_string());
        }
        Ok(old)
    }

    /// Removes the fact `id` from the file (a person's explicit forget).
    pub fn forget(&mut self, id: &str) -> Result<Fact> {
        let idx = self
            .facts
            .iter()
            .position(|f| f.id.eq_ignore_ascii_case(id.trim()))
            .ok_or_else(|| Error::NotFound(format!("no fact {id:?} in {FACTS_FILE}")))?;
        self.lines.retain(|l| *l != Line::Fact(idx));
        for l in &mut self.lines {
            if let Line::Fact(i) = l {
                if *i > idx {
                    *i -= 1;
                }
            }
        }
        if idx >= self.facts.len() {
            return Err(Error::NotFound(id.to_string()));
        }
        let removed = self.facts.remove(idx);
        self.was_current.remove(&removed.id);
        Ok(removed)
    }

    /// The file's text: the lines in place, new facts after the last
    /// current one, facts that ended since the file was read moved under
    /// [`PAST_HEADING`].
    pub fn render(&self) -> String {
        let listed: HashSet<usize> = self
            .lines
            .iter()
            .filter_map(|l| match l {
                Line::Fact(i) => Some(*i),
                Line::Other(_) => None,
            })
            .collect();
        let moved = |i: usize| {
            self.facts
                .get(i)
                .is_some_and(|f| !f.is_current() && f.raw.is_none())
        };
        let new: Vec<usize> = (0..self.facts.len())
            .filter(|i| {
                listed.contains(i)
                    && self.facts.get(*i).is_some_and(|f| {
                        !self.was_current.contains(&f.id) && f.raw.is_none() && f.is_current()
                    })
            })
            .collect();
        let new_set: HashSet<usize> = new.iter().copied().collect();
        // Where new facts go: after the last current fact line that was
        // read, else before the past heading, else at the end. A fact added
        // and ended since the read is no anchor: its line is at the end.
        let mut out: Vec<String> = Vec::new();
        let read = self.lines.get(..self.read).unwrap_or(&self.lines);
        let last_current = read.iter().rposition(|l| match l {
            Line::Fact(i) => {
                !new_set.contains(i)
                    && self
                        .facts
                        .get(*i)
                        .is_some_and(|f| f.is_current() || moved(*i))
            }
            Line::Other(_) => false,
        });
        let past_at = self
            .lines
            .iter()
            .position(|l| matches!(l, Line::Other(s) if s.trim() == PAST_HEADING));
        let insert_after = last_current;
        let mut inserted = false;
        let render_new = |out: &mut Vec<String>| {
            for i in &new {
                if let Some(f) = self.facts.get(*i) {
                    out.push(f.render());
                }
            }
        };
        let has_prose = self
            .lines
            .iter()
            .any(|l| matches!(l, Line::Other(s) if !s.trim().is_empty()));
        if !has_prose {
            out.extend(HEADER.lines().map(str::to_string));
            out.push(String::new());
        }
        for (n, line) in self.lines.iter().enumerate() {
            match line {
                Line::Other(s) => {
                    if Some(n) == past_at && !inserted && insert_after.is_none() {
                        render_new(&mut out);
                        if !new.is_empty() {
                            out.push(String::new());
                        }
                        inserted = true;
                    }
                    out.push(s.clone());
                }
                Line::Fact(i) => {
                    if new_set.contains(i) {
                        continue;
                    }
                    if !moved(*i) {
                        if let Some(f) = self.facts.get(*i) {
                            out.push(f.render());
                        }
                    }
                }
            }
            if Some(n) == insert_after && !inserted {
                render_new(&mut out);
                inserted = true;
            }
        }
        if !inserted {
            render_new(&mut out);
        }
        let ended: Vec<String> = (0..self.facts.len())
            .filter(|i| listed.contains(i) && moved(*i))
            .filter_map(|i| self.facts.get(i).map(Fact::render))
            .collect();
        if !ended.is_empty() {
            let has_past = past_at.is_some();
            if !has_past {
                while out.last().is_some_and(|l| l.trim().is_empty()) {
                    out.pop();
                }
                out.push(String::new());
                out.push(PAST_HEADING.to_string());
                out.push(String::new());
                out.extend(ended);
            } else {
                // Right under the heading: newest endings first.
                let at = out
                    .iter()
                    .position(|l| l.trim() == PAST_HEADING)
                    .map_or(out.len(), |p| p + 1);
                let at = if out.get(at).is_some_and(|l| l.trim().is_empty()) {
                    at + 1
                } else {
                    at
                };
                for (k, l) in ended.into_iter().enumerate() {
                    out.insert(at + k, l);
                }
            }
        }
        while out.last().is_some_and(|l| l.trim().is_empty()) {
            out.pop();
        }
        let mut text = out.join("\n");
        text.push('\n');
        text
    }
}

/// A fact line: `- text (id; since …; …)`, or a plain list item (a
/// person's, id from its text). Headings, prose and blank lines are not.
fn parse_fact_line(line: &str) -> Option<Fact> {
    let body = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))?
        .trim_end();
    if body.is_empty() {
        return None;
    }
    if let Some(open) = body.rfind(" (") {
        if let (Some(meta), Some(text)) = (
            body.get(open + 2..).and_then(|m| m.strip_suffix(')')),
            body.get(..open),
        ) {
            let mut parts = meta.split("; ");
            let id = parts.next().unwrap_or_default().trim();
            if is_id(id) {
                let text = text.trim();
                let struck = text
                    .strip_prefix("~~")
                    .and_then(|t| t.strip_suffix("~~"))
                    .map(str::to_string);
                let mut fact = Fact {
                    id: id.to_string(),
                    text: struck.clone().unwrap_or_else(|| text.to_string()),
                    since: None,
                    until: None,
                    superseded_by: None,
                    retracted: false,
                    retracted_by: None,
                    recorded: None,
                    by: None,
                    subject: None,
                    attribute: None,
                    raw: Some(line.to_string()),
                };
                for p in parts {
                    let p = p.trim();
                    if let Some(a) = p.strip_prefix("about ") {
                        match a.split_once(": ") {
                            Some((s, attr)) => {
                                fact.subject = Some(s.trim().to_string());
                                fact.attribute = Some(attr.trim().to_string());
                            }
                            None => fact.subject = Some(a.trim().to_string()),
                        }
                    } else if let Some(d) = p.strip_prefix("since ") {
                        fact.since = d.trim().parse().ok();
                    } else if let Some(d) = p.strip_prefix("until ") {
                        fact.until = d.trim().parse().ok();
                    } else if let Some(b) = p.strip_prefix("superseded by ") {
                        fact.superseded_by = Some(b.trim().to_string());
                    } else if p == "retracted" {
                        fact.retracted = true;
                    } else if let Some(r) = p.strip_prefix("retracted by ") {
                        fact.retracted = true;
                        fact.retracted_by = Some(r.trim().to_string());
                    } else if let Some(r) = p.strip_prefix("recorded ") {
                        fact.recorded = Some(r.trim().to_string());
                    } else if let Some(b) = p.strip_prefix("by ") {
                        fact.by = Some(b.trim().to_string());
                    }
                }
                // Struck through by a person: no longer true.
                if struck.is_some() && fact.is_current() {
                    fact.retracted = true;
                }
                return Some(fact);
            }
        }
    }
    let text = body.trim();
    Some(Fact {
        id: format!("h{}", short_hash(text)),
        text: text.to_string(),
        since: None,
        until: None,
        superseded_by: None,
        retracted: false,
        retracted_by: None,
        recorded: None,
        by: None,
        subject: None,
        attribute: None,
        raw: Some(line.to_string()),
    })
}

fn is_id(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('f' | 'h'))
        && s.len() > 1
        && s.len() <= 16
        && chars.all(|c| c.is_ascii_alphanumeric())
}

fn short_hash(text: &str) -> String {
    // FNV-1a: stable across runs and platforms (std's hasher is not).
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.trim().to_lowercase().bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:06x}", h & 0xff_ffff)
}

fn unique_id(seed: &str, taken: &HashSet<String>) -> String {
    let mut n = 0u32;
    loop {
        let id = format!("h{}", short_hash(&format!("{seed}{n}")));
        if !taken.contains(&id) {
            return id;
        }
        n += 1;
    }
}

/// One line of text: a fact never spans lines (newlines become spaces).
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// One change to a memory, as the audit log records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct AuditRecord {
    /// When (RFC 3339, UTC).
    pub at: String,
    /// `add`, `update`, `delete` (ended, kept as no longer true), `confirm`
    /// (said again: a source added), `refuse` (a proposed fact not stored,
    /// `why` says why), `forget` (removed), `write` (a typed memory saved),
    /// `merge` (dream), `undo` (an undo of a consolidation or a dream
    /// took back a change: `why` says which).
    pub op: String,
    /// The memory changed: a fact id or a typed memory's name.
    pub memory: String,
    /// The memory this one replaced (an update's old fact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<String>,
    /// The text before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<String>,
    /// The text after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<String>,
    /// The session that caused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The messages of that session (`from..to`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<String>,
    /// Who: `consolidation`, `dream`, `memory_write`, `forget`, `undo`.
    pub by: String,
    /// The words of the message that say it (the write path's evidence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    /// Why the change was made, or why a proposal was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

impl AuditRecord {
    /// The change `op` of `memory` at `at`, made by `by`, with the memory
    /// it replaced and the texts before and after.
    pub fn change(
        at: DateTime<Utc>,
        by: &str,
        op: &str,
        memory: &str,
        supersedes: Option<&str>,
        old: Option<&str>,
        new: Option<&str>,
    ) -> Self {
        AuditRecord {
            at: at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            op: op.into(),
            memory: memory.into(),
            supersedes: supersedes.map(str::to_string),
            old: old.map(str::to_string),
            new: new.map(str::to_string),
            by: by.into(),
            ..Default::default()
        }
    }

    /// True when the record is about `name` (as the memory, or the one it
    /// replaced; without case).
    pub fn concerns(&self, name: &str) -> bool {
        let n = name.trim();
        self.memory.eq_ignore_ascii_case(n)
            || self
                .supersedes
                .as_deref()
                .is_some_and(|s| s.eq_ignore_ascii_case(n))
    }
}

/// The audit log lines of `records` (one JSON line each).
pub fn audit_lines(records: &[AuditRecord]) -> Result<String> {
    let mut text = String::new();
    for r in records {
        let line = serde_json::to_string(r)
            .map_err(|e| Error::Invalid(format!("cannot encode an audit record: {e}")))?;
        text.push_str(&line);
        text.push('\n');
    }
    Ok(text)
}

/// Every record of the audit log `text`, oldest first; a line that cannot
/// be read is skipped with a warning (the log stays as it is).
pub fn parse_audit(text: &str) -> Vec<AuditRecord> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<AuditRecord>(line) {
            Ok(r) => out.push(r),
            Err(e) => tracing::warn!("{AUDIT_FILE}:{}: unreadable audit record: {e}", n + 1),
        }
    }
    out
}

/// The audit log `text` without the text of `name` (a forget: the records
/// stay, saying what happened when, without what was said), and how many
/// records lost text.
pub fn scrub_audit(text: &str, name: &str) -> Result<(String, usize)> {
    let mut scrubbed = 0;
    let mut out = String::new();
    for line in text.lines() {
        match serde_json::from_str::<AuditRecord>(line) {
            Ok(mut r) if r.memory.eq_ignore_ascii_case(name.trim()) => {
                if r.old.is_some() || r.new.is_some() || r.evidence.is_some() {
                    scrubbed += 1;
                }
                r.old = None;
                r.new = None;
                r.evidence = None;
                out.push_str(
                    &serde_json::to_string(&r).map_err(|e| Error::Invalid(e.to_string()))?,
                );
            }
            Ok(mut r)
                if r.supersedes
                    .as_deref()
                    .is_some_and(|s| s.eq_ignore_ascii_case(name.trim())) =>
            {
                // The replacing fact's record keeps its new text, not the
                // forgotten old one.
                if r.old.take().is_some() {
                    scrubbed += 1;
                }
                out.push_str(
                    &serde_json::to_string(&r).map_err(|e| Error::Invalid(e.to_string()))?,
                );
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    Ok((out, scrubbed))
}

/// The words of `text` as forget compares facts: lower case, split at
/// anything but letters and digits, as a set (punctuation and case aside,
/// "The code is 42." and "the code is 42" say the same).
fn word_set(text: &str) -> std::collections::BTreeSet<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// True when `a` and `b` hold the same words (see [`word_set`]) and some.
pub fn same_words(a: &str, b: &str) -> bool {
    let wa = word_set(a);
    !wa.is_empty() && wa == word_set(b)
}

/// What forget looks for in other files for a fact's `text`: the text
/// without its closing punctuation, when it says enough to be found
/// without catching unrelated words (two words or more, or six
/// characters).
pub fn forget_needle(text: &str) -> Option<String> {
    let t = one_line(text);
    let t = t
        .trim()
        .trim_end_matches(['.', '!', '?', ';', ',', ':', ' '])
        .trim_start_matches("~~")
        .trim_end_matches("~~");
    let words = t.split_whitespace().count();
    (words >= 2 || t.chars().count() >= 6).then(|| t.to_string())
}

/// The placeholder forget leaves where forgotten text was.
pub const FORGOTTEN: &str = "[forgotten]";

/// `text` with every occurrence of each of `needles` (ASCII case aside,
/// standing as whole words) replaced by [`FORGOTTEN`], and how many were
/// replaced. Lines keep their place (a diff in the history stays a diff,
/// a daily log's item an item).
pub fn redact(text: &str, needles: &[String]) -> (String, usize) {
    let mut out = text.to_string();
    let mut count = 0;
    for needle in needles.iter().filter(|n| !n.is_empty()) {
        let lower_needle = needle.to_ascii_lowercase();
        // ASCII lower-casing keeps every byte offset where it was.
        let lower = out.to_ascii_lowercase();
        let mut result = String::with_capacity(out.len());
        let mut last = 0;
        let mut from = 0;
        while let Some(at) = lower.get(from..).and_then(|h| h.find(&lower_needle)) {
            let start = from + at;
            let end = start + lower_needle.len();
            let before = out.get(..start).and_then(|s| s.chars().next_back());
            let after = out.get(end..).and_then(|s| s.chars().next());
            let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
            if word(before) || word(after) {
                from = start + lower_needle.len().max(1);
                while from < out.len() && !out.is_char_boundary(from) {
                    from += 1;
                }
                continue;
            }
            result.push_str(out.get(last..start).unwrap_or_default());
            result.push_str(FORGOTTEN);
            last = end;
            from = end;
            count += 1;
        }
        result.push_str(out.get(last..).unwrap_or_default());
        out = result;
    }
    (out, count)
}

/// The audit log `text` with `needles` redacted (see [`redact`]) from the
/// texts of every record: a forgotten fact's words quoted by another
/// record (a refusal, a confirmation's evidence) go as well.
pub fn redact_audit(text: &str, needles: &[String]) -> Result<String> {
    let mut out = String::new();
    for line in text.lines() {
        match serde_json::from_str::<AuditRecord>(line) {
            Ok(mut r) => {
                let mut n = 0;
                for field in [&mut r.old, &mut r.new, &mut r.evidence, &mut r.why] {
                    if let Some(t) = field.as_mut() {
                        let (red, k) = redact(t, needles);
                        if k > 0 {
                            *t = red;
                            n += k;
                        }
                    }
                }
                if n > 0 {
                    out.push_str(
                        &serde_json::to_string(&r).map_err(|e| Error::Invalid(e.to_string()))?,
                    );
                } else {
                    out.push_str(line);
                }
            }
            Err(_) => out.push_str(&redact(line, needles).0),
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-03-05T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn a_fact_added_and_ended_in_one_round_keeps_new_facts_above_the_past() {
        // One current fact, one ended: the file has its "No longer true".
        let mut f = FactsFile::parse("");
        let a = f.add("Lives in Paris.", Some(day("2026-03-01")), now(), None);
        let b = f.add("Works as a nurse.", Some(day("2026-03-01")), now(), None);
        let c = f.add("Lives in Rome.", Some(day("2026-03-02")), now(), None);
        f.end(&a, Some(day("2026-03-02")), Some(&c)).unwrap();
        let mut f = FactsFile::parse(&f.render());
        // The next round adds a fact and ends it by another one.
        let d = f.add("Has a cat.", Some(day("2026-03-03")), now(), None);
        let e = f.add("Has two cats.", Some(day("2026-03-03")), now(), None);
        f.end(&d, Some(day("2026-03-03")), Some(&e)).unwrap();
        let text = f.render();
        let past = text.find(PAST_HEADING).unwrap();
        for current in [&b, &c, &e] {
            let at = text.find(&format!("({current};")).unwrap();
            assert!(at < past, "{current} under the past heading:\n{text}");
        }
        for ended in [&a, &d] {
            let at = text.find(&format!("({ended};")).unwrap();
            assert!(at > past, "{ended} above the past heading:\n{text}");
        }
        assert_eq!(FactsFile::parse(&text).current().count(), 3);
    }

    #[test]
    fn add_update_round_trip_and_keep_other_lines() {
        let mut f = FactsFile::parse("");
        let a = f.add(
            "Lives in Paris.",
            Some(day("2026-03-01")),
            now(),
            Some("cli:t 0..4".into()),
        );
        assert_eq!(a, "f1");
        let text = f.render();
        assert!(text.starts_with("# Facts\n"), "{text}");
        assert!(text.contains("- Lives in Paris. (f1; since 2026-03-01; recorded 2026-03-05 10:00; by cli:t 0..4)"), "{text}");
        // A person adds a line of their own and a note.
        let edited = format!("{text}- Has a cat named Biscuit.\n\nSome note a person wrote.\n");
        let mut f = FactsFile::parse(&edited);
        assert_eq!(f.current().count(), 2);
        let b = f.add("Lives in Berlin.", Some(day("2026-03-05")), now(), None);
        f.end("f1", Some(day("2026-03-05")), Some(&b)).unwrap();
        let text = f.render();
        assert!(text.contains("- Has a cat named Biscuit.\n"), "{text}");
        assert!(text.contains("Some note a person wrote."), "{text}");
        assert!(text.contains("## No longer true\n\n- ~~Lives in Paris.~~ (f1; since 2026-03-01; until 2026-03-05; superseded by f2;"), "{text}");
        let again = FactsFile::parse(&text);
        assert_eq!(
            again.render(),
            text,
            "rendering what was read changes nothing"
        );
        let old = again.get("f1").unwrap();
        assert!(!old.is_current());
        assert!(old.valid_on(day("2026-03-02")) && !old.valid_on(day("2026-03-05")));
        let new = again.get("F2").unwrap();
        assert!(
            new.is_current() && new.valid_on(day("2026-03-06")) && !new.valid_on(day("2026-03-02"))
        );
        // The person's item has a stable id.
        let h = again
            .current()
            .find(|f| f.text.contains("Biscuit"))
            .unwrap()
            .id
            .clone();
        assert!(h.starts_with('h'));
        assert_eq!(
            FactsFile::parse(&text)
                .current()
                .find(|f| f.text.contains("Biscuit"))
                .unwrap()
                .id,
            h
        );
    }

    #[test]
    fn a_dated_line_ends_as_a_fact_does() {
        let line = "- Hobby: chess (since 2026-02-01; from memory/2026-02-01.md)";
        let d = DatedLine::parse(line).unwrap();
        assert_eq!(
            d,
            DatedLine::new("Hobby: chess", day("2026-02-01"), "memory/2026-02-01.md")
        );
        assert_eq!(d.render(), line);
        assert!(d.is_current() && d.valid_on(day("2026-02-01")));
        let ended = d.retracted(day("2026-01-01"), "memory/2026-02-05.md");
        // Never before its start, as a fact's end.
        assert_eq!(ended.until, Some(day("2026-02-01")));
        let ended = d.retracted(day("2026-02-05"), "f3");
        let text = ended.render();
        assert_eq!(
            text,
            "- ~~Hobby: chess~~ (since 2026-02-01; until 2026-02-05; retracted by f3; from memory/2026-02-01.md)"
        );
        assert_eq!(DatedLine::parse(&text), Some(ended.clone()));
        assert!(!ended.is_current() && ended.valid_on(day("2026-02-04")));
        assert!(!ended.valid_on(day("2026-02-05")));
        // What is true now leaves the ended line out, and the heading
        // left with nothing under it.
        let memory = format!("Notes.\n{line}\n\n{PAST_HEADING}\n\n{text}\n");
        assert_eq!(current_text(&memory), format!("Notes.\n{line}\n"));
        let kept = format!("{PAST_HEADING}\n\nA note a person keeps.\n{text}\n");
        assert_eq!(
            current_text(&kept),
            format!("{PAST_HEADING}\n\nA note a person keeps.\n")
        );
        // A person's lines are not dated lines.
        for l in [
            "- Hobby: chess",
            "- Hobby: chess (since 2026-02-01)",
            "- Hobby: chess (since 2026-02-01; from x; by me)",
            "- ~~Hobby: chess~~ (since 2026-02-01; from memory/2026-02-01.md)",
            "- Hobby: chess (since 2026-02-01; until 2026-02-05; retracted by f3; from x)",
            "## No longer true",
        ] {
            assert_eq!(DatedLine::parse(l), None, "{l}");
        }
    }

    #[test]
    fn redact_replaces_whole_words_without_case() {
        let needles = vec!["Locker code is 4242".to_string()];
        let (out, n) = redact(
            "- the LOCKER code is 4242.\n+- x (f1) Locker code is 42420\n- Locker code is 4242!",
            &needles,
        );
        assert_eq!(n, 2);
        assert_eq!(
            out,
            "- the [forgotten].\n+- x (f1) Locker code is 42420\n- [forgotten]!"
        );
        // Non-ASCII text is matched as written.
        let (out, n) = redact("- Café au lait für Ana", &["café au lait".to_string()]);
        assert_eq!((out.as_str(), n), ("- [forgotten] für Ana", 1));
        assert_eq!(redact("abc", &[]).1, 0);
    }

    #[test]
    fn forget_compares_words_and_needs_enough_of_them() {
        assert!(same_words("The code is 42.", "the code is 42"));
        assert!(!same_words("The code is 42.", "The code is 43"));
        assert!(!same_words("", ""));
        assert_eq!(
            forget_needle("Lives in Paris. ").as_deref(),
            Some("Lives in Paris")
        );
        assert_eq!(forget_needle("Vegan."), None);
        assert_eq!(forget_needle("Vegetarian").as_deref(), Some("Vegetarian"));
    }

    #[test]
    fn redacting_the_audit_log_keeps_its_records() {
        let text = audit_lines(&[AuditRecord {
            at: "2026-03-05T10:00:00Z".into(),
            op: "refuse".into(),
            memory: "f9".into(),
            new: Some("Locker code is 4242".into()),
            why: Some("already known".into()),
            by: "consolidation".into(),
            ..Default::default()
        }])
        .unwrap();
        let out = redact_audit(&text, &["Locker code is 4242".to_string()]).unwrap();
        let r = parse_audit(&out);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].new.as_deref(), Some(FORGOTTEN));
        assert_eq!(r[0].why.as_deref(), Some("already known"));
    }

    #[test]
    fn forget_removes_the_line() {
        let mut f = FactsFile::parse("");
        f.add("Secret code is 1234.", None, now(), None);
        f.add("Likes tea.", None, now(), None);
        let text = f.render();
        let mut f = FactsFile::parse(&text);
        f.forget("f1").unwrap();
        let text = f.render();
        assert!(!text.contains("1234"), "{text}");
        assert!(text.contains("Likes tea."));
        assert!(f.forget("f9").is_err());
        assert!(f.end("f9", None, None).is_err());
    }

    #[test]
    fn audit_scrub_keeps_records_without_text() {
        let text = audit_lines(&[
            AuditRecord {
                op: "add".into(),
                memory: "f1".into(),
                new: Some("code 1234".into()),
                by: "consolidation".into(),
                ..Default::default()
            },
            AuditRecord {
                op: "update".into(),
                memory: "f2".into(),
                supersedes: Some("f1".into()),
                old: Some("code 1234".into()),
                new: Some("code 5678".into()),
                by: "consolidation".into(),
                ..Default::default()
            },
        ])
        .unwrap();
        let (text, scrubbed) = scrub_audit(&text, "f1").unwrap();
        assert_eq!(scrubbed, 2);
        assert!(!text.contains("1234") && text.contains("5678"), "{text}");
        assert_eq!(
            parse_audit(&text)
                .iter()
                .filter(|r| r.concerns("f1"))
                .count(),
            2
        );
    }
}
