//! Whether what a search finds still holds: the order of a search's hits
//! by the facts they hold ([`order_by_validity`]: current facts that answer
//! the query before the records they were distilled from, facts that ended
//! last, or as of a day only what held then) and the [`Validity`] each
//! fact hit carries, so a value that changed is never served as current.
//!
//! The facts are those of `memory/facts.md` and the dated lines a dream
//! folds into typed memories. A fact's `about SUBJECT: ATTRIBUTE` (who it
//! is about, and what about them) and its supersession links are read
//! here: a query that names the subject and attribute of a fact finds it
//! first, and an ended fact that matches a query brings the fact that
//! replaced it.

use std::collections::{HashMap, HashSet};

use chrono::NaiveDate;
use mnemo_index::{SearchHit, SearchResponse};
use mnemo_store::memory::facts::{DatedLine, Fact, FactsFile, FACTS_FILE};

use crate::error::Result;
use crate::output::{EndedLine, FactRef, Validity};

/// How far below the best hit a current fact may score and still be put
/// before the records of what was said (transcript lines, HISTORY.md
/// entries, daily logs, session notes): at least this share of the best
/// score. A fact that scores so close to the best hit answers the query
/// about as well as what it was distilled from, and it is what holds now;
/// one further down (the user's tea for "where does the user live?") keeps
/// its place. On the workspace the newcomer's four write-path rounds
/// leave (three questions about where the user lives; the fact worded "The
/// user lives in Berlin." or "Berlin is my home."; all-MiniLM-L6-v2,
/// multilingual-e5-small and keywords alone) the fact that answers scores
/// 0.73 to 1.0 of the best hit, the facts about the user's job, diet and
/// tea at most 0.53.
pub const FACT_LEAD: f32 = 0.7;

/// The history log: a record of what was said, as the session logs are.
const HISTORY_FILE: &str = "memory/HISTORY.md";

/// The facts file as a search reads it: its facts, and the line each
/// fact's list item is on.
pub struct Facts {
    file: FactsFile,
    lines: HashMap<String, usize>,
}

impl Facts {
    /// The facts file of `text` (empty: none).
    pub fn parse(text: &str) -> Facts {
        let file = FactsFile::parse(text);
        let lines = (1..=text.lines().count())
            .filter_map(|l| file.fact_at_line(l).map(|f| (f.id.clone(), l)))
            .collect();
        Facts { file, lines }
    }

    /// The parsed file.
    pub fn file(&self) -> &FactsFile {
        &self.file
    }
}

/// The dated lines ([`DatedLine`]) of the memory files other than the
/// facts file that `resp` has hits in (typed memories: the lines a dream
/// folded into them), by path, one entry per line; `read` reads a file
/// (`None`: none to read).
pub fn dated_lines_of(
    resp: &SearchResponse,
    read: impl Fn(&str) -> mnemo_store::Result<Option<String>>,
) -> Result<HashMap<String, Vec<Option<DatedLine>>>> {
    let mut out = HashMap::new();
    for h in &resp.results {
        if h.path == FACTS_FILE
            || !h.path.starts_with("memory/")
            || !h.path.ends_with(".md")
            || out.contains_key(&h.path)
        {
            continue;
        }
        let lines: Vec<Option<DatedLine>> = read(&h.path)?
            .unwrap_or_default()
            .lines()
            .map(DatedLine::parse)
            .collect();
        out.insert(h.path.clone(), lines);
    }
    Ok(out)
}

/// One fact a hit holds: a line of the facts file, or a dated line of a
/// typed memory.
#[derive(Clone, Copy)]
enum Held<'f> {
    Fact(&'f Fact),
    Line(&'f DatedLine),
}

impl Held<'_> {
    fn is_current(&self) -> bool {
        match self {
            Held::Fact(f) => f.is_current(),
            Held::Line(l) => l.is_current(),
        }
    }

    fn valid_on(&self, day: NaiveDate) -> bool {
        match self {
            Held::Fact(f) => f.valid_on(day),
            Held::Line(l) => l.valid_on(day),
        }
    }
}

