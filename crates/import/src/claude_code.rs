//! Claude Code: `~/.claude` holds `projects/<project>/` (the project's
//! path with `/` as `-`), each with its transcripts (see
//! [`crate::claude_code_transcript`]) and its auto memory folder `memory/`:
//! `MEMORY.md`, an index of `- [Title](file.md) — hook` lines, and typed
//! topic files whose front matter holds `name`, `description` and `type`.
//!
//! Topic files are copied byte for byte to `memory/<same path>` (front
//! matter validated; a broken one is copied as it is and reported). Index
//! lines are merged into MEMORY.md with their links pointing at the copies.
//! `~/.claude/CLAUDE.md` (the user's instructions) goes through
//! [`crate::profile`].

use std::collections::HashMap;
use std::path::{Component, Path};

use mnemo_store::memory::split_front_matter;
use mnemo_store::MemoryType;
use serde_json::{json, Value};

use crate::claude_code_transcript;
use crate::error::{Error, Result};
use crate::importer::{Importer, MergeLine};
use crate::profile;
use crate::report::{Kind, Verb};
use crate::source::{join, Entry, Source};
use crate::units::choose;
use crate::{Select, Tool};

pub(crate) fn run(imp: &mut Importer<'_>, src: Source, select: &Select) -> Result<Vec<String>> {
    let mut looked = Vec::new();
    if src.entry("projects") == Entry::Dir {
        // ~/.claude: the projects, and the user's own CLAUDE.md.
        let units = projects(&src, "projects");
        let chosen = choose(Tool::ClaudeCode, src.root(), units.clone(), select)?;
        for (name, dir) in &chosen {
            project(imp, &src, dir, name, &mut looked);
        }
        for (name, dir) in &units {
            if !chosen.iter().any(|(n, _)| n == name) {
                imp.report.push(
                    Verb::Skip,
                    Kind::Other,
                    "",
                    dir.clone(),
                    "another project, not chosen (--only NAME, or --all)",
                );
            }
        }
        profile::import(imp, &src, "", "user");
        home_leftovers(imp, &src);
        return Ok(looked);
    }
    if is_project(&src, "") {
        let units = choose(
            Tool::ClaudeCode,
            src.root(),
            vec![(src.name(), String::new())],
            select,
        )?;
        for (name, dir) in &units {
            project(imp, &src, dir, name, &mut looked);
        }
        return Ok(looked);
    }
    let units = projects(&src, "");
    if !units.is_empty() {
        // ~/.claude/projects itself.
        let chosen = choose(Tool::ClaudeCode, src.root(), units, select)?;
        for (name, dir) in &chosen {
            project(imp, &src, dir, name, &mut looked);
        }
        return Ok(looked);
    }
    if !is_memory_dir(&src, "") {
        return Err(Error::Source {
            path: src.root().to_path_buf(),
            message: "not a Claude Code folder: no projects/, no transcripts (*.jsonl), no MEMORY.md or topic files; give ~/.claude, one of its projects (~/.claude/projects/<project>) or a memory folder".into(),
        });
    }
    memory(imp, &src, "")?;
    looked.push(format!(
        "this memory folder (Claude Code keeps the conversations beside it, in {}: import that folder to bring them too)",
        src.parent().map(|p| p.root().display().to_string()).unwrap_or_default()
    ));
    Ok(looked)
}

/// The projects in `dir`: folders holding transcripts or a memory folder.
fn projects(src: &Source, dir: &str) -> Vec<(String, String)> {
    src.names(dir)
        .into_iter()
        .filter(|n| src.entry(&join(dir, n)) == Entry::Dir && is_project(src, &join(dir, n)))
        .map(|n| {
            let rel = join(dir, &n);
            (n, rel)
        })
        .collect()
}

fn is_project(src: &Source, dir: &str) -> bool {
    src.names(dir).iter().any(|n| n.ends_with(".jsonl"))
        || (src.entry(&join(dir, "memory")) == Entry::Dir
            && is_memory_dir(src, &join(dir, "memory")))
}

