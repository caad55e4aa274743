//! What an import did (or, with `--dry-run`, would do): one action per line
//! and a summary with counts per kind.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::Serialize;

/// What happened to one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// A new file or session log.
    Create,
    /// Lines added to an existing file or log.
    Append,
    /// A file this tool imported earlier, untouched since, replaced by the
    /// source's newer version.
    Update,
    /// Already there: nothing to do.
    Skip,
    /// Refused because it would leave the workspace or follow a link out of
    /// the source; nothing was written for it.
    Refuse,
    /// A problem with one source file or line; the rest of the import went on.
    Error,
    /// Found but not understood: left in the source (a file) or kept
    /// verbatim (a record of a transcript).
    Unknown,
}

impl Verb {
    /// Lower-case name as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Create => "create",
            Verb::Append => "append",
            Verb::Update => "update",
            Verb::Skip => "skip",
            Verb::Refuse => "refuse",
            Verb::Error => "error",
            Verb::Unknown => "unknown",
        }
    }

    /// True for the verbs that write to the workspace.
    pub fn writes(self) -> bool {
        matches!(self, Verb::Create | Verb::Append | Verb::Update)
    }
}

/// What kind of thing an action is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A session log under `sessions/`.
    Session,
    /// A section merged into `MEMORY.md`.
    MemoryMd,
    /// Entries of `memory/HISTORY.md`.
    History,
    /// A Markdown file under `memory/` (daily log, note, topic file).
    File,
    /// A typed memory file with front matter.
    TypedMemory,
    /// A profile or persona file (`USER.md`, `SOUL.md`, …).
    Profile,
    /// Something in the source that is not imported.
    Other,
}

impl Kind {
    /// Name as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Session => "session",
            Kind::MemoryMd => "memory-md",
            Kind::History => "history",
            Kind::File => "file",
            Kind::TypedMemory => "typed-memory",
            Kind::Profile => "profile",
            Kind::Other => "other",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Action {
    /// What happened.
    pub verb: Verb,
    /// What it happened to.
    pub kind: Kind,
    /// The workspace-relative target (empty when there is none).
    pub target: String,
    /// The source file, relative to the source folder, with a line number
    /// when the action is about one line.
    pub source: String,
    /// Counts, reasons and what to do next.
    pub detail: String,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<7} {:<12}", self.verb.as_str(), self.kind.as_str())?;
        if !self.target.is_empty() {
            write!(f, " {}", self.target)?;
        }
        if !self.source.is_empty() {
            write!(f, " <- {}", self.source)?;
        }
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

/// Everything one import did, in order.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// True when nothing was written.
    pub dry_run: bool,
    /// One entry per target or problem, in the order they were handled.
    pub actions: Vec<Action>,
    /// Messages written into session logs (or that would be).
    pub messages: usize,
    /// Non-message records written into session logs.
    pub records: usize,
    /// Lines merged into MEMORY.md.
    pub memory_lines: usize,
    /// History entries appended.
    pub history_entries: usize,
    /// Conversations (session logs, transcripts) found in the source,
    /// imported or already there.
    pub conversations: usize,
    /// Told of each action as it is recorded (a progress bar).
    #[serde(skip)]
    pub(crate) watcher: Watcher,
    /// True for the report of an export, whose summary speaks of what was
    /// exported rather than imported.
    #[serde(skip)]
    pub(crate) exporting: bool,
}

/// A callback told of each action as the import records it.
pub type Watch = Arc<dyn Fn(&Action) + Send + Sync>;

/// The import's [`Watch`], if any.
#[derive(Clone, Default)]
pub(crate) struct Watcher(pub(crate) Option<Watch>);

impl fmt::Debug for Watcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "Watcher(..)"
        } else {
            "Watcher(None)"
        })
    }
}