/// The facts a hit holds: the fact lines (or dated lines) in its range.
/// A block hit may open with a heading or, without block hits, hold
/// several items.
fn held<'f>(
    h: &SearchHit,
    facts: &'f FactsFile,
    dated: &'f HashMap<String, Vec<Option<DatedLine>>>,
) -> Vec<Held<'f>> {
    let range = h.start_line..=h.end_line.max(h.start_line);
    if h.path == FACTS_FILE {
        range
            .filter_map(|l| facts.fact_at_line(l))
            .map(Held::Fact)
            .collect()
    } else if let Some(lines) = dated.get(&h.path) {
        range
            .filter_map(|l| lines.get(l.checked_sub(1)?)?.as_ref())
            .map(Held::Line)
            .collect()
    } else {
        Vec::new()
    }
}

/// A hit that records what was said on a day rather than what holds: a
/// transcript line, a HISTORY.md entry, a daily log or a session note.
fn is_record(h: &SearchHit) -> bool {
    h.source == mnemo_index::Source::Sessions || h.path == HISTORY_FILE || h.date.is_some()
}

/// The day a hit speaks from: its `date`, else the stamp a HISTORY.md
/// entry opens with (`[2026-03-01 10:00] …`).
fn hit_day(h: &SearchHit) -> Option<NaiveDate> {
    let day = match &h.date {
        Some(d) => d.get(..10),
        None if h.path == HISTORY_FILE => h.snippet.trim_start().strip_prefix('[')?.get(..10),
        None => None,
    };
    day?.parse().ok()
}

/// Puts a search's hits in the order a reader can trust.
///
/// Now: a current fact that answers the query goes before every record of
/// what was said ([`is_record`]: the transcript lines and history entries
/// it was distilled from, which may quote a value that changed since). A
/// fact answers when it scores at least [`FACT_LEAD`] of the best hit,
/// counting the score of any ended fact it replaced that the query found
/// ("I live in Lisbon" found for "where does the user live?" brings "Berlin
/// is my home", which replaced it, with that score, and the fact is added
/// when the index did not return it). Among those facts, the ones whose subject the query
/// names come first ([`Query::names`]), then those whose attribute it
/// names, then by score. Other hits keep the index's order; facts that
/// stopped being true go after everything (they stay, so history is still
/// found).
///
/// As of a day: only the facts that held on it, and nothing dated after
/// it. The dated lines of typed memories (`dated`, from
/// [`dated_lines_of`]) are facts too: a line a retraction ended (under the
/// memory's "No longer true") is history.
pub fn order_by_validity(
    resp: &mut SearchResponse,
    query: &str,
    facts: &Facts,
    dated: &HashMap<String, Vec<Option<DatedLine>>>,
    as_of: Option<NaiveDate>,
) {
    let file = &facts.file;
    let hits = std::mem::take(&mut resp.results);
    if let Some(day) = as_of {
        resp.results = hits
            .into_iter()
            .filter(|h| {
                let found = held(h, file, dated);
                if found.is_empty() {
                    hit_day(h).is_none_or(|d| d <= day)
                } else {
                    found.iter().any(|f| f.valid_on(day))
                }
            })
            .collect();
        return;
    }
    let top = hits.iter().map(|h| h.score).fold(0.0f32, f32::max);
    // What each current fact inherits from the ended facts it replaced.
    let mut inherited: HashMap<String, f32> = HashMap::new();
    for h in &hits {
        for f in held(h, file, dated) {
            if let Held::Fact(f) = f {
                if let Some(now) = f
                    .superseded_by
                    .as_deref()
                    .and_then(|id| holding_now(file, id))
                {
                    let e = inherited.entry(now.id.clone()).or_insert(0.0);
                    *e = e.max(h.score);
                }
            }
        }
    }
    let q = Query::new(query, file);
    // Current fact hits that answer, with (named, attribute words, score).
    let mut lead: Vec<(SearchHit, (bool, usize, f32))> = Vec::new();
    let (mut rest, mut past) = (Vec::new(), Vec::new());
    let mut seen: HashSet<String> = HashSet::new();
    // Where the leading facts go: where the first of them or the first
    // record stood (a curated memory ranked above both keeps its place).
    let mut at: Option<usize> = None;
    for h in hits {
        let found = held(&h, file, dated);
        if !found.is_empty() && !found.iter().any(Held::is_current) {
            past.push(h);
            continue;
        }
        let current: Vec<&Fact> = found
            .iter()
            .filter_map(|f| match f {
                Held::Fact(f) if f.is_current() => Some(*f),
                _ => None,
            })
            .collect();
        seen.extend(current.iter().map(|f| f.id.clone()));
        let score = current
            .iter()
            .filter_map(|f| inherited.get(&f.id))
            .fold(h.score, |a, b| a.max(*b));
        let mut h = h;
        h.score = score;
        if !found.is_empty() && score >= FACT_LEAD * top {
            at.get_or_insert(rest.len());
            let key = q.key(&current, score);
            lead.push((h, key));
        } else {
            if is_record(&h) {
                at.get_or_insert(rest.len());
            }
            rest.push(h);
        }
    }
    // The replacements the index did not return.
    for (id, score) in &inherited {
        if seen.contains(id) || *score < FACT_LEAD * top {
            continue;
        }
        if let Some(h) = facts.hit(id, *score) {
            let key = q.key(&facts.file.get(id).into_iter().collect::<Vec<_>>(), *score);
            lead.push((h, key));
        }
    }
    lead.sort_by(|(_, a), (_, b)| b.0.cmp(&a.0).then(b.1.cmp(&a.1)).then(b.2.total_cmp(&a.2)));
    let mut out: Vec<SearchHit> = rest.drain(..at.unwrap_or(rest.len())).collect();
    out.extend(lead.into_iter().map(|(h, _)| h));
    out.append(&mut rest);
    out.append(&mut past);
    resp.results = out;
}

