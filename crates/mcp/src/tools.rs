//! The tool catalogue: names, the descriptions that tell a model when to
//! call each tool, and their input schemas. Kept in one place so a change
//! to what a model is told shows up as one snapshot diff.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{json, Value};

/// Instructions sent with `initialize`.
pub const INSTRUCTIONS: &str = "mnemo keeps this agent's long-term memory as plain Markdown files \
(MEMORY.md, memory/*.md) and its conversations as JSONL session logs. Before answering anything \
about prior work, decisions, dates, people, preferences or todos, call memory_search, then \
memory_get for the lines you need, and cite the `Source: path#Lx-Ly` you used. Save durable facts \
with memory_write; never save secrets.";

/// `memory_search`.
pub const MEMORY_SEARCH: &str = "Mandatory recall step: search long-term memory (MEMORY.md, \
memory/*.md and past session transcripts) before answering about prior work, decisions, dates, \
people, preferences or todos. Returns the best snippets with path, start_line, end_line, score, \
source, the `date` each speaks from (when known) and a `Source: path#Lx-Ly` citation to quote, \
and says whether the search was hybrid \
(keywords + meaning) or keyword-only. Dates in the query (\"on 3 June\", \"in May 2023\", \
\"yesterday\") find what was said or noted then, and `dates` says how they were read. If nothing \
relevant comes back, say you checked and found nothing rather than guessing. Follow up with \
memory_get to read more lines.";

/// `memory_get`.
pub const MEMORY_GET: &str = "Read lines of a memory file after memory_search pointed at it \
(or when you already know the path): MEMORY.md or memory/**/*.md only, Markdown only, paths \
relative to the workspace. Use `from` and `lines` from a search hit to keep the read small. A \
file that does not exist yet gives empty text.";

/// `memory_write`.
pub const MEMORY_WRITE: &str = "Save something worth remembering across sessions. \
mode \"daily\": append short facts or events (one per line) to today's log memory/YYYY-MM-DD.md; \
the default for things that happened today. mode \"typed\": save a durable memory file with a \
name, a one-line description, a type (user: who the user is and what they prefer; feedback: \
corrections and confirmations of how to work; project: who/what/when of ongoing work, with \
absolute dates; reference: pointers to external resources) and a body; it is listed in \
MEMORY.md. A name already taken is refused unless `replace` is true. mode \"memory_section\": replace the body of one `## heading` section of MEMORY.md \
(created if missing), for core facts that belong in every prompt. Write in the conversation's \
language; never save secrets, credentials or things that are already in the files.";

/// `memory_forget`.
pub const MEMORY_FORGET: &str = "Delete a typed memory (by its name, or its memory/… path) and \
its line in MEMORY.md, when the user asks you to forget it or it has become wrong. Only typed \
memories are deleted: the history, daily logs and session notes are append-only and are refused.";

/// `session_append`.
pub const SESSION_APPEND: &str = "Record messages of a conversation in its append-only session \
log (one per session key), in the OpenAI message shape ({role, content, tool_calls?, \
tool_call_id?, name?}). Call it after each turn so the conversation can be searched, \
consolidated and replayed later.";

/// `session_context`.
pub const SESSION_CONTEXT: &str = "Build the context for the next turn of a session: the system \
prompt with long-term memory and recent daily logs, the conversation history since the last \
consolidation, and the optional next user message, with token counts per part. Use it when \
starting or resuming a conversation to load what the agent should know.";

/// Every tool mnemo serves, in a stable order.
pub fn tool_list() -> Vec<Tool> {
    vec![
        tool(
            "memory_search",
            MEMORY_SEARCH,
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "What to look for: names, identifiers, topics, in the conversation's language."},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Results to return (default 6)."},
                    "min_score": {"type": "number", "minimum": 0, "maximum": 1, "description": "Drop results scoring below this (default from [search] min_score)."}
                },
                "required": ["query"],
                "additionalProperties": false
            }),
            true,
        ),
        tool(
            "memory_get",
            MEMORY_GET,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Workspace-relative path, e.g. MEMORY.md or memory/2026-01-31.md."},
                    "from": {"type": "integer", "minimum": 1, "description": "First line to return (1-based, default 1)."},
                    "lines": {"type": "integer", "minimum": 1, "description": "Number of lines (default: to the end)."}
                },
                "required": ["path"],
                "additionalProperties": false
            }),
            true,
        ),
        tool(
            "memory_write",
            MEMORY_WRITE,
            json!({
                "type": "object",
                "properties": {
                    "mode": {"type": "string", "enum": ["daily", "typed", "memory_section"], "description": "Where to write."},
                    "text": {"type": "string", "description": "mode daily: the fact(s), one per line."},
                    "name": {"type": "string", "description": "mode typed: short name, also the file name."},
                    "description": {"type": "string", "description": "mode typed: one specific line saying what the memory holds."},
                    "type": {"type": "string", "enum": ["user", "feedback", "project", "reference"], "description": "mode typed: the kind of memory."},
                    "body": {"type": "string", "description": "mode typed: the memory; mode memory_section: the section's new body."},
                    "heading": {"type": "string", "description": "mode memory_section: the section heading without `## `, e.g. Preferences."},
                    "replace": {"type": "boolean", "description": "mode typed: update the memory of this name (without it, a name already taken is refused and nothing is written)."}
                },
                "required": ["mode"],
                "additionalProperties": false
            }),
            false,
        ),
        tool(
            "memory_forget",
            MEMORY_FORGET,
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "The typed memory's name, or its path memory/<name>.md."}
                },
                "required": ["name"],
                "additionalProperties": false
            }),
            false,
        ),
        tool(
            "session_append",
            SESSION_APPEND,
            json!({
                "type": "object",
                "properties": {
                    "key": {"type": "string", "description": "Session key, e.g. telegram:12345."},
                    "messages": {
                        "type": "array",
                        "minItems": 1,
                        "description": "Messages to append, oldest first.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "role": {"type": "string", "enum": ["system", "user", "assistant", "tool"]},
                                "content": {"description": "Text, or a list of content parts.", "type": ["string", "array", "null"]},
                                "tool_calls": {"type": "array", "items": {"type": "object"}},
                                "tool_call_id": {"type": "string"},
                                "name": {"type": "string"},
                                "timestamp": {"type": "string", "description": "ISO 8601; now when omitted."}
                            },
                            "required": ["role"]
                        }
                    }
                },
                "required": ["key", "messages"],
                "additionalProperties": false
            }),
            false,
        ),
        tool(
            "session_context",
            SESSION_CONTEXT,
            json!({
                "type": "object",
                "properties": {
                    "key": {"type": "string", "description": "Session key."},
                    "message": {"type": "string", "description": "The user's next message, if known."}
                },
                "required": ["key"],
                "additionalProperties": false
            }),
            true,
        ),
    ]
}

fn tool(name: &'static str, description: &'static str, schema: Value, read_only: bool) -> Tool {
    let schema: JsonObject = match schema {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    };
    let annotations = ToolAnnotations::new()
        .read_only(read_only)
        .destructive(name == "memory_forget");
    Tool::new(name, description, Arc::new(schema)).with_annotations(annotations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_list_snapshot() {
        let tools = serde_json::to_value(tool_list()).unwrap();
        insta::assert_json_snapshot!("tools_list", tools);
    }
}
