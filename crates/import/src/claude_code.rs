//! Claude Code auto memory: a folder with `MEMORY.md`, an index of
//! `- [Title](file.md) — hook` lines, and typed topic files whose front
//! matter holds `name`, `description` and `type`.
//!
//! Topic files are copied byte for byte to `memory/<same path>` (front
//! matter validated; a broken one is copied as it is and reported). Index
//! lines are merged into MEMORY.md with their links pointing at the copies.

use std::collections::HashMap;
use std::path::{Component, Path};

use mnemo_store::memory::split_front_matter;

use crate::error::{Error, Result};
use crate::importer::{Importer, MergeLine};
use crate::report::{Kind, Verb};
use crate::source::{Entry, Source};

pub(crate) fn run(imp: &mut Importer<'_>, src: &Source) -> Result<()> {
    // Accept the memory folder itself or the project folder holding it.
    let base = if src.entry("MEMORY.md") == Entry::Missing
        && src.entry("memory/MEMORY.md") != Entry::Missing
    {
        "memory"
    } else {
        ""
    };
    let index_rel = if base.is_empty() {
        "MEMORY.md".to_string()
    } else {
        format!("{base}/MEMORY.md")
    };
    let files = src.files(base, true, Kind::TypedMemory, &mut imp.report);
    let topics: Vec<&String> = files
        .iter()
        .filter(|f| f.ends_with(".md") && **f != index_rel)
        .collect();
    if src.entry(&index_rel) == Entry::Missing && topics.is_empty() {
        return Err(Error::Source {
            path: src.root().to_path_buf(),
            message: "not a Claude Code memory folder: no MEMORY.md and no topic files; give ~/.claude/projects/<project>/memory".into(),
        });
    }
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
        let Some(bytes) = src.read(rel, Kind::TypedMemory, &mut imp.report) else {
            continue;
        };
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
        if let Some(at) = imp.file(&target, &bytes, Kind::TypedMemory, rel, false) {
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