fn is_memory_dir(src: &Source, dir: &str) -> bool {
    src.entry(&join(dir, "MEMORY.md")) != Entry::Missing
        || src
            .names(dir)
            .iter()
            .any(|n| n.ends_with(".md") && src.entry(&join(dir, n)) == Entry::File)
}

/// One project: its transcripts, their subagents, its memory folder.
fn project(imp: &mut Importer<'_>, src: &Source, dir: &str, name: &str, looked: &mut Vec<String>) {
    looked.push(format!("{}/*.jsonl", src.path(dir).display()));
    let names = src.names(dir);
    let sessions: Vec<String> = names
        .iter()
        .filter_map(|n| n.strip_suffix(".jsonl").map(str::to_string))
        .collect();
    for n in &names {
        let rel = join(dir, n);
        match src.entry(&rel) {
            Entry::Link => {
                src.report_link(&rel, Kind::Session, &mut imp.report);
                continue;
            }
            Entry::Missing => continue,
            _ => {}
        }
        if let Some(session) = n.strip_suffix(".jsonl") {
            if src.entry(&rel) == Entry::File {
                let key = format!("claude-code:{name}:{session}");
                claude_code_transcript::import(imp, src, &rel, &key, None);
                continue;
            }
        }
        if n == "memory" && src.entry(&rel) == Entry::Dir {
            if is_memory_dir(src, &rel) {
                let _ = memory(imp, src, &rel);
            }
            continue;
        }
        if src.entry(&rel) == Entry::Dir && sessions.contains(n) {
            session_dir(imp, src, &rel, &format!("claude-code:{name}:{n}"));
            continue;
        }
        imp.report.push(
            Verb::Unknown,
            Kind::Other,
            "",
            rel,
            "not something Claude Code keeps conversations or memory in: left as it is",
        );
    }
}

/// `<project>/<session>/`: the session's subagents and stored tool output.
fn session_dir(imp: &mut Importer<'_>, src: &Source, dir: &str, key: &str) {
    for n in src.names(dir) {
        let rel = join(dir, &n);
        if n == "subagents" && src.entry(&rel) == Entry::Dir {
            for a in src.names(&rel) {
                let file = join(&rel, &a);
                if let Some(agent) = a.strip_suffix(".jsonl") {
                    let meta = src
                        .peek(&join(&rel, &format!("{agent}.meta.json")))
                        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                        .unwrap_or_else(|| json!({}));
                    let mut meta = meta;
                    if let Some(o) = meta.as_object_mut() {
                        o.insert("parent_session".into(), json!(key));
                    }
                    claude_code_transcript::import(
                        imp,
                        src,
                        &file,
                        &format!("{key}:{agent}"),
                        Some(("claude_code_subagent", meta)),
                    );
                } else if a.ends_with(".meta.json") {
                    imp.report.push(
                        Verb::Skip,
                        Kind::Other,
                        "",
                        file,
                        "describes the subagent beside it: kept in that session's metadata (claude_code_subagent)",
                    );
                } else {
                    imp.report.push(
                        Verb::Unknown,
                        Kind::Other,
                        "",
                        file,
                        "not a subagent transcript: left as it is",
                    );
                }
            }
            continue;
        }
        let (verb, detail) = if n == "tool-results" {
            (Verb::Skip, "large tool output Claude Code stored beside the transcript, which holds its preview")
        } else {
            (
                Verb::Unknown,
                "not something Claude Code keeps conversations in: left as it is",
            )
        };
        imp.report.push(verb, Kind::Other, "", rel, detail);
    }
}

