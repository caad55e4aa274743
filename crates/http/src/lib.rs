//! mnemo's JSON HTTP API over one workspace: sessions (append, history,
//! list, context, consolidate, compact, close, an agent turn) and memory
//! (search, get, write, forget), described by the OpenAPI document served
//! at `/openapi.json` ([`mnemo_service::openapi`], generated from the same
//! types the handlers take and answer). Loopback by default; a bearer
//! token is required on any other address. Errors are
//! `{"error": {"code", "message"}}` with the status of
//! [`mnemo_service::Error::http_status`]. Every handler calls one
//! [`mnemo_service::Service`] operation, so HTTP, MCP and the CLI behave
//! the same. [`tenants_router`] serves many workspaces of a database
//! under `/v1/workspaces/{id}`, each behind its own token. The memory
//! inspector, a page inside the binary, is served at `/` (and at
//! `/v1/workspaces/{id}/` for each workspace of a multi-tenant server).
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod inspector;
mod routes;
mod tenants;

use std::net::SocketAddr;
use std::sync::Arc;

use mnemo_service::{guard, Service};

pub use mnemo_service::{Error, Result};
pub use routes::{router, MAX_BODY_BYTES};
pub use tenants::{tenants_router, McpRouter};

/// Serves the API at `addr` until Ctrl-C or SIGTERM. A non-loopback
/// address needs a token.
pub async fn serve(service: Arc<Service>, addr: SocketAddr, token: Option<String>) -> Result<()> {
    let listener = guard::bind(addr, token.as_deref()).await?;
    serve_on(listener, service, token).await
}

/// Like [`serve`] on a listener already bound with [`guard::bind`], so
/// the caller can report the real port first.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    service: Arc<Service>,
    token: Option<String>,
) -> Result<()> {
    let t = token.clone();
    guard::serve_router(listener, token.as_deref(), move |_| router(service, t)).await
}
