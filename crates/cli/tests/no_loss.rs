//! What is written, acknowledged or remembered stays, through the real
//! binary: concurrent CLI writers, two servers on one workspace while a
//! consolidation runs, typed memory names, forget, an outage, crashes
//! between the steps of a consolidation, and processes killed at random
//! points.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::Duration;

use mnemo_test_support::cli::{
    free_port, mnemo_command, post_json, run_with_stdin, start_listening, stdout_of_success,
};
use mnemo_test_support::{RecordedRequest, Reply, ScriptedServer, XorShift};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_mnemo");

fn mnemo(ws: &Path, args: &[&str]) -> Command {
    let mut c = mnemo_command(BIN, ws, &["--set", "embedder.kind=none"]);
    c.args(args);
    c
}

/// `mnemo` with the scripted server as its chat model (no retries).
fn with_model(ws: &Path, server: &ScriptedServer, args: &[&str]) -> Command {
    let mut c = mnemo(ws, args);
    c.args(server.model_flags())
        .args(["--set", "provider.max_retries=0"]);
    c
}

fn init(ws: &Path) {
    stdout_of_success(&mnemo(ws, &["init"]).output().unwrap());
}

fn add_command(ws: &Path, name: &str, extra: &[&str]) -> Command {
    let mut c = mnemo(
        ws,
        &[
            "memory",
            "add",
            "--type",
            "user",
            "--name",
            name,
            "--description",
            "a fact",
        ],
    );
    c.args(extra);
    c
}

fn add_memory(ws: &Path, name: &str, body: &str, extra: &[&str]) -> Output {
    run_with_stdin(add_command(ws, name, extra), body.as_bytes())
}

fn append(ws: &Path, key: &str, role: &str, text: &str) {
    stdout_of_success(
        &mnemo(
            ws,
            &["session", "append", key, "--role", role, "--content", text],
        )
        .output()
        .unwrap(),
    );
}

fn read(ws: &Path, rel: &str) -> String {
    common::read(ws, rel)
}

fn cursor(ws: &Path, key: &str) -> u64 {
    let out = stdout_of_success(&mnemo(ws, &["session", "list", "--json"]).output().unwrap());
    out.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["key"] == key)
        .and_then(|v| v["last_consolidated"].as_u64())
        .unwrap()
}

fn save(entry: &str, memory: &str) -> Reply {
    Reply::tool_call(
        "save_memory",
        json!({"history_entry": entry, "memory_update": memory}),
    )
}

