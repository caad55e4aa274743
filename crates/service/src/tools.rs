//! The tool catalogue: each tool's name, the description that tells a model
//! when to call it, and its input schema generated from its argument type
//! ([`crate::args`]). The MCP server lists [`catalogue`]; an agent turn
//! offers [`agent_tools`], the same declarations.

use mnemo_llm::ToolSpec;
use schemars::JsonSchema;
use serde_json::{Map, Value};

use crate::args::{
    AppendArgs, ContextArgs, ForgetArgs, GetArgs, MemoryHistoryArgs, SearchArgs, WriteArgs,
};
use crate::schema::{input_schema, with_key};

/// Instructions sent with MCP's `initialize`.
pub const INSTRUCTIONS: &str = "mnemo keeps this agent's long-term memory as plain Markdown files \
(MEMORY.md, memory/*.md) and its conversations as JSONL session logs. Before answering anything \
about prior work, decisions, dates, people, preferences or todos, call memory_search, then \
memory_get for the lines you need, and cite the hit's `citation` (path#Lx-Ly) you used. Save \
durable facts with memory_write; never save secrets.";

const MEMORY_SEARCH: &str = "Mandatory recall step: search long-term memory (MEMORY.md, \
memory/*.md, past sessions) before answering about prior work, decisions, dates, people, \
preferences or todos. Returns snippets with path, lines, score, source, the `date` each speaks \
from and a `citation` (path#Lx-Ly) to quote; dates in the query (\"on 3 June\", \"yesterday\") \
find what was said then. Facts that hold now come first; a fact's `validity` says whether it \
still holds, and one that does not (`current` false) is history: answer with what replaced it, \
never with it. If nothing relevant comes back, say you checked and found nothing. Follow up with \
memory_get to read more lines.";

const MEMORY_GET: &str = "Read lines of a memory file (MEMORY.md or memory/**/*.md, paths \
relative to the workspace) or of a past session a hit cited (sessions/*.jsonl, secrets taken \
out) after memory_search pointed at it; a hit's citation (path#Lx-Ly) reads just its lines. A \
file that does not exist yet gives empty text. Lines of facts that no longer hold are listed \
in `ended`, with what replaced them.";

const MEMORY_WRITE: &str = "Save something worth remembering across sessions. By default \
`text` is appended, one fact per line, to today's log memory/YYYY-MM-DD.md. With `name` and \
`type` it is a durable typed memory listed in MEMORY.md (user: who the user is and prefers; \
feedback: how to work; project: who/what/when of ongoing work, absolute dates; reference: \
pointers elsewhere); a taken name is refused unless `replace` is true. With `heading` it replaces \
that `## heading` section of MEMORY.md, for core facts every prompt needs. Write in the \
conversation's language; never save secrets.";

const MEMORY_FORGET: &str = "Delete a typed memory (by its name, or its memory/… path) and its \
line in MEMORY.md, or a fact of memory/facts.md (by its id, f12), when the user asks you to forget \
it: it is gone from the files, the audit log's text and the index. Only typed memories and facts \
are deleted: the history, daily logs and session notes are append-only and are refused.";

const MEMORY_HISTORY: &str = "Every recorded change of one memory, oldest first: a fact's id \
from memory/facts.md (f12) or a typed memory's name. Each change says what was done (add, update, \
delete, forget, write), the old and new text, when, and which session and messages caused it; for a \
fact, also whether it is still true and since when.";

const SESSION_APPEND: &str = "Record messages of a conversation in its append-only session log \
(one per session key), in the OpenAI message shape ({role, content, tool_calls?, tool_call_id?, \
name?}): `messages` (a list) or `message` (one). Call it after each turn so the conversation can \
be searched, consolidated and replayed later.";

const SESSION_CONTEXT: &str = "Build the context for the next turn of a session: the system \
prompt with long-term memory and recent daily logs, the conversation history since the last \
consolidation, and the optional next user message, with token counts per part. Use it when \
starting or resuming a conversation to load what the agent should know.";

/// One tool, as every surface declares it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// Its name.
    pub name: &'static str,
    /// What it does and when to call it, for a model.
    pub description: &'static str,
    /// The JSON schema of its arguments (an object schema).
    pub input_schema: Map<String, Value>,
    /// It changes nothing.
    pub read_only: bool,
    /// It removes something.
    pub destructive: bool,
    /// An agent turn offers it too (the memory tools, not the session ones,
    /// which the turn itself performs).
    pub in_agent_turn: bool,
    /// The arguments an agent turn's model is shown, when not all: a small
    /// model fills in every argument it sees (a minimum score, a re-rank,
    /// a mode), so the ones a program tunes stay with HTTP and MCP clients.
    pub agent_args: Option<&'static [&'static str]>,
}

fn def<T: JsonSchema>(name: &'static str, description: &'static str) -> ToolDef {
    ToolDef {
        name,
        description,
        input_schema: input_schema::<T>(),
        read_only: false,
        destructive: false,
        in_agent_turn: false,
        agent_args: None,
    }
}

