//! Serves the rule-based model of `mnemo eval write-path`
//! ([`mnemo_eval::rule_model`]) over the real OpenAI wire protocol on
//! `127.0.0.1`, until interrupted, for a reproducible baseline:
//!
//! ```sh
//! cargo run -p mnemo-eval --example rule_model_server
//! # prints: http://127.0.0.1:PORT/v1
//! mnemo eval write-path DATA.json --provider openai --base-url http://127.0.0.1:PORT/v1 --model rule-based
//! ```
//!
//! Its numbers measure mnemo's bookkeeping, not a model's quality.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mnemo_eval::rule_model::{answer, RuleAnswer};
use mnemo_test_support::{Reply, ScriptedServer};

fn main() {
    let server = ScriptedServer::start_blocking();
    server.respond_with(|req| match answer(&req.body) {
        RuleAnswer::Tool { name, arguments } => Reply::tool_call(name, arguments),
        RuleAnswer::Text(t) => Reply::text(t),
    });
    println!("{}", server.openai_base());
    loop {
        std::thread::park();
    }
}
