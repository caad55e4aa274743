//! The routes of a multi-tenant server ([`mnemo_service::tenants`]): the
//! admin token creates, lists and deletes workspaces under
//! `/v1/workspaces`; each workspace's whole API is under
//! `/v1/workspaces/{id}` (and its MCP endpoint at
//! `/v1/workspaces/{id}/mcp`), opened by that workspace's token only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::rejection::PathRejection;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, delete, get, post};
use axum::Router;
use mnemo_service::guard::bearer;
use mnemo_service::tenants::{
    AddServerArgs, CreateWorkspaceArgs, DeletedOutput, MoveArgs, MovedOutput, ServersOutput,
    Tenants, WorkspacesOutput,
};
use mnemo_service::Service;
use tower::ServiceExt as _;

use crate::routes::{
    method_not_allowed, not_found, path_rejection, too_large, workspace_api, ApiError, ApiResult,
    Body, MAX_BODY_BYTES,
};

/// How many times a request that met its workspace's old copy (moved to
/// another database server while it ran) is run again on the new one.
const MOVED_RETRIES: usize = 3;

/// Builds the MCP endpoint (served at `/mcp`) of one workspace's service.
pub type McpRouter = Arc<dyn Fn(Arc<Service>) -> Router + Send + Sync>;

/// The id of the workspace a request was authorized for.
#[derive(Clone)]
struct WorkspaceId(String);

/// A workspace's MCP endpoint and the service it was built for.
type McpEndpoint = (Arc<Service>, Router);

#[derive(Clone)]
struct Shared {
    tenants: Arc<Tenants>,
    mcp: Option<McpRouter>,
    /// Each workspace's MCP endpoint, kept so its sessions live on (as
    /// many as the server holds workspaces open).
    mcp_routers: Arc<Mutex<HashMap<String, McpEndpoint>>>,
}

/// The router of a server of many workspaces; `mcp` adds each one's MCP
/// endpoint.
pub fn tenants_router(tenants: Arc<Tenants>, mcp: Option<McpRouter>) -> Router {
    let shared = Shared {
        tenants,
        mcp_routers: Arc::default(),
        mcp: mcp.clone(),
    };
    let mut api = workspace_api();
    if mcp.is_some() {
        let s = shared.clone();
        api = api.route("/mcp", any(move |req: Request| mcp_call(s, req)));
    }
    let api = api.route_layer(from_fn_with_state(shared.clone(), require_workspace));
    let admin = Router::new()
        .route("/v1/workspaces", post(create).get(list))
        .route("/v1/workspaces/{id}", delete(remove))
        .route("/v1/workspaces/{id}/move", post(move_workspace))
        .route("/v1/servers", get(servers).post(add_server))
        .route_layer(from_fn_with_state(shared.clone(), require_admin))
        .with_state(shared);
    Router::new()
        .route("/health", get(health))
        .route("/openapi.json", get(openapi))
        .merge(admin)
        .merge(crate::inspector::pages(true))
        .nest("/v1/workspaces/{id}", api)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
}

/// An error answer, with the challenge header on a 401.
fn refused(e: mnemo_service::Error) -> Response {
    let challenge = e.http_status() == 401;
    let mut resp = ApiError::from(e).into_response();
    if challenge {
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
    }
    resp
}

async fn require_admin(State(s): State<Shared>, req: Request, next: Next) -> Response {
    match s.tenants.admin(bearer(req.headers())) {
        Ok(()) => next.run(req).await,
        Err(e) => refused(e),
    }
}

