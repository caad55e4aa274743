//! The chat template: ChatML (`<|im_start|>role … <|im_end|>`), as Qwen2.5
//! and SmolLM2 use it, with tools offered and tool calls and results
//! written the way Qwen2.5's own template writes them (a `<tools>` block in
//! the system message, `<tool_call>` JSON in assistant turns,
//! `<tool_response>` in user turns). The model's default system message is
//! read from the template in the GGUF.

use mnemo_core::{Message, Role};
use mnemo_llm::{ChatRequest, ToolChoice, ToolSpec};
use serde_json::Value;

/// Starts a turn.
pub const IM_START: &str = "<|im_start|>";
/// Ends a turn.
pub const IM_END: &str = "<|im_end|>";

/// What the renderer knows of a model's template.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatTemplate {
    /// The system message the template adds when a conversation has none.
    pub default_system: Option<String>,
}

impl ChatTemplate {
    /// Reads the default system message out of a Jinja chat template, if
    /// it is a ChatML one that writes one.
    pub fn from_jinja(template: Option<&str>) -> Self {
        let default_system = template.and_then(|t| {
            ["system\\n", "system\n"].iter().find_map(|marker| {
                let at = t.find(&format!("{IM_START}{marker}"))? + IM_START.len() + marker.len();
                let rest = &t[at..];
                let end = rest.find(IM_END)?;
                let text = &rest[..end];
                (!text.is_empty() && !text.contains(['{', '}', '\'', '"', '+']))
                    .then(|| text.replace("\\n", "\n"))
            })
        });
        ChatTemplate { default_system }
    }

    /// The prompt for `req`: every message, the tools unless the choice is
    /// `None`, and the opening of the assistant's turn. When a tool is
    /// forced by name, the turn opens with the start of that call, so the
    /// model only writes the arguments.
    pub fn render(&self, req: &ChatRequest) -> String {
        let offer_tools = !req.tools.is_empty() && req.tool_choice != Some(ToolChoice::None);
        let mut messages: &[Message] = &req.messages;
        let mut system: Vec<String> = req.system.iter().cloned().collect();
        while let Some((first, rest)) = messages.split_first() {
            if first.role != Role::System {
                break;
            }
            system.push(first.text());
            messages = rest;
        }
        let mut system = system.join("\n\n");
        if system.is_empty() {
            system = self.default_system.clone().unwrap_or_default();
        }
        let mut out = String::new();
        if offer_tools {
            out.push_str(&format!("{IM_START}system\n{system}"));
            out.push_str(&tools_block(&req.tools));
            out.push_str(&format!("{IM_END}\n"));
        } else if !system.is_empty() {
            out.push_str(&format!("{IM_START}system\n{system}{IM_END}\n"));
        }
        for (i, m) in messages.iter().enumerate() {
            match m.role {
                Role::User | Role::System => {
                    out.push_str(&format!(
                        "{IM_START}{}\n{}{IM_END}\n",
                        m.role.as_str(),
                        m.text()
                    ));
                }
                Role::Assistant => {
                    out.push_str(&format!("{IM_START}assistant"));
                    let text = m.text();
                    if !text.is_empty() {
                        out.push('\n');
                        out.push_str(&text);
                    }
                    for c in m.tool_calls.as_deref().unwrap_or(&[]) {
                        out.push_str(&format!(
                            "\n<tool_call>\n{{\"name\": \"{}\", \"arguments\": {}}}\n</tool_call>",
                            c.function.name,
                            py_json(&c.function.arguments_value())
                        ));
                    }
                    out.push_str(&format!("{IM_END}\n"));
                }
                Role::Tool => {
                    let prev_tool = i > 0 && messages[i - 1].role == Role::Tool;
                    let next_tool = messages.get(i + 1).is_some_and(|n| n.role == Role::Tool);
                    if !prev_tool {
                        out.push_str(&format!("{IM_START}user"));
                    }
                    out.push_str(&format!(
                        "\n<tool_response>\n{}\n</tool_response>",
                        m.text()
                    ));
                    if !next_tool {
                        out.push_str(&format!("{IM_END}\n"));
                    }
                }
            }
        }
        out.push_str(&format!("{IM_START}assistant\n"));
        out
    }
}

/// The text that opens a forced call of `name`: the model continues with
/// the arguments object.
pub fn forced_call_opening(name: &str) -> String {
    format!(
        "<tool_call>\n{{\"name\": {}, \"arguments\": ",
        py_json(&Value::String(name.into()))
    )
}

fn tools_block(tools: &[ToolSpec]) -> String {
    let mut s = String::from(
        "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
         You are provided with function signatures within <tools></tools> XML tags:\n<tools>",
    );
    for t in tools {
        let spec = serde_json::json!({
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters}
        });
        s.push('\n');
        s.push_str(&py_json(&spec));
    }
    s.push_str(
        "\n</tools>\n\nFor each function call, return a json object with function name and arguments \
         within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \
         \"arguments\": <args-json-object>}\n</tool_call>",
    );
    s
}

/// JSON as the templates' `tojson` writes it (Python's `json.dumps` with
/// `ensure_ascii=False`): `", "` and `": "` separators, keys in order.
pub fn py_json(v: &Value) -> String {
    match v {
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(py_json).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{}: {}", Value::String(k.clone()), py_json(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}
