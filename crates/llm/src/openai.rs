//! OpenAI-compatible chat completions (`POST {base_url}/chat/completions`),
//! as spoken by OpenAI, Ollama, vLLM, DeepSeek, DashScope, OpenRouter and
//! LM Studio.

use std::sync::atomic::{AtomicBool, Ordering};

use mnemo_core::{Content, FunctionCall, Message, Role, ToolCall};
use serde_json::{json, Map, Value};

use crate::chat::{BoxFuture, ChatModel, ChatRequest, ChatResponse, ModelInfo, ToolChoice, Usage};
use crate::error::{ErrorKind, LlmError, Result};
use crate::provider::{process_env, ProviderConfig};
use crate::transport::Transport;

/// A chat model behind an OpenAI-compatible endpoint.
///
/// Newer OpenAI reasoning models refuse `max_tokens` (they want
/// `max_completion_tokens`) and any non-default `temperature`; when the
/// provider says so, the client resends the request adapted once and keeps
/// the adaptation for later requests.
#[derive(Debug)]
pub struct OpenAiChat {
    info: ModelInfo,
    transport: Transport,
    label: String,
    use_max_completion_tokens: AtomicBool,
    drop_temperature: AtomicBool,
    /// The provider refused `logprobs` or answered without them: judge by
    /// written answers from now on.
    no_logprobs: AtomicBool,
}

impl OpenAiChat {
    /// A client for `config` (its kind is not checked, so any
    /// OpenAI-compatible endpoint can be used). The key is `api_key`, else
    /// the process variable `api_key_env`; none is needed on loopback.
    pub fn new(config: &ProviderConfig) -> Result<Self> {
        config.validate(&process_env)?;
        let mut fixed = Vec::new();
        if let Some(key) = config.api_key(&process_env) {
            fixed.push(("authorization", format!("Bearer {}", key.trim())));
        }
        let url = format!("{}/chat/completions", config.base_url.trim_end_matches('/'));
        Ok(OpenAiChat {
            info: config.model_info("openai"),
            transport: config.transport(url, &fixed)?,
            label: config.label(),
            use_max_completion_tokens: AtomicBool::new(false),
            drop_temperature: AtomicBool::new(false),
            no_logprobs: AtomicBool::new(false),
        })
    }

    /// The JSON body sent for `req` (with the adaptations learnt so far).
    pub fn request_body(&self, req: &ChatRequest) -> Value {
        let mut body = request_body(&self.info.model, req);
        if let Value::Object(o) = &mut body {
            if self.use_max_completion_tokens.load(Ordering::Relaxed) {
                if let Some(n) = o.shift_remove("max_tokens") {
                    o.insert("max_completion_tokens".into(), n);
                }
            }
            if self.drop_temperature.load(Ordering::Relaxed) {
                o.shift_remove("temperature");
            }
        }
        body
    }

    /// Learns from a rejection that names a parameter this client can
    /// adapt; true when the request is worth resending.
    fn adapt_to(&self, err: &LlmError, req: &ChatRequest) -> bool {
        if !matches!(
            err.kind(),
            ErrorKind::BadRequest | ErrorKind::ToolChoiceUnsupported
        ) {
            return false;
        }
        let text = err.to_string().to_lowercase();
        if req.max_tokens.is_some()
            && text.contains("max_completion_tokens")
            && !self.use_max_completion_tokens.swap(true, Ordering::Relaxed)
        {
            tracing::info!(provider = %self.label, "provider wants max_completion_tokens; resending");
            return true;
        }
        if req.temperature.is_some()
            && text.contains("temperature")
            && !self.drop_temperature.swap(true, Ordering::Relaxed)
        {
            tracing::info!(provider = %self.label, "provider refuses temperature; resending without it");
            return true;
        }
        false
    }