#[test]
fn eight_cli_writers_lose_no_typed_memory() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let ws = ws.to_path_buf();
            std::thread::spawn(move || {
                for i in 0..10 {
                    let o = add_memory(
                        &ws,
                        &format!("w{w} fact {i}"),
                        &format!("body {w} {i}"),
                        &[],
                    );
                    stdout_of_success(&o);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let memory = read(ws, "MEMORY.md");
    for w in 0..8 {
        for i in 0..10 {
            let link = format!("](memory/w{w}-fact-{i}.md)");
            assert_eq!(memory.matches(&link).count(), 1, "{link} in:\n{memory}");
            assert!(
                read(ws, &format!("memory/w{w}-fact-{i}.md")).contains(&format!("body {w} {i}"))
            );
        }
    }
}

struct Server(Child, u16);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(ws: &Path, model: Option<&ScriptedServer>) -> Server {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let mut c = mnemo(ws, &[]);
    if let Some(m) = model {
        c.args(["--set", "provider.kind=openai"])
            .args(["--set", &format!("provider.base_url={}", m.openai_base())])
            .args(["--set", "provider.model=test-model"])
            .args(["--set", "provider.max_retries=0"]);
    }
    c.args(["serve", "--http", &addr]);
    Server(start_listening(c), port)
}

/// Two `mnemo serve` processes on one workspace take section and typed
/// writes from four clients while one of them consolidates a session over
/// and over with a model that answers with its own MEMORY.md only: every
/// acknowledged write is still there.
#[test]
fn two_servers_and_a_consolidation_lose_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let model = ScriptedServer::start_blocking();
    let round = std::sync::atomic::AtomicUsize::new(0);
    model.respond_with(move |_| {
        let n = round.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Reply::delay(
            Duration::from_millis(150),
            save(
                &format!("[2026-03-01 10:00] round {n}"),
                &format!("# Memory\n\n- consolidated fact {n}\n"),
            ),
        )
    });
    let a = serve(ws, Some(&model));
    let b = serve(ws, None);
    let ports = [a.1, b.1];
    let key = "cli:race";
    let consolidator = std::thread::spawn(move || {
        let path = format!("/v1/sessions/{key}/messages");
        for i in 0..6 {
            let messages = json!({"messages": [
                {"role": "user", "content": format!("question {i}")},
                {"role": "assistant", "content": format!("answer {i}")},
                {"role": "user", "content": format!("follow-up {i}")},
            ]});
            assert_eq!(post_json(ports[0], &path, None, &messages).0, 201);
            let (status, body) = post_json(
                ports[0],
                &format!("/v1/sessions/{key}/consolidate"),
                None,
                &json!({}),
            );
            assert_eq!(status, 200, "{body}");
        }
    });
    let writers: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                for i in 0..20 {
                    let port = ports[(t + i) % 2];
                    let body = if i % 2 == 0 {
                        json!({"mode": "memory_section", "heading": format!("S{t}-{i}"), "body": format!("- value {t}-{i}")})
                    } else {
                        json!({"mode": "typed", "name": format!("t{t} n{i}"), "description": "d", "type": "user", "body": format!("typed {t}-{i}")})
                    };
                    let (status, answer) = post_json(port, "/v1/memory/write", None, &body);
                    assert_eq!(status, 200, "{answer}");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    consolidator.join().unwrap();
    assert!(model.request_count() >= 6);
    let memory = read(ws, "MEMORY.md");
    for t in 0..4 {
        for i in 0..20 {
            if i % 2 == 0 {
                let section = format!("## S{t}-{i}\n\n- value {t}-{i}\n");
                assert!(memory.contains(&section), "{section} missing:\n{memory}");
            } else {
                let link = format!("- [t{t} n{i}](memory/t{t}-n{i}.md)");
                assert_eq!(memory.matches(&link).count(), 1, "{link} in:\n{memory}");
            }
        }
    }
    // A name already taken is refused over HTTP too; `replace` updates it.
    let again = json!({"mode": "typed", "name": "t0 n1", "description": "d", "type": "user", "body": "changed"});
    let (status, answer) = post_json(ports[1], "/v1/memory/write", None, &again);
    assert_eq!(status, 400, "{answer}");
    assert!(read(ws, "memory/t0-n1.md").contains("typed 0-1"));
    let mut replace = again;
    replace["replace"] = json!(true);
    let (status, answer) = post_json(ports[0], "/v1/memory/write", None, &replace);
    assert_eq!(
        (status, answer["action"].as_str()),
        (200, Some("replaced")),
        "{answer}"
    );
    assert!(read(ws, "memory/t0-n1.md").contains("changed"));
}

#[test]
fn typed_memory_names_are_never_shared_or_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    stdout_of_success(&add_memory(ws, "张三 phone", "138 0000 0000", &[]));
    stdout_of_success(&add_memory(ws, "李四 phone", "139 1111 1111", &[]));
    stdout_of_success(&add_memory(ws, "过敏", "对花生过敏", &[]));
    assert!(read(ws, "memory/张三-phone.md").contains("138 0000 0000"));
    assert!(read(ws, "memory/李四-phone.md").contains("139 1111 1111"));
    assert!(read(ws, "memory/过敏.md").contains("对花生过敏"));

    let o = add_memory(ws, "张三 phone", "000", &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("already exists") && err.contains("--replace"),
        "{err}"
    );
    assert!(read(ws, "memory/张三-phone.md").contains("138 0000 0000"));

    let out = stdout_of_success(&add_memory(
        ws,
        "张三 phone",
        "137 2222 2222",
        &["--replace"],
    ));
    assert!(out.contains("updated memory/张三-phone.md"), "{out}");
    assert!(read(ws, "memory/张三-phone.md").contains("137 2222 2222"));
    let memory = read(ws, "MEMORY.md");
    assert_eq!(
        memory.matches("(memory/张三-phone.md)").count(),
        1,
        "{memory}"
    );
    assert_eq!(
        memory.matches("(memory/李四-phone.md)").count(),
        1,
        "{memory}"
    );
}

#[test]
fn forget_removes_typed_memories_only() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let files = common::write_append_only_files(ws);
    for target in [
        "memory/HISTORY.md",
        "2026-11-28",
        "memory/2026-11-28.md",
        "memory/2026-11-28-tea.md",
    ] {
        let o = mnemo(ws, &["memory", "forget", target]).output().unwrap();
        assert!(!o.status.success(), "{target} was forgotten");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("typed memories only"), "{target}: {err}");
    }
    for kept in files {
        assert!(common::exists(ws, kept), "{kept} is gone");
    }
    stdout_of_success(&add_memory(ws, "Tea", "green", &[]));
    stdout_of_success(&mnemo(ws, &["memory", "forget", "Tea"]).output().unwrap());
    assert!(!common::exists(ws, "memory/tea.md"));
}

