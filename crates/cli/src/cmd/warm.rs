//! A running `mnemo serve` answers the CLI's searches: a one-shot `mnemo
//! search` would otherwise load the embedding model and open the index
//! for a single query. The server announces itself in `.mnemo/serve.json`
//! (its process, loopback address, workspace and a hash of its settings);
//! a search whose workspace and settings are the same asks it over plain
//! HTTP/1.1 on loopback, and falls back to searching itself on any doubt
//! (no answer within a moment, another configuration, an error).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use mnemo::core::{Config, Workspace};
use mnemo_service::output::SearchOutput;
use serde::{Deserialize, Serialize};
use sha2::Digest;

/// The announcement's file, in the workspace's `.mnemo/`.
const FILE: &str = "serve.json";

/// How long a search waits for the server before searching itself.
const WAIT: Duration = Duration::from_secs(3);

#[derive(Debug, Serialize, Deserialize)]
struct Announcement {
    pid: u32,
    addr: SocketAddr,
    root: PathBuf,
    settings: String,
}

/// The settings' fingerprint: a server answers only a search that would
/// run with the same configuration (flags and environment included).
fn fingerprint(config: &Config) -> String {
    hex::encode(sha2::Sha256::digest(config.table().to_string().as_bytes()))
}

fn root_of(ws: &Workspace) -> PathBuf {
    ws.root()
        .canonicalize()
        .unwrap_or_else(|_| ws.root().to_path_buf())
}

/// The announcement of a server on `addr`; removed when dropped.
pub struct Announced(PathBuf);

impl Drop for Announced {
    fn drop(&mut self) {
        // Only our own: a newer server may have announced itself since.
        let ours = std::fs::read(&self.0)
            .ok()
            .and_then(|b| serde_json::from_slice::<Announcement>(&b).ok())
            .is_some_and(|a| a.pid == std::process::id());
        if ours {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// Announces a server of `ws` on the loopback address `addr` (nothing when
/// it needs a token or is not on loopback: the CLI could not ask it).
pub fn announce(
    ws: &Workspace,
    config: &Config,
    addr: SocketAddr,
    token: bool,
) -> Option<Announced> {
    if token || !addr.ip().is_loopback() {
        return None;
    }
    let path = ws.state_dir().join(FILE);
    let text = serde_json::to_vec(&Announcement {
        pid: std::process::id(),
        addr,
        root: root_of(ws),
        settings: fingerprint(config),
    })
    .ok()?;
    std::fs::create_dir_all(ws.state_dir()).ok()?;
    mnemo::store::fsutil::atomic_write(&path, &text).ok()?;
    Some(Announced(path))
}

/// The answer of the server announced for `ws` and its address, when there
/// is one that runs with `config` and answers in time; `None` means:
/// search yourself.
pub fn search(
    ws: &Workspace,
    config: &Config,
    args: &mnemo_service::args::SearchArgs,
) -> Option<(SearchOutput, SocketAddr)> {
    let bytes = std::fs::read(ws.state_dir().join(FILE)).ok()?;
    let a: Announcement = serde_json::from_slice(&bytes).ok()?;
    if a.root != root_of(ws) || a.settings != fingerprint(config) || !a.addr.ip().is_loopback() {
        return None;
    }
    let body = serde_json::to_vec(args).ok()?;
    let answer = post(a.addr, "/v1/memory/search", &body)?;
    Some((serde_json::from_slice(&answer).ok()?, a.addr))
}

/// POSTs `body` to `path` and returns a 200 answer's body.
fn post(addr: SocketAddr, path: &str, body: &[u8]) -> Option<Vec<u8>> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    s.set_read_timeout(Some(WAIT)).ok()?;
    s.set_write_timeout(Some(WAIT)).ok()?;
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(body).ok()?;
    let mut answer = Vec::new();
    s.read_to_end(&mut answer).ok()?;
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n")?;
    let (head, rest) = answer.split_at(split);
    let head = std::str::from_utf8(head).ok()?.to_ascii_lowercase();
    // A whole body only: a chunked answer is left to the local search.
    if !head.starts_with("http/1.1 200") || head.contains("transfer-encoding: chunked") {
        return None;
    }
    rest.get(4..).map(<[u8]>::to_vec)
}
