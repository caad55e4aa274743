//! Scripted replies: what the server answers, independent of the protocol
//! of the endpoint that is hit.

use std::time::Duration;

use serde_json::Value;

/// One scripted answer of the [`ScriptedServer`](crate::ScriptedServer).
///
/// A reply describes *what* the model says (text, tool calls, an error,
/// vectors); the server renders it in the shape of the endpoint that was
/// hit (OpenAI chat completions, Anthropic Messages or OpenAI embeddings).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub(crate) body: Body,
    pub(crate) delay: Option<Duration>,
    pub(crate) headers: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Body {
    /// Assistant text plus optional tool calls.
    Chat {
        text: Option<String>,
        calls: Vec<(String, Value)>,
        finish_reason: Option<String>,
    },
    /// Non-2xx status with a JSON body sent verbatim.
    Error { status: u16, body: Value },
    /// Any status with a JSON body sent verbatim, for shapes the renderer
    /// does not produce (for instance `finish_reason: "error"` with 200).
    Raw { status: u16, body: Value },
    /// Embedding vectors; `None` means the deterministic hashed vectors.
    Embeddings {
        vectors: Option<Vec<Vec<f32>>>,
        reversed: bool,
    },
}

impl Reply {
    fn from_body(body: Body) -> Self {
        Reply {
            body,
            delay: None,
            headers: Vec::new(),
        }
    }

    /// The assistant answers with `text`.
    pub fn text(text: impl Into<String>) -> Self {
        Self::from_body(Body::Chat {
            text: Some(text.into()),
            calls: Vec::new(),
            finish_reason: None,
        })
    }

    /// The assistant calls one tool with `arguments` (a JSON object).
    pub fn tool_call(name: impl Into<String>, arguments: Value) -> Self {
        Self::tool_calls(vec![(name.into(), arguments)])
    }

    /// The assistant calls several tools in one turn.
    pub fn tool_calls(calls: Vec<(String, Value)>) -> Self {
        Self::from_body(Body::Chat {
            text: None,
            calls,
            finish_reason: None,
        })
    }

    /// The server answers `status` with `body` as it is (both protocols).
    pub fn error(status: u16, body: Value) -> Self {
        Self::from_body(Body::Error { status, body })
    }

    /// The server answers `status` with exactly `body`, whatever the endpoint.
    pub fn raw(status: u16, body: Value) -> Self {
        Self::from_body(Body::Raw { status, body })
    }

    /// An embeddings answer with these vectors, sent as they are (not
    /// normalised), index `i` for vector `i`.
    pub fn embeddings(vectors: Vec<Vec<f32>>) -> Self {
        Self::from_body(Body::Embeddings {
            vectors: Some(vectors),
            reversed: false,
        })
    }

    /// An embeddings answer with the deterministic hashed vectors (what the
    /// server sends when nothing is scripted); useful wrapped in
    /// [`Reply::delay`] or with [`Reply::reversed`].
    pub fn hashed_embeddings() -> Self {
        Self::from_body(Body::Embeddings {
            vectors: None,
            reversed: false,
        })
    }

    /// Lists the embedding items in reverse order (their `index` fields stay
    /// correct), to check that clients re-order by `index`.
    pub fn reversed(mut self) -> Self {
        if let Body::Embeddings { reversed, .. } = &mut self.body {
            *reversed = true;
        }
        self
    }

    /// Waits `delay` before answering `reply`.
    pub fn delay(delay: Duration, mut reply: Reply) -> Self {
        reply.delay = Some(delay);
        reply
    }

    /// Adds a response header, such as `retry-after`.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Adds assistant text to a tool-call reply (or replaces a text reply's).
    pub fn with_text(mut self, new_text: impl Into<String>) -> Self {
        if let Body::Chat { text, .. } = &mut self.body {
            *text = Some(new_text.into());
        }
        self
    }

    /// Overrides the finish reason, in OpenAI vocabulary (`stop`, `length`,
    /// `tool_calls`, `error`, …); the Anthropic rendering maps it to a
    /// `stop_reason` (`length` becomes `max_tokens`).
    pub fn with_finish_reason(mut self, reason: impl Into<String>) -> Self {
        if let Body::Chat { finish_reason, .. } = &mut self.body {
            *finish_reason = Some(reason.into());
        }
        self
    }

    /// True when the embeddings endpoint may consume this reply from the
    /// script (chat replies are left for the chat endpoints).
    pub(crate) fn fits_embeddings(&self) -> bool {
        !matches!(self.body, Body::Chat { .. })
    }

    /// True when a chat endpoint may consume this reply.
    pub(crate) fn fits_chat(&self) -> bool {
        !matches!(self.body, Body::Embeddings { .. })
    }
}
