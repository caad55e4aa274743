//! YAML front matter of typed memory files.
//!
//! The YAML is bounded before it is parsed (size and nesting): the memory
//! scan parses every file's front matter on every chat turn, and the parser's
//! time grows faster than linearly with nesting depth.

use serde::{Deserialize, Serialize};

/// The kind of a typed memory (Claude Code's four types).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MemoryType {
    /// Who the user is: role, goals, knowledge, preferences.
    User,
    /// Corrections and confirmations of how to work.
    Feedback,
    /// Who, what and when of ongoing work, with absolute dates.
    Project,
    /// Pointers to external resources.
    Reference,
}

impl MemoryType {
    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::User => "user",
            MemoryType::Feedback => "feedback",
            MemoryType::Project => "project",
            MemoryType::Reference => "reference",
        }
    }
}

impl std::str::FromStr for MemoryType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "user" => Ok(MemoryType::User),
            "feedback" => Ok(MemoryType::Feedback),
            "project" => Ok(MemoryType::Project),
            "reference" => Ok(MemoryType::Reference),
            other => Err(format!(
                "unknown memory type `{other}`: use user, feedback, project or reference"
            )),
        }
    }
}

/// Front matter of a typed memory file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FrontMatter {
    /// Short name, also the title in the MEMORY.md index.
    pub name: String,
    /// One specific line, used to judge relevance.
    #[serde(default)]
    pub description: String,
    /// The memory's type.
    #[serde(rename = "type")]
    pub kind: MemoryType,
}

/// Front matter that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatterError {
    /// 1-based line in the file.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

/// Largest front matter parsed, in bytes; a typed memory needs three short
/// fields.
pub const MAX_FRONT_MATTER_BYTES: usize = 16 * 1024;
/// Deepest nesting of YAML collections parsed.
pub const MAX_FRONT_MATTER_DEPTH: usize = 16;

/// Splits `text` into front matter and body. Without a leading `---` line the
/// whole text is the body. Broken front matter yields an error with the
/// file line, and the body is still returned so the file stays readable.
pub fn split(text: &str) -> (Option<Result<FrontMatter, FrontMatterError>>, &str) {
    let rest = match text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    {
        Some(r) => r,
        None => return (None, text),
    };
    let mut offset = 0;
    let mut close = None;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            close = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((yaml_end, body_start)) = close else {
        return (
            Some(Err(FrontMatterError {
                line: 1,
                message:
                    "front matter opened with `---` is never closed: add a `---` line after it"
                        .into(),
            })),
            rest,
        );
    };
    let yaml = rest.get(..yaml_end).unwrap_or_default();
    let body = rest.get(body_start..).unwrap_or_default();
    if let Some(problem) = too_big(yaml) {
        return (Some(Err(problem)), body);
    }
    let parsed = yaml_serde::from_str::<FrontMatter>(yaml).map_err(|e| {
        let line = e.location().map(|l| l.line() + 1).unwrap_or(2);
        FrontMatterError {
            line,
            message: format!("invalid front matter: {e}"),
        }
    });
    (Some(parsed), body)
}

/// Refuses YAML over [`MAX_FRONT_MATTER_BYTES`] or nested deeper than
/// [`MAX_FRONT_MATTER_DEPTH`], without parsing it.
fn too_big(yaml: &str) -> Option<FrontMatterError> {
    if yaml.len() > MAX_FRONT_MATTER_BYTES {
        return Some(FrontMatterError {
            line: 2,
            message: format!(
                "the front matter is {} bytes, over the {MAX_FRONT_MATTER_BYTES}-byte limit: keep name, \
                 description and type there and move the rest into the body",
                yaml.len()
            ),
        });
    }
    let (depth, line) = nesting(yaml);
    (depth > MAX_FRONT_MATTER_DEPTH).then(|| FrontMatterError {
        line: line + 1,
        message: format!(
            "the front matter nests {depth} levels deep, over the limit of {MAX_FRONT_MATTER_DEPTH}: \
             keep name, description and type there and move the rest into the body"
        ),
    })
}

