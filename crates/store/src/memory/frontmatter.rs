//! YAML front matter of typed memory files.

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
    let yaml = &rest[..yaml_end];
    let body = &rest[body_start..];
    let parsed = yaml_serde::from_str::<FrontMatter>(yaml).map_err(|e| {
        let line = e.location().map(|l| l.line() + 1).unwrap_or(2);
        FrontMatterError {
            line,
            message: format!("invalid front matter: {e}"),
        }
    });
    (Some(parsed), body)
}

/// Renders front matter and body as a file.
pub fn render(fm: &FrontMatter, body: &str) -> String {
    let esc = |s: &str| {
        serde_json::to_string(s).unwrap_or_else(|_| format!("\"{}\"", s.replace('"', "'")))
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
}