#[test]
fn memory_list_reports_broken_front_matter() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    stdout_of_success(&add_memory(ws, "Tea", "green", &[]));
    common::write(
        ws,
        "memory/bad.md",
        "---\nname: x\ndescription: y\ntype: wizard\n---\n\nbody\n",
    );
    let o = mnemo(ws, &["memory", "list"]).output().unwrap();
    let out = stdout_of_success(&o);
    assert!(out.contains("memory/tea.md"), "{out}");
    let bad = out
        .lines()
        .find(|l| l.contains("memory/bad.md"))
        .unwrap_or_default();
    assert!(bad.contains("[broken]") && bad.contains("line "), "{out}");
    let json = stdout_of_success(&mnemo(ws, &["memory", "list", "--json"]).output().unwrap());
    let entries: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let bad = entries
        .iter()
        .find(|e| e["path"] == "memory/bad.md")
        .unwrap();
    assert!(bad["error"].as_str().unwrap().contains("line "), "{bad}");
}

#[test]
fn an_outage_fails_the_command_and_keeps_the_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    for (role, text) in [("user", "hi"), ("assistant", "hello"), ("user", "bye")] {
        append(ws, "cli:direct", role, text);
    }
    let model = ScriptedServer::start_blocking();
    model.set_default(Reply::error(
        500,
        json!({"error": {"message": "upstream down"}}),
    ));
    let o = with_model(ws, &model, &["consolidate", "cli:direct"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(6),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the cursor stays at 0") && err.contains("failed run 1 of 3"),
        "{err}"
    );
    assert_eq!(model.request_count(), 1);
    assert_eq!(cursor(ws, "cli:direct"), 0);
    assert!(!common::exists(ws, "memory/HISTORY.md"));

    // A session that does not exist is not found, not "nothing to do".
    let o = with_model(ws, &model, &["consolidate", "cli:nope"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3));
}

/// The model's answer for the fault-injection runs: MEMORY.md as it was
/// shown, plus one line per `note-N` of the excerpt.
fn cooperative(req: &RecordedRequest) -> Reply {
    let user = req.body["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "user"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    let (memory, excerpt) = user
        .split_once("## Conversation excerpt")
        .unwrap_or((&user, ""));
    let memory = memory
        .trim_start_matches("## Current long-term memory (MEMORY.md)")
        .trim();
    let mut update = if memory == "(empty)" {
        String::new()
    } else {
        format!("{memory}\n")
    };
    let notes: Vec<&str> = excerpt
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|w| w.starts_with("note-"))
        .collect();
    for n in &notes {
        update.push_str(&format!("- remembered {n}\n"));
    }
    save(
        &format!("[2026-03-01 10:00] heard {}", notes.join(" ")),
        &update,
    )
}

