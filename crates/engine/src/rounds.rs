//! The steps of a consolidation round and how a crashed one is finished.
//! A round writes the diff of MEMORY.md into the history, then MEMORY.md,
//! then the history entry (which ends with [`round_marker`], naming the
//! session and the messages it covers), then the cursor. It is recorded as
//! pending in the engine state before its first write; a run that finds a
//! pending round whose entry is in the history only moves the cursor, so
//! nothing is written twice. A pending round without its entry is redone
//! (MEMORY.md's de-duplication absorbs a repeated update).

use mnemo_store::{LoadedSession, SessionLog};
use serde::{Deserialize, Serialize};

use crate::engine::Engine;
use crate::error::Result;
use crate::events::{ConsolidationRound, EngineEvent};

/// A round that began (its MEMORY.md and history writes may have
/// happened) but whose cursor move was not seen yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PendingRound {
    /// Cursor before.
    pub from: usize,
    /// Cursor after.
    pub to: usize,
    /// Length of HISTORY.md when the round began: its entry is after it.
    pub history_len: u64,
}

impl Engine {
    /// Marks the round `from..to` as under way (see the module docs).
    pub(crate) fn begin_round(&self, key: &str, from: usize, to: usize) -> Result<()> {
        let history_len = self.memory.read_history()?.len() as u64;
        self.with_state(key, |s| {
            s.pending = Some(PendingRound {
                from,
                to,
                history_len,
            })
        });
        Ok(())
    }

    /// Moves the cursor past a finished round and clears its record.
    pub(crate) fn end_round(&self, key: &str, log: &mut SessionLog, to: usize) -> Result<()> {
        log.set_cursor(to)?;
        self.with_state(key, |s| {
            s.consolidation_failures = 0;
            s.last_counted_failure = None;
            s.pending = None;
        });
        Ok(())
    }

    /// Opens the session's log under its lock, first finishing a round an
    /// earlier run left half-done (see [`Self::recover_round`]); what that
    /// did goes to `events`.
    pub(crate) fn open_recovered(
        &self,
        key: &str,
        events: &mut Vec<EngineEvent>,
    ) -> Result<(SessionLog, LoadedSession)> {
        let (mut log, mut loaded) = self.open(key)?;
        if self
            .recover_round(key, &mut log, &loaded, events)?
            .is_some()
        {
            loaded = log.load()?;
        }
        Ok((log, loaded))
    }

    /// Finishes a round that crashed after its history entry but before
    /// its cursor move: when the entry is there, only the cursor moves.
    /// Returns the round when it did. Reads the engine state afresh first.
    pub(crate) fn recover_round(
        &self,
        key: &str,
        log: &mut SessionLog,
        loaded: &LoadedSession,
        events: &mut Vec<EngineEvent>,
    ) -> Result<Option<ConsolidationRound>> {
        // Every consolidation starts here, under the session lock: what
        // other processes recorded counts (a round, failed runs).
        self.reload_state(key);
        let Some(p) = self.with_state(key, |s| s.pending.clone()) else {
            return Ok(None);
        };
        let cursor = loaded.meta.last_consolidated;
        let written = cursor == p.from && p.to <= loaded.messages.len() && {
            let marker = round_marker(key, p.from, p.to);
            history_since(&self.memory.read_history()?, p.history_len).contains(&marker)
        };
        if !written {
            self.with_state(key, |s| s.pending = None);
            return Ok(None);
        }
        self.end_round(key, log, p.to)?;
        let round = ConsolidationRound {
            from: p.from,
            to: p.to,
            recovered: true,
            ..Default::default()
        };
        events.push(EngineEvent::Consolidated(round.clone()));
        Ok(Some(round))
    }
}

/// The line that ends a round's history entry, naming what it covers.
pub fn round_marker(key: &str, from: usize, to: usize) -> String {
    format!("[consolidated from {key} messages {from}..{to}]")
}

/// The history from byte `offset` on (the whole of it when the history
/// was rewritten shorter since).
fn history_since(history: &str, offset: u64) -> &str {
    let offset = usize::try_from(offset).unwrap_or(usize::MAX);
    let start = (offset..=history.len())
        .find(|&i| history.is_char_boundary(i))
        .unwrap_or(0);
    history.get(start..).unwrap_or(history)
}