impl Facts {
    /// A hit for the current fact `id` on its own line, scoring `score`.
    fn hit(&self, id: &str, score: f32) -> Option<SearchHit> {
        let line = *self.lines.get(id)?;
        let f = self.file.get(id)?;
        Some(SearchHit {
            path: FACTS_FILE.to_string(),
            start_line: line,
            end_line: line,
            score,
            vector_score: None,
            text_score: None,
            snippet: f.render(),
            source: mnemo_index::Source::Memory,
            citation: format!("{FACTS_FILE}#L{line}-L{line}"),
            session_key: None,
            message_range: None,
            date: None,
            trace: None,
        })
    }
}

/// After a re-rank: facts that stopped being true go after the others
/// again (`ended` holds their citations), in the model's order otherwise.
pub fn ended_last(resp: &mut SearchResponse, ended: &HashSet<String>) {
    let (now, past): (Vec<SearchHit>, Vec<SearchHit>) = std::mem::take(&mut resp.results)
        .into_iter()
        .partition(|h| !ended.contains(&h.citation));
    resp.results = now;
    resp.results.extend(past);
}

/// What a search says about the facts of its hits: each hit's
/// [`Validity`] by citation (for a hit that holds one fact), and the
/// citations of the hits whose facts all ended.
pub fn validity_of(
    resp: &SearchResponse,
    facts: &Facts,
    dated: &HashMap<String, Vec<Option<DatedLine>>>,
) -> (HashMap<String, Validity>, HashSet<String>) {
    let mut marks = HashMap::new();
    let mut ended = HashSet::new();
    for h in &resp.results {
        let found = held(h, &facts.file, dated);
        if !found.is_empty() && !found.iter().any(Held::is_current) {
            ended.insert(h.citation.clone());
        }
        if let [one] = found.as_slice() {
            let v = match one {
                Held::Fact(f) => fact_validity(f, &facts.file),
                Held::Line(l) => line_validity(l),
            };
            marks.insert(h.citation.clone(), v);
        }
    }
    (marks, ended)
}

