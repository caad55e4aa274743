//! Running the `mnemo` binary from integration tests: a command for one
//! workspace with the environment scrubbed (nothing may point the child at
//! a real provider, another workspace or a token), stdin piping, and the
//! success check that prints both streams when it fails.
//!
//! The CLI's tests run twice: against workspace folders, and with
//! [`CLI_DATABASE_ENV`] set against workspaces of that PostgreSQL
//! database, each test's folder then standing for one workspace id
//! ([`workspace_id`]) addressed as `mnemo --database URL --id ID`.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Variables that could point a child `mnemo` at a real provider, another
/// workspace or a server token.
pub const SCRUBBED_ENV: &[&str] = &[
    "MNEMO_WORKSPACE",
    "MNEMO_DATABASE",
    "MNEMO_WORKSPACE_ID",
    "MNEMO_TOKEN",
    "MNEMO_PROVIDER",
    "MNEMO_BASE_URL",
    "MNEMO_MODEL",
    "MNEMO_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
];

/// Set to a PostgreSQL URL, the CLI's tests address database workspaces
/// instead of folders (`scripts/test.sh` runs them so a second time).
pub const CLI_DATABASE_ENV: &str = "MNEMO_TEST_CLI_DATABASE";

/// The database the CLI's tests keep their workspaces in on this run, if
/// they run against a database.
pub fn cli_database() -> Option<String> {
    std::env::var(CLI_DATABASE_ENV)
        .ok()
        .filter(|u| !u.trim().is_empty())
}

/// The database workspace that stands for the folder `ws` in a test:
/// each test's temporary folder is unique, and so is its id.
pub fn workspace_id(ws: &Path) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(ws.to_string_lossy().as_bytes());
    format!("t{}", &hex::encode(digest)[..20])
}

/// `bin --workspace ws args…` with [`SCRUBBED_ENV`] removed; on a run
/// against a database ([`cli_database`]), the workspace `ws` stands for
/// there. Pass the binary as the test crate sees it:
/// `env!("CARGO_BIN_EXE_mnemo")`.
pub fn mnemo_command(bin: &str, ws: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(bin);
    c.arg("--workspace").arg(ws).args(args);
    for v in SCRUBBED_ENV {
        c.env_remove(v);
    }
    if let Some(url) = cli_database() {
        c.env("MNEMO_DATABASE", url)
            .env("MNEMO_WORKSPACE_ID", workspace_id(ws));
    }
    c
}

/// The commands that take the model flags (`--provider`, `--model`, …).
const MODEL_COMMANDS: [&str; 4] = ["consolidate", "compact", "context", "new"];

/// Runs `bin --workspace ws args…` keyword-only (`embedder.kind=none`),
/// with `model` as the chat model of the commands that take one.
///
/// # Panics
/// When the process cannot be started.
#[allow(clippy::expect_used)]
pub fn mnemo_with_model(
    bin: &str,
    ws: &Path,
    model: &crate::ScriptedServer,
    args: &[&str],
) -> std::process::Output {
    let model_flags = match args.first() {
        Some(c) if MODEL_COMMANDS.contains(c) => model.model_flags(),
        _ => Vec::new(),
    };
    mnemo_command(bin, ws, args)
        .args(model_flags)
        .args(["--set", "embedder.kind=none"])
        .output()
        .expect("run mnemo")
}

/// Runs `cmd` with `input` on its stdin, closed afterwards (end of input).
///
/// # Panics
/// When the process cannot be started or waited for.
#[allow(clippy::expect_used)]
pub fn run_with_stdin(mut cmd: Command, input: &[u8]) -> Output {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mnemo");
    if let Some(mut stdin) = child.stdin.take() {
        // A child that exits before reading everything closes the pipe;
        // its output says why.
        let _ = stdin.write_all(input);
    }
    child.wait_with_output().expect("wait for mnemo")
}

