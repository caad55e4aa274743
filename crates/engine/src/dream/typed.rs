//! Typed memories a dream writes into (see the module docs): where a
//! folded item goes, the plan of each memory's new and ended lines, and
//! the last pass, which records the memories written.

use chrono::NaiveDate;
use mnemo_store::memory::facts::{DatedLine, PAST_HEADING};
use mnemo_store::memory::{render_front_matter, split_front_matter, FrontMatter, MemoryType};

use super::rules::{bullet_text, core_words, subject};
use super::state::DreamState;
use super::words;

/// A typed memory as the fold finds it: its path, front matter and text
/// (`None`: made by this dream).
pub(super) type TypedHome = (String, FrontMatter, Option<String>);

/// A typed memory a dream writes into: its text before (`None`: the dream
/// makes it), its front matter, the lines it adds and the dated lines it
/// ends.
#[derive(Debug, Clone)]
pub(super) struct TypedPlan {
    pub(super) before: Option<String>,
    pub(super) front: FrontMatter,
    pub(super) lines: Vec<String>,
    /// The items' texts, for the loss guard.
    pub(super) items: Vec<String>,
    /// Dated lines ended by a retraction: `(line, the line ended)`.
    pub(super) ends: Vec<(String, DatedLine)>,
}

impl TypedPlan {
    /// The file's text after the dream: the lines appended to the file as
    /// it was (its front matter and body otherwise untouched), or a new
    /// file; then the ended lines moved under "No longer true".
    pub(super) fn after(&self) -> String {
        let added = self.lines.join("\n");
        let text = match &self.before {
            Some(_) if self.lines.is_empty() => self.before.clone().unwrap_or_default(),
            Some(b) => {
                let body_empty = split_front_matter(b).1.trim().is_empty();
                format!(
                    "{}\n{}{added}\n",
                    b.trim_end_matches('\n'),
                    if body_empty { "\n" } else { "" }
                )
            }
            None => render_front_matter(&self.front, &(added + "\n")),
        };
        end_lines(&text, &self.ends)
    }

    /// Its current dated lines: the file's and the ones added, less the
    /// ones ended.
    pub(super) fn current_lines(&self) -> Vec<(String, DatedLine)> {
        self.before
            .as_deref()
            .unwrap_or_default()
            .lines()
            .chain(self.lines.iter().map(String::as_str))
            .filter(|l| !self.ends.iter().any(|(e, _)| e == l))
            .filter_map(|l| DatedLine::parse(l).map(|d| (l.to_string(), d)))
            .filter(|(_, d)| d.is_current())
            .collect()
    }
}

