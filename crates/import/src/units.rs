//! The units of a source (nanobot workspaces, OpenClaw agents, Claude Code
//! projects) and the user's choice among them.

use std::path::Path;

use crate::error::{Error, Result};
use crate::{Select, Tool};

/// Keeps the units `select` names. With several units and no choice, or a
/// name that is not there, the import stops and lists what was found.
pub(crate) fn choose<T>(
    tool: Tool,
    root: &Path,
    units: Vec<(String, T)>,
    select: &Select,
) -> Result<Vec<(String, T)>> {
    let names: Vec<String> = units.iter().map(|(n, _)| n.clone()).collect();
    let what = tool.unit_name();
    let listing = names.join(", ");
    let fail = |message: String| Error::Choose {
        path: root.to_path_buf(),
        message,
        found: names.clone(),
    };
    match select {
        Select::All => Ok(units),
        Select::Single if units.len() <= 1 => Ok(units),
        Select::Single => Err(fail(format!(
            "found {} {what}s ({listing}): choose one with --only NAME (repeat it for several), or import them all with --all",
            units.len()
        ))),
        Select::Named(wanted) => {
            if let Some(missing) = wanted.iter().find(|w| !names.contains(w)) {
                return Err(fail(format!(
                    "no {what} named {missing:?} here; found: {}",
                    if listing.is_empty() { "none" } else { listing.as_str() }
                )));
            }
            Ok(units
                .into_iter()
                .filter(|(n, _)| wanted.contains(n))
                .collect())
        }
    }
}