async fn require_workspace(
    State(s): State<Shared>,
    params: Result<Path<HashMap<String, String>>, PathRejection>,
    mut req: Request,
    next: Next,
) -> Response {
    let params = match params {
        Ok(Path(p)) => p,
        Err(rej) => return path_rejection(rej).into_response(),
    };
    let id = params.get("id").map(String::as_str).unwrap_or_default();
    let mut opened = match s.tenants.authorize_placed(id, bearer(req.headers())).await {
        Ok(opened) => opened,
        Err(e) => return refused(e),
    };
    // A request is kept so that it can be run again on a workspace's new
    // copy; MCP's streams are not (its client retries).
    let mut kept = None;
    if !req.uri().path().ends_with("/mcp") {
        let (parts, body) = req.into_parts();
        let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
            return too_large().into_response();
        };
        req = Request::from_parts(parts.clone(), axum::body::Body::from(bytes.clone()));
        kept = Some((parts, bytes));
    }
    let mut attempt = 0;
    loop {
        let (service, placed) = opened;
        req.extensions_mut().insert(service.clone());
        req.extensions_mut().insert(WorkspaceId(id.to_string()));
        let resp = next.clone().run(req).await;
        // A failure of a workspace deleted while the request ran (its
        // index dropped under it) is that workspace's absence, not a
        // fault of the server.
        if resp.status().is_server_error() && service.deregistered().await {
            return refused(mnemo_service::Error::NotFound(format!(
                "the workspace {id:?} was deleted while this request ran: \
                 GET /v1/workspaces lists the workspaces there are"
            )));
        }
        // One that met the old copy of a workspace moved meanwhile wrote
        // nothing there: it runs again, on the new copy.
        let failed = resp.status().is_server_error() || resp.status() == StatusCode::CONFLICT;
        let Some((parts, bytes)) = kept.as_ref().filter(|_| failed && attempt < MOVED_RETRIES)
        else {
            return resp;
        };
        if !s.tenants.moved_away(id, &placed).await {
            return resp;
        }
        attempt += 1;
        req = Request::from_parts(parts.clone(), axum::body::Body::from(bytes.clone()));
        opened = match s.tenants.authorize_placed(id, bearer(req.headers())).await {
            Ok(opened) => opened,
            Err(e) => return refused(e),
        };
    }
}

async fn openapi() -> axum::Json<serde_json::Value> {
    axum::Json(mnemo_service::openapi::tenants_document())
}

async fn health() -> axum::Json<serde_json::Value> {
    // The single-workspace server's answer (`HealthOutput`), and what kind
    // of server this is.
    axum::Json(serde_json::json!({
        "status": "ok",
        "version": env!("CARGO_PKG_VERSION"),
        "workspaces": "many"
    }))
}

async fn create(
    State(s): State<Shared>,
    Body(body): Body<CreateWorkspaceArgs>,
) -> Result<Response, ApiError> {
    let out = s.tenants.create(body.id).await?;
    Ok((StatusCode::CREATED, axum::Json(out)).into_response())
}

async fn list(State(s): State<Shared>) -> ApiResult<WorkspacesOutput> {
    Ok(axum::Json(s.tenants.list().await?))
}

async fn remove(
    State(s): State<Shared>,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<DeletedOutput> {
    let Path(id) = id.map_err(path_rejection)?;
    s.mcp_routers
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&id);
    Ok(axum::Json(s.tenants.delete(id).await?))
}

async fn move_workspace(
    State(s): State<Shared>,
    id: Result<Path<String>, PathRejection>,
    Body(body): Body<MoveArgs>,
) -> ApiResult<MovedOutput> {
    let Path(id) = id.map_err(path_rejection)?;
    Ok(axum::Json(s.tenants.move_workspace(id, body.to).await?))
}

async fn servers(State(s): State<Shared>) -> ApiResult<ServersOutput> {
    Ok(axum::Json(s.tenants.servers().await?))
}

async fn add_server(
    State(s): State<Shared>,
    Body(body): Body<AddServerArgs>,
) -> ApiResult<ServersOutput> {
    Ok(axum::Json(s.tenants.add_server(body).await?))
}

/// Hands the request to the MCP endpoint of the workspace it was
/// authorized for.
async fn mcp_call(s: Shared, mut req: Request) -> Response {
    let ext = req.extensions();
    let (Some(make), Some(service), Some(WorkspaceId(id))) = (
        s.mcp.as_ref(),
        ext.get::<Arc<Service>>().cloned(),
        ext.get::<WorkspaceId>().cloned(),
    ) else {
        return not_found().await.into_response();
    };
    let router = {
        let mut all = s.mcp_routers.lock().unwrap_or_else(|e| e.into_inner());
        match all.get(&id) {
            Some((svc, r)) if Arc::ptr_eq(svc, &service) => r.clone(),
            _ => {
                if all.len() >= s.tenants.max_open() {
                    // Endpoints of workspaces the server has let go.
                    all.retain(|id, (svc, _)| s.tenants.holds(id, svc));
                }
                let r = make(service.clone());
                all.insert(id, (service, r.clone()));
                r
            }
        }
    };
    let query = req
        .uri()
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    match format!("/mcp{query}").parse() {
        Ok(uri) => *req.uri_mut() = uri,
        Err(_) => return not_found().await.into_response(),
    }
    match router.oneshot(req).await {
        Ok(resp) => resp,
        Err(never) => match never {},
    }
}