/// The ranges named by the history's round markers, in order.
fn rounds(history: &str, key: &str) -> Vec<(u64, u64)> {
    let prefix = format!("[consolidated from {key} messages ");
    history
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix)?.strip_suffix(']'))
        .map(|r| {
            let (a, b) = r.split_once("..").unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect()
}

#[test]
fn a_crash_between_the_steps_of_a_consolidation_writes_nothing_twice() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let key = "cli:crash";
    let model = ScriptedServer::start_blocking();
    model.respond_with(cooperative);
    let mut n = 0;
    for point in ["consolidate.after_history", "consolidate.after_memory"] {
        for _ in 0..2 {
            append(ws, key, "user", &format!("note-{n}"));
            append(ws, key, "assistant", &format!("ok note-{}", n + 1));
            n += 2;
        }
        let before = cursor(ws, key);
        let o = with_model(ws, &model, &["consolidate", key])
            .env("MNEMO_FAILPOINTS", point)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{point}: the run was not stopped");
        assert_eq!(cursor(ws, key), before, "{point}");
        let asked = model.request_count();
        let out = stdout_of_success(
            &with_model(ws, &model, &["consolidate", key])
                .output()
                .unwrap(),
        );
        if point == "consolidate.after_history" {
            // The history entry is there: only the cursor moves.
            assert!(out.contains("the cursor moved now"), "{out}");
            assert_eq!(model.request_count(), asked, "the model was asked again");
        }
        assert!(cursor(ws, key) > before, "{point}: {out}");
    }
    let history = read(ws, "memory/HISTORY.md");
    let found = rounds(&history, key);
    // Every turn was answered, so each run takes all of it.
    assert_eq!(found, vec![(0, 4), (4, 8)], "{history}");
    let memory = read(ws, "MEMORY.md");
    for i in 0..8 {
        assert_eq!(
            memory.matches(&format!("- remembered note-{i}\n")).count(),
            1,
            "note-{i} in:\n{memory}"
        );
    }
    // The last consolidation can be undone from the command line.
    let out = stdout_of_success(&mnemo(ws, &["memory", "undo"]).output().unwrap());
    assert!(
        out.contains(&format!("undid the consolidation of {key} messages 4..8")),
        "{out}"
    );
    let memory = read(ws, "MEMORY.md");
    assert!(
        memory.contains("- remembered note-3\n") && !memory.contains("note-4"),
        "{memory}"
    );
}

