//! The chat-model seam: the [`ChatModel`] trait and its request and
//! response records, independent of any wire protocol.

use std::future::Future;
use std::pin::Pin;

use mnemo_core::{Message, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::LlmError;

/// A boxed, sendable future: what [`ChatModel`] methods return, so the
/// trait can be used as `Arc<dyn ChatModel>`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A function the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Function name.
    pub name: String,
    /// What the function does, for the model.
    pub description: String,
    /// JSON Schema of the arguments (an `object` schema).
    pub parameters: Value,
}

impl ToolSpec {
    /// A tool specification.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            parameters,
        }
    }
}

/// Whether and which tool the model must call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool calls.
    None,
    /// Some tool must be called (Anthropic `any`).
    Required,
    /// This tool must be called.
    Function(String),
}

impl ToolChoice {
    /// True when the choice forces a tool call (`Required` or `Function`):
    /// the choices some providers refuse.
    pub fn is_forced(&self) -> bool {
        matches!(self, ToolChoice::Required | ToolChoice::Function(_))
    }
}

/// One call to a chat model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ChatRequest {
    /// The conversation, OpenAI-shaped. Leading (or any) system messages are
    /// allowed; the Anthropic client moves them to the top-level `system`.
    pub messages: Vec<Message>,
    /// Tools offered to the model.
    pub tools: Vec<ToolSpec>,
    /// Tool choice; ignored when `tools` is empty.
    pub tool_choice: Option<ToolChoice>,
    /// Cap on output tokens; the provider's `max_output` when None (the
    /// OpenAI client then sends no cap).
    pub max_tokens: Option<u32>,
    /// Sampling temperature; the provider default when None.
    pub temperature: Option<f32>,
    /// System prompt, sent before any system message of `messages`.
    pub system: Option<String>,
    /// True when the system block (the system prompt, any leading system
    /// messages and the tools offered) holds fixed instructions only: no
    /// memory, no conversation, nothing a person may ask to forget. A
    /// local model saves such a block's keys and values to disk for the
    /// next process (`mnemo-local-llm`'s prompt cache) and saves no other:
    /// a chat turn's block holds MEMORY.md and facts, which must not
    /// outlive a forget in a cache folder. False unless set
    /// ([`Self::with_fixed_system`]); providers that do not keep prompts
    /// ignore it.
    pub fixed_system: bool,
}

impl ChatRequest {
    /// A request with these messages and nothing else.
    pub fn new(messages: Vec<Message>) -> Self {
        ChatRequest {
            messages,
            ..Default::default()
        }
    }

    /// Sets the system prompt.
    pub fn with_system(mut self, system: impl Into<String>) -> Self {
        self.system = Some(system.into());
        self
    }

    /// Offers these tools.
    pub fn with_tools(mut self, tools: Vec<ToolSpec>) -> Self {
        self.tools = tools;
        self
    }

    /// Sets the tool choice.
    pub fn with_tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Caps the output tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets the temperature.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Marks the system block as fixed instructions (see
    /// [`Self::fixed_system`]).
    pub fn with_fixed_system(mut self) -> Self {
        self.fixed_system = true;
        self
    }

    /// True when the request forces a tool call on a request that has tools.
    pub fn forces_tool(&self) -> bool {
        !self.tools.is_empty() && self.tool_choice.as_ref().is_some_and(ToolChoice::is_forced)
    }
}

/// Token usage reported by the provider (zero when it reported none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u32,
    /// Generated tokens.
    pub output_tokens: u32,
}

/// The model's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// The assistant message, OpenAI-shaped: `content` None when it only
    /// calls tools; `tool_calls` with arguments as JSON text.
    pub message: Message,
    /// Why generation stopped, in OpenAI vocabulary: `stop`, `length`,
    /// `tool_calls`, `content_filter` (Anthropic reasons are mapped).
    pub finish_reason: String,
    /// Token usage.
    pub usage: Usage,
}

impl ChatResponse {
    /// The answer's text (empty when it has none).
    pub fn text(&self) -> String {
        self.message.text()
    }

    /// The tool calls of the answer.
    pub fn tool_calls(&self) -> &[ToolCall] {
        self.message.tool_calls.as_deref().unwrap_or(&[])
    }
}

/// What is known about the configured model.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// `openai` or `anthropic` (the wire protocol).
    pub provider: String,
    /// Model name as sent to the provider.
    pub model: String,
    /// Context window in tokens.
    pub context_window: u32,
    /// Largest output in tokens.
    pub max_output: u32,
}

/// A chat model behind some wire protocol.
///
/// Implementations retry transient failures themselves; errors carry an
/// [`ErrorKind`](crate::ErrorKind) telling the caller how to react.
/// `mnemo-test-support`'s `chat_model_suite!` checks both on every client
/// over HTTP (429 with `Retry-After`, 5xx, timeouts, 400, 401, a refused
/// connection, a malformed answer, the usage reported).
pub trait ChatModel: Send + Sync {
    /// Sends one request and waits for the whole answer.
    fn complete(&self, req: ChatRequest) -> BoxFuture<'_, Result<ChatResponse, LlmError>>;

    /// The model's name and limits.
    fn info(&self) -> &ModelInfo;

    /// What the model is doing in the request it answers now, when it can
    /// tell (a model run in this process); `None` when it is idle or
    /// cannot tell (a remote API answers all at once).
    fn activity(&self) -> Option<ModelActivity> {
        None
    }

    /// How likely the answer to `req` is to open with each of `options`
    /// (single words such as "yes" and "no"), as natural-log
    /// probabilities in the order given, read off the model's next-token
    /// distribution without writing an answer. `Ok(None)` when the model
    /// cannot tell (the default: a remote API that returns text only); the
    /// caller then asks for a written answer instead. A judgement from
    /// probabilities costs one pass over the prompt and can be weighed
    /// against other evidence, where a written "yes" cannot.
    fn option_logprobs(
        &self,
        req: ChatRequest,
        options: Vec<String>,
    ) -> BoxFuture<'_, Result<Option<Vec<f32>>, LlmError>> {
        let _ = (req, options);
        Box::pin(async { Ok(None) })
    }
}

/// How far a model is in the request it answers, for a progress line: a
/// local model's minute of work is not a silent one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ModelActivity {
    /// Tokens of the prompt.
    pub prompt_tokens: usize,
    /// True while it reads the prompt; false once it writes the answer.
    pub reading: bool,
    /// Tokens of the answer written so far.
    pub written: usize,
}