/// What else `~/.claude` holds.
fn home_leftovers(imp: &mut Importer<'_>, src: &Source) {
    for n in src.names("") {
        if n == "projects" || profile::is_profile_file(&n) {
            continue;
        }
        let (verb, detail) = match n.as_str() {
            "settings.json" | "settings.local.json" | "config.json" | "keybindings.json" => {
                (Verb::Skip, "Claude Code's settings: not memory")
            }
            "history.jsonl" => (
                Verb::Skip,
                "the prompts typed at Claude Code's input line: each is in its project's transcript",
            ),
            "plugins" | "commands" | "agents" | "skills" | "output-styles" | "hooks" | "rules" => {
                (Verb::Skip, "your Claude Code extensions and instructions: not memory (copy what you need by hand)")
            }
            "todos" | "plans" | "tasks" | "file-history" | "shell-snapshots" | "session-env" | "sessions"
            | "statsig" | "ide" | "backups" | "debug" | "logs" | "cache" | "downloads"
            | "telemetry" | "paste-cache" => (Verb::Skip, "Claude Code's working state: not memory"),
            _ => (Verb::Unknown, "not something Claude Code keeps memory in: left as it is"),
        };
        imp.report.push(verb, Kind::Other, "", n, detail);
    }
}

/// A memory folder (`base`): typed topic files, then the MEMORY.md index.
fn memory(imp: &mut Importer<'_>, src: &Source, base: &str) -> Result<()> {
    let index_rel = join(base, "MEMORY.md");
    let files = src.files(base, true, Kind::TypedMemory, &mut imp.report);
    let mut placed: HashMap<String, String> = HashMap::new();
    for rel in &files {
        let inner = match base {
            "" => rel.clone(),
            b => rel
                .strip_prefix(&format!("{b}/"))
                .unwrap_or(rel)
                .to_string(),
        };
        if *rel == index_rel {
            continue;
        }
        if !inner.ends_with(".md") {
            imp.report.push(
                Verb::Skip,
                Kind::Other,
                "",
                rel.clone(),
                "not a Markdown memory file: not imported",
            );
            continue;
        }
        let Some(mut bytes) = src.read(rel, Kind::TypedMemory, &mut imp.report) else {
            continue;
        };
        let mut note = None;
        if let Some(lifted) = std::str::from_utf8(&bytes).ok().and_then(lift_nested_type) {
            bytes = lifted.into_bytes();
            note = Some(
                "the type Claude Code keeps under `metadata:` repeated at the top of the front matter, where mnemo reads it; the rest byte for byte",
            );
        }
        let problem = match std::str::from_utf8(&bytes) {
            Err(e) => Some((1, format!("invalid UTF-8 ({e})"))),
            Ok(text) => match split_front_matter(text).0 {
                Some(Ok(_)) => None,
                Some(Err(e)) => Some((e.line, e.message)),
                None => Some((
                    1,
                    "no front matter (a `---` block with name, description and type)".to_string(),
                )),
            },
        };
        let target = format!("memory/{inner}");
        if let Some(at) = imp.file(&target, &bytes, Kind::TypedMemory, rel, false, note) {
            placed.insert(inner.clone(), at.clone());
            if let Some((line, message)) = problem {
                imp.report.push(
                    Verb::Error,
                    Kind::TypedMemory,
                    at.clone(),
                    format!("{rel}:{line}"),
                    format!("{message}; copied as it is: fix the front matter in {at}"),
                );
            }
        }
    }
    if src.entry(&index_rel) != Entry::Missing {
        if let Some(text) = src.read_text(&index_rel, Kind::MemoryMd, &mut imp.report) {
            let mut lines = Vec::new();
            for (i, line) in text.lines().enumerate() {
                match index_link(line) {
                    None => lines.push(MergeLine {
                        text: line.to_string(),
                        needle: None,
                    }),
                    Some((start, end)) => {
                        let link = &line[start..end];
                        if link.contains("://") || link.starts_with('#') {
                            lines.push(MergeLine {
                                text: line.to_string(),
                                needle: None,
                            });
                            continue;
                        }
                        if !safe_relative(link) {
                            imp.report.push(
                                Verb::Refuse,
                                Kind::MemoryMd,
                                "MEMORY.md",
                                format!("{index_rel}:{}", i + 1),
                                format!("the link `{link}` leaves the memory folder (absolute or `..`); the index line was not imported"),
                            );
                            continue;
                        }
                        let clean = link.trim_start_matches("./");
                        let target = placed
                            .get(clean)
                            .cloned()
                            .unwrap_or_else(|| format!("memory/{clean}"));
                        let rewritten = format!("{}{target}{}", &line[..start], &line[end..]);
                        lines.push(MergeLine {
                            text: rewritten,
                            needle: Some(format!("]({target})")),
                        });
                    }
                }
            }
            imp.merge_memory_md(&index_rel, lines);
        }
    }
    Ok(())
}