    async fn complete_inner(&self, req: ChatRequest) -> Result<ChatResponse> {
        loop {
            let body = self.request_body(&req);
            match self
                .transport
                .post_json(&body, req.forces_tool(), in_band_error)
                .await
            {
                Ok(value) => {
                    return parse_response(&value).map_err(|message| LlmError::Decode {
                        provider: self.label.clone(),
                        message,
                    });
                }
                // Each adaptation is made at most once, so this ends.
                Err(e) if self.adapt_to(&e, &req) => continue,
                Err(e) => return Err(e),
            }
        }
    }
}

impl ChatModel for OpenAiChat {
    fn complete(&self, req: ChatRequest) -> BoxFuture<'_, Result<ChatResponse>> {
        Box::pin(self.complete_inner(req))
    }

    fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// `logprobs` with the 20 likeliest first tokens: an option is the
    /// probability mass of those tokens that read as it (case and spaces
    /// aside), minus infinity when none does. A provider that refuses the
    /// parameter (400) or ignores it answers `None` from then on.
    fn option_logprobs(
        &self,
        req: ChatRequest,
        options: Vec<String>,
    ) -> BoxFuture<'_, Result<Option<Vec<f32>>>> {
        Box::pin(async move {
            if self.no_logprobs.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let mut body = self.request_body(&req.with_max_tokens(1));
            if let Value::Object(o) = &mut body {
                o.insert("logprobs".into(), json!(true));
                o.insert("top_logprobs".into(), json!(20));
            }
            match self.transport.post_json(&body, false, in_band_error).await {
                Ok(value) => {
                    let read = top_logprobs(&value).map(|top| option_mass(&top, &options));
                    if read.is_none() {
                        self.no_logprobs.store(true, Ordering::Relaxed);
                    }
                    Ok(read)
                }
                Err(e) if e.kind() == ErrorKind::BadRequest => {
                    tracing::info!(provider = %self.label, "provider refuses logprobs; judging by written answers");
                    self.no_logprobs.store(true, Ordering::Relaxed);
                    Ok(None)
                }
                Err(e) => Err(e),
            }
        })
    }
}

/// The `(token, logprob)` pairs of the answer's first token.
fn top_logprobs(v: &Value) -> Option<Vec<(String, f32)>> {
    let first = v
        .pointer("/choices/0/logprobs/content/0/top_logprobs")?
        .as_array()?;
    let top: Vec<(String, f32)> = first
        .iter()
        .filter_map(|t| {
            Some((
                t.get("token")?.as_str()?.to_string(),
                t.get("logprob")?.as_f64()? as f32,
            ))
        })
        .collect();
    (!top.is_empty()).then_some(top)
}

/// Each option's log-probability: the mass of the tokens that read as it.
fn option_mass(top: &[(String, f32)], options: &[String]) -> Vec<f32> {
    options
        .iter()
        .map(|o| {
            let want = o.trim().to_lowercase();
            let mass: f32 = top
                .iter()
                .filter(|(t, _)| t.trim().to_lowercase() == want)
                .map(|(_, l)| l.exp())
                .sum();
            mass.ln()
        })
        .collect()
}

/// The chat-completions body for `req`.
pub(crate) fn request_body(model: &str, req: &ChatRequest) -> Value {
    let mut messages = Vec::with_capacity(req.messages.len() + 1);
    if let Some(system) = req.system.as_deref().filter(|s| !s.is_empty()) {
        messages.push(json!({"role": "system", "content": system}));
    }
    // A tool result whose call is not in the conversation (trimmed away)
    // is refused by the API; it is sent as user text rather than lost.
    let mut declared = std::collections::HashSet::new();
    for m in &req.messages {
        declared.extend(m.tool_call_ids());
        match (&m.role, m.tool_call_id.as_deref()) {
            (Role::Tool, id) if id.is_none_or(|id| !declared.contains(id)) => {
                let text = format!(
                    "[{} result] {}",
                    m.name.as_deref().unwrap_or("tool"),
                    m.text()
                );
                messages.push(json!({"role": "user", "content": text}));
            }
            _ => messages.push(wire_message(m)),
        }
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": object_schema(&t.parameters)},
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &req.tool_choice {
            let c = match choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Function(name) => {
                    json!({"type": "function", "function": {"name": name}})
                }
            };
            body.insert("tool_choice".into(), c);
        }
    }
    if let Some(n) = req.max_tokens {
        body.insert("max_tokens".into(), json!(n));
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(f32_for_wire(t)));
    }
    Value::Object(body)
}

