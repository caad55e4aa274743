//! The HTTP API's endpoints, declared once ([`ENDPOINTS`]), and the
//! OpenAPI 3.1 document generated from them and from the argument and
//! answer types: `GET /openapi.json` serves it, `mnemo serve --help`
//! lists the same endpoints.

use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{json, Map, Value};

use crate::args::{
    AppendArgs, CompactArgs, ContextArgs, ForgetArgs, GetArgs, HistoryArgs, MemoryHistoryArgs,
    SearchArgs, TurnArgs, WriteArgs,
};
use crate::inspect::{
    ChangesView, IndexView, MemoryView, MemoryViewArgs, TimelineArgs, TimelineView, UndoArgs,
    UndoOutput,
};
use crate::output::{
    AppendOutput, CloseOutput, ContextOutput, DreamOutput, ErrorBody, EventsOutput, ForgetOutput,
    GetOutput, HealthOutput, HistoryOutput, MemoryHistoryOutput, MemoryWorkOutput, SearchOutput,
    SessionsOutput, TurnOutput, WriteOutput,
};
use crate::schema::{components_generator, input_schema};
use crate::tenants::{
    AddServerArgs, CreateWorkspaceArgs, CreatedOutput, DeletedOutput, MoveArgs, MovedOutput,
    ServersOutput, WorkspacesOutput,
};

type SchemaFn = fn(&mut SchemaGenerator) -> schemars::Schema;

/// How an endpoint takes its arguments.
#[derive(Clone, Copy)]
pub enum Input {
    /// None.
    Nothing,
    /// A JSON body of this type.
    Body(SchemaFn),
    /// A JSON body of this type, which may be left empty.
    OptionalBody(SchemaFn),
    /// Query parameters: the properties of this type.
    Query(fn() -> Map<String, Value>),
}

/// One endpoint of the HTTP API.
#[derive(Clone, Copy)]
pub struct Endpoint {
    /// GET or POST.
    pub method: &'static str,
    /// The path, with `{key}` for a session key.
    pub path: &'static str,
    /// What it does, in one line.
    pub summary: &'static str,
    /// Its arguments.
    pub input: Input,
    /// The status of a success.
    pub status: u16,
    /// Its answer.
    pub output: SchemaFn,
    /// It needs a chat model (501 without one).
    pub needs_model: bool,
}

fn s<T: JsonSchema>(g: &mut SchemaGenerator) -> schemars::Schema {
    g.subschema_for::<T>()
}

fn any(_: &mut SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "object"})
}

const fn ep(
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    input: Input,
    output: SchemaFn,
) -> Endpoint {
    Endpoint {
        method,
        path,
        summary,
        input,
        status: 200,
        output,
        needs_model: false,
    }
}

const fn needs_model(mut e: Endpoint) -> Endpoint {
    e.needs_model = true;
    e
}

const fn created(mut e: Endpoint) -> Endpoint {
    e.status = 201;
    e
}

