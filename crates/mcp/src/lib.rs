//! mnemo's memory tools over the Model Context Protocol: [`serve_stdio`]
//! for an agent that spawns `mnemo mcp`, [`serve_http`] for streamable HTTP
//! (loopback by default, bearer token otherwise). The tools
//! (`memory_search`, `memory_get`, `memory_write`, `memory_forget`,
//! `session_append`, `session_context`) and the resources (MEMORY.md and
//! `memory/**.md`) run on [`ops::Backend`], which the HTTP API shares.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

pub mod agent_tools;
pub mod auth;
pub mod error;
pub mod ops;
pub mod server;
pub mod tools;

use std::net::SocketAddr;
use std::sync::Arc;

use mnemo::Mnemo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

pub use agent_tools::BackendTools;
pub use error::{Error, Result};
pub use ops::Backend;
pub use server::MnemoServer;

/// Serves MCP on stdin/stdout until the client closes the stream.
pub async fn serve_stdio(mnemo: Arc<Mnemo>) -> Result<()> {
    let server = MnemoServer::new(Backend::new(mnemo));
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
pub async fn serve_http(mnemo: Arc<Mnemo>, addr: SocketAddr, token: Option<String>) -> Result<()> {
    let listener = auth::bind(addr, token.as_deref()).await?;
    serve_http_on(listener, mnemo, token).await
}

/// Like [`serve_http`] on a listener already bound (with [`auth::bind`]),
/// so the caller can report the real port first.
pub async fn serve_http_on(
    listener: tokio::net::TcpListener,
    mnemo: Arc<Mnemo>,
    token: Option<String>,
) -> Result<()> {
    let t = token.clone();
    serve_router(listener, token.as_deref(), move |_| {
        router(Backend::new(mnemo), t, CancellationToken::new())
    })
    .await
}

/// Serves the router `build` makes for the listener's address until Ctrl-C
/// or SIGTERM, after checking that a non-loopback address has a token.
/// Shared by the MCP server and the HTTP API, so both answer through
/// [`guarded`].
pub async fn serve_router(
    listener: tokio::net::TcpListener,
    token: Option<&str>,
    build: impl FnOnce(SocketAddr) -> axum::Router,
) -> Result<()> {
    let local = listener.local_addr().map_err(|source| Error::Io {
        op: "cannot read the listening address".into(),
        source,
    })?;
    auth::check_bind(&local, token)?;
    axum::serve(listener, guarded(build(local), &local))
        .with_graceful_shutdown(shutdown_signal())
        .await
        .map_err(|source| Error::Io {
            op: format!("serving {local}"),
            source,
        })
}

/// `router` behind [`auth::guard`] for a server listening on `local`: no
/// foreign `Host` on loopback, no foreign `Origin` on a request that changes
/// something, JSON on every POST.
pub fn guarded(router: axum::Router, local: &SocketAddr) -> axum::Router {
    router.layer(axum::middleware::from_fn_with_state(
        auth::Guard::for_addr(local),
        auth::guard,
    ))
}

/// The axum router serving MCP at `/mcp` (with the bearer check when a
/// token is given); [`serve_router`] puts it behind [`guarded`].
pub fn router(
    backend: Arc<Backend>,
    token: Option<String>,
    cancel: CancellationToken,
) -> axum::Router {
    let server = MnemoServer::new(backend);
    // Host and Origin are checked by `guarded`, the one check the HTTP API
    // shares, rather than by rmcp's own list.
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_cancellation_token(cancel)
        .disable_allowed_hosts();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    match token {
        Some(t) => router.layer(axum::middleware::from_fn_with_state(
            Arc::<str>::from(t),
            auth::require_bearer,
        )),
        None => router,
    }
}

/// Resolves on Ctrl-C or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