/// Consolidation, typed-memory writes, daily-log appends and the index,
/// killed at random moments or stopped at their crash points, over a
/// bounded number of runs: every acknowledged write is there once, every
/// consolidated message went into the history exactly once, and the index
/// still answers.
#[test]
fn random_kills_lose_and_repeat_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let key = "cli:fault";
    let model = ScriptedServer::start_blocking();
    model.respond_with(cooperative);
    let mut rng = XorShift::new(15);
    let mut acked_memories = Vec::new();
    let mut all_memories = Vec::new();
    let mut acked_daily = Vec::new();
    let mut all_daily = Vec::new();
    let runs = 24;
    for run in 0..runs {
        append(ws, key, "user", &format!("note-{}", 2 * run));
        append(ws, key, "assistant", &format!("ok note-{}", 2 * run + 1));
        let name = format!("fault {run}");
        let daily = format!("daily fact {run}");
        all_memories.push(name.clone());
        all_daily.push(daily.clone());
        let mut jobs: Vec<(&str, Command, Option<&[u8]>)> = vec![
            (
                "consolidate",
                with_model(ws, &model, &["consolidate", key]),
                None,
            ),
            (
                "memory",
                add_command(ws, &name, &[]),
                Some(&b"a memory that must not be lost"[..]),
            ),
            ("daily", mnemo(ws, &["log", &daily]), None),
            ("index", mnemo(ws, &["index"]), None),
        ];
        let mut children: Vec<(&str, Child, Option<u64>)> = Vec::new();
        for (what, cmd, stdin) in jobs.iter_mut() {
            // A quarter of the runs stop at a crash point, a third are
            // killed at a random moment.
            if rng.below(4) == 0 {
                let point = match *what {
                    "consolidate" => {
                        rng.pick(&["consolidate.after_memory", "consolidate.after_history"])
                    }
                    _ => "memory.typed_file_written",
                };
                cmd.env("MNEMO_FAILPOINTS", point);
            }
            let kill_after = (rng.below(3) == 0).then(|| rng.below(400) as u64);
            cmd.stdin(if stdin.is_some() {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            })
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
            let mut child = cmd.spawn().unwrap();
            if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
                use std::io::Write;
                let _ = pipe.write_all(input);
            }
            children.push((what, child, kill_after));
        }
        let started = std::time::Instant::now();
        for (what, mut child, kill_after) in children {
            if let Some(ms) = kill_after {
                let at = Duration::from_millis(ms);
                if let Some(left) = at.checked_sub(started.elapsed()) {
                    std::thread::sleep(left);
                }
                let _ = child.kill();
            }
            let ok = child.wait().unwrap().success();
            match (what, ok) {
                ("memory", true) => acked_memories.push(name.clone()),
                ("daily", true) => acked_daily.push(daily.clone()),
                _ => {}
            }
        }
    }
    // Finish what the kills left: consolidation resumes, the index rebuilds.
    for _ in 0..2 {
        stdout_of_success(
            &with_model(ws, &model, &["consolidate", key])
                .output()
                .unwrap(),
        );
    }
    stdout_of_success(&mnemo(ws, &["index"]).output().unwrap());

    let memory = read(ws, "MEMORY.md");
    for name in &all_memories {
        let slug = name.replace(' ', "-");
        let count = memory.matches(&format!("](memory/{slug}.md)")).count();
        if acked_memories.contains(name) {
            assert_eq!(count, 1, "{name} was acknowledged:\n{memory}");
            assert!(read(ws, &format!("memory/{slug}.md")).contains("must not be lost"));
        } else {
            assert!(count <= 1, "{name}:\n{memory}");
        }
    }
    let mut daily_text = String::new();
    for rel in common::list(ws, "memory") {
        let name = rel.strip_prefix("memory/").unwrap();
        if name.len() == 13 && name.ends_with(".md") && name.starts_with("20") {
            daily_text.push_str(&read(ws, &rel));
        }
    }
    for fact in &all_daily {
        let count = daily_text.matches(&format!("] {fact}\n")).count();
        let want = if acked_daily.contains(fact) {
            1..=1
        } else {
            0..=1
        };
        assert!(want.contains(&count), "{fact}: {count} in\n{daily_text}");
    }
    // Every consolidated message went into the history exactly once, and
    // its note into MEMORY.md exactly once.
    let history = read(ws, "memory/HISTORY.md");
    let found = rounds(&history, key);
    let mut next = 0;
    for (a, b) in &found {
        assert_eq!(*a, next, "rounds overlap or leave a gap: {found:?}");
        next = *b;
    }
    let cursor = cursor(ws, key);
    assert_eq!(next, cursor, "{found:?}");
    assert_eq!(
        cursor,
        2 * runs as u64,
        "every answered turn was consolidated"
    );
    let mut heard: HashMap<String, usize> = HashMap::new();
    for line in history.lines().filter(|l| l.contains("] heard ")) {
        for note in line.split_whitespace().filter(|w| w.starts_with("note-")) {
            *heard.entry(note.to_string()).or_default() += 1;
        }
    }
    for i in 0..cursor {
        let note = format!("note-{i}");
        assert_eq!(
            heard.get(&note),
            Some(&1),
            "{note} in the history:\n{history}"
        );
        assert_eq!(
            memory.matches(&format!("- remembered {note}\n")).count(),
            1,
            "{note} in MEMORY.md:\n{memory}"
        );
    }
    let hits = stdout_of_success(
        &mnemo(ws, &["search", "must not be lost", "--json"])
            .output()
            .unwrap(),
    );
    if !acked_memories.is_empty() {
        assert!(hits.contains("memory/fault-"), "{hits}");
    }
}

