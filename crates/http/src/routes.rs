//! Routes, request extraction and error responses of the HTTP API.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, FromRequest, FromRequestParts, Path, Query, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use mnemo_mcp::ops::{self, Backend};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

/// Largest request body accepted; larger ones get 413 and nothing is written.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// The OpenAPI 3 document of this API.
pub const OPENAPI: &str = include_str!("../openapi.json");

type AppState = Arc<Backend>;

/// The API's router (with the bearer check when a token is given).
pub fn router(backend: Arc<Backend>, token: Option<String>) -> Router {
    let router = Router::new()
        .route("/openapi.json", get(openapi))
        .route("/v1/sessions", get(list_sessions))
        .route("/v1/sessions/{key}/messages", post(append).get(history))
        .route("/v1/sessions/{key}/context", post(context))
        .route("/v1/sessions/{key}/consolidate", post(consolidate))
        .route("/v1/sessions/{key}/compact", post(compact))
        .route("/v1/sessions/{key}/turn", post(turn))
        .route("/v1/memory/search", post(search))
        .route("/v1/memory/get", get(memory_get))
        .route("/v1/memory/write", post(write))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(backend);
    match token {
        Some(t) => router.layer(axum::middleware::from_fn_with_state(
            Arc::<str>::from(t),
            mnemo_mcp::auth::require_bearer,
        )),
        None => router,
    }
}

/// An error answer: `{"error": {"code", "message"}}`.
struct ApiError {
    status: StatusCode,
    code: String,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code: code.into(),
            message: message.into(),
        }
    }
}

impl From<mnemo_mcp::Error> for ApiError {
    fn from(e: mnemo_mcp::Error) -> Self {
        let status = match &e {
            // Consolidation and compaction need a model: say it is not
            // available here rather than pretending the server broke.
            mnemo_mcp::Error::NotConfigured(_) => StatusCode::NOT_IMPLEMENTED,
            _ => StatusCode::from_u16(e.code().http_status())
                .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        };
        ApiError::new(status, e.code().as_str(), e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        (self.status, axum::Json(body)).into_response()
    }
}

type ApiResult = Result<axum::Json<Value>, ApiError>;

/// A JSON body whose rejections are answered in the API's error shape:
/// 413 when too large, 400 for anything malformed.
struct Body<T>(T);

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

fn too_large() -> ApiError {
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
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(key)) => Ok(Key(key)),
            Err(rej) => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "invalid_input",
                format!(
                    "bad session key in the path ({}): percent-encode it as UTF-8",
                    rej.body_text()
                ),
            )),
        }
    }
}

fn query_rejection(rej: QueryRejection) -> ApiError {
    ApiError::new(
        StatusCode::BAD_REQUEST,
        "invalid_input",
        format!("bad query string ({}); see /openapi.json", rej.body_text()),
    )
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such endpoint: /openapi.json lists them",
    )
}

async fn method_not_allowed(method: axum::http::Method) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "invalid_input",
        format!(
            "{method} is not allowed on this endpoint: /openapi.json lists the methods of each"
        ),
    )
}

async fn list_sessions(State(b): State<AppState>) -> ApiResult {
    Ok(axum::Json(b.sessions().await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AppendBody {
    messages: Vec<mnemo_core::Message>,
}

async fn append(
    State(b): State<AppState>,
    Key(key): Key,
    Body(body): Body<AppendBody>,
) -> Result<Response, ApiError> {
    let out = b
        .append(ops::AppendArgs {
            key,
            messages: body.messages,
        })
        .await?;
    Ok((StatusCode::CREATED, axum::Json(out)).into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryQuery {
    #[serde(default)]
    since_cursor: bool,
}

async fn history(
    State(b): State<AppState>,
    Key(key): Key,
    q: Result<Query<HistoryQuery>, QueryRejection>,
) -> ApiResult {
    let Query(q) = q.map_err(query_rejection)?;
    Ok(axum::Json(b.history(key, q.since_cursor).await?))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct ContextBody {
    #[serde(default)]
    message: Option<String>,
}

async fn context(
    State(b): State<AppState>,
    Key(key): Key,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let message = optional_body::<ContextBody>(body)?.message;
    Ok(axum::Json(
        b.context(ops::ContextArgs { key, message }).await?,
    ))
}

async fn consolidate(State(b): State<AppState>, Key(key): Key) -> ApiResult {
    Ok(axum::Json(b.consolidate(key).await?))
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct CompactBody {
    #[serde(default)]
    level: Option<u8>,
    #[serde(default)]
    focus: Option<String>,
}

async fn compact(
    State(b): State<AppState>,
    Key(key): Key,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult {
    let body = optional_body::<CompactBody>(body)?;
    Ok(axum::Json(b.compact(key, body.level, body.focus).await?))
}

async fn turn(
    State(b): State<AppState>,
    Key(key): Key,
    Body(args): Body<ops::TurnArgs>,
) -> ApiResult {
    Ok(axum::Json(b.turn(key, args).await?))
}

async fn search(State(b): State<AppState>, Body(args): Body<ops::SearchArgs>) -> ApiResult {
    Ok(axum::Json(b.search(args).await?))
}

async fn memory_get(
    State(b): State<AppState>,
    q: Result<Query<ops::GetArgs>, QueryRejection>,
) -> ApiResult {
    let Query(args) = q.map_err(query_rejection)?;
    let got = b.get(args).await?;
    Ok(axum::Json(serde_json::to_value(got).map_err(|e| {
        ApiError::from(mnemo_mcp::Error::Internal(e.to_string()))
    })?))
}

async fn write(State(b): State<AppState>, Body(args): Body<ops::WriteArgs>) -> ApiResult {
    Ok(axum::Json(b.write(args).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every route of the router is in the OpenAPI document, and nothing else.
    #[test]
    fn openapi_lists_the_routes() {
        let doc: Value = serde_json::from_str(OPENAPI).unwrap();
        assert_eq!(
            doc["openapi"].as_str().map(|s| s.starts_with("3.")),
            Some(true)
        );
        let mut paths: Vec<String> = Vec::new();
        for (p, ops) in doc["paths"].as_object().unwrap() {
            for m in ops.as_object().unwrap().keys() {
                paths.push(format!("{} {p}", m.to_uppercase()));
            }
        }
        paths.sort();
        let mut want = vec![
            "GET /openapi.json",
            "GET /v1/sessions",
            "POST /v1/sessions/{key}/messages",
            "GET /v1/sessions/{key}/messages",
            "POST /v1/sessions/{key}/context",
            "POST /v1/sessions/{key}/consolidate",
            "POST /v1/sessions/{key}/compact",
            "POST /v1/sessions/{key}/turn",
            "POST /v1/memory/search",
            "GET /v1/memory/get",
            "POST /v1/memory/write",
        ];
        want.sort();
        assert_eq!(paths, want);
    }
}
