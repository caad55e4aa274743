//! Secrets taken out of copies of session transcripts: the index's copy
//! (chunks, snippets, keyword index, vectors), so that `memory_search`
//! never hands an API key, a token or a private key from an old
//! conversation to a prompt, and the raw consolidation archive in
//! `memory/HISTORY.md`. The session log itself keeps every word; Markdown
//! memory that people or tools wrote is not touched.
//!
//! What counts as a secret: well-known token formats (OpenAI, Anthropic,
//! AWS, GitHub, GitLab, Slack, Google, Hugging Face, JWTs), PEM private key
//! blocks, `Bearer` credentials, passwords in URLs, and values assigned to
//! secret-named keys (`password=…`, `"api_key": "…"`). Identifiers such as
//! `DK-2231` or `ERR-4711` are not secrets and stay searchable.

// This module reads text a user or a model wrote: no byte-offset slicing
// or indexing that could land inside a character or past the end.
#![cfg_attr(not(test), deny(clippy::indexing_slicing, clippy::string_slice))]

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

/// What a redacted secret becomes.
pub const REDACTED: &str = "[redacted]";

/// Bumped whenever the rules change, so indexes rebuild with the new ones.
/// 2: secrets glued to text in other scripts ("密钥是sk-…") are found.
pub const RULES_VERSION: u32 = 2;

struct Rules {
    private_key: Regex,
    tokens: Regex,
    bearer: Regex,
    url_password: Regex,
    assignment: Regex,
}

#[allow(clippy::expect_used)] // constant patterns, covered by the tests below
static RULES: LazyLock<Rules> = LazyLock::new(|| Rules {
    private_key: Regex::new(
        r"(?s)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----",
    )
    .expect("pattern"),
    // Word boundaries are ASCII ones (`(?-u:\b)`): a Unicode `\b` sees no
    // boundary between a CJK character and a key glued to it ("密钥是sk-…"),
    // and the key would stay.
    tokens: Regex::new(concat!(
        r"(?-u:\b)(?:",
        r"sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}", // OpenAI, Anthropic
        r"|(?:AKIA|ASIA)[0-9A-Z]{16}",           // AWS access key ids
        r"|gh[pousr]_[A-Za-z0-9]{36,}",          // GitHub
        r"|github_pat_[A-Za-z0-9_]{22,}",
        r"|glpat-[A-Za-z0-9_-]{20,}",     // GitLab
        r"|xox[abprs]-[A-Za-z0-9-]{10,}", // Slack
        r"|AIza[0-9A-Za-z_-]{35}",        // Google
        r"|hf_[A-Za-z0-9]{30,}",          // Hugging Face
        r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", // JWT
        r")"
    ))
    .expect("pattern"),
    bearer: Regex::new(r"(?i)(?-u:\b)(bearer)\s+[A-Za-z0-9._~+/=-]{16,}").expect("pattern"),
    url_password: Regex::new(r"([a-z][a-z0-9+.-]*://[^/\s:@]+):[^/\s@]+@").expect("pattern"),
    assignment: Regex::new(concat!(
        // A prefix such as OPENAI_ or db- may come first.
        r#"(?i)(?-u:\b)((?:[a-z0-9]+[_-])*(?:password|passwd|passphrase|secret|client[_-]?secret|"#,
        r#"api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|access[_-]?token|"#,
        r#"auth[_-]?token|refresh[_-]?token)["']?\s*[:=]\s*["']?)[^\s"',;]{4,}"#
    ))
    .expect("pattern"),
});

/// `text` with its secrets replaced by [`REDACTED`]; line breaks are kept,
/// so line numbers still point at the same lines. Borrowed when nothing
/// matched.
pub fn redact(text: &str) -> Cow<'_, str> {
    let r = &*RULES;
    let mut out = Cow::Borrowed(text);
    let mut apply = |re: &Regex, with: &dyn Fn(&Captures) -> String| {
        // `replace_all` borrows when nothing matched: one scan per rule.
        if let Cow::Owned(s) = re.replace_all(&out, |c: &Captures| with(c)) {
            out = Cow::Owned(s);
        }
    };
    apply(&r.private_key, &|c| {
        format!("{REDACTED}{}", "\n".repeat(c[0].matches('\n').count()))
    });
    apply(&r.tokens, &|_| REDACTED.to_string());
    apply(&r.bearer, &|c| format!("{} {REDACTED}", &c[1]));
    apply(&r.url_password, &|c| format!("{}:{REDACTED}@", &c[1]));
    apply(&r.assignment, &|c| format!("{}{REDACTED}", &c[1]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_go_and_identifiers_stay() {
        let cases = [
            (
                "my key is sk-proj-abcdefghijklmnopqrstuvwx12",
                "my key is [redacted]",
            ),
            (
                "use sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA now",
                "use [redacted] now",
            ),
            ("AKIAIOSFODNN7EXAMPLE", "[redacted]"),
            (
                "token ghp_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!",
                "token [redacted]!",
            ),
            (
                "Authorization: Bearer abc.def-ghi_jkl.mno123",
                "Authorization: Bearer [redacted]",
            ),
            (
                "postgres://app:s3cr3t-pw@db:5432/x",
                "postgres://app:[redacted]@db:5432/x",
            ),
            ("password=hunter22 and more", "password=[redacted] and more"),
            (
                r#"{"api_key": "abcd1234efgh"}"#,
                r#"{"api_key": "[redacted]"}"#,
            ),
            (
                "export OPENAI_API_KEY=xyz12345",
                "export OPENAI_API_KEY=[redacted]",
            ),
            (
                "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
                "jwt [redacted]",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
        // Glued to text in a script without spaces (found by fuzzing).
        for (input, want) in [
            (
                "我的密钥是sk-proj-abcdefghijklmnopqrstuvwx12。",
                "我的密钥是[redacted]。",
            ),
            ("本sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAA", "本[redacted]"),
            (
                "パスワードpassword=hunter22 です",
                "パスワードpassword=[redacted] です",
            ),
            ("認証Bearer abc.def-ghi_jkl.mno123", "認証Bearer [redacted]"),
        ] {
            assert_eq!(redact(input), want, "{input}");
        }
        for keep in [
            "The deploy key is DK-2231.",
            "Build failed with ERR-4711 in the linker step.",
            "The staging database password rotates every Friday.",
            "Ask for the token count before you send it.",
            "max_tokens: 4096, pwd: /work",
            "see https://example.com/a:b@c? no: just a path",
            "我很喜欢弹钢琴和画画",
        ] {
            assert!(matches!(redact(keep), Cow::Borrowed(_)), "{keep}");
        }
    }

    #[test]
    fn a_private_key_block_keeps_its_line_count() {
        let text = "before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAA\n-----END OPENSSH PRIVATE KEY-----\nafter";
        let got = redact(text);
        assert_eq!(got, "before\n[redacted]\n\n\n\nafter");
        assert_eq!(got.lines().count(), text.lines().count());
    }
}
