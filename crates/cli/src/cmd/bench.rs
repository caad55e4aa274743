//! `mnemo bench`: speed measured on this machine, with ratios against a
//! baseline measured in the same run.

use std::path::{Path, PathBuf};
use std::process::Command as Process;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use mnemo::core::{Message, Workspace};
use mnemo::store::{FsyncPolicy, SessionOptions, SessionStore};
use serde::Serialize;

use crate::ctx::GlobalArgs;

/// Benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Session log: append latency (fsync off and per turn) and loading a
    /// long session, next to nanobot's SessionManager when it is installed
    Session(SessionBenchArgs),
    /// Many workspaces in one PostgreSQL database behind two `mnemo serve
    /// --database` processes, under concurrent clients (append, memory
    /// write, search), with one server killed half way (--kill): acknowledged
    /// messages lost or duplicated, searches that crossed workspaces,
    /// latencies and requests per second, next to a file workspace
    Tenants(super::bench_tenants::TenantsBenchArgs),
}

/// Arguments of `mnemo bench session`.
#[derive(Debug, Args)]
pub struct SessionBenchArgs {
    /// Appends timed without fsync
    #[arg(long, default_value_t = 20_000)]
    pub appends: usize,
    /// Appends timed with an fsync per turn
    #[arg(long, default_value_t = 500)]
    pub synced_appends: usize,
    /// Messages in the session that is loaded
    #[arg(long, default_value_t = 100_000)]
    pub load_messages: usize,
    /// Times the load is repeated (the median is reported)
    #[arg(long, default_value_t = 7)]
    pub load_runs: usize,
    /// A Python interpreter with `nanobot-ai` installed, to measure nanobot's
    /// SessionManager in the same run (skipped when not given)
    #[arg(long, value_name = "PYTHON")]
    pub nanobot_python: Option<PathBuf>,
    /// Print the results as one JSON object
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Default, Serialize)]
struct Side {
    append_nosync_p50_us: f64,
    append_nosync_p99_us: f64,
    append_fsync_p50_us: f64,
    append_fsync_p99_us: f64,
    load_ms: f64,
    load_messages: usize,
}

pub fn run(command: BenchCommand, global: &GlobalArgs) -> Result<()> {
    match command {
        BenchCommand::Session(args) => session(args),
        BenchCommand::Tenants(args) => super::bench_tenants::run(args, global),
    }
}

/// A message of realistic size and shape: alternating user / assistant turns
/// of a few hundred characters, with some non-ASCII text.
fn sample_message(i: usize) -> Message {
    let body = format!(
        "turn {i}: we discussed the deployment plan for service-{} and agreed to roll out on Thursday; \
         remember the staging URL https://staging.example.com/{i} and the ticket OPS-{}. 注意：周四发布。",
        i % 17,
        1000 + i
    );
    if i.is_multiple_of(2) {
        Message::user(body)
    } else {
        Message::assistant(body)
    }
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)].as_secs_f64() * 1e6
}

fn time_appends(dir: &Path, n: usize, fsync: FsyncPolicy, bar: &ProgressBar) -> Result<(f64, f64)> {
    let ws = Workspace::new(dir);
    let store = SessionStore::new(
        &ws,
        SessionOptions {
            fsync,
            ..SessionOptions::default()
        },
    );
    let mut log = store.open(&format!("bench:{fsync:?}"))?;
    // The first append creates the file: not an append to time.
    log.append(&[sample_message(0)])?;
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let m = [sample_message(i + 1)];
        let t = Instant::now();
        log.append(&m)?;
        times.push(t.elapsed());
        bar.inc(1);
    }
    times.sort();
    Ok((percentile(&times, 0.5), percentile(&times, 0.99)))
}

fn time_load(dir: &Path, n: usize, runs: usize, bar: &ProgressBar) -> Result<f64> {
    let ws = Workspace::new(dir);
    let store = SessionStore::new(
        &ws,
        SessionOptions {
            fsync: FsyncPolicy::Never,
            ..SessionOptions::default()
        },
    );
    let mut log = store.open("bench:load")?;
    let batch: Vec<Message> = (0..n).map(sample_message).collect();
    for chunk in batch.chunks(1000) {
        log.append(chunk)?;
    }
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        let loaded = store.load("bench:load")?;
        times.push(t.elapsed());
        if loaded.messages.len() != n {
            bail!("loaded {} messages, expected {n}", loaded.messages.len());
        }
        bar.inc(1);
    }
    times.sort();
    Ok(times[times.len() / 2].as_secs_f64() * 1e3)
}

