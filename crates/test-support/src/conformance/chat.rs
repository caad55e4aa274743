//! The `ChatModel` conformance suite: how every chat client over HTTP
//! retries, gives up and reports, against the [`ScriptedServer`] on
//! loopback: 429 with `Retry-After`, 5xx, timeouts, 400, 401, a refused
//! connection, a malformed answer and the usage it reports.
//!
//! No scenario measures time: a timeout is a small client timeout against
//! a server that delays, and the assertions are on the error's kind and
//! the requests the server saw.
//!
//! Only scenario functions are `pub fn` at the top of this file: the
//! completeness test of test-support reads them from the source.

use std::time::Duration;

use mnemo_core::{Coded, Message};
use mnemo_llm::{ChatModel, ChatRequest, ErrorKind, LlmError};
use serde_json::json;

use crate::{Reply, ScriptedServer};

/// Every scenario of the suite, in the order of this file.
pub const SCENARIOS: &[&str] = &[
    "retries_429_honouring_retry_after",
    "retries_5xx",
    "times_out",
    "no_retry_on_400",
    "auth_error",
    "connection_refused",
    "malformed_answer",
    "usage_reported",
    "option_logprobs_are_log_probabilities_or_none",
];

/// The environment variable name the suite gives clients for their key
/// (never read: the key is passed as [`ChatTarget::api_key`]).
pub const KEY_ENV: &str = "MNEMO_CONFORMANCE_KEY";

/// Where and how a client under test talks: what a constructor turns into
/// its own provider configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatTarget {
    /// `http://127.0.0.1:PORT`, without `/v1` (an OpenAI-compatible client
    /// adds it).
    pub base_url: String,
    /// Per-request timeout in seconds.
    pub timeout_secs: f64,
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Wait before the first retry in milliseconds.
    pub retry_backoff_ms: u64,
    /// The key to send.
    pub api_key: Option<String>,
    /// The variable the key would come from, for error messages.
    pub api_key_env: String,
}

/// What a suite instance supplies: a client for a target.
pub type MakeChat = fn(&ChatTarget) -> Result<Box<dyn ChatModel>, LlmError>;

/// Generates one `#[test]` per scenario of the `ChatModel` suite, in a
/// module named `$name`, for the constructor `$make` (a [`MakeChat`]: a
/// function or a closure without captures). `suite_is_complete` fails when
/// the macro misses a scenario.
///
/// ```text
/// mnemo_test_support::chat_model_suite!(openai, |t| Ok(Box::new(OpenAiChat::new(&config(t))?)));
/// ```
#[macro_export]
macro_rules! chat_model_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::conformance::chat as suite;

            const MAKE: suite::MakeChat = $make;

            #[test]
            fn retries_429_honouring_retry_after() {
                suite::retries_429_honouring_retry_after(MAKE);
            }
            #[test]
            fn retries_5xx() {
                suite::retries_5xx(MAKE);
            }
            #[test]
            fn times_out() {
                suite::times_out(MAKE);
            }
            #[test]
            fn no_retry_on_400() {
                suite::no_retry_on_400(MAKE);
            }
            #[test]
            fn auth_error() {
                suite::auth_error(MAKE);
            }
            #[test]
            fn connection_refused() {
                suite::connection_refused(MAKE);
            }
            #[test]
            fn malformed_answer() {
                suite::malformed_answer(MAKE);
            }
            #[test]
            fn usage_reported() {
                suite::usage_reported(MAKE);
            }
            #[test]
            fn option_logprobs_are_log_probabilities_or_none() {
                suite::option_logprobs_are_log_probabilities_or_none(MAKE);
            }
            #[test]
            fn suite_is_complete() {
                $crate::conformance::assert_covers(
                    "chat model",
                    suite::SCENARIOS,
                    &[
                        "retries_429_honouring_retry_after",
                        "retries_5xx",
                        "times_out",
                        "no_retry_on_400",
                        "auth_error",
                        "connection_refused",
                        "malformed_answer",
                        "usage_reported",
                        "option_logprobs_are_log_probabilities_or_none",
                    ],
                );
            }
        }
    };
}

/// A target on `base_url` with fast retries.
fn target(base_url: String) -> ChatTarget {
    ChatTarget {
        base_url,
        timeout_secs: 30.0,
        max_retries: 3,
        retry_backoff_ms: 1,
        api_key: None,
        api_key_env: KEY_ENV.into(),
    }
}

fn client(make: MakeChat, t: &ChatTarget) -> Box<dyn ChatModel> {
    match make(t) {
        Ok(c) => c,
        Err(e) => panic!("the client cannot be built for {t:?}: {e}"),
    }
}

