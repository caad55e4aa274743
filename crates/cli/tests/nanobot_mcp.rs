//! nanobot 0.3.5 using mnemo as its memory through nanobot's own MCP client:
//! the configuration the README shows (`tools.mcpServers.mnemo`) is loaded by
//! nanobot's config loader, nanobot's `connect_mcp_servers` starts `mnemo
//! mcp` on stdio and registers its tools, and nanobot's tool registry calls
//! them as its agent would.
//!
//! nanobot-ai comes from `scripts/fetch-peers.sh` (`.venv-nanobot/`, or
//! `MNEMO_NANOBOT_PYTHON`); without it the test says so and passes, except
//! under CI, where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

use mnemo_test_support::cli::mnemo_command;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mnemo");

/// Loads the config at argv[1] with nanobot's loader, connects its MCP
/// servers with nanobot's client, and runs the calls of argv[2] (a JSON list
/// of `[tool, arguments]`) through nanobot's registry.
const DRIVE: &str = r#"
import asyncio, json, sys
from pathlib import Path
from nanobot.config.loader import load_config
from nanobot.agent.tools.registry import ToolRegistry
from nanobot.agent.tools.mcp import connect_mcp_servers, _close_mcp_connections

async def main():
    config = load_config(Path(sys.argv[1]))
    registry = ToolRegistry()
    connections = await connect_mcp_servers(config.tools.mcp_servers, registry)
    out = {"tools": sorted(registry.tool_names), "results": []}
    try:
        for name, args in json.loads(sys.argv[2]):
            result = await registry.execute(name, args)
            out["results"].append(str(result))
    finally:
        await _close_mcp_connections(connections)
    print(json.dumps(out))

asyncio.run(main())
"#;

fn mnemo(ws: &Path, args: &[&str]) -> std::process::Output {
    let out = mnemo_command(BIN, ws, args)
        .env("MNEMO_EMBEDDER__KIND", "none")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mnemo {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn nanobots_mcp_client_searches_and_writes_mnemo_memory() {
    let Some(python) = mnemo_test_support::peers::nanobot_python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("memory-ws");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    mnemo(&ws, &["init"]);
    mnemo(
        &ws,
        &[
            "session",
            "append",
            "cli:direct",
            "--role",
            "user",
            "--content",
            "The quarterly invoice for the albatross project is due on the 3rd.",
        ],
    );

    // The README's configuration, as nanobot reads it from ~/.nanobot/config.json.
    let config = json!({
        "tools": {
            "mcpServers": {
                "mnemo": {
                    "command": BIN,
                    "args": ["--workspace", ws, "mcp"],
                    "env": {"MNEMO_EMBEDDER__KIND": "none"}
                }
            }
        }
    });
    let config_path = home.join("config.json");
    std::fs::write(&config_path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
    let calls = json!([
        ["mcp_mnemo_memory_search", {"query": "albatross invoice"}],
        ["mcp_mnemo_memory_write", {"text": "Prefers invoices as PDF."}],
        ["mcp_mnemo_memory_search", {"query": "invoices as PDF"}]
    ]);
    let out = Command::new(&python)
        .arg("-c")
        .arg(DRIVE)
        .arg(&config_path)
        .arg(calls.to_string())
        .env("HOME", &home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "nanobot failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for want in ["mcp_mnemo_memory_search", "mcp_mnemo_memory_get"] {
        assert!(tools.contains(&want), "{want} not registered: {tools:?}");
    }
    let results: Vec<&str> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        results[0].contains("albatross") && results[0].contains("sessions/cli"),
        "the session's line with its citation: {}",
        results[0]
    );
    assert!(
        results[2].contains("Prefers invoices as PDF") && results[2].contains("memory/"),
        "the written memory found again: {}",
        results[2]
    );
}