#[test]
fn a_dream_killed_after_its_history_leaves_the_facts_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let before = "# Facts\n\n- Likes tea. (f1; since 2026-02-01)\n- likes tea (f2; since 2026-02-03)\n- Works at Acme. (f3)\n";
    common::write(ws, "memory/facts.md", before);
    let o = mnemo(ws, &["dream"])
        .env("MNEMO_FAILPOINTS", "dream.after_history")
        .output()
        .unwrap();
    assert!(!o.status.success(), "the dream was not stopped");
    assert_eq!(
        read(ws, "memory/facts.md"),
        before,
        "a killed dream leaves the file as it was"
    );
    let out = stdout_of_success(&mnemo(ws, &["dream", "--json"]).output().unwrap());
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["changed"], true, "{out}");
    assert_eq!(v["merged"], serde_json::json!([["f2", "f1"]]), "{out}");
    let after = read(ws, "memory/facts.md");
    assert!(
        after.contains("- ~~likes tea~~ (f2;") && after.contains("superseded by f1"),
        "{after}"
    );
    let out = stdout_of_success(
        &mnemo(ws, &["memory", "history", "f2", "--json"])
            .output()
            .unwrap(),
    );
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["fact"]["current"], false, "{out}");
    assert_eq!(v["changes"][0]["op"], "merge", "{out}");
    assert_eq!(v["changes"][0]["by"], "dream", "{out}");
    let text = stdout_of_success(&mnemo(ws, &["memory", "history", "f2"]).output().unwrap());
    assert!(
        text.contains("no longer true") && text.contains("merge"),
        "{text}"
    );
    // Undo gives back the file; the killed dream never landed, so there is
    // nothing more it could undo, and it says why.
    stdout_of_success(&mnemo(ws, &["dream", "--undo"]).output().unwrap());
    assert_eq!(read(ws, "memory/facts.md"), before);
    let o = mnemo(ws, &["dream", "--undo"]).output().unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no dream to undo"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Forgetting a fact removes its line.
    stdout_of_success(&mnemo(ws, &["memory", "forget", "f3"]).output().unwrap());
    assert!(!read(ws, "memory/facts.md").contains("Acme"));
    let o = mnemo(ws, &["memory", "history", "nothing-here"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "not found");
}

#[test]
fn a_dream_killed_between_its_two_files_loses_no_memory_md_line() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let md = "# Memory\n\n- Prefers tabs.\n- Has two kids.\n- Likes tea.\n- Runs on Sundays.\n- Deploys on Fridays.\n";
    common::write(ws, "MEMORY.md", md);
    let dream = |fail: Option<&str>| {
        let mut c = mnemo(
            ws,
            &["--set", "engine.memory_max_lines=5", "dream", "--json"],
        );
        if let Some(f) = fail {
            c.env("MNEMO_FAILPOINTS", f);
        }
        c.output().unwrap()
    };
    // Killed after the facts file, before MEMORY.md: the moved lines are in
    // both, none in neither.
    assert!(!dream(Some("dream.after_facts")).status.success());
    assert_eq!(read(ws, "MEMORY.md"), md);
    let facts = read(ws, "memory/facts.md");
    assert!(
        facts.contains("- Prefers tabs. (f1") && facts.contains("- Has two kids. (f2"),
        "{facts}"
    );
    // The next dream finishes the move without adding them again.
    let out = stdout_of_success(&dream(None));
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        v["moved"],
        serde_json::json!([["- Prefers tabs.", "f1"], ["- Has two kids.", "f2"]]),
        "{out}"
    );
    assert_eq!(
        read(ws, "MEMORY.md"),
        "# Memory\n\n- Likes tea.\n- Runs on Sundays.\n- Deploys on Fridays.\n"
    );
    let facts = read(ws, "memory/facts.md");
    assert_eq!(facts.matches("Prefers tabs.").count(), 1, "{facts}");
}

const TEA: &str =
    "---\nname: Tea\ndescription: how the user takes tea\ntype: user\n---\n\nGreen, no sugar.\n";