impl Report {
    /// Runs `write` unless this is a dry run. When it fails, records an
    /// error saying what the failure left `undone` and returns false, so
    /// the caller stops before counting the write as done.
    pub(crate) fn write<E: std::fmt::Display>(
        &mut self,
        dry_run: bool,
        kind: Kind,
        target: &str,
        source: &str,
        undone: &str,
        write: impl FnOnce() -> Result<(), E>,
    ) -> bool {
        if dry_run {
            return true;
        }
        match write() {
            Ok(()) => true,
            Err(e) => {
                self.push(Verb::Error, kind, target, source, format!("{e}; {undone}"));
                false
            }
        }
    }

    pub(crate) fn push(
        &mut self,
        verb: Verb,
        kind: Kind,
        target: impl Into<String>,
        source: impl Into<String>,
        detail: impl Into<String>,
    ) {
        let action = Action {
            verb,
            kind,
            target: target.into(),
            source: source.into(),
            detail: detail.into(),
        };
        if let Some(watch) = &self.watcher.0 {
            watch(&action);
        }
        self.actions.push(action);
    }

    /// Number of actions with this verb.
    pub fn count(&self, verb: Verb) -> usize {
        self.actions.iter().filter(|a| a.verb == verb).count()
    }

    /// Number of actions with this verb and kind.
    pub fn count_kind(&self, verb: Verb, kind: Kind) -> usize {
        self.actions
            .iter()
            .filter(|a| a.verb == verb && a.kind == kind)
            .count()
    }

    /// True when some source file or line could not be imported (errors and
    /// refusals).
    pub fn has_problems(&self) -> bool {
        self.actions
            .iter()
            .any(|a| matches!(a.verb, Verb::Error | Verb::Refuse))
    }

    /// True when the import wrote (or would write) something.
    pub fn changed(&self) -> bool {
        self.actions.iter().any(|a| a.verb.writes())
    }

    /// The closing summary: counts per kind and verb, then totals.
    pub fn summary(&self) -> String {
        let mut per: BTreeMap<Kind, BTreeMap<Verb, usize>> = BTreeMap::new();
        for a in &self.actions {
            *per.entry(a.kind).or_default().entry(a.verb).or_default() += 1;
        }
        let mut out = String::from(if self.dry_run {
            "summary (dry run, nothing written):"
        } else {
            "summary:"
        });
        if per.is_empty() {
            out.push_str(" nothing found to import");
        }
        for (kind, verbs) in &per {
            let parts: Vec<String> = verbs
                .iter()
                .map(|(v, n)| format!("{n} {}", v.as_str()))
                .collect();
            out.push_str(&format!("\n  {:<12} {}", kind.as_str(), parts.join(", ")));
        }
        if self.exporting {
            out.push_str(&format!(
                "\n  {} session(s) looked at; {} message(s) written to nanobot's session logs",
                self.conversations, self.messages
            ));
            let problems = self.count(Verb::Error) + self.count(Verb::Refuse);
            if problems > 0 {
                out.push_str(&format!(
                    "\n  {problems} problem(s): see the `error` lines above; fix them and run the export again (what was exported stays)"
                ));
            }
            return out;
        }
        out.push_str(&format!(
            "\n  {} conversation(s) found; {} message(s) and {} other record(s) into session logs, {} line(s) into MEMORY.md, {} history entr{}",
            self.conversations,
            self.messages,
            self.records,
            self.memory_lines,
            self.history_entries,
            if self.history_entries == 1 { "y" } else { "ies" }
        ));
        let unknown = self.count(Verb::Unknown);
        if unknown > 0 {
            out.push_str(&format!(
                "\n  {unknown} thing(s) not understood: see the `unknown` lines above (left in the source, or kept verbatim in the session logs)"
            ));
        }
        let problems = self.count(Verb::Error) + self.count(Verb::Refuse);
        if problems > 0 {
            out.push_str(&format!(
                "\n  {problems} problem(s): see the `error` and `refuse` lines above; fix those files and run the import again (what was imported stays)"
            ));
        }
        out
    }
}