/// A fact's [`Validity`]: for one that ended, since when, what replaced it
/// (and what holds now, when the replacement ended too) or that it was
/// retracted, in a sentence.
pub fn fact_validity(f: &Fact, facts: &FactsFile) -> Validity {
    let fact_ref = |g: &Fact| FactRef {
        id: g.id.clone(),
        text: g.text.clone(),
        current: g.is_current(),
    };
    let replaced_by = f
        .superseded_by
        .as_deref()
        .and_then(|id| facts.get(id))
        .map(fact_ref);
    let note = (!f.is_current()).then(|| {
        let mut note = match f.until {
            Some(u) if f.retracted => format!("no longer true: retracted on {u}"),
            None if f.retracted => "no longer true: retracted".to_string(),
            Some(u) => format!("no longer true since {u}"),
            None => "no longer true".to_string(),
        };
        match (&replaced_by, f.superseded_by.as_deref()) {
            (Some(r), _) => {
                note.push_str(&format!(", replaced by {}: {}", r.id, r.text));
                if !r.current {
                    match holding_now(facts, &r.id) {
                        Some(g) => note.push_str(&format!(
                            " (itself no longer true; true now: {}: {})",
                            g.id, g.text
                        )),
                        None => note.push_str(" (itself no longer true)"),
                    }
                }
            }
            (None, Some(id)) => note.push_str(&format!(", replaced by {id} (no longer in memory)")),
            (None, None) => {}
        }
        note
    });
    Validity {
        current: f.is_current(),
        id: Some(f.id.clone()),
        since: f.since.map(|d| d.to_string()),
        until: f.until.map(|d| d.to_string()),
        replaced_by,
        retracted: f.retracted,
        note,
    }
}

/// The lines of `text` (lines of the memory file `path` from line `from`
/// on, as `memory_get` returns them) whose fact no longer holds: facts of
/// memory/facts.md (`facts` reads the whole file, for what replaced them)
/// and dated lines of typed memories.
pub fn ended_lines(
    path: &str,
    text: &str,
    from: usize,
    facts: impl FnOnce() -> mnemo_store::Result<FactsFile>,
) -> Result<Vec<EndedLine>> {
    if path == FACTS_FILE {
        let file = facts()?;
        return Ok(text
            .lines()
            .enumerate()
            .filter_map(|(i, line)| {
                let one = FactsFile::parse(line);
                let f = one.facts().first().filter(|f| !f.is_current())?;
                Some(EndedLine {
                    line: from + i,
                    validity: fact_validity(f, &file),
                })
            })
            .collect());
    }
    if !path.starts_with("memory/") {
        return Ok(Vec::new());
    }
    Ok(text
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let d = DatedLine::parse(line).filter(|d| !d.is_current())?;
            Some(EndedLine {
                line: from + i,
                validity: line_validity(&d),
            })
        })
        .collect())
}

/// The fact that holds now at the end of `id`'s chain of replacements,
/// if one does.
fn holding_now<'f>(facts: &'f FactsFile, id: &str) -> Option<&'f Fact> {
    let mut f = facts.get(id)?;
    // A chain a person edited into a loop ends somewhere.
    for _ in 0..facts.facts().len() {
        if f.is_current() {
            return Some(f);
        }
        f = facts.get(f.superseded_by.as_deref()?)?;
    }
    None
}

/// A typed memory's dated line's [`Validity`].
fn line_validity(l: &DatedLine) -> Validity {
    let current = l.is_current();
    Validity {
        current,
        id: None,
        since: Some(l.since.to_string()),
        until: l.until.map(|d| d.to_string()),
        replaced_by: None,
        retracted: l.retracted_by.is_some(),
        note: (!current).then(|| match l.until {
            Some(u) => format!("no longer true: retracted on {u}"),
            None => "no longer true: retracted".to_string(),
        }),
    }
}

