//! The memory tools of an agent turn ([`mnemo_engine::memory_tools`]:
//! `memory_search`, `memory_get`, `memory_write` as the model calls them)
//! executed on the [`Backend`] the MCP server and the HTTP API share, so
//! `mnemo chat`, `mnemo run` and `POST /v1/sessions/{key}/turn` behave alike.

use std::sync::Arc;

use mnemo_engine::ToolExecutor;
use mnemo_llm::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use crate::ops::{Backend, GetArgs, SearchArgs, WriteArgs};

/// The memory tools declared by [`mnemo_engine::memory_tools`], run on the
/// backend the MCP server and the HTTP API share.
pub struct BackendTools(pub Arc<Backend>);

/// `memory_write` as the model calls it: a typed memory when `name` is
/// given, else lines for today's daily log.
#[derive(Debug, Deserialize)]
struct ModelWrite {
    text: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    replace: bool,
}

/// Maps the model's `memory_write` arguments onto the backend's modes.
fn write_args(w: ModelWrite) -> std::result::Result<WriteArgs, String> {
    let name = w.name.filter(|n| !n.trim().is_empty());
    let Some(name) = name else {
        return Ok(WriteArgs::Daily { text: w.text });
    };
    let Some(kind) = w.kind.filter(|k| !k.trim().is_empty()) else {
        return Err(format!(
            "a typed memory (`name` {name:?}) needs `type`: user, feedback, project or reference; \
             omit `name` to append the text to today's daily log instead"
        ));
    };
    let description = w
        .description
        .filter(|d| !d.trim().is_empty())
        .unwrap_or_else(|| {
            w.text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or("")
                .chars()
                .take(120)
                .collect()
        });
    Ok(WriteArgs::Typed {
        name,
        description,
        kind,
        body: w.text,
        replace: w.replace,
    })
}

fn parse<T: serde::de::DeserializeOwned>(
    tool: &str,
    args: &Value,
    expected: &str,
) -> std::result::Result<T, String> {
    serde_json::from_value(args.clone())
        .map_err(|e| format!("bad arguments for {tool}: {e}; expected {expected}"))
}

impl ToolExecutor for BackendTools {
    fn execute<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, std::result::Result<String, String>> {
        Box::pin(async move {
            let b = &self.0;
            let value = match name {
                "memory_search" => {
                    let a: SearchArgs = parse(
                        name,
                        arguments,
                        r#"{"query": string, "maxResults"?: integer, "minScore"?: number}"#,
                    )?;
                    b.search(a).await.map_err(|e| e.to_string())?
                }
                "memory_get" => {
                    let a: GetArgs = parse(
                        name,
                        arguments,
                        r#"{"path": string, "from"?: integer, "lines"?: integer}"#,
                    )?;
                    let got = b.get(a).await.map_err(|e| e.to_string())?;
                    serde_json::to_value(got).map_err(|e| e.to_string())?
                }
                "memory_write" => {
                    let w: ModelWrite = parse(
                        name,
                        arguments,
                        r#"{"text": string, "name"?: string, "description"?: string, "type"?: "user"|"feedback"|"project"|"reference", "replace"?: boolean}"#,
                    )?;
                    b.write(write_args(w)?).await.map_err(|e| e.to_string())?
                }
                other => {
                    return Err(format!(
                        "unknown tool {other:?}: the tools are memory_search, memory_get and memory_write"
                    ))
                }
            };
            Ok(value.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_write_arguments_map_onto_the_backend() {
        let daily = write_args(ModelWrite {
            text: "cat is Miso".into(),
            name: None,
            description: None,
            kind: None,
            replace: false,
        })
        .unwrap();
        assert!(matches!(daily, WriteArgs::Daily { .. }));
        let typed = write_args(ModelWrite {
            text: "Prefers tea.\nNo sugar.".into(),
            name: Some("Tea".into()),
            description: None,
            kind: Some("user".into()),
            replace: false,
        })
        .unwrap();
        match typed {
            WriteArgs::Typed {
                description, kind, ..
            } => {
                assert_eq!(description, "Prefers tea.");
                assert_eq!(kind, "user");
            }
            other => panic!("{other:?}"),
        }
        let err = write_args(ModelWrite {
            text: "x".into(),
            name: Some("X".into()),
            description: None,
            kind: None,
            replace: false,
        })
        .unwrap_err();
        assert!(err.contains("needs `type`"), "{err}");
    }
}
