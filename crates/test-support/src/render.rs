//! Rendering of [`Reply`] values in the OpenAI and Anthropic wire shapes,
//! the chars/4 usage estimate and the deterministic hashed embeddings.

use serde_json::{json, Map, Value};

use crate::reply::{Body, Reply};

/// The protocol of the endpoint that was hit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    OpenAiChat,
    AnthropicMessages,
    OpenAiEmbeddings,
}

/// chars/4, rounded up: the usage the server reports. Tests can compute
/// the same number with this function.
pub fn estimate_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

/// Characters of the conversational text of a request body: every string
/// under `content`, `text`, `arguments`, `system`, and tool-use `input`
/// objects as JSON text.
pub(crate) fn request_chars(body: &Value) -> usize {
    let mut n = 0;
    if let Some(obj) = body.as_object() {
        for key in ["system", "messages"] {
            if let Some(v) = obj.get(key) {
                n += text_chars(v, key);
            }
        }
    }
    n
}

fn text_chars(v: &Value, key: &str) -> usize {
    match v {
        Value::String(s) => {
            if matches!(key, "content" | "text" | "arguments" | "system") {
                s.chars().count()
            } else {
                0
            }
        }
        Value::Array(items) => items.iter().map(|i| text_chars(i, key)).sum(),
        Value::Object(map) => map
            .iter()
            .map(|(k, val)| {
                if k == "input" && val.is_object() {
                    val.to_string().chars().count()
                } else {
                    text_chars(val, k)
                }
            })
            .sum(),
        _ => 0,
    }
}

/// A deterministic unit vector for `text`: a signed hashed bag of words
/// (lower-cased alphanumeric runs; every CJK character is its own word).
/// Texts sharing words get a positive cosine, so retrieval tests behave
/// sensibly; an empty text maps to the first basis vector.
pub fn hashed_embedding(text: &str, dims: usize) -> Vec<f32> {
    let dims = dims.max(1);
    let mut v = vec![0f32; dims];
    for word in words(text) {
        let h = fnv1a(word.as_bytes());
        let slot = (h % dims as u64) as usize;
        let sign = if (h >> 63) == 1 { -1.0 } else { 1.0 };
        v[slot] += sign;
    }
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 {
        v[0] = 1.0;
    } else {
        for x in &mut v {
            *x /= norm;
        }
    }
    v
}

fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        let cjk = ('\u{2E80}'..='\u{9FFF}').contains(&c)
            || ('\u{AC00}'..='\u{D7AF}').contains(&c)
            || ('\u{F900}'..='\u{FAFF}').contains(&c);
        if cjk {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            out.push(c.to_string());
        } else if c.is_alphanumeric() {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A rendered HTTP answer.
pub(crate) struct Rendered {
    pub status: u16,
    pub body: Value,
}

/// Renders `reply` for `endpoint`; `seq` numbers ids, `request` is the
/// parsed request body.
pub(crate) fn render(
    reply: &Reply,
    endpoint: Endpoint,
    seq: u64,
    request: &Value,
    dims: usize,
) -> Rendered {
    let model = request
        .get("model")
        .cloned()
        .unwrap_or(Value::String("scripted".into()));
    match &reply.body {
        Body::Error { status, body } | Body::Raw { status, body } => Rendered {
            status: *status,
            body: body.clone(),
        },
        Body::Chat {
            text,
            calls,
            finish_reason,
        } => {
            let out_chars = text.as_ref().map_or(0, |t| t.chars().count())
                + calls
                    .iter()
                    .map(|(n, a)| n.chars().count() + a.to_string().chars().count())
                    .sum::<usize>();
            let input = estimate_tokens(request_chars(request));
            let output = estimate_tokens(out_chars);
            match endpoint {
                Endpoint::OpenAiChat => Rendered {
                    status: 200,
                    body: openai_chat(seq, model, text, calls, finish_reason, input, output),
                },
                Endpoint::AnthropicMessages => Rendered {
                    status: 200,
                    body: anthropic_message(seq, model, text, calls, finish_reason, input, output),
                },
                Endpoint::OpenAiEmbeddings => Rendered {
                    status: 500,
                    body: error_body("a chat reply was scripted but /v1/embeddings was called"),
                },
            }
        }
        Body::Embeddings { vectors, reversed } => {
            if endpoint != Endpoint::OpenAiEmbeddings {
                return Rendered {
                    status: 500,
                    body: error_body(
                        "an embeddings reply was scripted but a chat endpoint was called",
                    ),
                };
            }
            let inputs = embedding_inputs(request).unwrap_or_default();
            let vectors: Vec<Vec<f32>> = match vectors {
                Some(v) => v.clone(),
                None => inputs.iter().map(|t| hashed_embedding(t, dims)).collect(),
            };
            let mut data: Vec<Value> = vectors
                .iter()
                .enumerate()
                .map(|(i, v)| json!({"object": "embedding", "index": i, "embedding": v}))
                .collect();
            if *reversed {
                data.reverse();
            }
            let tokens = estimate_tokens(inputs.iter().map(|t| t.chars().count()).sum());
            Rendered {
                status: 200,
                body: json!({
                    "object": "list",
                    "data": data,
                    "model": model,
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                }),
            }
        }
    }
}

/// The texts of an embeddings request: `input` as a string or an array of
/// strings. Token-id inputs are not supported.
pub(crate) fn embedding_inputs(request: &Value) -> Result<Vec<String>, String> {
    match request.get("input") {
        Some(Value::String(s)) => Ok(vec![s.clone()]),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str().map(str::to_string).ok_or_else(|| {
                    "every item of `input` must be a string (token ids are not supported)"
                        .to_string()
                })
            })
            .collect(),
        _ => Err("`input` must be a string or an array of strings".to_string()),
    }
}

