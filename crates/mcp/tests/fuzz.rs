//! Fuzz target of the MCP tool arguments, run by `mnemo_test_support::fuzz`
//! inside `cargo test` (budget from `MNEMO_FUZZ_SECS` / `MNEMO_FUZZ_EXECS`):
//! any JSON (or not-quite JSON) as the arguments of any tool, through
//! `MnemoServer::call`, the dispatch the MCP transport runs, on a real
//! keyword-only workspace. No call may panic; a bad call is a tool error
//! the model can read, never a protocol failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use mnemo_core::{Config, Workspace};
use mnemo_mcp::MnemoServer;
use mnemo_service::Service;
use mnemo_test_support::fuzz::{fingerprint, Fuzz};
use serde_json::Value;

const TOOLS: &[&str] = &[
    "memory_search",
    "memory_get",
    "memory_write",
    "memory_forget",
    "memory_history",
    "session_append",
    "session_context",
    "no_such_tool",
];

#[test]
fn fuzz_mcp_tool_arguments() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("MEMORY.md"),
        "# Core\n- Dana lives in Porto.\n",
    )
    .unwrap();
    let config = Config::parse("[embedder]\nkind = \"none\"\n").unwrap();
    let mnemo = Arc::new(mnemo::Mnemo::open(Workspace::new(dir.path()), config).unwrap());
    let server = MnemoServer::new(Service::new(mnemo));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // Input: one byte picks the tool, the rest is its arguments.
    Fuzz::new("mcp-tool-arguments")
        .seeds([
            b"\x00{\"query\":\"where does Dana live?\",\"max_results\":3,\"min_score\":0.1}".to_vec(),
            b"\x01{\"path\":\"MEMORY.md\",\"from\":1,\"lines\":2}".to_vec(),
            b"\x01{\"path\":\"../../etc/passwd\"}".to_vec(),
            b"\x02{\"mode\":\"daily\",\"text\":\"[12:34]\xc3\xa9x\"}".to_vec(),
            b"\x02{\"mode\":\"typed\",\"name\":\"Tea\",\"description\":\"d\",\"type\":\"user\",\"body\":\"b\"}".to_vec(),
            b"\x02{\"mode\":\"memory_section\",\"heading\":\"Facts\",\"body\":\"- x\"}".to_vec(),
            b"\x03{\"name\":\"Tea\"}".to_vec(),
            b"\x04{\"key\":\"cli:direct\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}".to_vec(),
            b"\x05{\"key\":\"cli:direct\",\"message\":\"hi\"}".to_vec(),
            b"\x06{}".to_vec(),
        ])
        .dict([
            "{", "}", "[", "]", "\"", ":", ",", "null", "true", "-1", "1e308", "18446744073709551616",
            "\"query\"", "\"path\"", "\"from\"", "\"lines\"", "\"mode\"", "\"daily\"", "\"typed\"",
            "\"memory_section\"", "\"text\"", "\"name\"", "\"key\"", "\"messages\"", "\"role\"",
            "\"content\"", "\"max_results\"", "\"min_score\"", "\"heading\"", "\"body\"", "\"type\"",
        ])
        .max_len(16 * 1024)
        .run(|data| {
            let tool = TOOLS
                .get(usize::from(data.first().copied().unwrap_or(0)) % TOOLS.len())
                .copied()
                .unwrap_or_default();
            let raw = String::from_utf8_lossy(data.get(1..).unwrap_or_default());
            // Clients send objects; anything else must be refused, not crash.
            let args: Value = serde_json::from_str(&raw).unwrap_or(Value::String(raw.into_owned()));
            let out = rt.block_on(server.call(tool, args));
            let outcome = match &out {
                Ok(r) => {
                    let v = serde_json::to_value(r).unwrap();
                    let code = v["structuredContent"]["error"]["code"].clone();
                    // A panic in an operation surfaces as an internal error.
                    assert_ne!(code, "internal", "{tool}: {v}");
                    (1, code.as_str().map(str::to_string))
                }
                Err(e) => {
                    assert_eq!(tool, "no_such_tool", "{tool}: a protocol error: {e:?}");
                    (2, None)
                }
            };
            fingerprint(&(tool, outcome))
        });
}
