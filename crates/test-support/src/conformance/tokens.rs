//! The [`TokenCounter`] conformance suite: what every counter must say
//! about empty and growing texts, messages and their overhead, tool calls,
//! lists of messages, changed content, and whether it is exact.
//!
//! Only scenario functions are `pub fn` at the top of this file: the
//! completeness test of test-support reads them from the source.

use mnemo_core::{FunctionCall, Message, Role, TokenCounter, ToolCall};
use serde_json::{Map, Value};

/// Every scenario of the suite, in the order of this file.
pub const SCENARIOS: &[&str] = &[
    "empty_text_is_zero",
    "text_counts_grow",
    "messages_carry_overhead",
    "tool_calls_are_counted",
    "message_lists_add_up",
    "counts_follow_content",
    "exactness_is_reported",
];

/// One counter under test, with what the suite needs to know about it.
pub struct TokenCase {
    /// The implementation.
    pub counter: Box<dyn TokenCounter>,
    /// Whether its counts are exact (a real tokenizer) or an estimate.
    pub exact: bool,
}

impl std::fmt::Debug for TokenCase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCase")
            .field("exact", &self.exact)
            .finish_non_exhaustive()
    }
}

impl TokenCase {
    /// A case for `counter`, exact or not.
    pub fn new(counter: impl TokenCounter + 'static, exact: bool) -> Self {
        TokenCase {
            counter: Box::new(counter),
            exact,
        }
    }
}

/// Generates one `#[test]` per scenario of the [`TokenCounter`] suite, in a
/// module named `$name`, for the case `$make` builds (a `fn() -> TokenCase`
/// or a closure without captures). Each test gets a fresh case, so a
/// memo starts empty. `suite_is_complete` fails when the macro misses a
/// scenario.
///
/// ```text
/// mnemo_test_support::token_counter_suite!(estimate, || TokenCase::new(EstimateCounter, false));
/// ```
#[macro_export]
macro_rules! token_counter_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            use $crate::conformance::tokens as suite;

            const MAKE: fn() -> suite::TokenCase = $make;

            #[test]
            fn empty_text_is_zero() {
                suite::empty_text_is_zero(&MAKE());
            }
            #[test]
            fn text_counts_grow() {
                suite::text_counts_grow(&MAKE());
            }
            #[test]
            fn messages_carry_overhead() {
                suite::messages_carry_overhead(&MAKE());
            }
            #[test]
            fn tool_calls_are_counted() {
                suite::tool_calls_are_counted(&MAKE());
            }
            #[test]
            fn message_lists_add_up() {
                suite::message_lists_add_up(&MAKE());
            }
            #[test]
            fn counts_follow_content() {
                suite::counts_follow_content(&MAKE());
            }
            #[test]
            fn exactness_is_reported() {
                suite::exactness_is_reported(&MAKE());
            }
            #[test]
            fn suite_is_complete() {
                $crate::conformance::assert_covers(
                    "token counter",
                    suite::SCENARIOS,
                    &[
                        "empty_text_is_zero",
                        "text_counts_grow",
                        "messages_carry_overhead",
                        "tool_calls_are_counted",
                        "message_lists_add_up",
                        "counts_follow_content",
                        "exactness_is_reported",
                    ],
                );
            }
        }
    };
}

const SENTENCE: &str = "The deploy key for staging is ERR-4711; rotate it every 30 days.";

fn assistant_calling(name: &str, arguments: &str) -> Message {
    Message {
        role: Role::Assistant,
        content: None,
        tool_calls: Some(vec![ToolCall {
            id: "call_1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: name.into(),
                arguments: Value::String(arguments.into()),
            },
            extra: Map::new(),
        }]),
        tool_call_id: None,
        name: None,
        timestamp: None,
        extra: Map::new(),
    }
}

/// An empty text has no tokens.
pub fn empty_text_is_zero(case: &TokenCase) {
    assert_eq!(case.counter.count_text(""), 0);
}

/// A text has tokens (in any script), and a longer text has at least as
/// many as its beginning.
pub fn text_counts_grow(case: &TokenCase) {
    let c = &case.counter;
    for t in ["hello", "?", "我每周二上钢琴课。", "Größe", SENTENCE] {
        assert!(c.count_text(t) > 0, "{t:?} counted as no tokens");
    }
    let mut text = String::new();
    let mut last = 0;
    for _ in 0..20 {
        text.push_str(SENTENCE);
        text.push(' ');
        let n = c.count_text(&text);
        assert!(n >= last, "{n} tokens after {last} for a longer text");
        last = n;
    }
    assert!(
        last >= 10 * c.count_text(SENTENCE),
        "20 sentences counted as {last}"
    );
}

/// A message costs more than its text (role and framing), and an empty
/// message still costs something.
pub fn messages_carry_overhead(case: &TokenCase) {
    let c = &case.counter;
    assert!(c.count_message(&Message::user("")) > 0);
    for m in [
        Message::user(SENTENCE),
        Message::assistant(SENTENCE),
        Message::system(SENTENCE),
    ] {
        assert!(
            c.count_message(&m) > c.count_text(SENTENCE),
            "{:?} message not above its text",
            m.role
        );
    }
}

/// Tool calls (name and arguments) and tool results (id and name) are
/// charged, and longer arguments cost more.
pub fn tool_calls_are_counted(case: &TokenCase) {
    let c = &case.counter;
    let bare = c.count_message(&Message::assistant(""));
    let short = c.count_message(&assistant_calling("memory_search", r#"{"query":"tea"}"#));
    let long_args = format!(r#"{{"query":"{}"}}"#, SENTENCE.repeat(5));
    let long = c.count_message(&assistant_calling("memory_search", &long_args));
    assert!(
        short > bare,
        "a tool call costs nothing ({short} vs {bare})"
    );
    assert!(
        long > short,
        "longer arguments cost no more ({long} vs {short})"
    );
    let result = Message::tool_result("call_1", "memory_search", "ok");
    assert!(c.count_message(&result) > c.count_message(&Message::user("ok")));
}

/// `count_messages` is the sum of `count_message`.
pub fn message_lists_add_up(case: &TokenCase) {
    let c = &case.counter;
    let ms = vec![
        Message::system("You are a memory agent."),
        Message::user(SENTENCE),
        assistant_calling("memory_get", r#"{"path":"MEMORY.md"}"#),
        Message::tool_result("call_1", "memory_get", "# Memory\n- Lives in Porto"),
    ];
    let sum: usize = ms.iter().map(|m| c.count_message(m)).sum();
    assert_eq!(c.count_messages(&ms), sum);
    assert_eq!(c.count_messages(&[]), 0);
}

/// Counting is repeatable, and a message whose content changed is counted
/// afresh (a memo must key on content, not on identity or position).
pub fn counts_follow_content(case: &TokenCase) {
    let c = &case.counter;
    let a = Message::user("short");
    let b = Message::user(SENTENCE.repeat(4));
    let (first_a, first_b) = (c.count_message(&a), c.count_message(&b));
    assert!(first_b > first_a);
    for _ in 0..3 {
        assert_eq!(c.count_message(&a), first_a);
        assert_eq!(c.count_message(&b), first_b);
    }
    // `a` with `b`'s content: the memo saw `a` before, under this role.
    let mut edited = a;
    edited.content = b.content;
    assert_eq!(
        c.count_message(&edited),
        first_b,
        "an edited message kept its old count"
    );
}

/// `is_exact` says what the counter is: an estimate never claims to be
/// exact.
pub fn exactness_is_reported(case: &TokenCase) {
    assert_eq!(case.counter.is_exact(), case.exact);
}