/// Every endpoint, in the order the documentation lists them.
pub const ENDPOINTS: &[Endpoint] = &[
    ep(
        "GET",
        "/health",
        "The server is up",
        Input::Nothing,
        s::<HealthOutput>,
    ),
    ep("GET", "/openapi.json", "This document", Input::Nothing, any),
    ep(
        "GET",
        "/v1/sessions",
        "Every session, newest first",
        Input::Nothing,
        s::<SessionsOutput>,
    ),
    created(ep(
        "POST",
        "/v1/sessions/{key}/messages",
        "Append messages to a session's log (`messages`, or one `message`)",
        Input::Body(s::<AppendArgs>),
        s::<AppendOutput>,
    )),
    ep(
        "GET",
        "/v1/sessions/{key}/messages",
        "A session's messages (all, or since the consolidation cursor)",
        Input::Query(input_schema::<HistoryArgs>),
        s::<HistoryOutput>,
    ),
    ep(
        "POST",
        "/v1/sessions/{key}/context",
        "The request the engine would send for the next turn, with tokens per part",
        Input::OptionalBody(s::<ContextArgs>),
        s::<ContextOutput>,
    ),
    needs_model(ep(
        "POST",
        "/v1/sessions/{key}/consolidate",
        "Distil everything past the cursor into long-term memory now",
        Input::Nothing,
        s::<EventsOutput>,
    )),
    needs_model(ep(
        "POST",
        "/v1/sessions/{key}/compact",
        "Run the compaction pipeline (or one level of it)",
        Input::OptionalBody(s::<CompactArgs>),
        s::<EventsOutput>,
    )),
    needs_model(ep(
        "POST",
        "/v1/sessions/{key}/close",
        "Close the conversation: consolidate its tail and write a session note",
        Input::Nothing,
        s::<CloseOutput>,
    )),
    needs_model(ep(
        "POST",
        "/v1/sessions/{key}/turn",
        "One agent turn with the memory tools (its `memory_work`: inline, or background after it)",
        Input::Body(s::<TurnArgs>),
        s::<TurnOutput>,
    )),
    ep(
        "GET",
        "/v1/sessions/{key}/memory-work",
        "A session's memory work after its turns: what it is doing, or what its last run did",
        Input::Nothing,
        s::<MemoryWorkOutput>,
    ),
    ep(
        "POST",
        "/v1/memory/search",
        "Search memory and past sessions (hybrid BM25 + vectors)",
        Input::Body(s::<SearchArgs>),
        s::<SearchOutput>,
    ),
    ep(
        "GET",
        "/v1/memory/get",
        "Lines of a memory file or a cited session log, secrets taken out (a citation path#Lx-Ly works too)",
        Input::Query(input_schema::<GetArgs>),
        s::<GetOutput>,
    ),
    ep(
        "POST",
        "/v1/memory/write",
        "Save to today's log, a typed memory or a section of MEMORY.md",
        Input::Body(s::<WriteArgs>),
        s::<WriteOutput>,
    ),
    ep(
        "POST",
        "/v1/memory/forget",
        "Delete a typed memory or a fact (nothing else is ever deleted)",
        Input::Body(s::<ForgetArgs>),
        s::<ForgetOutput>,
    ),
    ep(
        "POST",
        "/v1/memory/dream",
        "Tidy memory/facts.md: merge duplicates, fold daily logs into facts, end contradicted facts, bring MEMORY.md under its caps (no model needed; undo with /v1/memory/undo and `what: dream`)",
        Input::Nothing,
        s::<DreamOutput>,
    ),
    ep(
        "GET",
        "/v1/memory/history",
        "Every recorded change of a memory (a fact's id or a typed memory's name)",
        Input::Query(input_schema::<MemoryHistoryArgs>),
        s::<MemoryHistoryOutput>,
    ),
    ep(
        "POST",
        "/v1/memory/undo",
        "Undo the newest consolidation of MEMORY.md (or, with `what: dream`, the newest dream) not undone yet",
        Input::OptionalBody(s::<UndoArgs>),
        s::<UndoOutput>,
    ),
    ep(
        "GET",
        "/v1/inspect/memory",
        "Inspector: MEMORY.md, every fact with its state and sources, the files of memory/ (as of a day)",
        Input::Query(input_schema::<MemoryViewArgs>),
        s::<MemoryView>,
    ),
    ep(
        "GET",
        "/v1/inspect/changes",
        "Inspector: every consolidation and dream as a diff, the facts refused and why, the audit log",
        Input::Nothing,
        s::<ChangesView>,
    ),
    ep(
        "GET",
        "/v1/inspect/sessions/{key}",
        "Inspector: a page of a session's log (torn lines shown with their number) and the prompt's size over it",
        Input::Query(input_schema::<TimelineArgs>),
        s::<TimelineView>,
    ),
    ep(
        "GET",
        "/v1/inspect/index",
        "Inspector: the index's state and the saved evaluation reports",
        Input::Nothing,
        s::<IndexView>,
    ),
];

