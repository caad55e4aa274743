//! The memory tools of an agent turn ([`crate::tools::agent_tools`]:
//! `memory_search`, `memory_get`, `memory_write`) executed on the
//! [`Service`], so `mnemo chat`, `mnemo run` and `POST
//! /v1/sessions/{key}/turn` answer exactly as the MCP tools do.

use std::sync::Arc;

use mnemo_engine::ToolExecutor;
use mnemo_llm::BoxFuture;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::args::{GetArgs, SearchArgs, WriteArgs};
use crate::error::Error;
use crate::service::Service;

/// The agent's memory tools, run on a service.
pub struct ServiceTools(pub Arc<Service>);

/// Parses a tool's arguments, or says how to call it.
pub fn parse<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, Error> {
    serde_json::from_value(args).map_err(|e| {
        Error::Invalid(format!(
            "bad arguments for {tool}: {e}; see the tool's input schema"
        ))
    })
}

fn text<T: Serialize>(v: T) -> Result<String, Error> {
    serde_json::to_string(&v).map_err(|e| Error::Internal(e.to_string()))
}

impl ToolExecutor for ServiceTools {
    fn execute<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, std::result::Result<String, String>> {
        Box::pin(async move {
            let s = &self.0;
            let args = arguments.clone();
            let out = match name {
                "memory_search" => match parse::<SearchArgs>(name, args) {
                    Ok(a) => s.search(a).await.and_then(text),
                    Err(e) => Err(e),
                },
                "memory_get" => match parse::<GetArgs>(name, args) {
                    Ok(a) => s.get(a).await.and_then(text),
                    Err(e) => Err(e),
                },
                "memory_write" => match parse::<WriteArgs>(name, args) {
                    Ok(a) => s.write(a).await.and_then(text),
                    Err(e) => Err(e),
                },
                other => {
                    let names: Vec<String> = crate::tools::agent_tools()
                        .into_iter()
                        .map(|t| t.name)
                        .collect();
                    return Err(format!(
                        "unknown tool {other:?}: the tools are {}",
                        names.join(", ")
                    ));
                }
            };
            out.map_err(|e| e.to_string())
        })
    }
}
