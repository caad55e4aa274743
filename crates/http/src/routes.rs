//! Routes, request extraction and error responses of the HTTP API.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use mnemo_service::args::{
    AppendArgs, CompactArgs, ContextArgs, ForgetArgs, GetArgs, HistoryArgs, MemoryHistoryArgs,
    SearchArgs, TurnArgs, WriteArgs,
};
use mnemo_service::inspect::{MemoryViewArgs, TimelineArgs, UndoArgs};
use mnemo_service::Coded;
use mnemo_service::{guard, Service};
use serde::de::DeserializeOwned;
use serde_json::json;

/// Largest request body accepted; larger ones get 413 and nothing is written.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// The routes of one workspace's API, relative to where they are
/// mounted (`/v1`, or `/v1/workspaces/{id}` on a multi-tenant server);
/// each handler finds its workspace's [`Service`] in the request's
/// extensions ([`Svc`]).
pub(crate) fn workspace_api() -> Router {
    Router::new()
        .route("/sessions", get(list_sessions))
        .route("/sessions/{key}/messages", post(append).get(history))
        .route("/sessions/{key}/context", post(context))
        .route("/sessions/{key}/consolidate", post(consolidate))
        .route("/sessions/{key}/compact", post(compact))
        .route("/sessions/{key}/close", post(close))
        .route("/sessions/{key}/turn", post(turn))
        .route("/sessions/{key}/memory-work", get(memory_work))
        .route("/memory/search", post(search))
        .route("/memory/get", get(memory_get))
        .route("/memory/write", post(write))
        .route("/memory/forget", post(forget))
        .route("/memory/history", get(memory_history))
        .route("/memory/dream", post(dream))
        .route("/memory/undo", post(undo))
        .route("/inspect/memory", get(inspect_memory))
        .route("/inspect/changes", get(inspect_changes))
        .route("/inspect/sessions/{key}", get(inspect_session))
        .route("/inspect/index", get(inspect_index))
        .method_not_allowed_fallback(method_not_allowed)
}

/// The API's router (with the bearer check when a token is given), and
/// the inspector's page at `/`: the page holds no data (each view asks
/// the API, with the token), so it is served without one.
pub fn router(service: Arc<Service>, token: Option<String>) -> Router {
    let router = Router::new()
        .route("/health", get(health))
        .route("/openapi.json", get(openapi))
        .nest("/v1", workspace_api())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(Extension(service));
    guard::with_token(router, token).merge(crate::inspector::pages(false))
}

/// The workspace's service, put in the request's extensions by the
/// router (one workspace) or by the tenant check (many).
pub(crate) struct Svc(pub(crate) Arc<Service>);

impl<S: Send + Sync> FromRequestParts<S> for Svc {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Arc<Service>>()
            .cloned()
            .map(Svc)
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "internal",
                    "no workspace was opened for this request",
                )
            })
    }
}

/// An error answer: `{"error": {"code", "message"}}`.
pub(crate) struct ApiError {
    status: StatusCode,
    code: String,
    message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code: code.into(),
            message: message.into(),
        }
    }
}

impl From<mnemo_service::Error> for ApiError {
    fn from(e: mnemo_service::Error) -> Self {
        let status =
            StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError::new(status, e.code().as_str(), e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        (self.status, axum::Json(body)).into_response()
    }
}

pub(crate) type ApiResult<T> = Result<axum::Json<T>, ApiError>;

/// A JSON body whose rejections are answered in the API's error shape:
/// 413 when too large, 400 for anything malformed.
pub(crate) struct Body<T>(pub(crate) T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Body(v)),
            Err(rej) => Err(json_rejection(rej)),
        }
    }
}

fn json_rejection(rej: JsonRejection) -> ApiError {
    if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return too_large();
    }
    let hint = match rej {
        JsonRejection::MissingJsonContentType(_) => {
            "send the header `Content-Type: application/json`".to_string()
        }
        JsonRejection::JsonSyntaxError(e) => {
            format!("the body is not valid JSON ({})", e.body_text())
        }
        JsonRejection::JsonDataError(e) => {
            format!(
                "the JSON does not have the expected fields ({}); see /openapi.json",
                e.body_text()
            )
        }
        other => other.body_text(),
    };
    ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", hint)
}