/// An upper bound of the nesting depth of `yaml`, and the 1-based line of
/// the front matter where it is reached: flow brackets outside quotes, plus
/// block levels (each deeper indentation, and each `- ` or `? ` that opens a
/// line, counts one). Over-counting only refuses odd front matter sooner.
fn nesting(yaml: &str) -> (usize, usize) {
    let (mut best, mut best_line) = (0usize, 1usize);
    let mut flow = 0usize;
    let mut indents: Vec<usize> = Vec::new();
    for (n, line) in yaml.lines().enumerate() {
        let body = line.trim_start_matches([' ', '\t']);
        let indent = line.len() - body.len();
        if !body.is_empty() && !body.starts_with('#') && flow == 0 {
            while indents.last().is_some_and(|&i| i >= indent) {
                indents.pop();
            }
            indents.push(indent);
        }
        let mut block = indents.len();
        let mut rest = body;
        while let Some(r) = rest.strip_prefix("- ").or_else(|| rest.strip_prefix("? ")) {
            block += 1;
            rest = r.trim_start();
        }
        let mut quote: Option<char> = None;
        // Inside double quotes a backslash escapes the next character: `\"`
        // does not close the string (found by the fuzz target
        // `front_matter`: a name `x\"[[[…` read as brackets nested deep).
        let mut escaped = false;
        for c in body.chars() {
            match (quote, c) {
                (Some('"'), _) if escaped => escaped = false,
                (Some('"'), '\\') => escaped = true,
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '#') => break,
                (None, '[' | '{') => {
                    flow += 1;
                    if block + flow > best {
                        (best, best_line) = (block + flow, n + 1);
                    }
                }
                (None, ']' | '}') => flow = flow.saturating_sub(1),
                _ => {}
            }
        }
        if block > best {
            (best, best_line) = (block, n + 1);
        }
    }
    (best, best_line)
}

/// Renders front matter and body as a file.
pub fn render(fm: &FrontMatter, body: &str) -> String {
    let esc = |s: &str| {
        yaml_escapes(
            &serde_json::to_string(s).unwrap_or_else(|_| format!("\"{}\"", s.replace('"', "'"))),
        )
    };
    let mut out = format!(
        "---\nname: {}\ndescription: {}\ntype: {}\n---\n\n",
        esc(&fm.name),
        esc(&fm.description),
        fm.kind.as_str()
    );
    out.push_str(body.trim_end());
    out.push('\n');
    out
}