/// A facts file, a MEMORY.md over a 20-line cap, a typed memory and an
/// old daily log that give every pass of a dream work: duplicates,
/// contradictions, a log to fold (with a retraction and items for the
/// typed memory), lines to move.
fn dream_workspace(ws: &Path) -> (String, String) {
    let mut facts = String::from("# Facts\n\n");
    for i in 0..150 {
        facts.push_str(&format!(
            "- Storage box {i} label is L{i}. (f{}; since 2026-01-01)\n",
            i + 1
        ));
    }
    for i in 0..50 {
        facts.push_str(&format!(
            "- storage box {i} label is L{i} (f{}; since 2026-01-02)\n",
            151 + i
        ));
    }
    for i in 50..100 {
        facts.push_str(&format!(
            "- Storage box {i} label is M{i}. (f{}; since 2026-02-01)\n",
            151 + i
        ));
    }
    let mut md = String::from("# Memory\n\n");
    for i in 0..60 {
        md.push_str(&format!("- Note {i}: something durable about topic {i}.\n"));
    }
    let mut log: String = (0..30)
        .map(|i| format!("- [10:00] Old log item number {i}.\n"))
        .collect();
    // A retraction (it ends two facts), items whose home is a typed memory
    // and a retraction that ends one of them there.
    log.push_str("- [10:01] The user asked to forget their storage box 3 label.\n");
    log.push_str("- [10:02] Tea: oolong on Sundays.\n- [10:03] Tea: sencha at work.\n");
    log.push_str("- [10:04] Please forget that my tea is sencha at work.\n");
    common::write(ws, "memory/tea.md", TEA);
    common::write(ws, "memory/facts.md", &facts);
    common::write(ws, "MEMORY.md", &md);
    common::write(ws, "memory/2026-01-05.md", log);
    for f in ["memory/HISTORY.md", "memory/audit.jsonl"] {
        common::remove(ws, f);
    }
    (facts, md)
}