/// `text` (a typed memory) with each line of `ends` moved under
/// [`PAST_HEADING`], ended, where the facts file puts the facts that end:
/// right under the heading (in file order), the heading made at the end of
/// the body when missing. Every other line stays where it is.
fn end_lines(text: &str, ends: &[(String, DatedLine)]) -> String {
    if ends.is_empty() {
        return text.to_string();
    }
    let mut out: Vec<String> = Vec::new();
    let mut ended: Vec<String> = Vec::new();
    for line in text.lines() {
        match ends.iter().find(|(l, _)| l == line) {
            Some((_, d)) => ended.push(d.render()),
            None => out.push(line.to_string()),
        }
    }
    match out.iter().position(|l| l.trim() == PAST_HEADING) {
        Some(p) => {
            let at = if out.get(p + 1).is_some_and(|l| l.trim().is_empty()) {
                p + 2
            } else {
                p + 1
            };
            out.splice(at..at, ended);
        }
        None => {
            while out.last().is_some_and(|l| l.trim().is_empty()) {
                out.pop();
            }
            out.extend([String::new(), PAST_HEADING.to_string(), String::new()]);
            out.extend(ended);
        }
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

/// The typed memory a folded item names, by rule: `[TYPE] Name: text`
/// (a type tag, `user` / `feedback` / `project` / `reference`), or
/// untagged `Name: text` / a [`subject`] whose [`core_words`] are an
/// existing typed memory's name. Returns the type tag (when tagged), the
/// name (the key, or `<Type> notes` for a tagged item without one) and
/// the item's text without its tag.
pub fn typed_home(item: &str) -> Option<(Option<MemoryType>, String, String)> {
    let t = item.trim();
    let (kind, rest) = match t.strip_prefix('[').and_then(|r| r.split_once("] ")) {
        Some((tag, rest)) => match tag.parse::<MemoryType>() {
            Ok(k) => (Some(k), rest.trim()),
            Err(_) => (None, t),
        },
        None => (None, t),
    };
    let key = match rest.split_once([':', '\u{ff1a}']) {
        Some((k, v)) if (1..=6).contains(&words(k).len()) && !words(v).is_empty() => {
            Some(k.trim().to_string())
        }
        _ => subject(rest),
    };
    match (kind, key) {
        (k, Some(key)) => Some((k, key, rest.to_string())),
        (Some(k), None) => {
            let mut name = k.as_str().to_string();
            name[..1].make_ascii_uppercase();
            Some((Some(k), format!("{name} notes"), rest.to_string()))
        }
        (None, None) => None,
    }
}

/// The text of a typed memory's dated line (`- text (since …; from …)`),
/// as the fold compares it with an item.
fn typed_line_text(line: &str) -> Option<String> {
    let t = bullet_text(line)?;
    let t = t.rfind(" (since ").map_or(t, |i| &t[..i]);
    Some(words(t).join(" "))
}

/// Puts the folded `item` (of the daily log `log`, dated `date`) into
/// the typed memory `home` names when that memory exists or the item
/// carries a type tag (a new memory then, at the path `free_path` gives
/// its name); false when its home is the facts file. An item the memory
/// holds already is accounted for.
pub(super) fn fold_into_typed(
    state: &mut DreamState,
    (kind, name, text): (Option<MemoryType>, String, String),
    item: &str,
    (date, log): (NaiveDate, &str),
    free_path: &dyn Fn(&str) -> String,
) -> bool {
    let key = core_words(&name);
    if key.is_empty() {
        return false;
    }
    let (path, front, before) = match state.typed_by_name.get(&key) {
        Some(home) => home.clone(),
        None => {
            let Some(kind) = kind else { return false };
            let path = free_path(&name);
            if state.plans.contains_key(&path) {
                // Another new name with the same letters: facts.
                return false;
            }
            let description: String = text.chars().take(120).collect();
            let front = FrontMatter {
                name: name.trim().to_string(),
                description,
                kind,
            };
            let home = (path, front, None);
            state.typed_by_name.insert(key, home.clone());
            home
        }
    };
    let plan = state
        .plans
        .entry(path.clone())
        .or_insert_with(|| TypedPlan {
            before: before.clone(),
            front,
            lines: Vec::new(),
            items: Vec::new(),
            ends: Vec::new(),
        });
    let said = words(&text).join(" ");
    let held = before
        .as_deref()
        .unwrap_or_default()
        .lines()
        .chain(plan.lines.iter().map(String::as_str))
        .any(|l| typed_line_text(l).is_some_and(|t| t == said));
    let report = &mut state.report;
    if !held {
        plan.lines.push(DatedLine::new(&text, date, log).render());
        plan.items.push(text);
        if plan.before.is_none() && !report.typed_created.contains(&path) {
            report.typed_created.push(path.clone());
        }
    }
    report.typed.push((item.to_string(), path));
    true
}

/// Pass 6: records the typed memories written. A memory nothing was
/// added to or ended in is left alone; each memory lines were added to
/// gets an audit record (`add` for one the dream makes, else `update`).
pub(super) fn record_typed_memories(state: &mut DreamState) {
    state
        .plans
        .retain(|_, p| !p.lines.is_empty() || !p.ends.is_empty());
    for plan in state.plans.values().filter(|p| !p.lines.is_empty()) {
        let op = if plan.before.is_none() {
            "add"
        } else {
            "update"
        };
        state.audit.record(
            op,
            &plan.front.name,
            None,
            None,
            Some(&plan.lines.join("\n")),
        );
    }
}
