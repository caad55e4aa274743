//! `mnemo serve`: the HTTP API over the workspace, or (with `--database`)
//! over many workspaces kept in PostgreSQL. Memory work that turns leave
//! running in the background is reported on stderr as it ends, and a
//! stopping server waits for it (bounded).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use mnemo::engine::{MemoryWorkReport, MemoryWorkers};

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
    /// With --database and no --id: the token that creates, lists and deletes
    /// workspaces (POST/GET /v1/workspaces, DELETE /v1/workspaces/ID)
    #[arg(
        long,
        env = "MNEMO_ADMIN_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub admin_token: Option<String>,
    /// With --database and no --id: the folder of the workspaces' caches and derived
    /// state on this server [default: .mnemo/tenants in the workspace]
    #[arg(long, value_name = "DIR")]
    pub data: Option<std::path::PathBuf>,
    /// With --database and no --id: workspaces held open at once; past that the one
    /// used longest ago is let go (and opened again when next asked for)
    #[arg(long, value_name = "N", default_value_t = mnemo_service::tenants::MAX_OPEN)]
    pub max_open: usize,
}

/// The endpoints, as the OpenAPI document declares them.
pub fn endpoints_help() -> String {
    let mut out = String::from("Endpoints:\n");
    for line in mnemo_service::openapi::endpoint_lines() {
        out.push_str("  ");
        out.push_str(&line);
        out.push('\n');
    }
    out.push_str(
        "\nWith --database, each workspace's endpoints are under /v1/workspaces/ID (/v1/sessions\n\
         becomes /v1/workspaces/ID/sessions; MCP at /v1/workspaces/ID/mcp) behind its own token,\n\
         and the admin token has:\n",
    );
    for line in mnemo_service::openapi::tenant_endpoint_lines() {
        out.push_str("  ");
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// Arguments of `mnemo inspect`.
#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Address to listen on; port 0 picks a free one
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub http: SocketAddr,
    /// Token the page and the API need [default: a new random one, in the
    /// printed address]
    #[arg(
        long,
        env = "MNEMO_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
}

/// `mnemo inspect`: the API and its page, behind a token made for this
/// run, and the address that opens the page with it.
pub fn inspect(args: InspectArgs, global: &GlobalArgs) -> Result<()> {
    let token = args.token.unwrap_or_else(mnemo_service::tenants::new_token);
    serve_workspace(args.http, Some(token), global, true)
}

pub fn run(args: ServeArgs, global: &GlobalArgs) -> Result<()> {
    // --database without --id: every workspace of the database, each
    // behind its own token; with --id, that one as a folder is served.
    if global.database.is_some() && global.id.is_none() {
        if args.token.is_some() {
            anyhow::bail!(crate::output::UsageError(
                "--token guards one workspace: with --database and no --id each workspace has its own token (and --admin-token manages them)".into()
            ));
        }
        return run_tenants(args, global);
    }
    serve_workspace(args.http, args.token, global, false)
}

/// Serves one workspace; `page` prints the inspector's address with its
/// token (the fragment, which the browser keeps and never sends).
fn serve_workspace(
    http: SocketAddr,
    token: Option<String>,
    global: &GlobalArgs,
    page: bool,
) -> Result<()> {
    let mnemo = global.ctx()?.open_to_serve()?;
    crate::output::warm_embedder(&mnemo);
    mnemo.keep_index_fresh();
    let service = mnemo_service::Service::new(mnemo);
    report_memory_work(service.memory_workers());
    let workers = service.memory_workers().clone();
    let rt = crate::ctx::runtime()?;
    rt.block_on(async move {
        let listener = mnemo_service::guard::bind(http, token.as_deref()).await?;
        let local = listener
            .local_addr()
            .context("cannot read the listening address")?;
        // One-shot `mnemo search`es of this workspace ask this server; the
        // announcement is written before "listening" is said, so whoever
        // waits for that line finds it.
        let m = service.mnemo();
        let _announced =
            crate::cmd::warm::announce(m.workspace(), m.config(), local, token.is_some());
        match (&token, page) {
            (Some(t), true) => eprintln!(
                "mnemo inspect: listening on http://{local}; open http://{local}/#token={t} (Ctrl-C stops it)"
            ),
            _ => eprintln!(
                "mnemo serve: listening on http://{local} (the inspector at /, OpenAPI at /openapi.json)"
            ),
        }
        mnemo_http::serve_on(listener, service, token).await?;
        finish_memory_work(&workers).await;
        anyhow::Ok(())
    })
}

/// `mnemo serve --database`: many workspaces, and each one's MCP endpoint.
fn run_tenants(args: ServeArgs, global: &GlobalArgs) -> Result<()> {
    let ctx = global.ctx()?;
    let Some(admin_token) = args.admin_token else {
        anyhow::bail!(crate::output::UsageError(
            "--database needs an admin token to create workspaces with: pass --admin-token TOKEN or set MNEMO_ADMIN_TOKEN".into()
        ));
    };
    let data = args
        .data
        .unwrap_or_else(|| ctx.workspace.state_dir().join("tenants"));
    let database = ctx.database.context("--database names the database")?;
    let tenants =
        mnemo_service::tenants::Tenants::connect(mnemo_service::tenants::TenantsConfig {
            url: database.url,
            schema: database.schema,
            data,
            template: ctx.config,
            overrides: Default::default(),
            admin_token: Some(admin_token.clone()),
            max_open: args.max_open,
        })?;
    report_memory_work(tenants.memory_workers());
    let workers = tenants.memory_workers().clone();
    let rt = crate::ctx::runtime()?;
    rt.block_on(async move {
        // The admin token stands in for --token: off loopback the guard
        // wants one, and every route checks its own.
        let listener = mnemo_service::guard::bind(args.http, Some(&admin_token)).await?;
        let local = listener
            .local_addr()
            .context("cannot read the listening address")?;
        eprintln!(
            "mnemo serve: listening on http://{local} for the workspaces of {} (POST /v1/workspaces to create one)",
            tenants.database().location()
        );
        let cancel = tokio_util::sync::CancellationToken::new();
        let mcp: mnemo_http::McpRouter =
            Arc::new(move |service| mnemo_mcp::router(service, None, cancel.clone()));
        mnemo_service::guard::serve_router(listener, Some(&admin_token), move |_| {
            mnemo_http::tenants_router(tenants, Some(mcp))
        })
        .await?;
        finish_memory_work(&workers).await;
        anyhow::Ok(())
    })
}

/// How long a stopping server waits for memory work still running.
const MEMORY_WORK_GRACE: Duration = Duration::from_secs(60);

/// Prints what each run of memory work in the background did, as it ends.
fn report_memory_work(workers: &MemoryWorkers) {
    workers.on_finish(Arc::new(|r: &MemoryWorkReport| {
        for e in &r.events {
            eprintln!(
                "mnemo serve: session {}: {}",
                r.key,
                crate::cmd::engine::describe(e)
            );
        }
        if let Some(error) = &r.error {
            eprintln!(
                "mnemo serve: session {}: the memory work after its turn failed: {error}; it runs again after its next turn",
                r.key
            );
        }
    }));
}

/// Once the last request is answered: waits for the memory work the turns
/// left running, at most [`MEMORY_WORK_GRACE`]; past that, or on a second
/// Ctrl-C or SIGTERM, stops it (at a model call, never between two writes;
/// it runs again after the session's next turn).
async fn finish_memory_work(workers: &MemoryWorkers) {
    let running = workers.running();
    if running == 0 {
        return;
    }
    eprintln!(
        "mnemo serve: waiting for the memory work of {running} session(s) (at most {} s; Ctrl-C again stops it)",
        MEMORY_WORK_GRACE.as_secs()
    );
    let left = tokio::select! {
        left = workers.wait_all(MEMORY_WORK_GRACE) => left,
        () = mnemo_service::guard::shutdown_signal() => workers.running(),
    };
    if left == 0 {
        eprintln!("mnemo serve: memory work done");
        return;
    }
    let stopped = workers.stop_all().await;
    eprintln!(
        "mnemo serve: stopped the memory work of {stopped} session(s); what it finished is saved, the rest runs after each session's next turn"
    );
}