impl ToolDef {
    fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    fn destructive(mut self) -> Self {
        self.destructive = true;
        self
    }

    fn in_agent_turn(mut self) -> Self {
        self.in_agent_turn = true;
        self
    }

    fn agent_args(mut self, args: &'static [&'static str]) -> Self {
        self.agent_args = Some(args);
        self
    }

    fn keyed(mut self) -> Self {
        self.input_schema = with_key(self.input_schema);
        self
    }

    /// The tool as a chat model's function tool.
    pub fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            self.name,
            self.description,
            Value::Object(self.input_schema.clone()),
        )
    }
}

/// Every tool mnemo serves, in a stable order.
pub fn catalogue() -> Vec<ToolDef> {
    vec![
        def::<SearchArgs>("memory_search", MEMORY_SEARCH)
            .read_only()
            .in_agent_turn()
            .agent_args(&["query", "max_results", "as_of"]),
        def::<GetArgs>("memory_get", MEMORY_GET)
            .read_only()
            .in_agent_turn(),
        def::<WriteArgs>("memory_write", MEMORY_WRITE).in_agent_turn(),
        def::<ForgetArgs>("memory_forget", MEMORY_FORGET).destructive(),
        def::<MemoryHistoryArgs>("memory_history", MEMORY_HISTORY).read_only(),
        def::<AppendArgs>("session_append", SESSION_APPEND).keyed(),
        def::<ContextArgs>("session_context", SESSION_CONTEXT)
            .keyed()
            .read_only(),
    ]
}

/// The tools an agent turn offers the model.
pub fn agent_tools() -> Vec<ToolSpec> {
    catalogue()
        .iter()
        .filter(|t| t.in_agent_turn)
        .map(|t| match t.agent_args {
            None => t.spec(),
            Some(keep) => {
                let mut schema = t.input_schema.clone();
                if let Some(Value::Object(props)) = schema.get_mut("properties") {
                    props.retain(|k, _| keep.contains(&k.as_str()));
                }
                if let Some(Value::Array(required)) = schema.get_mut("required") {
                    required.retain(|r| r.as_str().is_some_and(|r| keep.contains(&r)));
                }
                ToolSpec::new(t.name, t.description, Value::Object(schema))
            }
        })
        .collect()
}

/// Takes a session tool's `key` out of its arguments, leaving the body.
pub fn split_key(mut args: Value) -> Result<(String, Value), String> {
    let key = args
        .as_object_mut()
        .and_then(|o| o.remove("key"))
        .and_then(|k| k.as_str().map(str::to_string));
    match key {
        Some(k) => Ok((k, args)),
        None => Err("`key` is missing: give the session key, e.g. telegram:12345".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tool list as MCP clients and models see it: a change to what a
    /// model is told shows up as one snapshot diff.
    #[test]
    fn catalogue_snapshot() {
        let tools: Vec<Value> = catalogue()
            .iter()
            .map(|t| {
                serde_json::json!({
                    "name": t.name,
                    "description": t.description,
                    "inputSchema": t.input_schema,
                    "readOnly": t.read_only,
                    "destructive": t.destructive,
                    "inAgentTurn": t.in_agent_turn,
                })
            })
            .collect();
        insta::assert_json_snapshot!("catalogue", tools);
    }

    #[test]
    fn agent_tools_are_the_catalogue_s_memory_tools() {
        let names: Vec<String> = agent_tools().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["memory_search", "memory_get", "memory_write"]);
        let search = &catalogue()[0].input_schema;
        assert_eq!(search["required"], serde_json::json!(["query"]));
        assert_eq!(search["additionalProperties"], serde_json::json!(false));
        assert_eq!(
            search["properties"]["max_results"]["maximum"],
            serde_json::json!(100)
        );
    }

    /// A turn's model sees the search arguments a question needs; the ones
    /// a program tunes (a minimum score, a re-rank, a mode, a budget)
    /// stay with HTTP and MCP clients, which see them all.
    #[test]
    fn an_agent_turn_sees_the_search_arguments_a_question_needs() {
        let search = agent_tools().into_iter().next().unwrap();
        let props: Vec<&String> = search.parameters["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        assert_eq!(props, ["query", "max_results", "as_of"]);
        assert_eq!(search.parameters["required"], serde_json::json!(["query"]));
        let full = &catalogue()[0].input_schema["properties"];
        for arg in [
            "min_score",
            "rerank",
            "expand",
            "explain",
            "mode",
            "budget_tokens",
        ] {
            assert!(full.get(arg).is_some(), "{arg} left the catalogue");
        }
    }

    #[test]
    fn session_tools_take_a_key() {
        let append = catalogue()
            .into_iter()
            .find(|t| t.name == "session_append")
            .unwrap();
        assert_eq!(append.input_schema["required"][0], "key");
        assert!(append.input_schema["properties"]["messages"].is_object());
        let (key, rest) =
            split_key(serde_json::json!({"key": "k", "message": {"role": "user"}})).unwrap();
        assert_eq!(key, "k");
        assert!(rest.get("key").is_none());
        assert!(split_key(serde_json::json!({})).is_err());
    }
}
