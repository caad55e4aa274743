//! `mnemo serve`: the HTTP API.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::Args;

use crate::ctx::GlobalArgs;

/// Arguments of `mnemo serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free one
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8767")]
    pub http: SocketAddr,
    /// Bearer token every request must carry (required off loopback)
    #[arg(
        long,
        env = "MNEMO_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
}

/// The endpoints, as the OpenAPI document declares them.
pub fn endpoints_help() -> String {
    let mut out = String::from("Endpoints:\n");
    for line in mnemo_service::openapi::endpoint_lines() {
        out.push_str("  ");
        out.push_str(&line);
        out.push('\n');
    }
    out
}

pub fn run(args: ServeArgs, global: &GlobalArgs) -> Result<()> {
    let ctx = global.ctx()?;
    let mnemo = Arc::new(mnemo::Mnemo::open(ctx.workspace, ctx.config)?);
    crate::output::warm_embedder(&mnemo);
    mnemo.keep_index_fresh();
    let service = mnemo_service::Service::new(mnemo);
    let rt = crate::ctx::runtime()?;
    rt.block_on(async move {
        let listener = mnemo_service::guard::bind(args.http, args.token.as_deref()).await?;
        let local = listener
            .local_addr()
            .context("cannot read the listening address")?;
        eprintln!("mnemo serve: listening on http://{local} (OpenAPI at /openapi.json)");
        // One-shot `mnemo search`es of this workspace ask this server.
        let m = service.mnemo();
        let _announced =
            crate::cmd::warm::announce(m.workspace(), m.config(), local, args.token.is_some());
        mnemo_http::serve_on(listener, service, args.token).await?;
        anyhow::Ok(())
    })
}
