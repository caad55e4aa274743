//! mnemo's JSON HTTP API over one workspace: sessions (append, history,
//! list, context, consolidate, compact, an agent turn) and memory (search,
//! get, write), described by the OpenAPI 3 document served at `/openapi.json`. Loopback
//! by default; a bearer token is required on any other address. Errors are
//! `{"error": {"code", "message"}}` with the status of
//! [`mnemo_core::ErrorCode::http_status`]. The operations are
//! [`mnemo_mcp::ops::Backend`]'s, so HTTP and MCP behave the same.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod routes;

use std::net::SocketAddr;
use std::sync::Arc;

use mnemo::Mnemo;

pub use routes::{router, MAX_BODY_BYTES, OPENAPI};

/// Errors starting the server (request errors are answered, not returned).
pub type Error = mnemo_mcp::Error;

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Serves the API at `addr` until Ctrl-C or SIGTERM. A non-loopback
/// address needs a token.
pub async fn serve(mnemo: Arc<Mnemo>, addr: SocketAddr, token: Option<String>) -> Result<()> {
    let listener = mnemo_mcp::auth::bind(addr, token.as_deref()).await?;
    serve_on(listener, mnemo, token).await
}

/// Like [`serve`] on a listener already bound with
/// [`mnemo_mcp::auth::bind`], so the caller can report the real port first.
pub async fn serve_on(
    listener: tokio::net::TcpListener,
    mnemo: Arc<Mnemo>,
    token: Option<String>,
) -> Result<()> {
    let t = token.clone();
    mnemo_mcp::serve_router(listener, token.as_deref(), move |_| {
        router(mnemo_mcp::Backend::new(mnemo), t)
    })
    .await
}
