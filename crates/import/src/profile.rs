//! The profile and persona files the tools keep beside their memory.
//!
//! `USER.md` (who the user is) becomes a typed `user` memory, indexed in
//! MEMORY.md like any other. The persona and instruction files (`SOUL.md`,
//! `IDENTITY.md`, `AGENTS.md`, …) describe the tool's assistant, not the
//! user: mnemo has no persona, so they are kept as they are under
//! `imported/<tool>/<unit>/`, outside the memory that prompts and search
//! read. A file still exactly as the tool ships it (a template never filled
//! in) holds nothing of the user's and is skipped, with that reason.

use mnemo_store::memory::{render_front_matter, sanitize_slug};
use mnemo_store::{FrontMatter, MemoryType};
use sha2::{Digest, Sha256};

use crate::importer::{Importer, MergeLine};
use crate::report::{Kind, Verb};
use crate::source::{join, Entry, Source};

/// The persona and instruction files, with what each one holds.
const PERSONA: &[(&str, &str)] = &[
    ("SOUL.md", "the assistant's personality and tone"),
    ("IDENTITY.md", "the assistant's name and character"),
    ("AGENTS.md", "instructions for the agent"),
    ("TOOLS.md", "notes on the tools of this setup"),
    ("HEARTBEAT.md", "the periodic task list"),
    ("BOOTSTRAP.md", "the first-run ritual"),
    ("BOOT.md", "instructions run at start"),
    ("CLAUDE.md", "instructions for Claude Code"),
];

/// SHA-256 of the templates the tools write into a new workspace, over the
/// text with line ends and trailing blanks normalised (see [`fingerprint`]):
/// nanobot 0.3.5 (`nanobot onboard`, its package's `templates/`) and
/// OpenClaw 2026.9.6 and 2026.5.28 (the files its first agent turn seeds),
/// as found in the fixtures under `tests/peers/`. A template of another release is
/// imported like a file of the user's: nothing is lost either way.
const TEMPLATES: &[(&str, &str)] = &[
    // nanobot 0.3.5
    (
        "AGENTS.md",
        "b5d3a9f71da9ae2f28a431ed3edb32a622b56d9b7501aa8ae75dad87ea692dfd",
    ),
    (
        "HEARTBEAT.md",
        "df90ed8f05689512828952f5438a29f9f8041a47a21cb3890cf640431f206d4e",
    ),
    (
        "SOUL.md",
        "0351091f89de5e7162f4883af295fe0af039c3f78f93cb1232e9aa7dcb49cf6f",
    ),
    (
        "USER.md",
        "bc7af6370834899a72854254780ae226e519ed429584f5625b7ff461abe95926",
    ),
    (
        "memory/MEMORY.md",
        "d22710640c228b702c0d8d36196040ed56a734c13ca69afd14cb5888c894bb76",
    ),
    // OpenClaw 2026.9.6
    (
        "AGENTS.md",
        "0baf6e9b9f399a7ce5f38ad34a0cab96aa3445bf6cec3304b5094bde3678c7f9",
    ),
    (
        "BOOTSTRAP.md",
        "7eea68056631e053f1196bc1b2e3829e78703acedbaadc93e1996d0fe981acbc",
    ),
    (
        "IDENTITY.md",
        "2ccaf369c813a70df90a7e2f83800b482d6f7e5022320d137151b5fd43342523",
    ),
    (
        "SOUL.md",
        "48d7e911d1addb62dee28ff995698d8f214f15d457998bb27cd38156c4f8c498",
    ),
    (
        "USER.md",
        "f0d3a7f599d4d917a78b25e7eee91e469feae0cb8c573f012fcc13e2035e4df1",
    ),
    // OpenClaw 2026.5.28
    (
        "AGENTS.md",
        "a9b81f8685a3c70429178492fc43795f9e459fb99ca3b63e67285fc273154211",
    ),
    (
        "HEARTBEAT.md",
        "50a7f2d1fbd50eb6db2385ad2729d74a831439b9ab2cefd1663577defe2542f5",
    ),
    (
        "IDENTITY.md",
        "2b4efe1ad62d1ebd730969659cca74e0673596accac369a412d617f597d0fa90",
    ),
    (
        "SOUL.md",
        "80325233c54b919fa31038dc70b384cdebfc7e88088790954d49f5857be02194",
    ),
    (
        "TOOLS.md",
        "3806f5b28c059bfd1a89f9574f13b49771fee01b8faf4afd02c698aaeb4ee163",
    ),
];