const NANOBOT_SCRIPT: &str = include_str!("../../benches/nanobot_session.py");

fn nanobot(python: &Path, args: &SessionBenchArgs, dir: &Path) -> Result<Side> {
    let script = dir.join("nanobot_session.py");
    std::fs::write(&script, NANOBOT_SCRIPT)?;
    let out = Process::new(python)
        .arg(&script)
        .arg(dir.join("nanobot-ws"))
        .arg(args.appends.min(5_000).to_string())
        .arg(args.synced_appends.to_string())
        .arg(args.load_messages.to_string())
        .arg(args.load_runs.to_string())
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    if !out.status.success() {
        bail!(
            "the nanobot benchmark failed (is nanobot-ai installed for {}? `pip install nanobot-ai`):\n{}",
            python.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("the nanobot benchmark printed no JSON")?;
    let f = |k: &str| {
        v.get(k)
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(f64::NAN)
    };
    Ok(Side {
        append_nosync_p50_us: f("append_nosync_p50_us"),
        append_nosync_p99_us: f("append_nosync_p99_us"),
        append_fsync_p50_us: f("append_fsync_p50_us"),
        append_fsync_p99_us: f("append_fsync_p99_us"),
        load_ms: f("load_ms"),
        load_messages: args.load_messages,
    })
}

fn session(args: SessionBenchArgs) -> Result<()> {
    let tmp = tempdir()?;
    let total = (args.appends + args.synced_appends + args.load_runs) as u64;
    let bar = ProgressBar::new(total).with_style(
        ProgressStyle::with_template("{msg:>18} [{bar:30}] {pos}/{len} {elapsed}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message("append, no fsync");
    let (p50, p99) = time_appends(&tmp.join("a"), args.appends, FsyncPolicy::Never, &bar)?;
    bar.set_message("append, fsync");
    let (sp50, sp99) = time_appends(
        &tmp.join("b"),
        args.synced_appends,
        FsyncPolicy::Always,
        &bar,
    )?;
    bar.set_message("load");
    let load_ms = time_load(&tmp.join("c"), args.load_messages, args.load_runs, &bar)?;
    bar.finish_and_clear();
    let mnemo = Side {
        append_nosync_p50_us: p50,
        append_nosync_p99_us: p99,
        append_fsync_p50_us: sp50,
        append_fsync_p99_us: sp99,
        load_ms,
        load_messages: args.load_messages,
    };
    let nb = match &args.nanobot_python {
        Some(py) => {
            eprintln!("running nanobot's SessionManager on the same workload ...");
            Some(nanobot(py, &args, &tmp)?)
        }
        None => None,
    };
    let _ = std::fs::remove_dir_all(&tmp);
    if args.json {
        outln!("{}", serde_json::json!({"mnemo": mnemo, "nanobot": nb}));
        return Ok(());
    }
    outln!(
        "session log benchmark ({} appends, {} synced, {}-message load)",
        args.appends,
        args.synced_appends,
        args.load_messages
    );
    outln!(
        "{:<28} {:>12} {:>12} {:>10}",
        "",
        "mnemo",
        "nanobot",
        "ratio"
    );
    let rows = [
        (
            "append p50, no fsync (µs)",
            mnemo.append_nosync_p50_us,
            nb.as_ref().map(|n| n.append_nosync_p50_us),
        ),
        (
            "append p99, no fsync (µs)",
            mnemo.append_nosync_p99_us,
            nb.as_ref().map(|n| n.append_nosync_p99_us),
        ),
        (
            "append p50, fsync (µs)",
            mnemo.append_fsync_p50_us,
            nb.as_ref().map(|n| n.append_fsync_p50_us),
        ),
        (
            "append p99, fsync (µs)",
            mnemo.append_fsync_p99_us,
            nb.as_ref().map(|n| n.append_fsync_p99_us),
        ),
        ("load (ms)", mnemo.load_ms, nb.as_ref().map(|n| n.load_ms)),
    ];
    for (name, ours, theirs) in rows {
        match theirs {
            Some(t) => outln!("{name:<28} {ours:>12.1} {t:>12.1} {:>9.1}x", t / ours),
            None => outln!("{name:<28} {ours:>12.1} {:>12} {:>10}", "-", "-"),
        }
    }
    outln!("ratio = nanobot / mnemo (higher means mnemo is faster)");
    Ok(())
}

fn tempdir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("mnemo-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