fn hello() -> ChatRequest {
    ChatRequest::new(vec![Message::user("hello")])
}

/// Runs `fut` to its end on a runtime of its own (the server has its own
/// thread), so the scenarios are plain `#[test]` functions.
fn block_on<F: std::future::Future>(fut: F) -> F::Output {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(fut),
        Err(e) => panic!("cannot start a tokio runtime: {e}"),
    }
}

fn complete(model: &dyn ChatModel) -> Result<String, LlmError> {
    block_on(model.complete(hello())).map(|r| r.text())
}

fn expect_err(model: &dyn ChatModel, what: &str) -> LlmError {
    match complete(model) {
        Ok(text) => panic!("{what}: expected an error, the client answered {text:?}"),
        Err(e) => e,
    }
}

fn error_body(message: &str, kind: &str) -> serde_json::Value {
    // `error.message` is where both protocols put the text.
    json!({"type": "error", "error": {"message": message, "type": kind}})
}

/// 429 answers are retried, waiting what `Retry-After` asks (here 0 s,
/// while the client's own backoff is seconds), and when every attempt is
/// limited the error is a rate limit that carries the server's wait.
pub fn retries_429_honouring_retry_after(make: MakeChat) {
    let server = ScriptedServer::start_blocking();
    let limited = error_body("Rate limit reached", "rate_limit_error");
    server.push(Reply::error(429, limited.clone()).with_header("retry-after", "0"));
    server.push(Reply::error(429, limited.clone()).with_header("retry-after", "0"));
    server.push(Reply::text("finally"));
    let mut t = target(server.url());
    t.retry_backoff_ms = 5_000;
    let model = client(make, &t);
    assert_eq!(complete(model.as_ref()).ok().as_deref(), Some("finally"));
    assert_eq!(server.request_count(), 3);

    server.clear_requests();
    server.set_default(Reply::error(429, limited).with_header("retry-after", "0"));
    t.max_retries = 2;
    let err = expect_err(client(make, &t).as_ref(), "429 on every attempt");
    assert_eq!(err.kind(), ErrorKind::RateLimit, "{err}");
    assert!(
        matches!(
            err,
            LlmError::RateLimit {
                attempts: 3,
                retry_after: Some(d),
                ..
            } if d == Duration::ZERO
        ),
        "{err:?}"
    );
    assert_eq!(server.request_count(), 3);
}