/// An OpenAI-style error body.
pub(crate) fn error_body(message: &str) -> Value {
    json!({"error": {"message": format!("scripted server: {message}"), "type": "scripted_server_error"}})
}

fn openai_chat(
    seq: u64,
    model: Value,
    text: &Option<String>,
    calls: &[(String, Value)],
    finish_reason: &Option<String>,
    input: u64,
    output: u64,
) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), json!("assistant"));
    message.insert(
        "content".into(),
        text.as_ref().map_or(Value::Null, |t| json!(t)),
    );
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, (name, args))| {
                json!({
                    "id": format!("call_{seq}_{i}"),
                    "type": "function",
                    "function": {"name": name, "arguments": args.to_string()},
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    let finish = finish_reason.clone().unwrap_or_else(|| {
        if calls.is_empty() {
            "stop".into()
        } else {
            "tool_calls".into()
        }
    });
    json!({
        "id": format!("chatcmpl-scripted-{seq}"),
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output},
    })
}

fn anthropic_message(
    seq: u64,
    model: Value,
    text: &Option<String>,
    calls: &[(String, Value)],
    finish_reason: &Option<String>,
    input: u64,
    output: u64,
) -> Value {
    let mut content = Vec::new();
    if let Some(t) = text {
        content.push(json!({"type": "text", "text": t}));
    }
    for (i, (name, args)) in calls.iter().enumerate() {
        content.push(json!({"type": "tool_use", "id": format!("toolu_{seq}_{i}"), "name": name, "input": args}));
    }
    let stop = match finish_reason.as_deref() {
        Some("length") => "max_tokens".to_string(),
        Some("stop") => "end_turn".to_string(),
        Some("tool_calls") => "tool_use".to_string(),
        Some(other) => other.to_string(),
        None if calls.is_empty() => "end_turn".to_string(),
        None => "tool_use".to_string(),
    };
    json!({
        "id": format!("msg_scripted_{seq}"),
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": output},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashed_embedding_is_unit_and_deterministic() {
        let a = hashed_embedding("The cat sat on the mat", 32);
        let b = hashed_embedding("the CAT sat, on the mat!", 32);
        assert_eq!(a, b);
        let norm: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-5, "{norm}");
        assert_eq!(
            hashed_embedding("", 8),
            vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        );
        assert_eq!(words("我喜欢 tea2go"), vec!["我", "喜", "欢", "tea2go"]);
    }

    #[test]
    fn request_chars_counts_text_only() {
        let body = json!({
            "model": "m",
            "system": "abcd",
            "messages": [
                {"role": "user", "content": "12345678"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "x", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}]},
            ]
        });
        assert_eq!(request_chars(&body), 4 + 8 + 2 + 2);
    }
}