/// The endpoints of a multi-tenant server's admin token.
pub const TENANT_ENDPOINTS: &[Endpoint] = &[
    created(ep(
        "POST",
        "/v1/workspaces",
        "Create a workspace; the answer holds its token, shown this once (admin token)",
        Input::Body(s::<CreateWorkspaceArgs>),
        s::<CreatedOutput>,
    )),
    ep(
        "GET",
        "/v1/workspaces",
        "Every workspace (admin token)",
        Input::Nothing,
        s::<WorkspacesOutput>,
    ),
    ep(
        "DELETE",
        "/v1/workspaces/{id}",
        "Delete a workspace: every row, its index, its derived state (admin token)",
        Input::Nothing,
        s::<DeletedOutput>,
    ),
    ep(
        "POST",
        "/v1/workspaces/{id}/move",
        "Move a workspace to another database server while it is in use: copy, catch up, \
         switch (writes wait for the switch, then go to the new server), delete the old copy \
         (admin token)",
        Input::Body(s::<MoveArgs>),
        s::<MovedOutput>,
    ),
    ep(
        "GET",
        "/v1/servers",
        "The database servers workspaces are placed on, and how many each holds (admin token)",
        Input::Nothing,
        s::<ServersOutput>,
    ),
    ep(
        "POST",
        "/v1/servers",
        "List a database server to place new workspaces on; its tables are created first \
         (admin token)",
        Input::Body(s::<AddServerArgs>),
        s::<ServersOutput>,
    ),
];

/// The OpenAPI 3.1 document of the HTTP API over one workspace.
pub fn document() -> Value {
    let paths = ENDPOINTS.iter().map(|e| (e.path.to_string(), e));
    build(
        paths,
        "Durable memory for LLM agents over one workspace: sessions (append, history, context, \
         consolidation, compaction, close, an agent turn) and memory (search, get, write, forget). \
         A turn's memory work (consolidation rounds, the memory flush at its threshold) runs before \
         its answer (`memory_work: \"inline\"` in the turn's answer, its events in the turn's \
         `events`) or, with `[engine] memory_work = \"background\"` (the default with the local \
         model), after it, in a task that outlives the request: GET \
         /v1/sessions/{key}/memory-work reports it, the next request that needs the session stops \
         it and the next turn starts it again, and the server waits for it (up to a minute) as it \
         stops. Loopback by default; off loopback every request needs \
         `Authorization: Bearer TOKEN`. Errors are {\"error\": {\"code\", \"message\"}}.",
    )
}

/// The OpenAPI 3.1 document of a server of many workspaces (`mnemo serve
/// --database`): the admin endpoints, and every workspace endpoint under
/// `/v1/workspaces/{id}`.
pub fn tenants_document() -> Value {
    let general = ENDPOINTS
        .iter()
        .filter(|e| !e.path.starts_with("/v1/"))
        .map(|e| (e.path.to_string(), e));
    let admin = TENANT_ENDPOINTS.iter().map(|e| (e.path.to_string(), e));
    let per_workspace = ENDPOINTS.iter().filter_map(|e| {
        let rest = e.path.strip_prefix("/v1")?;
        Some((format!("/v1/workspaces/{{id}}{rest}"), e))
    });
    build(
        general.chain(admin).chain(per_workspace),
        "Durable memory for LLM agents, many workspaces in one database: the admin token creates, \
         lists and deletes workspaces; each workspace's endpoints (and its MCP endpoint at \
         /v1/workspaces/{id}/mcp) need `Authorization: Bearer <that workspace's token>`: 401 \
         without a token, 403 with one that does not open the workspace (whether or not it exists). \
         Errors are {\"error\": {\"code\", \"message\"}}.",
    )
}

