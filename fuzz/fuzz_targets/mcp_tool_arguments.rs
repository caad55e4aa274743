//! MCP tool arguments: any JSON (or not-quite JSON) as the arguments of
//! any tool, through `MnemoServer::call`, the dispatch the MCP transport
//! runs, on a real keyword-only workspace. No call may panic; a bad call is
//! a tool error the model can read, never a protocol failure or mnemo's
//! `internal`. Same input layout and checks as the `fuzz_mcp_tool_arguments`
//! test: one byte picks the tool, the rest is its arguments.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use mnemo_mcp::MnemoServer;
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

static SERVER: LazyLock<(tokio::runtime::Runtime, MnemoServer)> = LazyLock::new(|| {
    let server = MnemoServer::new(mnemo_service::Service::new(mnemo_fuzz::workspace()));
    (mnemo_fuzz::runtime(), server)
});

fuzz_target!(|data: &[u8]| {
    let (rt, server) = &*SERVER;
    let tool = TOOLS
        .get(usize::from(data.first().copied().unwrap_or(0)) % TOOLS.len())
        .copied()
        .unwrap_or_default();
    let raw = String::from_utf8_lossy(data.get(1..).unwrap_or_default());
    // Clients send objects; anything else must be refused, not crash.
    let args: Value = serde_json::from_str(&raw).unwrap_or(Value::String(raw.into_owned()));
    match rt.block_on(server.call(tool, args)) {
        Ok(r) => {
            let v = serde_json::to_value(&r).unwrap();
            // A panic in an operation surfaces as an internal error.
            assert_ne!(
                v["structuredContent"]["error"]["code"], "internal",
                "{tool}: {v}"
            );
        }
        Err(e) => assert_eq!(tool, "no_such_tool", "{tool}: a protocol error: {e:?}"),
    }
});