/// The file names this module handles, so that callers do not report them
/// again as not understood.
pub(crate) fn is_profile_file(name: &str) -> bool {
    name == "USER.md" || PERSONA.iter().any(|(n, _)| *n == name)
}

/// Imports the profile and persona files directly in `base` of `src`, for
/// the unit `unit` of the tool.
pub(crate) fn import(imp: &mut Importer<'_>, src: &Source, base: &str, unit: &str) {
    let tool = imp.tool().as_str();
    for name in src.names(base) {
        if !is_profile_file(&name) {
            continue;
        }
        let rel = join(base, &name);
        match src.entry(&rel) {
            Entry::File => {}
            Entry::Link => {
                src.report_link(&rel, Kind::Profile, &mut imp.report);
                continue;
            }
            _ => continue,
        }
        let Some(text) = src.read_text(&rel, Kind::Profile, &mut imp.report) else {
            continue;
        };
        if text.trim().is_empty() {
            imp.report.push(
                Verb::Skip,
                Kind::Profile,
                "",
                rel,
                "empty: nothing to import",
            );
            continue;
        }
        if is_template(&name, &text) {
            imp.report.push(
                Verb::Skip,
                Kind::Profile,
                "",
                rel,
                format!(
                    "still the template {tool} ships, never filled in: nothing of yours to import"
                ),
            );
            continue;
        }
        if name == "USER.md" {
            user_memory(imp, &rel, &text, unit);
        } else {
            let what = PERSONA
                .iter()
                .find(|(n, _)| *n == name)
                .map_or("", |(_, w)| *w);
            imp.file(
                &format!("imported/{tool}/{unit}/{name}"),
                text.as_bytes(),
                Kind::Profile,
                &rel,
                false,
                Some(&format!(
                    "{what}; mnemo has no persona, so it is kept for reference, outside the memory prompts and search read"
                )),
            );
        }
    }
}

/// `USER.md` as the typed memory `memory/user-profile-<tool>-<unit>.md`,
/// with its index line in MEMORY.md.
fn user_memory(imp: &mut Importer<'_>, rel: &str, text: &str, unit: &str) {
    let tool = imp.tool().as_str();
    let front = FrontMatter {
        name: format!("User profile ({tool} {unit})"),
        description: format!(
            "who the user is, from {tool}'s USER.md: name, time zone, preferences"
        ),
        kind: MemoryType::User,
    };
    let target = format!("memory/{}.md", sanitize_slug(&front.name));
    let file = render_front_matter(&front, text);
    let Some(at) = imp.file(
        &target,
        file.as_bytes(),
        Kind::Profile,
        rel,
        false,
        Some("a typed `user` memory"),
    ) else {
        return;
    };
    // The same index line the store writes for a typed memory.
    let line = format!("- [{}]({at}): {}", front.name, front.description);
    imp.merge_memory_md(
        rel,
        vec![MergeLine {
            text: line,
            needle: Some(format!("]({at})")),
        }],
    );
}

/// True when `text` is the template the tool ships as `name`.
pub(crate) fn is_template(name: &str, text: &str) -> bool {
    let print = fingerprint(text);
    TEMPLATES.iter().any(|(n, h)| *n == name && *h == print)
}

/// SHA-256 of `text` with `\r\n` read as `\n`, trailing blanks of each line
/// and trailing blank lines left out.
pub(crate) fn fingerprint(text: &str) -> String {
    let norm: Vec<&str> = text.lines().map(str::trim_end).collect();
    let joined = norm.join("\n");
    hex::encode(Sha256::digest(joined.trim_end().as_bytes()))
}
