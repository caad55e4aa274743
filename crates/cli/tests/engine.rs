//! The engine commands through the real binary, against the scripted
//! loopback model server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Output;

use mnemo_test_support::cli::{mnemo_command, stdout_of_success};
use mnemo_test_support::{Reply, ScriptedServer};
use serde_json::json;

fn mnemo(ws: &Path, model: &ScriptedServer, args: &[&str]) -> Output {
    mnemo_test_support::cli::mnemo_with_model(env!("CARGO_BIN_EXE_mnemo"), ws, model, args)
}

fn ok(o: Output) -> String {
    stdout_of_success(&o)
}

#[test]
fn consolidate_and_context_through_the_binary() {
    let server = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(mnemo(ws, &server, &["init"]));
    for (role, text) in [
        ("user", "My name is Ada and I deploy on Fridays."),
        ("assistant", "Noted, Ada."),
        ("user", "Thanks!"),
    ] {
        ok(mnemo(
            ws,
            &server,
            &[
                "session",
                "append",
                "cli:direct",
                "--role",
                role,
                "--content",
                text,
            ],
        ));
    }
    server.push(Reply::tool_call(
        "save_memory",
        json!({"history_entry": "[2026-11-29 10:00] Ada said she deploys on Fridays.", "memory_update": "# Memory\n\n- User is Ada; deploys on Fridays.\n"}),
    ));
    let out = ok(mnemo(ws, &server, &["consolidate", "cli:direct"]));
    assert!(out.contains("consolidated messages 0..2"), "{out}");
    let memory = common::read(ws, "MEMORY.md");
    assert!(memory.contains("deploys on Fridays"), "{memory}");
    let history = common::read(ws, "memory/HISTORY.md");
    assert!(history.contains("Ada said she deploys on Fridays."));
    // The request forced the save_memory tool and carried the conversation.
    let reqs = server.requests();
    let body = &reqs.last().unwrap().body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["tool_choice"]["function"]["name"], "save_memory");
    assert!(body.to_string().contains("I deploy on Fridays"));
    // The cursor moved: only the last user turn is replayed.
    let since = ok(mnemo(
        ws,
        &server,
        &["session", "show", "cli:direct", "--since-cursor", "--json"],
    ));
    assert_eq!(since.lines().count(), 1, "{since}");

    server.set_default(Reply::text("{\"selected_memories\": []}"));
    let json_out = ok(mnemo(
        ws,
        &server,
        &[
            "context",
            "cli:direct",
            "--message",
            "when do I deploy?",
            "--json",
        ],
    ));
    let report: serde_json::Value = serde_json::from_str(&json_out).unwrap();
    assert!(report["system"]
        .as_str()
        .unwrap()
        .contains("deploys on Fridays"));
    let parts: Vec<&str> = report["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(
        parts.contains(&"memory_md") && parts.contains(&"tail") && parts.contains(&"user_message"),
        "{parts:?}"
    );
    assert!(report["total_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn a_missing_provider_says_how_to_configure_one() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    let bin = env!("CARGO_BIN_EXE_mnemo");
    ok(mnemo_command(bin, ws, &["init"]).output().unwrap());
    let o = mnemo_command(bin, ws, &["consolidate", "cli:direct"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--provider") || err.contains("[provider]"),
        "{err}"
    );
}

#[test]
fn a_weak_models_unsupported_facts_are_refused_with_why_and_lose_nothing() {
    let server = ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(mnemo(ws, &server, &["init"]));
    let facts = |args: &[&str]| {
        let mut a = args.to_vec();
        a.extend(["--set", "engine.consolidation_mode=facts"]);
        mnemo(ws, &server, &a)
    };
    let said = [
        "I live in Paris.",
        "Noted.",
        "I work at Acme.",
        "Noted.",
        "Bye.",
    ];
    for (i, text) in said.iter().enumerate() {
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        ok(mnemo(
            ws,
            &server,
            &[
                "session",
                "append",
                "cli:direct",
                "--role",
                role,
                "--content",
                text,
            ],
        ));
    }
    // No tool call at all: an error, the cursor stays, nothing written.
    server.push(Reply::text("Sure, I will remember that!"));
    let o = facts(&["consolidate", "cli:direct"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("did not call extract_facts"), "{err}");
    assert!(!common::exists(ws, "memory/facts.md"));
    // A fact no message says, a value the message does not give, the
    // assistant's own chatter: each refused with why; the supported one
    // is saved in the third person.
    let p = |quote: &str, subject: &str, attribute: &str, value: &str, fact: &str| json!({"quote": quote, "subject": subject, "attribute": attribute, "value": value, "kind": "states", "fact": fact});
    server.push(Reply::tool_call(
        "extract_facts",
        json!({"facts": [
            p("I live in Paris", "user", "home city", "Paris", "I live in Paris."),
            p("I work at Acme", "user", "employer", "Initech", "The user works at Initech."),
            p("I like tea", "user", "drink", "tea", "The user likes tea."),
            p("Noted.", "assistant", "reply", "noted", "The assistant noted it."),
        ]}),
    ));
    let out = ok(facts(&["consolidate", "cli:direct"]));
    assert!(out.contains("memory/facts.md: 1 added"), "{out}");
    assert!(
        out.contains("not saved: 3 of the model's 4 proposed fact(s)"),
        "{out}"
    );
    assert!(
        out.contains("the value \"Initech\" is not in the message"),
        "{out}"
    );
    assert!(out.contains("are in no message"), "{out}");
    let text = common::read(ws, "memory/facts.md");
    assert!(text.contains("- The user's home city is Paris."), "{text}");
    assert!(!text.contains("Initech") && !text.contains("tea"), "{text}");
    let audit = common::read(ws, "memory/audit.jsonl");
    assert_eq!(audit.matches("\"op\":\"refuse\"").count(), 3, "{audit}");
    // Every message is still in the session log.
    let all = ok(mnemo(
        ws,
        &server,
        &["session", "show", "cli:direct", "--json"],
    ));
    assert_eq!(all.lines().count(), said.len(), "{all}");
}
