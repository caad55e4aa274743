//! mnemo's memory tools over the Model Context Protocol: [`serve_stdio`]
//! for an agent that spawns `mnemo mcp`, [`serve_http`] for streamable HTTP
//! (loopback by default, bearer token otherwise). The tools (the service's
//! [catalogue](mnemo_service::tools::catalogue)) and the resources
//! (MEMORY.md and `memory/**.md`) run on [`mnemo_service::Service`], which
//! the HTTP API and the CLI call too; this crate only speaks the protocol.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod server;

use std::net::SocketAddr;
use std::sync::Arc;

use mnemo_service::{guard, Error, Result, Service};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

pub use server::{tool_list, MnemoServer};

/// Serves MCP on stdin/stdout until the client closes the stream.
pub async fn serve_stdio(service: Arc<Service>) -> Result<()> {
    let server = MnemoServer::new(service);
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Error::Transport(e.to_string()))?;
    running
        .waiting()
        .await
        .map_err(|e| Error::Transport(e.to_string()))?;
    Ok(())
}

/// Serves MCP over streamable HTTP at `addr` (path `/mcp`) until Ctrl-C or
/// SIGTERM. A non-loopback address needs a token.
pub async fn serve_http(
    service: Arc<Service>,
    addr: SocketAddr,
    token: Option<String>,
) -> Result<()> {
    let listener = guard::bind(addr, token.as_deref()).await?;
    serve_http_on(listener, service, token).await
}

/// Like [`serve_http`] on a listener already bound (with [`guard::bind`]),
/// so the caller can report the real port first.
pub async fn serve_http_on(
    listener: tokio::net::TcpListener,
    service: Arc<Service>,
    token: Option<String>,
) -> Result<()> {
    let t = token.clone();
    guard::serve_router(listener, token.as_deref(), move |_| {
        router(service, t, CancellationToken::new())
    })
    .await
}

/// The axum router serving MCP at `/mcp` (with the bearer check when a
/// token is given); [`guard::serve_router`] puts it behind the guard.
pub fn router(
    service: Arc<Service>,
    token: Option<String>,
    cancel: CancellationToken,
) -> axum::Router {
    let server = MnemoServer::new(service);
    // Host and Origin are checked by the guard both servers share, rather
    // than by rmcp's own list.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_cancellation_token(cancel)
        .disable_allowed_hosts();
    let mcp = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    guard::with_token(axum::Router::new().nest_service("/mcp", mcp), token)
}