/// A body that may be empty (then `T::default()`), else JSON.
fn optional_body<T: DeserializeOwned + Default>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = body.map_err(|rej| {
        if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
            too_large()
        } else {
            ApiError::new(StatusCode::BAD_REQUEST, "invalid_input", rej.body_text())
        }
    })?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_input",
            format!("bad JSON body ({e}); see /openapi.json"),
        )
    })
}

pub(crate) fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
        format!(
            "the request body is over {} MiB: send fewer messages per request, or store large content as a file",
            MAX_BODY_BYTES / (1024 * 1024)
        ),
    )
}

/// The `{key}` of a session route; a key that does not decode (bad
/// percent-encoding, invalid UTF-8) is answered in the API's error shape.
struct Key(String);

impl<S: Send + Sync> FromRequestParts<S> for Key {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        match Path::<HashMap<String, String>>::from_request_parts(parts, state).await {
            Ok(Path(mut params)) => Ok(Key(params.remove("key").unwrap_or_default())),
            Err(rej) => Err(path_rejection(rej)),
        }
    }
}

/// A path parameter (a session key, a workspace id) that does not decode
/// (bad percent-encoding, invalid UTF-8), in the API's error shape.
pub(crate) fn path_rejection(rej: axum::extract::rejection::PathRejection) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "invalid_input",
        format!(
            "bad name in the path ({}): percent-encode it as UTF-8",
            rej.body_text()
        ),
    )
}

fn query_rejection(rej: QueryRejection) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "invalid_input",
        format!("bad query string ({}); see /openapi.json", rej.body_text()),
    )
}

async fn openapi() -> Response {
    axum::Json(mnemo_service::openapi::document()).into_response()
}

async fn health(Svc(s): Svc) -> axum::Json<mnemo_service::output::HealthOutput> {
    axum::Json(s.health())
}

pub(crate) async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such endpoint: /openapi.json lists them",
    )
}

pub(crate) async fn method_not_allowed(method: axum::http::Method) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_input",
        format!(
            "{method} is not allowed on this endpoint: /openapi.json lists the methods of each"
        ),
    )
}

async fn list_sessions(Svc(s): Svc) -> ApiResult<impl serde::Serialize> {
    Ok(axum::Json(s.sessions().await?))
}

async fn append(
    Svc(s): Svc,
    Key(key): Key,
    Body(body): Body<AppendArgs>,
) -> Result<Response, ApiError> {
    let out = s.append(key, body).await?;
    Ok((StatusCode::CREATED, axum::Json(out)).into_response())
}

async fn history(
    Svc(s): Svc,
    Key(key): Key,
    q: Result<Query<HistoryArgs>, QueryRejection>,
) -> ApiResult<impl serde::Serialize> {
    let Query(q) = q.map_err(query_rejection)?;
    Ok(axum::Json(s.history(key, q).await?))
}