/// A parameters schema as providers expect it: an object schema, even when
/// the tool takes no arguments.
pub(crate) fn object_schema(parameters: &Value) -> Value {
    if parameters.is_null() {
        json!({"type": "object", "properties": {}})
    } else {
        parameters.clone()
    }
}

/// The wire form of a stored message: only the fields the protocol knows
/// (timestamps and nanobot's extras such as `reasoning_content` stay home;
/// some providers reject them).
fn wire_message(m: &Message) -> Value {
    let mut o = Map::new();
    o.insert("role".into(), json!(m.role.as_str()));
    let calls: Vec<Value> = m
        .tool_calls
        .iter()
        .flatten()
        .map(|c| {
            json!({
                "id": c.id,
                "type": "function",
                "function": {"name": c.function.name, "arguments": c.function.arguments_string()},
            })
        })
        .collect();
    let content = match &m.content {
        Some(Content::Text(s)) => json!(s),
        Some(Content::Parts(p)) => Value::Array(p.clone()),
        // An assistant message that only calls tools has null content; any
        // other message needs a string.
        None if !calls.is_empty() => Value::Null,
        None => json!(""),
    };
    o.insert("content".into(), content);
    if !calls.is_empty() {
        o.insert("tool_calls".into(), Value::Array(calls));
    }
    if let Some(id) = &m.tool_call_id {
        o.insert("tool_call_id".into(), json!(id));
    }
    if let Some(name) = &m.name {
        o.insert("name".into(), json!(name));
    }
    Value::Object(o)
}

/// In-band errors of a 200 answer: an `error` object without choices
/// (OpenRouter does this), or `finish_reason: "error"` (the error text is
/// in the content).
fn in_band_error(v: &Value) -> Option<(Option<u16>, String)> {
    if v.get("choices").is_none() {
        if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
            let status = err
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok());
            let status = status.filter(|s| (400..600).contains(s));
            return Some((status, v.to_string()));
        }
    }
    let choice = v.pointer("/choices/0")?;
    if choice.get("finish_reason").and_then(Value::as_str) == Some("error") {
        let text = choice
            .pointer("/message/content")
            .map(content_text)
            .unwrap_or_default();
        let text = if text.is_empty() { v.to_string() } else { text };
        return Some((None, text));
    }
    None
}

fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(_) => serde_json::from_value::<Content>(v.clone())
            .map(|c| c.text())
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// Reads a chat-completions answer.
pub(crate) fn parse_response(v: &Value) -> std::result::Result<ChatResponse, String> {
    let choice = v
        .pointer("/choices/0")
        .ok_or_else(|| format!("no `choices[0]` in the answer: {}", short(v)))?;
    let msg = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| format!("no `message` in `choices[0]`: {}", short(v)))?;
    let content = match msg.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(Content::Text(s.clone())),
        Some(Value::Array(parts)) => Some(Content::Parts(parts.clone())),
        Some(other) => {
            return Err(format!(
                "`content` is neither text nor parts: {}",
                short(other)
            ))
        }
    };
    let mut calls = Vec::new();
    for (i, c) in msg
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let function = c
            .get("function")
            .ok_or_else(|| format!("tool call {i} has no `function`: {}", short(c)))?;
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("tool call {i} has no function name: {}", short(c)))?;
        // Some servers omit ids; the tool result must still refer to one.
        let id = c
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map_or_else(|| format!("call_{i}"), str::to_string);
        let arguments = match function.get("arguments") {
            None | Some(Value::Null) => Value::String("{}".into()),
            Some(Value::String(s)) => Value::String(s.clone()),
            Some(other) => Value::String(other.to_string()),
        };
        calls.push(ToolCall {
            id,
            kind: "function".into(),
            function: FunctionCall {
                name: name.to_string(),
                arguments,
            },
            extra: Map::new(),
        });
    }
    let mut extra = Map::new();
    if let Some(r) = msg.get("reasoning_content").filter(|r| r.is_string()) {
        extra.insert("reasoning_content".into(), r.clone());
    }
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| {
            if calls.is_empty() {
                "stop".into()
            } else {
                "tool_calls".into()
            }
        });
    let message = Message {
        role: Role::Assistant,
        content: match content {
            None if calls.is_empty() => Some(Content::Text(String::new())),
            c => c,
        },
        tool_calls: (!calls.is_empty()).then_some(calls),
        tool_call_id: None,
        name: None,
        timestamp: None,
        extra,
    };
    let usage = Usage {
        input_tokens: token_field(v, "/usage/prompt_tokens"),
        output_tokens: token_field(v, "/usage/completion_tokens"),
    };
    Ok(ChatResponse {
        message,
        finish_reason,
        usage,
    })
}

/// An f32 as the f64 with the same short decimal form, so 0.2 goes on the
/// wire as `0.2` and not `0.20000000298023224`.
pub(crate) fn f32_for_wire(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

pub(crate) fn token_field(v: &Value, pointer: &str) -> u32 {
    v.pointer(pointer)
        .and_then(Value::as_u64)
        .map_or(0, |n| u32::try_from(n).unwrap_or(u32::MAX))
}

pub(crate) fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 300 {
        let mut t: String = s.chars().take(300).collect();
        t.push('…');
        t
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn parses_tool_calls_and_usage() {
        let v = json!({
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]
            }}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3}
        });
        let r = parse_response(&v).unwrap();
        assert_eq!(r.finish_reason, "tool_calls");
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 10,
                output_tokens: 3
            }
        );
        assert_eq!(r.message.content, None);
        assert_eq!(
            r.tool_calls()[0].function.arguments_value(),
            json!({"a": 1})
        );
    }

    #[test]
    fn rejects_answers_without_choices() {
        assert!(parse_response(&json!({"object": "list"}))
            .unwrap_err()
            .contains("choices"));
    }

    #[test]
    fn in_band_errors() {
        let v = json!({"choices": [{"finish_reason": "error", "message": {"role": "assistant", "content": "tool_choice bad"}}]});
        assert_eq!(
            in_band_error(&v),
            Some((None, "tool_choice bad".to_string()))
        );
        let v = json!({"error": {"code": 429, "message": "slow"}});
        assert_eq!(in_band_error(&v).map(|e| e.0), Some(Some(429)));
        assert_eq!(
            in_band_error(&json!({"choices": [{"finish_reason": "stop"}]})),
            None
        );
    }

    #[test]
    fn result_of_an_unknown_call_becomes_user_text() {
        let req = ChatRequest::new(vec![
            Message::tool_result("gone", "exec", "out"),
            Message::user("next"),
        ]);
        assert_eq!(
            request_body("m", &req)["messages"],
            json!([{"role": "user", "content": "[exec result] out"}, {"role": "user", "content": "next"}])
        );
    }

    #[test]
    fn wire_message_drops_local_fields() {
        let m: Message = serde_json::from_str(
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"exec","arguments":{"cmd":"ls"}}}],"timestamp":"t","tools_used":["exec"],"reasoning_content":"hmm"}"#,
        )
        .unwrap();
        assert_eq!(
            wire_message(&m),
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "exec", "arguments": "{\"cmd\":\"ls\"}"}}
            ]})
        );
    }
}
