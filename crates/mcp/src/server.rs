//! The MCP handler: tools/list, tools/call, resources/list and
//! resources/read over one workspace. Transport-agnostic; see
//! [`crate::serve_stdio`] and [`crate::serve_http`].

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ErrorData, Implementation,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use mnemo_service::agent::parse;
use mnemo_service::args::{
    AppendArgs, ContextArgs, ForgetArgs, GetArgs, MemoryHistoryArgs, SearchArgs, WriteArgs,
};
use mnemo_service::tools::{catalogue, split_key};
use mnemo_service::{Coded, Error, Service};

/// URI prefix of workspace files served as resources.
pub const RESOURCE_PREFIX: &str = "mnemo://workspace/";

/// Most memory files listed as resources.
const MAX_RESOURCES: usize = 2_000;

/// The MCP server of one workspace.
#[derive(Clone)]
pub struct MnemoServer {
    service: Arc<Service>,
}

impl MnemoServer {
    /// A server over `service`.
    pub fn new(service: Arc<Service>) -> Self {
        MnemoServer { service }
    }

    /// Runs one tool call; errors become tool results with `isError: true`
    /// so the model sees the message and can correct itself.
    pub async fn call(&self, name: &str, args: Value) -> Result<CallToolResult, ErrorData> {
        let s = &self.service;
        let out = match name {
            "memory_search" => run(parse::<SearchArgs>(name, args), |a| s.search(a)).await,
            "memory_get" => run(parse::<GetArgs>(name, args), |a| s.get(a)).await,
            "memory_write" => run(parse::<WriteArgs>(name, args), |a| s.write(a)).await,
            "memory_forget" => run(parse::<ForgetArgs>(name, args), |a| s.forget(a)).await,
            "memory_history" => {
                run(parse::<MemoryHistoryArgs>(name, args), |a| {
                    s.memory_history(a)
                })
                .await
            }
            "session_append" => run(keyed::<AppendArgs>(name, args), |(k, a)| s.append(k, a)).await,
            "session_context" => {
                run(keyed::<ContextArgs>(name, args), |(k, a)| s.context(k, a)).await
            }
            other => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "unknown tool `{other}`: the tools are {}",
                        catalogue()
                            .iter()
                            .map(|t| t.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                    None,
                ))
            }
        };
        Ok(match out {
            Ok(v) => CallToolResult::structured(v),
            Err(e) => CallToolResult::structured_error(s.explain_gone(e).await.to_json()),
        })
    }

    async fn resources(&self) -> Result<Vec<Resource>, Error> {
        let b = self.service.clone();
        mnemo_service::blocking(move || {
            let mnemo = b.mnemo();
            let mut out = Vec::new();
            if let Some(md) = mnemo.memory().read_document("MEMORY.md")? {
                let size = md.len() as u64;
                out.push(
                    Resource::new(format!("{RESOURCE_PREFIX}MEMORY.md"), "MEMORY.md")
                        .with_description("Core long-term memory, injected into every prompt")
                        .with_mime_type("text/markdown")
                        .with_size(size),
                );
            }
            let mut files = mnemo.memory().scan_memory_files(MAX_RESOURCES, 0)?;
            files.sort_by(|a, b| a.path.cmp(&b.path));
            for f in files {
                let mut r = Resource::new(format!("{RESOURCE_PREFIX}{}", f.path), f.path.clone())
                    .with_mime_type("text/markdown");
                if let Some(front) = &f.front {
                    r = r.with_description(format!(
                        "[{}] {}",
                        front.kind.as_str(),
                        front.description
                    ));
                }
                out.push(r);
            }
            Ok(out)
        })
        .await
    }
}

/// A session tool's key and the rest of its arguments.
fn keyed<T: DeserializeOwned>(tool: &str, args: Value) -> Result<(String, T), Error> {
    let (key, rest) = split_key(args).map_err(Error::Invalid)?;
    Ok((key, parse(tool, rest)?))
}

/// Runs an operation on parsed arguments; its answer as JSON.
async fn run<A, T, F, Fut>(args: Result<A, Error>, op: F) -> Result<Value, Error>
where
    T: serde::Serialize,
    F: FnOnce(A) -> Fut,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let out = op(args?).await?;
    serde_json::to_value(out).map_err(|e| Error::Internal(e.to_string()))
}

/// The catalogue as MCP's tool list.
pub fn tool_list() -> Vec<Tool> {
    catalogue()
        .into_iter()
        .map(|t| {
            let annotations = ToolAnnotations::new()
                .read_only(t.read_only)
                .destructive(t.destructive);
            Tool::new(t.name, t.description, Arc::new(t.input_schema)).with_annotations(annotations)
        })
        .collect()
}

impl ServerHandler for MnemoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
        .with_server_info(Implementation::new("mnemo", env!("CARGO_PKG_VERSION")))
        .with_instructions(mnemo_service::tools::INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request
            .arguments
            .map(Value::Object)
            .unwrap_or_else(|| json!({}));
        Ok(self.call(&request.name, args).await?.into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resources = match self.resources().await {
            Ok(r) => r,
            Err(e) => {
                let e = self.service.explain_gone(e).await;
                return Err(match e.code() {
                    mnemo_core::ErrorCode::NotFound => {
                        ErrorData::resource_not_found(e.to_string(), None)
                    }
                    _ => ErrorData::internal_error(e.to_string(), None),
                });
            }
        };
        Ok(ListResourcesResult::with_all_items(resources))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let uri = request.uri;
        let Some(rel) = uri.strip_prefix(RESOURCE_PREFIX) else {
            return Err(ErrorData::invalid_params(
                format!("unknown resource `{uri}`: mnemo's resources start with {RESOURCE_PREFIX} (see resources/list)"),
                None,
            ));
        };
        let got = self
            .service
            .get(GetArgs {
                path: rel.to_string(),
                from: None,
                lines: None,
            })
            .await;
        let got = match got {
            Ok(got) => Ok(got),
            Err(e) => Err(self.service.explain_gone(e).await),
        }
        .map_err(|e| match e.code() {
            mnemo_core::ErrorCode::InvalidInput | mnemo_core::ErrorCode::Forbidden => {
                ErrorData::invalid_params(e.to_string(), None)
            }
            mnemo_core::ErrorCode::NotFound => ErrorData::resource_not_found(e.to_string(), None),
            _ => ErrorData::internal_error(e.to_string(), None),
        })?;
        if got.total_lines == 0
            && !self
                .service
                .mnemo()
                .workspace()
                .root()
                .join(&got.path)
                .exists()
        {
            return Err(ErrorData::resource_not_found(
                format!("no file {rel} in the workspace"),
                None,
            ));
        }
        let contents = ResourceContents::text(got.text, uri).with_mime_type("text/markdown");
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}