/// The facts file without the minute each new fact was recorded (the
/// only part of a dream's result that depends on when it ran).
fn without_recorded(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("recorded ") {
            Some(i) => format!("{}{}", &l[..i], l.get(i + 25..).unwrap_or("")),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `mnemo dream` killed with SIGKILL at random moments (not at a chosen
/// crash point): each memory file is as it was before or as a whole dream
/// leaves it, never half-written; MEMORY.md is never past the facts file
/// (a moved line is at worst in both); and the loss guard's accounting
/// holds for whatever a kill left.
#[test]
fn a_dream_killed_at_random_moments_leaves_each_file_before_or_after() {
    use mnemo::engine::dream::{unaccounted, unaccounted_memory_md, unaccounted_typed};
    use mnemo::store::memory::facts::FactsFile;
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let dream = || mnemo(ws, &["--set", "engine.memory_max_lines=20", "dream"]);
    // The whole dream, once, as the reference.
    let (facts_before, md_before) = dream_workspace(ws);
    let started = std::time::Instant::now();
    stdout_of_success(&dream().output().unwrap());
    let took = started.elapsed();
    let (facts_after, md_after) = (read(ws, "memory/facts.md"), read(ws, "MEMORY.md"));
    let tea_after = read(ws, "memory/tea.md");
    assert_ne!(facts_after, facts_before);
    assert_ne!(md_after, md_before);
    assert!(facts_after.contains("retracted by memory/2026-01-05.md"));
    assert_eq!(
        tea_after.matches("(since 2026-01-05;").count(),
        2,
        "{tea_after}"
    );
    assert!(
        tea_after.contains("## No longer true\n\n- ~~Tea: sencha at work.~~ (since 2026-01-05; until 2026-01-05; retracted by memory/2026-01-05.md;"),
        "{tea_after}"
    );
    let mut rng = XorShift::new(20);
    let (mut killed, mut states) = (0, HashMap::new());
    for _ in 0..24 {
        dream_workspace(ws);
        let mut child = dream()
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Most of a run is the process starting: the kills fall in the
        // later part of it, where the dream reads and writes.
        let at = took.as_micros() as u64 * (50 + rng.below(60)) as u64 / 100;
        std::thread::sleep(Duration::from_micros(at));
        unsafe {
            libc::kill(child.id() as i32, libc::SIGKILL);
        }
        if !child.wait().unwrap().success() {
            killed += 1;
        }
        let (facts, md) = (read(ws, "memory/facts.md"), read(ws, "MEMORY.md"));
        let facts_state = if facts == facts_before {
            "before"
        } else if without_recorded(&facts) == without_recorded(&facts_after) {
            "after"
        } else {
            panic!("the facts file is neither before nor after the dream:\n{facts}")
        };
        let md_state = if md == md_before {
            "before"
        } else if md == md_after {
            "after"
        } else {
            panic!("MEMORY.md is neither before nor after the dream:\n{md}")
        };
        let tea = read(ws, "memory/tea.md");
        let tea_state = if tea == TEA {
            "before"
        } else if tea == tea_after {
            "after"
        } else {
            panic!("memory/tea.md is neither before nor after the dream:\n{tea}")
        };
        assert!(
            !(facts_state == "before" && md_state == "after"),
            "MEMORY.md lost lines the facts file does not hold yet"
        );
        assert!(
            !(tea_state == "before" && facts_state == "after"),
            "the facts file was written before the typed memory"
        );
        let (before, now) = (FactsFile::parse(&facts_before), FactsFile::parse(&facts));
        let mut lost = unaccounted(&before, &now, &facts_before, &facts);
        lost.extend(unaccounted_memory_md(&md_before, &md, &now));
        lost.extend(unaccounted_typed("memory/tea.md", TEA, &tea, &[], &now));
        assert!(lost.is_empty(), "{lost:?}");
        *states
            .entry(format!("{tea_state}/{facts_state}/{md_state}"))
            .or_insert(0) += 1;
    }
    assert!(killed > 0, "no dream was killed: {states:?}");
    eprintln!("{killed} of 24 dreams killed; states {states:?}");
}

/// A dream killed between its files (after the typed memory, after the
/// facts file) has not written its `applied` line: the next dream folds
/// the same log again and finishes the work, writing nothing twice, and
/// leaves every file as one whole dream does.
#[test]
fn a_dream_killed_between_its_files_is_finished_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    init(ws);
    let dream = || mnemo(ws, &["--set", "engine.memory_max_lines=20", "dream"]);
    dream_workspace(ws);
    stdout_of_success(&dream().output().unwrap());
    let reference = (
        without_recorded(&read(ws, "memory/facts.md")),
        read(ws, "MEMORY.md"),
        read(ws, "memory/tea.md"),
    );
    for point in [
        "dream.after_history",
        "dream.after_typed",
        "dream.after_facts",
    ] {
        let (facts_before, _) = dream_workspace(ws);
        let o = dream().env("MNEMO_FAILPOINTS", point).output().unwrap();
        assert!(!o.status.success(), "{point}: the dream was not stopped");
        if point == "dream.after_typed" {
            assert_eq!(read(ws, "memory/facts.md"), facts_before, "{point}");
            assert_eq!(read(ws, "memory/tea.md"), reference.2, "{point}");
        }
        stdout_of_success(&dream().output().unwrap());
        let now = (
            without_recorded(&read(ws, "memory/facts.md")),
            read(ws, "MEMORY.md"),
            read(ws, "memory/tea.md"),
        );
        assert_eq!(
            now, reference,
            "{point}: the next dream did not finish the work"
        );
        let history = read(ws, "memory/HISTORY.md");
        assert_eq!(
            history.matches("dream applied: ").count(),
            1,
            "{point}: {history}"
        );
        // The finished dream is the one to undo, and it gives back what the
        // killed one had not written.
        stdout_of_success(&mnemo(ws, &["dream", "--undo"]).output().unwrap());
        if point == "dream.after_history" {
            assert_eq!(read(ws, "memory/facts.md"), facts_before, "{point}");
            assert_eq!(read(ws, "memory/tea.md"), TEA, "{point}");
        }
    }
}
