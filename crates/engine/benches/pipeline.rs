//! The compaction pipeline's own cost on a 10,000-message session, model
//! time excluded: the deterministic `TemplateCompactor` writes the summary
//! and the flush is off. Inputs are generated without randomness.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use mnemo_core::{Config, FunctionCall, Message, ToolCall, Workspace};
use mnemo_engine::history::{rebuild_entries, ResultBudget};
use mnemo_engine::pipeline::{self, MicrocompactRule};
use mnemo_engine::{Engine, EngineSettings, TemplateCompactor};
use mnemo_llm::{OpenAiChat, ProviderConfig};
use mnemo_store::{SessionOptions, SessionStore};
use serde_json::Map;

const KEY: &str = "bench:long";

fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-03-01T10:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

fn call(id: String, tool: &str, args: String, ts: &str) -> Message {
    let mut m = Message::assistant("");
    m.content = None;
    m.tool_calls = Some(vec![ToolCall {
        id,
        kind: "function".into(),
        function: FunctionCall {
            name: tool.into(),
            arguments: args.into(),
        },
        extra: Map::new(),
    }]);
    m.with_timestamp(ts)
}

/// 1,250 turns of 8 messages: a request, a read, a failing exec, an empty
/// grep and an answer, with text of realistic length.
fn session() -> Vec<Message> {
    let mut out = Vec::with_capacity(10_000);
    for i in 0..1_250 {
        let ts = (t0() + Duration::minutes(i as i64)).to_rfc3339();
        out.push(
            Message::user(format!(
                "task {i}: please look at src/module_{i}.rs and fix the failing test {}",
                "detail ".repeat(20)
            ))
            .with_timestamp(&ts),
        );
        out.push(call(
            format!("r{i}"),
            "read",
            format!(r#"{{"path":"src/module_{i}.rs"}}"#),
            &ts,
        ));
        out.push(
            Message::tool_result(
                format!("r{i}"),
                "read",
                format!("fn f{i}() {{ {} }}", "let x = 1; ".repeat(120)),
            )
            .with_timestamp(&ts),
        );
        out.push(call(
            format!("e{i}"),
            "exec",
            r#"{"cmd":"cargo test"}"#.into(),
            &ts,
        ));
        out.push(
            Message::tool_result(format!("e{i}"), "exec", "Error: test failed").with_timestamp(&ts),
        );
        out.push(call(format!("g{i}"), "grep", r#"{"q":"TODO"}"#.into(), &ts));
        out.push(Message::tool_result(format!("g{i}"), "grep", "").with_timestamp(&ts));
        out.push(
            Message::assistant(format!("Fixed module {i}: {}", "explanation ".repeat(30)))
                .with_timestamp(&ts),
        );
    }
    out
}

fn bench(c: &mut Criterion) {
    let msgs = session();
    assert_eq!(msgs.len(), 10_000);
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new(dir.path());
    let store = SessionStore::new(&ws, SessionOptions::default());
    store.open(KEY).unwrap().append(&msgs).unwrap();
    let loaded = store.load(KEY).unwrap();
    let log_path = store.path_for(KEY).unwrap();
    let pristine = std::fs::read(&log_path).unwrap();
    let counter = mnemo_tokens::EstimateCounter;
    let exact = mnemo_tokens::TiktokenCounter::for_model("gpt-4o");
    let settings = EngineSettings::default();
    let now = t0() + Duration::days(2);

    let mut g = c.benchmark_group("pipeline_10k");
    g.sample_size(10);
    g.bench_function("rebuild_history", |b| {
        b.iter(|| black_box(rebuild_entries(&loaded, ResultBudget::default()).len()))
    });
    let entries = rebuild_entries(&loaded, ResultBudget::default());
    g.bench_function("snip", |b| {
        b.iter(|| black_box(pipeline::snip(&entries, 4).len()))
    });
    let rule = MicrocompactRule {
        gap_minutes: 60,
        keep: 5,
        tools: &settings.microcompact_tools,
        protected: &settings.protected_tools,
    };
    g.bench_function("microcompact", |b| {
        b.iter(|| black_box(pipeline::microcompact(&entries, now, &rule, false).len()))
    });
    g.bench_function("collapse", |b| {
        b.iter(|| black_box(pipeline::collapse(&entries, 4).len()))
    });
    g.bench_function("split_tail_estimate", |b| {
        b.iter(|| black_box(pipeline::split_tail(&entries, &counter, 20_000)))
    });
    g.bench_function("count_tokens_tiktoken", |b| {
        b.iter(|| black_box(pipeline::entries_tokens(&entries, &exact)))
    });
    let head = pipeline::messages_of(&entries[..9_900]);
    g.bench_function("template_summary", |b| {
        b.iter(|| black_box(TemplateCompactor::summary(&head, None).len()))
    });

    // The whole pipeline through the engine: load, each level, records
    // appended, tokens measured with tiktoken; the log is restored before
    // each run.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut cfg = ProviderConfig::openai("http://127.0.0.1:9/v1", "gpt-4o");
    cfg.max_retries = 0;
    let model = Arc::new(OpenAiChat::new(&cfg).unwrap());
    let config = Config::parse("[engine]\nflush_enabled = false\n").unwrap();
    let engine = Engine::new(&ws, &config, model)
        .unwrap()
        .with_compactor(Arc::new(TemplateCompactor))
        .with_clock(Arc::new(move || now));
    g.bench_function("engine_compact_all_levels", |b| {
        b.iter_batched(
            || std::fs::write(&log_path, &pristine).unwrap(),
            |()| {
                let events = rt.block_on(engine.compact(KEY, None)).unwrap();
                assert_eq!(events.len(), 4);
                black_box(events)
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
