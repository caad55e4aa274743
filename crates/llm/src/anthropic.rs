//! Anthropic Messages (`POST {base_url}/v1/messages`), with conversion of
//! OpenAI-shaped messages to and from content blocks.

use mnemo_core::{Content, FunctionCall, Message, Role, ToolCall};
use serde_json::{json, Map, Value};

use crate::chat::{BoxFuture, ChatModel, ChatRequest, ChatResponse, ModelInfo, ToolChoice, Usage};
use crate::error::{LlmError, Result};
use crate::openai::{f32_for_wire, object_schema, short, token_field};
use crate::provider::{process_env, ProviderConfig};
use crate::transport::Transport;

/// The protocol version sent in `anthropic-version`.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// A chat model behind the Anthropic Messages API.
#[derive(Debug, Clone)]
pub struct AnthropicChat {
    info: ModelInfo,
    transport: Transport,
    label: String,
}

impl AnthropicChat {
    /// A client for `config`. The key is `api_key`, else the process
    /// variable `api_key_env`; none is needed on loopback.
    pub fn new(config: &ProviderConfig) -> Result<Self> {
        config.validate(&process_env)?;
        let mut fixed = vec![("anthropic-version", ANTHROPIC_VERSION.to_string())];
        if let Some(key) = config.api_key(&process_env) {
            fixed.push(("x-api-key", key.trim().to_string()));
        }
        // A pasted `https://api.anthropic.com/v1` would otherwise give /v1/v1.
        let base = config.base_url.trim_end_matches('/');
        let url = format!("{}/v1/messages", base.strip_suffix("/v1").unwrap_or(base));
        Ok(AnthropicChat {
            info: config.model_info("anthropic"),
            transport: config.transport(url, &fixed)?,
            label: config.label(),
        })
    }

    /// The JSON body sent for `req`.
    pub fn request_body(&self, req: &ChatRequest) -> Value {
        request_body(&self.info, req)
    }

    async fn complete_inner(&self, req: ChatRequest) -> Result<ChatResponse> {
        let body = self.request_body(&req);
        let value = self
            .transport
            .post_json(&body, req.forces_tool(), in_band_error)
            .await?;
        parse_response(&value).map_err(|message| LlmError::Decode {
            provider: self.label.clone(),
            message,
        })
    }
}

impl ChatModel for AnthropicChat {
    fn complete(&self, req: ChatRequest) -> BoxFuture<'_, Result<ChatResponse>> {
        Box::pin(self.complete_inner(req))
    }

    fn info(&self) -> &ModelInfo {
        &self.info
    }
}

fn in_band_error(v: &Value) -> Option<(Option<u16>, String)> {
    (v.get("type").and_then(Value::as_str) == Some("error")).then(|| (Some(500), v.to_string()))
}

/// The Messages body for `req`.
pub(crate) fn request_body(info: &ModelInfo, req: &ChatRequest) -> Value {
    let (system, messages) = convert_messages(req.system.as_deref(), &req.messages);
    let mut body = Map::new();
    body.insert("model".into(), json!(info.model));
    body.insert(
        "max_tokens".into(),
        json!(req.max_tokens.unwrap_or(info.max_output)),
    );
    if let Some(s) = system {
        body.insert("system".into(), json!(s));
    }
    body.insert("messages".into(), Value::Array(messages));
    if !req.tools.is_empty() {
        let tools: Vec<Value> = req
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": object_schema(&t.parameters)}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = &req.tool_choice {
            let c = match choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Function(name) => json!({"type": "tool", "name": name}),
            };
            body.insert("tool_choice".into(), c);
        }
    }
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(f32_for_wire(t)));
    }
    Value::Object(body)
}