fn build<'a>(endpoints: impl Iterator<Item = (String, &'a Endpoint)>, description: &str) -> Value {
    let mut g = components_generator();
    let error = g.subschema_for::<ErrorBody>().to_value();
    let error_response = |what: &str| json!({"description": what, "content": {"application/json": {"schema": error}}});
    let mut paths = Map::new();
    for (path, e) in endpoints {
        let mut op = Map::new();
        op.insert("summary".into(), json!(e.summary));
        op.insert("operationId".into(), json!(operation_id(e.method, &path)));
        let mut params = Vec::new();
        if path.contains("{id}") {
            params.push(json!({"name": "id", "in": "path", "required": true,
                "description": "Workspace id", "schema": {"type": "string"}}));
        }
        if path.contains("{key}") {
            params.push(json!({"name": "key", "in": "path", "required": true,
                "description": "Session key, percent-encoded (e.g. telegram%3A123)", "schema": {"type": "string"}}));
        }
        match e.input {
            Input::Nothing => {}
            Input::Body(f) | Input::OptionalBody(f) => {
                let required = matches!(e.input, Input::Body(_));
                op.insert(
                    "requestBody".into(),
                    json!({"required": required, "content": {"application/json": {"schema": f(&mut g).to_value()}}}),
                );
            }
            Input::Query(f) => {
                let schema = f();
                let required: Vec<&str> = schema
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if let Some(Value::Object(props)) = schema.get("properties") {
                    for (name, p) in props {
                        params.push(json!({"name": name, "in": "query", "required": required.contains(&name.as_str()),
                            "description": p.get("description").cloned().unwrap_or(json!("")), "schema": p}));
                    }
                }
            }
        }
        if !params.is_empty() {
            op.insert("parameters".into(), Value::Array(params));
        }
        let mut responses = Map::new();
        responses.insert(
            e.status.to_string(),
            json!({"description": "Success", "content": {"application/json": {"schema": (e.output)(&mut g).to_value()}}}),
        );
        if e.needs_model {
            responses.insert(
                "501".into(),
                error_response("No chat model is configured (code config)"),
            );
        }
        responses.insert(
            "default".into(),
            error_response(
                "An error: 400 invalid_input, 401 without the token, 403 forbidden, 404 not_found, 409 busy, \
                 413 too_large, 415 without JSON, 422 corrupt, 502 provider, 500 otherwise",
            ),
        );
        op.insert("responses".into(), Value::Object(responses));
        let entry = paths.entry(path).or_insert_with(|| json!({}));
        if let Some(obj) = entry.as_object_mut() {
            obj.insert(e.method.to_ascii_lowercase(), Value::Object(op));
        }
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "mnemo HTTP API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": description
        },
        "paths": paths,
        "components": {
            "schemas": g.take_definitions(true),
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}
        }
    })
}

/// `POST /v1/sessions/{key}/turn` → `post_sessions_turn`.
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_ascii_lowercase();
    for part in path.split('/') {
        if part.is_empty() || part == "v1" || part.starts_with('{') {
            continue;
        }
        id.push('_');
        id.push_str(&part.replace(['.', '-'], "_"));
    }
    id
}

/// Each endpoint as `--help` lists it: `METHOD PATH`, then its summary on
/// an indented line (so that a narrow terminal wraps nothing).
pub fn endpoint_lines() -> Vec<String> {
    ENDPOINTS.iter().map(line).collect()
}

/// [`endpoint_lines`] of the admin endpoints of `mnemo serve --database`.
pub fn tenant_endpoint_lines() -> Vec<String> {
    TENANT_ENDPOINTS.iter().map(line).collect()
}

fn line(e: &Endpoint) -> String {
    format!("{:<4} {}\n      {}", e.method, e.path, e.summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openapi_snapshot() {
        insta::assert_json_snapshot!("openapi", document());
    }

    /// The multi-tenant document has every workspace endpoint under
    /// `/v1/workspaces/{id}` with its `id` parameter, and the admin ones.
    #[test]
    fn the_tenants_document_mounts_every_workspace_endpoint() {
        let doc = tenants_document();
        let paths = doc["paths"].as_object().unwrap();
        for e in ENDPOINTS {
            let path = match e.path.strip_prefix("/v1") {
                Some(rest) => format!("/v1/workspaces/{{id}}{rest}"),
                None => e.path.to_string(),
            };
            let op = &paths[&path][e.method.to_ascii_lowercase()];
            assert!(op.is_object(), "{} {path}", e.method);
            if path.contains("{id}") {
                assert_eq!(op["parameters"][0]["name"], "id", "{path}");
            }
        }
        assert!(paths["/v1/workspaces"]["post"]["requestBody"].is_object());
        assert!(paths["/v1/workspaces/{id}"]["delete"].is_object());
    }

    #[test]
    fn every_endpoint_is_documented_once_and_refs_resolve() {
        let doc = document();
        let mut seen = 0;
        for (_, ops) in doc["paths"].as_object().unwrap() {
            seen += ops.as_object().unwrap().len();
        }
        assert_eq!(seen, ENDPOINTS.len());
        let text = doc.to_string();
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = piece.split('"').next().unwrap();
            assert!(schemas.contains_key(name), "unresolved $ref {name}");
        }
        assert!(schemas.contains_key("SearchOutput"));
        assert!(schemas.contains_key("Hit"));
    }
}