/// The words of `text` as the subject rule reads them: lower-cased runs of
/// letters and digits, a possessive `'s` a word of its own ("user's" ->
/// "user", "'s").
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() {
            cur.extend(c.to_lowercase());
            continue;
        }
        if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
            if matches!(c, '\'' | '\u{2019}')
                && chars.peek().is_some_and(|n| matches!(n, 's' | 'S'))
            {
                chars.next();
                if chars.peek().is_none_or(|n| !n.is_alphanumeric()) {
                    out.push("'s".to_string());
                } else {
                    cur.push('s');
                }
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// A subject's words without a leading article ("the user's sister" ->
/// "user", "'s", "sister").
fn subject_words(subject: &str) -> Vec<String> {
    let mut w = words(subject);
    if w.first()
        .is_some_and(|f| matches!(f.as_str(), "the" | "a" | "an"))
    {
        w.remove(0);
    }
    w
}

/// What the user is called in the query's language: "user", "用户", and
/// the names the facts give them (`about user: name`, "The user's name is
/// Rui.": the capitalised words after the first).
fn user_names(file: &FactsFile) -> Vec<String> {
    let mut names = Vec::new();
    for f in file.current() {
        let (Some(s), Some(a)) = (&f.subject, &f.attribute) else {
            continue;
        };
        if !s.eq_ignore_ascii_case("user") || !a.to_lowercase().contains("name") {
            continue;
        }
        for w in f.text.split_whitespace().skip(1) {
            let w = w.trim_matches(|c: char| !c.is_alphanumeric());
            if w.chars().next().is_some_and(char::is_uppercase) && !w.eq_ignore_ascii_case("user") {
                names.push(w.to_lowercase());
            }
        }
    }
    names
}

/// A query as the subject rule reads it.
struct Query {
    /// Its words, each of the user's names and "I" read as "user" ("my":
    /// "user", "'s").
    words: Vec<String>,
    /// The query, lower-cased (for subjects in scripts without spaces).
    lower: String,
    /// The attribute words of each subject's current facts.
    attributes: HashMap<String, HashSet<String>>,
}

impl Query {
    fn new(query: &str, file: &FactsFile) -> Query {
        let names = user_names(file);
        // The user is whoever says "I" in the conversations the facts
        // come from: "my sister" is the user's sister, "where do I live"
        // asks about the user.
        let words = words(query)
            .into_iter()
            .flat_map(|w| match w.as_str() {
                "i" | "me" | "myself" => vec!["user".to_string()],
                "my" | "mine" => vec!["user".to_string(), "'s".to_string()],
                _ if names.contains(&w) => vec!["user".to_string()],
                _ => vec![w],
            })
            .collect();
        let mut attributes: HashMap<String, HashSet<String>> = HashMap::new();
        for f in file.current() {
            if let (Some(s), Some(a)) = (&f.subject, &f.attribute) {
                attributes
                    .entry(subject_words(s).join(" "))
                    .or_default()
                    .extend(words_of(a));
            }
        }
        Query {
            words,
            lower: query.to_lowercase(),
            attributes,
        }
    }

    /// Whether the query names `subject` as whom it asks about: its words
    /// in a row ("the user", "Rui" for the user, "Ana"), and not as the
    /// owner of someone else ("the user's sister" names the sister, "Ana's
    /// job" names Ana: what follows `'s` is one of her attributes).
    fn names(&self, subject: &str) -> bool {
        let s = subject_words(subject);
        if s.is_empty() {
            return false;
        }
        if s.iter().any(|w| w.chars().any(mnemo_index::is_cjk)) {
            return self.lower.contains(&subject.to_lowercase());
        }
        if s == ["user"] && self.lower.contains("用户") {
            return true;
        }
        let attrs = self.attributes.get(&s.join(" "));
        (0..self.words.len()).any(|p| {
            self.words.get(p..p + s.len()) == Some(s.as_slice())
                && match self.words.get(p + s.len()).map(String::as_str) {
                    Some("'s") => self
                        .words
                        .get(p + s.len() + 1)
                        .is_some_and(|w| attrs.is_some_and(|a| a.contains(w))),
                    _ => true,
                }
        })
    }

    /// How many words of `attribute` the query has ("city" of "home
    /// city"); an attribute in a script without spaces counts when the
    /// query holds it whole.
    fn attribute_words(&self, attribute: &str) -> usize {
        if attribute.chars().any(mnemo_index::is_cjk) {
            return usize::from(self.lower.contains(&attribute.to_lowercase()));
        }
        words_of(attribute)
            .iter()
            .filter(|w| self.words.contains(w))
            .count()
    }

    /// The sort key of a leading hit holding `facts`: whether the query
    /// names a subject of them, how many attribute words it names, its
    /// score.
    fn key(&self, facts: &[&Fact], score: f32) -> (bool, usize, f32) {
        let mut named = false;
        let mut attr = 0;
        for f in facts {
            named |= f.subject.as_deref().is_some_and(|s| self.names(s));
            attr = attr.max(
                f.attribute
                    .as_deref()
                    .map_or(0, |a| self.attribute_words(a)),
            );
        }
        (named, attr, score)
    }
}

/// The content words of an attribute (three letters or more: "home",
/// "city"; not "of").
fn words_of(attribute: &str) -> Vec<String> {
    words(attribute)
        .into_iter()
        .filter(|w| w.chars().count() >= 3 && w != "the" && w != "and")
        .collect()
}

#[cfg(test)]
#[path = "validity_tests.rs"]
mod tests;
