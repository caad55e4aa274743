//! `mnemo bench tenants`: many workspaces in one database behind two
//! `mnemo serve --database` processes, loaded on loopback by concurrent
//! clients that append, write memory and search; one server is killed
//! with SIGKILL half way and started again. Then every acknowledged
//! message is looked for (lost, duplicated), every search hit is checked
//! for another workspace's words, and a file workspace served the same
//! way is measured in the same run as the baseline.
//!
//! With `--second-database`, the workspaces are spread over two
//! PostgreSQL servers, and with `--moves N` busy workspaces are moved
//! between them during the load: their clients read each append back at
//! once, so an answer from a moved workspace's old copy shows as a read
//! that misses an acknowledged message.

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command as Process, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use mnemo::core::Message;
use serde::Serialize;
use serde_json::{json, Value};

/// Arguments of `mnemo bench tenants`.
#[derive(Debug, Args)]
pub struct TenantsBenchArgs {
    /// Workspaces created before the load
    #[arg(long, default_value_t = 1000)]
    pub workspaces: usize,
    /// Concurrent clients
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// Seconds of load on the database workspaces (the baseline runs a third as long)
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// Kill one server with SIGKILL half way and start it again
    #[arg(long)]
    pub kill: bool,
    /// A second PostgreSQL server (with pgvector), listed as server `b`:
    /// new workspaces are spread over the two by load
    #[arg(long, value_name = "URL")]
    pub second_database: Option<String>,
    /// Move this many busy workspaces between the two servers during the
    /// load, evenly spaced (needs --second-database)
    #[arg(long, default_value_t = 0, requires = "second_database")]
    pub moves: usize,
    /// Print the results as one JSON object
    #[arg(long)]
    pub json: bool,
}

const ADMIN: &str = "bench-admin-token";

/// A `mnemo serve` process, killed when dropped.
struct Server {
    child: Child,
    args: Vec<String>,
    base: String,
}

impl Server {
    fn start(args: Vec<String>, port: u16) -> Result<Server> {
        let exe = std::env::current_exe().context("cannot find the mnemo binary")?;
        let child = Process::new(exe)
            .args(&args)
            // The database servers are told theirs on the command line;
            // the baseline has none.
            .env_remove("MNEMO_DATABASE")
            .env_remove("MNEMO_WORKSPACE_ID")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start mnemo serve")?;
        Ok(Server {
            child,
            args,
            base: format!("http://127.0.0.1:{port}"),
        })
    }