/// The stdout of a successful run.
///
/// # Panics
/// When the run failed (both streams are shown) or stdout is not UTF-8.
#[allow(clippy::expect_used)]
pub fn stdout_of_success(o: &Output) -> String {
    assert!(
        o.status.success(),
        "mnemo failed ({})\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("stdout is UTF-8")
}

/// A server process of a test and its port, killed when dropped.
pub struct Server {
    /// The process.
    pub child: std::process::Child,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port on 127.0.0.1 that was free a moment ago, for a server to bind.
///
/// # Panics
/// When no port can be bound.
#[allow(clippy::expect_used)]
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a loopback port")
        .port()
}

/// Starts a server command (`mnemo serve`, `mnemo mcp --http`) and returns
/// once it has printed its "listening on" line; stderr keeps being drained
/// so the child never blocks on a full pipe.
///
/// # Panics
/// When the server cannot start or exits before listening.
#[allow(clippy::expect_used, clippy::panic)]
pub fn start_listening(mut cmd: Command) -> std::process::Child {
    use std::io::{BufRead, BufReader, Read};
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server");
    let mut err = BufReader::new(child.stderr.take().expect("piped stderr"));
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap_or(0) == 0 {
            let _ = child.wait();
            panic!("the server exited before listening: {seen}");
        }
        seen.push_str(&line);
        if line.contains("listening on") {
            break;
        }
    }
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = err.read_to_string(&mut sink);
    });
    child
}

/// POSTs `body` as JSON to `http://127.0.0.1:{port}{path}` (with a bearer
/// `token` when given) and returns the status and the JSON answer
/// (`Value::Null` when the answer is not JSON).
///
/// # Panics
/// When the server cannot be reached or does not answer HTTP.
pub fn post_json(
    port: u16,
    path: &str,
    token: Option<&str>,
    body: &serde_json::Value,
) -> (u16, serde_json::Value) {
    let auth = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("Authorization", a.as_str())).collect();
    let (status, text) = http_request(port, "POST", path, &headers, Some(&body.to_string()));
    (status, serde_json::from_str(&text).unwrap_or_default())
}

/// One HTTP/1.1 request to `http://127.0.0.1:{port}{path}` with `headers`
/// and a JSON `body`; returns the status and the body (de-chunked).
///
/// # Panics
/// When the server cannot be reached or does not answer HTTP.
#[allow(clippy::expect_used, clippy::panic)]
pub fn http_request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> (u16, String) {
    use std::io::Read;
    let mut request =
        format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(b) = body {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            b.len()
        ));
    }
    request.push_str("\r\n");
    request.push_str(body.unwrap_or_default());
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.write_all(request.as_bytes()).expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read the answer");
    let raw = String::from_utf8_lossy(&raw);
    let Some((head, rest)) = raw.split_once("\r\n\r\n") else {
        panic!("no HTTP answer: {raw:?}");
    };
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status: {head:?}"));
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    (
        status,
        if chunked {
            dechunk(rest)
        } else {
            rest.to_string()
        },
    )
}

/// The body of a chunked answer.
pub fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest.get(n + 2..).unwrap_or_default();
    }
    out
}

/// The append-only memory files a forget must never remove, written into
/// workspace `ws`: the history, the daily log of 2026-11-28 and a session
/// note of that day. Returns their workspace-relative paths.
///
/// # Panics
/// When the files cannot be written.
#[allow(clippy::expect_used)]
pub fn write_append_only_files(ws: &Path) -> [&'static str; 3] {
    let files = [
        (
            "memory/HISTORY.md",
            "[2026-11-28 10:00] the only copy of a raw archive\n\n",
        ),
        (
            "memory/2026-11-28.md",
            "# 2026-11-28\n\n- [10:00] deploy key rotated\n",
        ),
        ("memory/2026-11-28-tea.md", "# Session: 2026-11-28\n"),
    ];
    std::fs::create_dir_all(ws.join("memory")).expect("create memory/");
    for (rel, text) in files {
        std::fs::write(ws.join(rel), text).expect("write an append-only file");
    }
    files.map(|(rel, _)| rel)
}