/// Converts OpenAI-shaped messages to Anthropic's: system messages join
/// the top-level `system` (after `system`), tool calls become `tool_use`
/// blocks, tool results become `tool_result` blocks of a user message, and
/// consecutive messages of one role are merged (so consecutive tool results
/// form one user message, as the API requires). Empty texts are dropped
/// because the API rejects empty text blocks; a tool result whose call is
/// not in the conversation becomes a text block.
pub(crate) fn convert_messages(
    system: Option<&str>,
    messages: &[Message],
) -> (Option<String>, Vec<Value>) {
    let mut declared: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut systems: Vec<String> = system
        .filter(|s| !s.trim().is_empty())
        .map(str::to_string)
        .into_iter()
        .collect();
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    let mut push = |role: &'static str, blocks: Vec<Value>| {
        if blocks.is_empty() {
            return;
        }
        match turns.last_mut() {
            Some((r, b)) if *r == role => b.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    };
    for m in messages {
        match m.role {
            Role::System => {
                let t = m.text();
                if !t.trim().is_empty() {
                    systems.push(t);
                }
            }
            Role::User => push("user", content_blocks(m.content.as_ref())),
            Role::Assistant => {
                let mut blocks = content_blocks(m.content.as_ref());
                for c in m.tool_calls.iter().flatten() {
                    declared.insert(c.id.as_str());
                    let input = match c.function.arguments_value() {
                        Value::Object(o) => Value::Object(o),
                        Value::Null => json!({}),
                        // The API needs an object; keep what the model sent.
                        other => json!({"arguments": other}),
                    };
                    blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.function.name, "input": input}));
                }
                push("assistant", blocks);
            }
            Role::Tool => {
                let block = match m.tool_call_id.as_deref().filter(|id| declared.contains(id)) {
                    Some(id) => {
                        let mut b = Map::new();
                        b.insert("type".into(), json!("tool_result"));
                        b.insert("tool_use_id".into(), json!(id));
                        match &m.content {
                            Some(Content::Text(s)) if !s.is_empty() => {
                                b.insert("content".into(), json!(s));
                            }
                            Some(Content::Parts(_)) => {
                                let inner = content_blocks(m.content.as_ref());
                                if !inner.is_empty() {
                                    b.insert("content".into(), Value::Array(inner));
                                }
                            }
                            _ => {}
                        }
                        Value::Object(b)
                    }
                    // A result without a declared call (its call was trimmed
                    // away) would be refused as a tool_result block; it is
                    // kept as text rather than lost.
                    None => json!({
                        "type": "text",
                        "text": format!("[{} result] {}", m.name.as_deref().unwrap_or("tool"), m.text()),
                    }),
                };
                push("user", vec![block]);
            }
        }
    }
    let messages = turns
        .into_iter()
        .map(|(role, blocks)| {
            let only_text =
                blocks.len() == 1 && blocks[0].get("type").and_then(Value::as_str) == Some("text");
            let content = if only_text {
                blocks[0].get("text").cloned().unwrap_or(Value::Null)
            } else {
                Value::Array(blocks)
            };
            json!({"role": role, "content": content})
        })
        .collect();
    let system = (!systems.is_empty()).then(|| systems.join("\n\n"));
    (system, messages)
}

/// Content blocks of a message's content: text, and images converted from
/// OpenAI `image_url` parts (data URLs become base64 sources).
fn content_blocks(content: Option<&Content>) -> Vec<Value> {
    match content {
        None => Vec::new(),
        Some(Content::Text(s)) if s.trim().is_empty() => Vec::new(),
        Some(Content::Text(s)) => vec![json!({"type": "text", "text": s})],
        Some(Content::Parts(parts)) => parts.iter().filter_map(part_block).collect(),
    }
}