    fn restart(&mut self) -> Result<()> {
        let port = self.base.rsplit(':').next().unwrap_or_default().parse()?;
        let _ = self.child.kill();
        let _ = self.child.wait();
        *self = Server::start(self.args.clone(), port)?;
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

async fn wait_ready(client: &reqwest::Client, base: &str) -> Result<()> {
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        if client
            .get(format!("{base}/health"))
            .send()
            .await
            .is_ok_and(|r| r.status().is_success())
        {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("{base} did not answer /health within 60 s")
}

/// Latencies of one kind of request, in ms.
#[derive(Default)]
struct Timings(Vec<f64>);

impl Timings {
    fn stats(&mut self) -> OpStats {
        self.0.sort_by(f64::total_cmp);
        let at = |p: f64| {
            self.0
                .get(((self.0.len() as f64 - 1.0) * p).round() as usize)
                .copied()
                .unwrap_or(0.0)
        };
        OpStats {
            count: self.0.len(),
            p50_ms: at(0.5),
            p99_ms: at(0.99),
        }
    }
}

#[derive(Debug, Default, Serialize)]
struct OpStats {
    count: usize,
    p50_ms: f64,
    p99_ms: f64,
}

#[derive(Default)]
struct Tally {
    append: Timings,
    /// Reads of a moved workspace's session that missed a message the
    /// same client had appended and seen acknowledged before.
    stale_reads: usize,
    /// Appends read back at once.
    read_backs: usize,
    write: Timings,
    search: Timings,
    failed: usize,
    /// Failed requests by operation and answer ("append 503", "search timeout").
    failures: std::collections::BTreeMap<String, usize>,
    cross_hits: usize,
    /// Acknowledged message ids per (base path, session key).
    acked: HashMap<(String, String), Vec<String>>,
}

#[derive(Debug, Serialize)]
struct Phase {
    seconds: f64,
    requests_per_second: f64,
    append: OpStats,
    write: OpStats,
    search: OpStats,
    failed_requests: usize,
    failures: std::collections::BTreeMap<String, usize>,
    acknowledged: usize,
    lost: usize,
    duplicated: usize,
    search_hits_from_another_workspace: usize,
    /// Appends to the moving workspaces read back at once, and those
    /// reads that missed an acknowledged message (answered by an old copy).
    read_backs: usize,
    stale_reads: usize,
    /// Each move: its report (`POST /v1/workspaces/{id}/move`).
    moves: Vec<Value>,
}

/// A workspace as the clients reach it: its path prefix and token.
#[derive(Clone)]
struct Target {
    prefix: String,
    token: Option<String>,
    word: String,
}

struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

fn authed(req: reqwest::RequestBuilder, token: &Option<String>) -> reqwest::RequestBuilder {
    match token {
        Some(t) => req.bearer_auth(t),
        None => req,
    }
}

/// What a failed request answered: its status, or how it failed.
fn failure(op: &str, r: reqwest::Result<reqwest::Response>) -> String {
    match r {
        Ok(r) => format!("{op} {}", r.status().as_u16()),
        Err(e) if e.is_timeout() => format!("{op} timeout"),
        Err(e) if e.is_connect() => format!("{op} connection refused"),
        Err(_) => format!("{op} connection lost"),
    }
}

/// Runs the clients against `bases` for `seconds`, then checks every
/// acknowledged message.
async fn load(
    bases: Arc<Mutex<Vec<String>>>,
    targets: Arc<Vec<Target>>,
    clients: usize,
    seconds: f64,
    kill: Option<(Arc<Mutex<Server>>, f64)>,
    mover: Option<Mover>,
    hot: usize,
) -> Result<Phase> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let tally = Arc::new(Mutex::new(Tally::default()));
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(seconds);
    let mut tasks = Vec::new();
    for c in 0..clients {
        let (http, bases, targets, tally) =
            (http.clone(), bases.clone(), targets.clone(), tally.clone());
        tasks.push(tokio::spawn(async move {
            let mut rng =
                Rng(0x9e37_79b9_7f4a_7c15 ^ (c as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
            let mut n = 0usize;
            // What this client appended to each moving workspace's session.
            let mut mine: HashMap<String, Vec<String>> = HashMap::new();
            while Instant::now() < deadline {
                n += 1;
                // A quarter of the requests go to the workspaces being moved.
                let hot = hot.min(targets.len());
                let t = if hot > 0 && rng.below(4) == 0 {
                    &targets[rng.below(hot)]
                } else {
                    &targets[rng.below(targets.len())]
                };
                let moving = targets[..hot].iter().any(|h| h.prefix == t.prefix);
                let base = {
                    let b = bases.lock().unwrap_or_else(|e| e.into_inner());
                    b[rng.below(b.len())].clone()
                };
                let op = rng.below(10);
                let at = Instant::now();
                let outcome = if op < 6 {
                    let id = format!("m{c}x{n}");
                    let key = format!("bench:{}", c % 4);
                    let msg = Message::user(format!("{id} {} note {n}", t.word));
                    let r = authed(
                        http.post(format!("{base}{}/sessions/{key}/messages", t.prefix)),
                        &t.token,
                    )
                    .json(&json!({ "message": msg }))
                    .send()
                    .await;
                    match r {
                        Ok(r) if r.status().is_success() => {
                            let stale = if moving {
                                let sent = mine.entry(format!("{}{key}", t.prefix)).or_default();
                                sent.push(id.clone());
                                Some(read_back(&http, &base, t, &key, sent).await)
                            } else {
                                None
                            };
                            Ok(Some((stale, t.prefix.clone(), key, id)))
                        }
                        other => Err(failure("append", other)),
                    }
                } else if op < 8 {
                    let r = authed(
                        http.post(format!("{base}{}/memory/write", t.prefix)),
                        &t.token,
                    )
                    .json(&json!({ "text": format!("{} fact {c}-{n}", t.word) }))
                    .send()
                    .await;
                    match r {
                        Ok(r) if r.status().is_success() => Ok(None),
                        other => Err(failure("write", other)),
                    }
                } else {
                    let r = authed(
                        http.post(format!("{base}{}/memory/search", t.prefix)),
                        &t.token,
                    )
                    .json(&json!({ "query": format!("{} note", t.word), "max_results": 5 }))
                    .send()
                    .await;
                    match r {
                        Ok(r) if r.status().is_success() => {
                            let v: Value = r.json().await.unwrap_or_default();
                            let foreign = v["results"]
                                .as_array()
                                .map(|a| {
                                    a.iter()
                                        .filter(|h| {
                                            let s = h["snippet"].as_str().unwrap_or_default();
                                            s.contains("tenantword") && !s.contains(&t.word)
                                        })
                                        .count()
                                })
                                .unwrap_or(0);
                            Ok(Some((
                                Some(foreign),
                                String::new(),
                                String::new(),
                                String::new(),
                            )))
                        }
                        other => Err(failure("search", other)),
                    }
                };
                let ms = at.elapsed().as_secs_f64() * 1000.0;
                let mut tally = tally.lock().unwrap_or_else(|e| e.into_inner());
                match outcome {
                    Err(why) => {
                        tally.failed += 1;
                        *tally.failures.entry(why).or_default() += 1;
                    }
                    Ok(Some((stale, prefix, key, id))) if !id.is_empty() => {
                        tally.append.0.push(ms);
                        tally.acked.entry((prefix, key)).or_default().push(id);
                        if let Some(stale) = stale {
                            tally.read_backs += 1;
                            tally.stale_reads += stale;
                        }
                    }
                    Ok(Some((foreign, ..))) => {
                        tally.search.0.push(ms);
                        tally.cross_hits += foreign.unwrap_or(0);
                    }
                    Ok(None) => tally.write.0.push(ms),
                }
            }
        }));
    }
    let moves = mover.map(|m| tokio::spawn(m.run(http.clone(), seconds)));
    if let Some((server, at)) = kill {
        tokio::time::sleep(Duration::from_secs_f64(at)).await;
        let base = server
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .base
            .clone();
        // The clients go to the other server while this one is down.
        bases
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|b| *b != base);
        let restarted = {
            let mut s = server.lock().unwrap_or_else(|e| e.into_inner());
            s.restart()
        };
        restarted?;
        wait_ready(&http, &base).await?;
        bases.lock().unwrap_or_else(|e| e.into_inner()).push(base);
    }
    for t in tasks {
        t.await?;
    }
    let moves = match moves {
        Some(m) => m.await??,
        None => Vec::new(),
    };
    let elapsed = started.elapsed().as_secs_f64();
    let mut tally = std::mem::take(&mut *tally.lock().unwrap_or_else(|e| e.into_inner()));
    // Every acknowledged message, looked for in its session's history.
    let base = bases.lock().unwrap_or_else(|e| e.into_inner())[0].clone();
    let tokens: HashMap<&str, &Option<String>> = targets
        .iter()
        .map(|t| (t.prefix.as_str(), &t.token))
        .collect();
    let (mut acknowledged, mut lost, mut duplicated) = (0, 0, 0);
    for ((prefix, key), ids) in &tally.acked {
        let token = tokens.get(prefix.as_str()).copied().cloned().flatten();
        let v: Value = authed(
            http.get(format!("{base}{prefix}/sessions/{key}/messages")),
            &token,
        )
        .send()
        .await?
        .json()
        .await?;
        let mut seen: HashMap<String, usize> = HashMap::new();
        for m in v["messages"].as_array().into_iter().flatten() {
            let text = m["content"].as_str().unwrap_or_default();
            if let Some(id) = text.split(' ').next() {
                *seen.entry(id.to_string()).or_default() += 1;
            }
        }
        for id in ids {
            acknowledged += 1;
            match seen.get(id) {
                None => lost += 1,
                Some(n) if *n > 1 => duplicated += 1,
                _ => {}
            }
        }
    }
    let requests = tally.append.0.len() + tally.write.0.len() + tally.search.0.len();
    Ok(Phase {
        seconds: elapsed,
        requests_per_second: requests as f64 / elapsed,
        append: tally.append.stats(),
        write: tally.write.stats(),
        search: tally.search.stats(),
        failed_requests: tally.failed,
        failures: std::mem::take(&mut tally.failures),
        acknowledged,
        lost,
        duplicated,
        search_hits_from_another_workspace: tally.cross_hits,
        read_backs: tally.read_backs,
        stale_reads: tally.stale_reads,
        moves,
    })
}

/// Reads `t`'s session `key` back after an append: 1 when a message of
/// `sent` (this client's, each acknowledged) is missing, else 0. A failed
/// read counts as missing nothing: the request failed, it answered nothing.
async fn read_back(
    http: &reqwest::Client,
    base: &str,
    t: &Target,
    key: &str,
    sent: &[String],
) -> usize {
    let r = authed(
        http.get(format!("{base}{}/sessions/{key}/messages", t.prefix)),
        &t.token,
    )
    .send()
    .await;
    let Ok(r) = r else { return 0 };
    if !r.status().is_success() {
        return 0;
    }
    let v: Value = r.json().await.unwrap_or_default();
    let seen: std::collections::HashSet<&str> = v["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_str()?.split(' ').next())
        .collect();
    usize::from(sent.iter().any(|id| !seen.contains(id.as_str())))
}

/// Moves the busy workspaces between the two servers during the load.
struct Mover {
    /// An admin base URL (any server).
    base: String,
    /// The workspace ids to move, in turn.
    ids: Vec<String>,
    moves: usize,
}

impl Mover {
    /// `moves` moves evenly spaced over `seconds`, each to the server the
    /// workspace is not on; their reports.
    async fn run(self, http: reqwest::Client, seconds: f64) -> Result<Vec<Value>> {
        let mut reports = Vec::new();
        let gap = seconds / (self.moves + 1) as f64;
        // Where each workspace is, read once; the moves below keep it.
        let listed: Value = http
            .get(format!("{}/v1/workspaces", self.base))
            .bearer_auth(ADMIN)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let mut placed: HashMap<String, String> = listed["workspaces"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|w| {
                Some((
                    w["id"].as_str()?.to_string(),
                    w["server"].as_str()?.to_string(),
                ))
            })
            .collect();
        for i in 0..self.moves {
            tokio::time::sleep(Duration::from_secs_f64(gap)).await;
            let id = &self.ids[i % self.ids.len()];
            let on = placed.get(id).cloned().unwrap_or_else(|| "home".into());
            let to = if on == "home" { "b" } else { "home" };
            let r = http
                .post(format!("{}/v1/workspaces/{id}/move", self.base))
                .bearer_auth(ADMIN)
                .json(&json!({ "to": to }))
                .send()
                .await?;
            let status = r.status();
            let v: Value = r.json().await.unwrap_or_default();
            if !status.is_success() {
                bail!("moving {id} to {to} failed: {status} {v}");
            }
            eprintln!(
                "moved {id} {on} -> {to}: {:.2} s, writes paused {:.0} ms",
                v["seconds"].as_f64().unwrap_or_default(),
                v["pause_ms"].as_f64().unwrap_or_default()
            );
            placed.insert(id.clone(), to.to_string());
            reports.push(v);
        }
        Ok(reports)
    }
}

/// One search in every workspace, `clients` at a time: the time of the
/// whole pass, and of each first search.
async fn first_searches(
    http: &reqwest::Client,
    bases: &[String],
    targets: &[Target],
    clients: usize,
) -> Result<Value> {
    let started = Instant::now();
    let mut times = Timings::default();
    for (n, group) in targets.chunks(clients.max(1)).enumerate() {
        let mut tasks = Vec::new();
        for (i, t) in group.iter().enumerate() {
            let (http, t) = (http.clone(), t.clone());
            let base = bases[(n + i) % bases.len()].clone();
            tasks.push(tokio::spawn(async move {
                let at = Instant::now();
                authed(
                    http.post(format!("{base}{}/memory/search", t.prefix)),
                    &t.token,
                )
                .json(&json!({ "query": "first" }))
                .send()
                .await?
                .error_for_status()?;
                anyhow::Ok(at.elapsed().as_secs_f64() * 1000.0)
            }));
        }
        for task in tasks {
            times.0.push(task.await??);
        }
    }
    let stats = times.stats();
    Ok(json!({
        "seconds": started.elapsed().as_secs_f64(),
        "p50_ms": stats.p50_ms,
        "p99_ms": stats.p99_ms,
    }))
}

fn serve_args(root: &Path, port: u16, extra: &[String]) -> Vec<String> {
    let mut args = vec![
        "--workspace".to_string(),
        root.display().to_string(),
        "--set".into(),
        "embedder.kind=hash".into(),
        "serve".into(),
        "--http".into(),
        format!("127.0.0.1:{port}"),
    ];
    args.extend_from_slice(extra);
    args
}

/// Runs the benchmark on the database `--database` names (its own schema,
/// dropped at the end).
pub fn run(args: TenantsBenchArgs, global: &crate::ctx::GlobalArgs) -> Result<()> {
    let database = global.database.clone().ok_or_else(|| {
        crate::output::UsageError(
            "`mnemo bench tenants` needs --database postgres://user@127.0.0.1:5432/db (with pgvector)".into(),
        )
    })?;
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(run_async(args, database))
}

async fn run_async(args: TenantsBenchArgs, database: String) -> Result<()> {
    let scratch = tempfile_dir()?;
    let http = reqwest::Client::new();
    let schema = format!("mnemo_bench_{}x", std::process::id());

    // The baseline: one file workspace behind one server.
    let file_root = scratch.join("file");
    std::fs::create_dir_all(&file_root)?;
    let port = free_port()?;
    let file_server = Server::start(serve_args(&file_root, port, &[]), port)?;
    wait_ready(&http, &file_server.base).await?;
    let file_targets = Arc::new(vec![Target {
        prefix: "/v1".into(),
        token: None,
        word: "tenantwordfile".into(),
    }]);
    eprintln!("baseline: one file workspace, {} clients", args.clients);
    let baseline = load(
        Arc::new(Mutex::new(vec![file_server.base.clone()])),
        file_targets,
        args.clients,
        args.seconds as f64 / 3.0,
        None,
        None,
        0,
    )
    .await?;
    drop(file_server);

    // Two servers over one database.
    let data = scratch.join("data");
    let mut servers = Vec::new();
    for i in 0..2 {
        let root = scratch.join(format!("serve{i}"));
        std::fs::create_dir_all(&root)?;
        let port = free_port()?;
        let extra = vec![
            "--database".to_string(),
            database.clone(),
            "--admin-token".into(),
            ADMIN.into(),
            "--data".into(),
            data.display().to_string(),
            "--schema".into(),
            schema.clone(),
        ];
        servers.push(Arc::new(Mutex::new(Server::start(
            serve_args(&root, port, &extra),
            port,
        )?)));
    }
    let bases: Vec<String> = servers
        .iter()
        .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).base.clone())
        .collect();
    for b in &bases {
        wait_ready(&http, b).await?;
    }
    if let Some(second) = &args.second_database {
        http.post(format!("{}/v1/servers", bases[0]))
            .bearer_auth(ADMIN)
            .json(&json!({ "name": "b", "url": second }))
            .send()
            .await?
            .error_for_status()
            .context("listing --second-database as server b")?;
    }
    eprintln!("creating {} workspaces", args.workspaces);
    let created = Instant::now();
    let mut targets = Vec::new();
    for w in 0..args.workspaces {
        let id = format!("w{w}");
        let v: Value = http
            .post(format!("{}/v1/workspaces", bases[w % 2]))
            .bearer_auth(ADMIN)
            .json(&json!({ "id": id }))
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        targets.push(Target {
            prefix: format!("/v1/workspaces/{id}"),
            token: v["token"].as_str().map(str::to_string),
            word: format!("tenantword{w}q"),
        });
    }
    let create_secs = created.elapsed().as_secs_f64();
    // A workspace's first search creates its index schema (DDL) in the
    // database: timed apart, so the load measures workspaces in use.
    eprintln!("first search of each workspace (creates its index)");
    let first = first_searches(&http, &bases, &targets, args.clients).await?;
    eprintln!(
        "load: {} workspaces, 2 servers, {} clients, {} s{}",
        args.workspaces,
        args.clients,
        args.seconds,
        if args.kill {
            ", one server killed half way"
        } else {
            ""
        }
    );
    let kill = args
        .kill
        .then(|| (servers[1].clone(), args.seconds as f64 / 2.0));
    // The busy workspaces that move: four, or as many as there are moves.
    let hot = if args.moves > 0 {
        args.moves.clamp(1, 4)
    } else {
        0
    };
    let mover = (args.moves > 0).then(|| Mover {
        base: bases[0].clone(),
        ids: (0..hot).map(|w| format!("w{w}")).collect(),
        moves: args.moves,
    });
    let tenants = load(
        Arc::new(Mutex::new(bases.clone())),
        Arc::new(targets),
        args.clients,
        args.seconds as f64,
        kill,
        mover,
        hot,
    )
    .await?;
    for w in 0..args.workspaces {
        let _ = http
            .delete(format!("{}/v1/workspaces/w{w}", bases[0]))
            .bearer_auth(ADMIN)
            .send()
            .await;
    }
    drop(servers);
    let _ = std::fs::remove_dir_all(&scratch);
    let report = json!({
        "workspaces": args.workspaces,
        "clients": args.clients,
        "create_seconds": create_secs,
        "first_search": first,
        "killed_one_server": args.kill,
        "database_servers": if args.second_database.is_some() { 2 } else { 1 },
        "database_workspaces": tenants,
        "file_workspace": baseline,
    });
    if args.json {
        println!("{report}");
    } else {
        println!("{}", serde_json::to_string_pretty(&report)?);
    }
    if tenants.lost > 0
        || tenants.duplicated > 0
        || tenants.search_hits_from_another_workspace > 0
        || tenants.stale_reads > 0
    {
        bail!(
            "acknowledged messages were lost or duplicated, a search crossed workspaces, or a \
             read missed an acknowledged message"
        );
    }
    Ok(())
}

fn tempfile_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("mnemo-bench-tenants-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