async fn context(
    Svc(s): Svc,
    Key(key): Key,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<impl serde::Serialize> {
    let args = optional_body::<ContextArgs>(body)?;
    Ok(axum::Json(s.context(key, args).await?))
}

async fn consolidate(Svc(s): Svc, Key(key): Key) -> ApiResult<impl serde::Serialize> {
    Ok(axum::Json(s.consolidate(key).await?))
}

async fn compact(
    Svc(s): Svc,
    Key(key): Key,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<impl serde::Serialize> {
    let args = optional_body::<CompactArgs>(body)?;
    Ok(axum::Json(s.compact(key, args).await?))
}

async fn close(Svc(s): Svc, Key(key): Key) -> ApiResult<impl serde::Serialize> {
    Ok(axum::Json(s.close(key).await?))
}

async fn turn(
    Svc(s): Svc,
    Key(key): Key,
    Body(args): Body<TurnArgs>,
) -> ApiResult<impl serde::Serialize> {
    Ok(axum::Json(s.turn(key, args).await?))
}

async fn memory_work(Svc(s): Svc, Key(key): Key) -> ApiResult<impl serde::Serialize> {
    Ok(axum::Json(s.memory_work(key).await?))
}

async fn search(Svc(s): Svc, Body(args): Body<SearchArgs>) -> ApiResult<impl serde::Serialize> {
    Ok(axum::Json(s.search(args).await?))
}

async fn memory_get(
    Svc(s): Svc,
    q: Result<Query<GetArgs>, QueryRejection>,
) -> ApiResult<impl serde::Serialize> {
    let Query(args) = q.map_err(query_rejection)?;
    Ok(axum::Json(s.get(args).await?))
}

async fn write(Svc(s): Svc, Body(args): Body<WriteArgs>) -> ApiResult<impl serde::Serialize> {
    Ok(axum::Json(s.write(args).await?))
}

async fn memory_history(
    Svc(s): Svc,
    q: Result<Query<MemoryHistoryArgs>, QueryRejection>,
) -> ApiResult<impl serde::Serialize> {
    let Query(args) = q.map_err(query_rejection)?;
    Ok(axum::Json(s.memory_history(args).await?))
}

async fn forget(Svc(s): Svc, Body(args): Body<ForgetArgs>) -> ApiResult<impl serde::Serialize> {
    Ok(axum::Json(s.forget(args).await?))
}

async fn dream(Svc(s): Svc) -> ApiResult<impl serde::Serialize> {
    Ok(axum::Json(s.dream(false).await?))
}

async fn undo(
    Svc(s): Svc,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<impl serde::Serialize> {
    let args = optional_body::<UndoArgs>(body)?;
    Ok(axum::Json(s.undo(args).await?))
}

async fn inspect_memory(
    Svc(s): Svc,
    q: Result<Query<MemoryViewArgs>, QueryRejection>,
) -> ApiResult<impl serde::Serialize> {
    let Query(args) = q.map_err(query_rejection)?;
    Ok(axum::Json(s.inspect_memory(args).await?))
}

async fn inspect_changes(Svc(s): Svc) -> ApiResult<impl serde::Serialize> {
    Ok(axum::Json(s.inspect_changes().await?))
}

async fn inspect_session(
    Svc(s): Svc,
    Key(key): Key,
    q: Result<Query<TimelineArgs>, QueryRejection>,
) -> ApiResult<impl serde::Serialize> {
    let Query(args) = q.map_err(query_rejection)?;
    Ok(axum::Json(s.inspect_session(key, args).await?))
}

async fn inspect_index(Svc(s): Svc) -> ApiResult<impl serde::Serialize> {
    Ok(axum::Json(s.inspect_index().await?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt as _;

    /// Every endpoint the OpenAPI document declares is routed (answers
    /// something other than "no such endpoint"), and a path it does not
    /// declare is not.
    #[tokio::test]
    async fn the_router_serves_what_the_document_declares() {
        let dir = tempfile::tempdir().unwrap();
        let config = mnemo_core::Config::parse("[embedder]\nkind = \"none\"\n").unwrap();
        let mnemo = mnemo::Mnemo::open(mnemo_core::Workspace::new(dir.path()), config).unwrap();
        let app = router(Service::new(Arc::new(mnemo)), None);
        for e in mnemo_service::openapi::ENDPOINTS {
            let uri = e.path.replace("{key}", "cli%3Adirect");
            let req = axum::http::Request::builder()
                .method(e.method)
                .uri(&uri)
                .header("content-type", "application/json")
                .body(axum::body::Body::from("{}"))
                .unwrap();
            let resp = app.clone().oneshot(req).await.unwrap();
            let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
                .await
                .unwrap();
            let text = String::from_utf8_lossy(&body);
            assert!(
                !text.contains("no such endpoint") && !text.contains("is not allowed"),
                "{} {uri}: {text}",
                e.method
            );
        }
        let req = axum::http::Request::builder()
            .uri("/v1/nothing")
            .body(axum::body::Body::empty())
            .unwrap();
        let resp = app.oneshot(req).await.unwrap();
        assert_eq!(resp.status(), StatusCode::NOT_FOUND);
    }
}