/// A JSON string made a YAML double-quoted scalar that reads back the same.
/// JSON's escapes are YAML's, but JSON leaves raw characters YAML reads
/// otherwise: NEL, LS and PS are line breaks to YAML (folded into a space
/// when read back, found by the fuzz target `front_matter`), and DEL, the C1
/// controls, the BOM and U+FFFE/U+FFFF are not printable there (refused).
fn yaml_escapes(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if matches!(
            c,
            '\u{7f}'..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
        ) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let fm = FrontMatter {
            name: "Likes tea: \"green\"".into(),
            description: "drinks".into(),
            kind: MemoryType::User,
        };
        let text = render(&fm, "Body\n");
        let (parsed, body) = split(&text);
        assert_eq!(parsed.unwrap().unwrap(), fm);
        assert_eq!(body.trim(), "Body");
    }

    /// Characters YAML reads as line breaks or refuses as unprintable, but
    /// JSON leaves raw, read back as written (the fuzz target
    /// `front_matter` found a description with a NEL, U+0085, that read
    /// back with a space in its place).
    #[test]
    fn yaml_line_breaks_and_unprintables_round_trip() {
        for c in [
            '\u{85}', '\u{2028}', '\u{2029}', '\u{7f}', '\u{9f}', '\u{feff}', '\u{fffe}',
            '\u{ffff}',
        ] {
            let fm = FrontMatter {
                name: format!("a{c}b"),
                description: format!("pre{c}aNn t> "),
                kind: MemoryType::User,
            };
            let text = render(&fm, "body");
            let (parsed, body) = split(&text);
            assert_eq!(parsed, Some(Ok(fm)), "U+{:04X}: {text:?}", u32::from(c));
            assert_eq!(body.trim(), "body");
        }
        // The fuzzer's input: `\N` is YAML's escape for NEL.
        let found =
            "---\nname: \"Tea\"\ndescription: \"pre\\NaNn t>\n\"\ntype: user\n---\n\nbody\n";
        let (Some(Ok(fm)), body) = split(found) else {
            panic!("{found:?} does not parse");
        };
        assert_eq!(fm.description, "pre\u{85}aNn t> ");
        let (again, _) = split(&render(&fm, body));
        assert_eq!(again, Some(Ok(fm)));
    }

    /// Brackets inside a double-quoted value after an escaped quote are
    /// text, not nesting: a name with `"` and many `[` reads back (the fuzz
    /// target `front_matter` found it refused as 120 levels deep).
    #[test]
    fn brackets_after_an_escaped_quote_are_not_nesting() {
        let fm = FrontMatter {
            name: format!("^Tea\"{}", "[".repeat(120)),
            description: "p\"x {{".into(),
            kind: MemoryType::User,
        };
        let text = render(&fm, "body");
        assert_eq!(split(&text).0, Some(Ok(fm)), "{text:?}");
        let found = format!("---\nname: ^Tea\"{}\ntype: user\n---\n", "[".repeat(120));
        let (Some(Ok(fm)), _) = split(&found) else {
            panic!("{found:?} does not parse");
        };
        assert_eq!(split(&render(&fm, "")).0, Some(Ok(fm)));
    }

    #[test]
    fn broken_front_matter_names_line_and_keeps_body() {
        let text = "---\nname: x\ntype: [oops\n---\nthe body\n";
        let (parsed, body) = split(text);
        let err = parsed.unwrap().unwrap_err();
        assert!(err.line >= 2, "{err:?}");
        assert_eq!(body, "the body\n");
        let (parsed, body) = split("---\nname: x\nno close\n");
        assert!(parsed.unwrap().is_err());
        assert!(body.contains("no close"));
        assert!(split("plain").0.is_none());
    }

    /// Deep nesting is refused before the parser sees it, so a scan of
    /// every memory file stays quick; ordinary front matter still parses.
    #[test]
    fn deep_or_huge_front_matter_is_refused_unparsed() {
        let deep = format!(
            "---\nname: {}x{}\ntype: user\n---\nbody\n",
            "[".repeat(5_000),
            "]".repeat(5_000)
        );
        let (parsed, body) = split(&deep);
        let err = parsed.unwrap().unwrap_err();
        assert!(err.message.contains("levels deep"), "{err:?}");
        assert_eq!(body, "body\n");
        let block: String = (0..40)
            .map(|i| format!("{}k{i}:\n", " ".repeat(i)))
            .collect();
        let err = split(&format!("---\n{block}---\n")).0.unwrap().unwrap_err();
        assert!(err.message.contains("levels deep"), "{err:?}");
        let huge = format!(
            "---\nname: x\ndescription: {}\ntype: user\n---\n",
            "y".repeat(20_000)
        );
        let err = split(&huge).0.unwrap().unwrap_err();
        assert!(err.message.contains("byte limit"), "{err:?}");
        let ok = "---\nname: \"a [b] {c}\"\ndescription: 'it''s # fine'\ntype: user\ntags: [a, [b, c]]\nmeta:\n  x:\n    - 1\n    - [2]\n---\n";
        assert!(split(ok).0.unwrap().is_ok());
    }
}