fn part_block(part: &Value) -> Option<Value> {
    let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
    match kind {
        "text" => {
            let t = part.get("text").and_then(Value::as_str).unwrap_or("");
            (!t.trim().is_empty()).then(|| json!({"type": "text", "text": t}))
        }
        "image_url" => {
            let url = part
                .pointer("/image_url/url")
                .or_else(|| part.get("image_url"))
                .and_then(Value::as_str)
                .unwrap_or("");
            if let Some(rest) = url.strip_prefix("data:") {
                let (meta, data) = rest.split_once(',')?;
                let media = meta.strip_suffix(";base64").unwrap_or(meta);
                Some(
                    json!({"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}),
                )
            } else if url.is_empty() {
                None
            } else {
                Some(json!({"type": "image", "source": {"type": "url", "url": url}}))
            }
        }
        // Blocks already in Anthropic's shape pass through.
        "image" | "document" | "tool_use" | "tool_result" => Some(part.clone()),
        _ => {
            let t = Content::Parts(vec![part.clone()]).text();
            (!t.trim().is_empty()).then(|| json!({"type": "text", "text": t}))
        }
    }
}

/// Maps Anthropic's `stop_reason` to OpenAI's `finish_reason` vocabulary.
fn finish_reason(stop: Option<&str>, has_calls: bool) -> String {
    match stop {
        Some("end_turn") | Some("stop_sequence") | Some("pause_turn") => "stop".into(),
        Some("tool_use") => "tool_calls".into(),
        Some("max_tokens") | Some("model_context_window_exceeded") => "length".into(),
        Some("refusal") => "content_filter".into(),
        Some(other) => other.into(),
        None if has_calls => "tool_calls".into(),
        None => "stop".into(),
    }
}

/// Reads a Messages answer into an OpenAI-shaped assistant message: text
/// blocks joined by newlines, `tool_use` blocks as tool calls (arguments as
/// JSON text), `thinking` blocks kept as `reasoning_content`.
pub(crate) fn parse_response(v: &Value) -> std::result::Result<ChatResponse, String> {
    let blocks = v
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("no `content` array in the answer: {}", short(v)))?;
    let mut texts = Vec::new();
    let mut thinking = Vec::new();
    let mut calls = Vec::new();
    for b in blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => texts.push(
                b.get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            ),
            Some("thinking") => {
                if let Some(t) = b.get("thinking").and_then(Value::as_str) {
                    thinking.push(t.to_string());
                }
            }
            Some("tool_use") => {
                let id = b
                    .get("id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("tool_use without id: {}", short(b)))?;
                let name = b
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("tool_use without name: {}", short(b)))?;
                let input = b.get("input").cloned().unwrap_or_else(|| json!({}));
                calls.push(ToolCall {
                    id: id.to_string(),
                    kind: "function".into(),
                    function: FunctionCall {
                        name: name.to_string(),
                        arguments: Value::String(input.to_string()),
                    },
                    extra: Map::new(),
                });
            }
            _ => {}
        }
    }
    let text = texts.join("\n");
    let mut extra = Map::new();
    if !thinking.is_empty() {
        extra.insert("reasoning_content".into(), json!(thinking.join("\n")));
    }
    let content = if text.is_empty() && !calls.is_empty() {
        None
    } else {
        Some(Content::Text(text))
    };
    let finish = finish_reason(
        v.get("stop_reason").and_then(Value::as_str),
        !calls.is_empty(),
    );
    let message = Message {
        role: Role::Assistant,
        content,
        tool_calls: (!calls.is_empty()).then_some(calls),
        tool_call_id: None,
        name: None,
        timestamp: None,
        extra,
    };
    let usage = Usage {
        input_tokens: token_field(v, "/usage/input_tokens"),
        output_tokens: token_field(v, "/usage/output_tokens"),
    };
    Ok(ChatResponse {
        message,
        finish_reason: finish,
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn images_become_image_blocks() {
        let parts = Content::Parts(vec![
            json!({"type": "text", "text": "look"}),
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}),
            json!({"type": "image_url", "image_url": {"url": "https://x/y.png"}}),
        ]);
        assert_eq!(
            content_blocks(Some(&parts)),
            vec![
                json!({"type": "text", "text": "look"}),
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}),
                json!({"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}),
            ]
        );
    }

    #[test]
    fn parses_blocks() {
        let v = json!({
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "s"},
                {"type": "text", "text": "saving"},
                {"type": "tool_use", "id": "t1", "name": "save", "input": {"a": 1}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 5, "output_tokens": 2}
        });
        let r = parse_response(&v).unwrap();
        assert_eq!(r.finish_reason, "tool_calls");
        assert_eq!(r.text(), "saving");
        assert_eq!(r.tool_calls()[0].function.arguments, json!("{\"a\":1}"));
        assert_eq!(r.message.extra.get("reasoning_content"), Some(&json!("hm")));
        assert_eq!(
            r.usage,
            Usage {
                input_tokens: 5,
                output_tokens: 2
            }
        );
    }

    #[test]
    fn result_of_an_unknown_call_is_kept_as_text() {
        let (_, msgs) = convert_messages(
            None,
            &[
                Message::tool_result("gone", "exec", "out"),
                Message::user("next"),
            ],
        );
        assert_eq!(
            msgs,
            vec![json!({"role": "user", "content": [
                {"type": "text", "text": "[exec result] out"},
                {"type": "text", "text": "next"}
            ]})]
        );
    }

    #[test]
    fn orphan_tool_result_is_kept_as_text() {
        let mut m = Message::tool_result("x", "exec", "out");
        m.tool_call_id = None;
        let (_, msgs) = convert_messages(None, &[Message::user("hi"), m]);
        assert_eq!(
            msgs,
            vec![json!({"role": "user", "content": [
                {"type": "text", "text": "hi"},
                {"type": "text", "text": "[exec result] out"}
            ]})]
        );
    }
}