/// 500 and 503 answers are retried; when they go on past the retries the
/// error is transient and carries the last status.
pub fn retries_5xx(make: MakeChat) {
    let server = ScriptedServer::start_blocking();
    server.push(Reply::error(
        503,
        error_body("overloaded", "overloaded_error"),
    ));
    server.push(Reply::error(500, error_body("internal", "api_error")));
    server.push(Reply::text("up again"));
    let mut t = target(server.url());
    assert_eq!(
        complete(client(make, &t).as_ref()).ok().as_deref(),
        Some("up again")
    );
    assert_eq!(server.request_count(), 3);

    server.clear_requests();
    server.set_default(Reply::error(
        503,
        error_body("overloaded", "overloaded_error"),
    ));
    t.max_retries = 1;
    let err = expect_err(client(make, &t).as_ref(), "503 on every attempt");
    assert_eq!(err.kind(), ErrorKind::Transient, "{err}");
    assert!(
        matches!(
            err,
            LlmError::Transient {
                status: Some(503),
                attempts: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(server.request_count(), 2);
}

/// A server slower than the client's timeout: every attempt times out,
/// each is retried, and the error is a timeout that names the setting.
pub fn times_out(make: MakeChat) {
    let server = ScriptedServer::start_blocking();
    server.set_default(Reply::delay(Duration::from_secs(60), Reply::text("late")));
    let mut t = target(server.url());
    t.timeout_secs = 0.2;
    t.max_retries = 1;
    let err = expect_err(
        client(make, &t).as_ref(),
        "a server slower than the timeout",
    );
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        matches!(err, LlmError::Timeout { attempts: 2, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("timeout_secs"), "{err}");
    assert_eq!(server.request_count(), 2);
}

/// A 400 is the request's fault: not retried, reported with the server's
/// words.
pub fn no_retry_on_400(make: MakeChat) {
    let server = ScriptedServer::start_blocking();
    server.push(Reply::error(
        400,
        error_body("Invalid 'messages[0].role'", "invalid_request_error"),
    ));
    server.push(Reply::text("never sent"));
    let err = expect_err(client(make, &target(server.url())).as_ref(), "a 400");
    assert_eq!(err.kind(), ErrorKind::BadRequest, "{err}");
    assert!(
        err.to_string().contains("Invalid 'messages[0].role'"),
        "{err}"
    );
    assert_eq!(server.request_count(), 1);
    assert_eq!(server.remaining(), 1);
}

/// A 401 is an authentication error: not retried, a configuration error
/// to the caller, naming the variable the key comes from; the key was
/// sent.
pub fn auth_error(make: MakeChat) {
    let server = ScriptedServer::start_blocking();
    server.push(Reply::error(
        401,
        error_body("invalid x-api-key", "authentication_error"),
    ));
    let mut t = target(server.url());
    t.api_key = Some("conformance-wrong-key".into());
    let err = expect_err(client(make, &t).as_ref(), "a 401");
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
    assert_eq!(err.code(), mnemo_core::ErrorCode::Config);
    assert!(err.to_string().contains(&format!("${KEY_ENV}")), "{err}");
    assert_eq!(server.request_count(), 1);
    let sent = server.requests();
    assert!(
        sent[0]
            .headers
            .values()
            .any(|v| v.contains("conformance-wrong-key")),
        "the key is in no header: {:?}",
        sent[0].headers
    );
}

/// Nobody listens on the port: the connection failure is retried, then
/// reported as transient without a status.
pub fn connection_refused(make: MakeChat) {
    // Bind and drop a listener to get a port nobody listens on.
    let port = match std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()) {
        Ok(a) => a.port(),
        Err(e) => panic!("cannot bind a loopback port: {e}"),
    };
    let mut t = target(format!("http://127.0.0.1:{port}"));
    t.max_retries = 1;
    let err = expect_err(client(make, &t).as_ref(), "a refused connection");
    assert_eq!(err.kind(), ErrorKind::Transient, "{err}");
    assert!(
        matches!(
            err,
            LlmError::Transient {
                status: None,
                attempts: 2,
                ..
            }
        ),
        "{err:?}"
    );
}

/// A 200 whose body is JSON but no answer of the protocol is a decode
/// error, not retried (the same request would get the same answer).
pub fn malformed_answer(make: MakeChat) {
    let server = ScriptedServer::start_blocking();
    server.push(Reply::raw(200, json!({"unexpected": true, "choices": []})));
    server.push(Reply::text("never sent"));
    let err = expect_err(
        client(make, &target(server.url())).as_ref(),
        "a malformed answer",
    );
    assert_eq!(err.kind(), ErrorKind::Decode, "{err}");
    assert_eq!(server.request_count(), 1);
}

/// The usage the server reports reaches the response (the scripted server
/// reports chars/4: "hello" in, "abcdefgh" out).
pub fn usage_reported(make: MakeChat) {
    let server = ScriptedServer::start_blocking();
    server.push(Reply::text("abcdefgh"));
    let model = client(make, &target(server.url()));
    let resp = match block_on(model.complete(hello())) {
        Ok(r) => r,
        Err(e) => panic!("a plain answer failed: {e}"),
    };
    assert_eq!(resp.text(), "abcdefgh");
    assert_eq!(
        (resp.usage.input_tokens, resp.usage.output_tokens),
        (2, 2),
        "{:?}",
        resp.usage
    );
}

/// A judgement by probabilities (what the search re-rank asks for): either
/// `None` (the model cannot tell; the caller asks for a written answer) or
/// one log-probability per option, none above 0 and together at most 1,
/// the same twice in a row.
pub fn option_logprobs_are_log_probabilities_or_none(make: MakeChat) {
    let server = ScriptedServer::start_blocking();
    server.set_default(Reply::text("Yes"));
    let model = client(make, &target(server.url()));
    let options = vec!["yes".to_string(), "no".to_string()];
    let first = block_on(model.option_logprobs(hello(), options.clone()));
    let second = block_on(model.option_logprobs(hello(), options));
    for got in [first, second] {
        match got {
            Ok(None) => {}
            Ok(Some(lp)) => {
                assert_eq!(lp.len(), 2, "one value per option: {lp:?}");
                assert!(lp.iter().all(|l| *l <= 1e-6), "log-probabilities: {lp:?}");
                let mass: f32 = lp.iter().map(|l| l.exp()).sum();
                assert!(mass <= 1.0 + 1e-4, "the options' mass exceeds 1: {lp:?}");
            }
            Err(e) => panic!("a model that cannot judge answers None, not an error: {e}"),
        }
    }
}