/// Claude Code 2.1 rewrites a memory's front matter as `name`,
/// `description` and a `metadata:` map holding `type`, `originSessionId` and
/// `modified`. mnemo reads `type` at the top: the file with a top-level
/// `type:` line added at the end of its front matter, when that is all it
/// lacks.
fn lift_nested_type(text: &str) -> Option<String> {
    let rest = text.strip_prefix("---\n")?;
    let close = rest.match_indices('\n').map(|(i, _)| i + 1).find(|&i| {
        rest[i..]
            .lines()
            .next()
            .is_some_and(|l| l.trim_end() == "---")
    })?;
    let yaml = &rest[..close];
    let value: yaml_serde::Value = yaml_serde::from_str(yaml).ok()?;
    if value.get("type").is_some() {
        return None;
    }
    let kind: MemoryType = value.get("metadata")?.get("type")?.as_str()?.parse().ok()?;
    Some(format!(
        "---\n{yaml}type: {}\n{}",
        kind.as_str(),
        &rest[close..]
    ))
}

/// The byte range of the link target of a `- [Title](target) …` line.
fn index_link(line: &str) -> Option<(usize, usize)> {
    let t = line.trim_start();
    let indent = line.len() - t.len();
    let rest = t.strip_prefix("- [").or_else(|| t.strip_prefix("* ["))?;
    let close = rest.find("](")?;
    let start = indent + 3 + close + 2;
    let end = start + line[start..].find(')')?;
    Some((start, end))
}

fn safe_relative(link: &str) -> bool {
    let p = Path::new(link);
    !link.is_empty()
        && !link.contains('\0')
        && !link.starts_with('\\')
        && !p.is_absolute()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lifts_the_type_claude_code_nests_under_metadata() {
        let text = "---\nname: tabs\ndescription: \"tabs, never spaces\"\nmetadata:\n  node_type: memory\n  type: feedback\n---\n\nbody\n";
        let lifted = lift_nested_type(text).unwrap();
        assert_eq!(
            lifted,
            "---\nname: tabs\ndescription: \"tabs, never spaces\"\nmetadata:\n  node_type: memory\n  type: feedback\ntype: feedback\n---\n\nbody\n"
        );
        let front = split_front_matter(&lifted).0.unwrap().unwrap();
        assert_eq!(front.kind, MemoryType::Feedback);
        // Documented front matter, no front matter, an unknown type: as is.
        assert!(lift_nested_type("---\nname: a\ntype: user\n---\nx\n").is_none());
        assert!(lift_nested_type("just text\n").is_none());
        assert!(lift_nested_type("---\nname: a\nmetadata:\n  type: mood\n---\n").is_none());
    }

    #[test]
    fn finds_index_links() {
        let l = "- [Tea](tea.md) — likes green tea";
        let (s, e) = index_link(l).unwrap();
        assert_eq!(&l[s..e], "tea.md");
        assert!(index_link("plain text").is_none());
        assert!(safe_relative("tea.md") && safe_relative("./sub/x.md"));
        assert!(
            !safe_relative("../x.md")
                && !safe_relative("/etc/passwd")
                && !safe_relative("a/../../b")
        );
    }
}
