//! The working state the passes transform in turn, and the audit records
//! they add to.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, NaiveDate, Utc};
use mnemo_store::memory::facts::{AuditRecord, FactsFile};

use super::rules::core_words;
use super::typed::{TypedHome, TypedPlan};
use super::DreamReport;

/// What the passes work on: the facts file as they leave it, the typed
/// memories, the plans of those the dream writes into, the items folded,
/// and the report and audit records they add to.
pub(super) struct DreamState {
    /// The dream's time.
    pub(super) now: DateTime<Utc>,
    /// Its day in the memory's time zone: what ends without a day of its
    /// own ends on it.
    pub(super) today: NaiveDate,
    /// The facts file.
    pub(super) file: FactsFile,
    /// Typed memories by the core words of their names (and all of them,
    /// in `typed_all`, for retractions); the ones the dream writes into,
    /// by path, in `plans`.
    pub(super) typed_by_name: HashMap<String, TypedHome>,
    pub(super) typed_all: Vec<TypedHome>,
    pub(super) plans: BTreeMap<String, TypedPlan>,
    /// The daily-log items folded (each must find a home).
    pub(super) folded_items: Vec<String>,
    pub(super) report: DreamReport,
    pub(super) audit: Audit,
}

impl DreamState {
    /// The state of dream `id` at `now` (`today`) before any pass: the
    /// facts file `file` and the typed memories `typed` as read, nothing
    /// planned or reported yet.
    pub(super) fn new(
        id: &str,
        now: DateTime<Utc>,
        today: NaiveDate,
        file: FactsFile,
        typed: Vec<TypedHome>,
    ) -> Self {
        let mut typed_by_name: HashMap<String, TypedHome> = HashMap::new();
        for home in &typed {
            typed_by_name
                .entry(core_words(&home.1.name))
                .or_insert_with(|| home.clone());
        }
        DreamState {
            now,
            today,
            file,
            typed_by_name,
            typed_all: typed,
            plans: BTreeMap::new(),
            folded_items: Vec::new(),
            report: DreamReport {
                id: id.to_string(),
                ..Default::default()
            },
            audit: Audit {
                now,
                records: Vec::new(),
            },
        }
    }
}

/// The audit records of a dream, in the order its passes make them.
pub(super) struct Audit {
    now: DateTime<Utc>,
    pub(super) records: Vec<AuditRecord>,
}

impl Audit {
    /// Records the dream's change `op` to `memory`.
    pub(super) fn record(
        &mut self,
        op: &str,
        memory: &str,
        supersedes: Option<&str>,
        old: Option<&str>,
        new: Option<&str>,
    ) {
        self.records.push(AuditRecord::change(
            self.now, "dream", op, memory, supersedes, old, new,
        ));
    }
}
