//! `mnemo mcp`: the memory tools over MCP, on stdio or streamable HTTP.

use std::net::SocketAddr;

use anyhow::{Context as _, Result};
use clap::Args;
use mnemo_service::Service;

use crate::ctx::GlobalArgs;

/// Arguments of `mnemo mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Serve streamable HTTP at this address (path /mcp) instead of stdio,
    /// e.g. 127.0.0.1:8765; port 0 picks a free one
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Bearer token every HTTP request must carry (required off loopback)
    #[arg(
        long,
        env = "MNEMO_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
}

pub fn run(args: McpArgs, global: &GlobalArgs) -> Result<()> {
    let mnemo = global.ctx()?.open_to_serve()?;
    crate::output::warm_embedder(&mnemo);
    mnemo.keep_index_fresh();
    let service = Service::new(mnemo.clone());
    let rt = crate::ctx::runtime()?;
    rt.block_on(async move {
        match args.http {
            None => {
                eprintln!(
                    "mnemo mcp: serving MCP on stdio (workspace {})",
                    mnemo.sessions().storage().location()
                );
                mnemo_mcp::serve_stdio(service).await?;
            }
            Some(addr) => {
                let listener = mnemo_service::guard::bind(addr, args.token.as_deref()).await?;
                let local = listener
                    .local_addr()
                    .context("cannot read the listening address")?;
                eprintln!("mnemo mcp: listening on http://{local}/mcp");
                mnemo_mcp::serve_http_on(listener, service, args.token).await?;
            }
        }
        anyhow::Ok(())
    })
}
