//! The agent loop: one user turn run to its final answer.
//! [`Engine::run_turn`] appends the user message to the log first (so that
//! nothing slow after it, a failure or Ctrl-C, can lose it), prepares the
//! session (as [`Engine::prepare_turn`] does: consolidation, flush,
//! compaction; in the background mode of [`crate::memory_work`] only what
//! the prompt needs to fit, the rest left to [`Engine::spawn_memory_work`]
//! after the answer), picks memory files ([`Engine::select_memories`]),
//! then calls the model ([`Engine::send_from_log`], with its reactive
//! compaction). When the model asks for tools, the assistant's call and the
//! results (from a [`ToolExecutor`]) are appended to the log and the model
//! is called again from the log, without a new user message, until it
//! answers without tools or the iteration bound is hit.
//!
//! The loop owns no tools itself: the caller declares them
//! ([`Engine::with_tools`]) and runs them with its [`ToolExecutor`] (mnemo's
//! service declares and runs the memory tools for every surface), so any
//! surface can reuse the loop.

use mnemo_core::{Message, Role};
use mnemo_llm::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use crate::compact::{Request, TurnReport};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::events::EngineEvent;
use crate::memory_work::{MemoryWorkMode, MemoryWorkReport};
use crate::recall::RecallOutcome;

/// Model calls a turn may make by default before it is stopped.
pub const DEFAULT_MAX_ITERATIONS: usize = 8;

/// Runs the tools the model calls.
pub trait ToolExecutor: Send + Sync {
    /// Runs tool `name` with `arguments` (always a JSON object). `Ok` is the
    /// result text for the model; `Err` is a message saying what went wrong
    /// and how to call the tool instead, sent to the model as an error
    /// result (the turn goes on).
    fn execute<'a>(
        &'a self,
        name: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, std::result::Result<String, String>>;
}

/// How a turn runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnOptions {
    /// Model calls at most (the first answer included); at the bound the
    /// turn ends with a notice instead of an answer.
    pub max_iterations: usize,
    /// Run the recall side query before the turn.
    pub recall: bool,
}

impl Default for TurnOptions {
    fn default() -> Self {
        TurnOptions {
            max_iterations: DEFAULT_MAX_ITERATIONS,
            recall: true,
        }
    }
}

/// One tool call made during a turn and its result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolCallRecord {
    /// The call id (the model's, or `call_<iteration>_<n>` when it gave none).
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments as the model sent them (parsed when they were JSON text).
    pub arguments: Value,
    /// The result sent back to the model (errors start with `Error:`).
    pub result: String,
    /// True when the tool failed or could not be called.
    pub is_error: bool,
}

/// What a turn did and its answer.
#[derive(Debug, Clone, Serialize)]
pub struct AgentTurn {
    /// Session key.
    pub key: String,
    /// The final answer (the bound notice when the bound was hit).
    pub answer: String,
    /// Tool calls, in order.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Everything the engine did: `prepare_turn`'s events, then reactive
    /// compactions during the model calls.
    pub events: Vec<EngineEvent>,
    /// Prompt tokens before and after `prepare_turn`.
    pub prepare: TurnReport,
    /// The recall side query's selection.
    pub recall: RecallOutcome,
    /// Model calls made.
    pub iterations: usize,
    /// The turn was stopped at `max_iterations` without a final answer.
    pub hit_iteration_limit: bool,
    /// Where the turn's memory work (consolidation, the flush at its
    /// threshold) runs: `inline` (done before the answer; its events are in
    /// `events`) or `background` (not done yet: the caller starts it with
    /// [`Engine::spawn_memory_work`] after the answer).
    pub memory_work: MemoryWorkMode,
}

/// Progress of a turn as it happens (for live output; the same facts are
/// in the [`AgentTurn`] at the end).
#[derive(Debug)]
pub enum AgentStep<'a> {
    /// The memory work the last turn left running was stopped so that this
    /// turn answers at once (it runs again after this turn).
    MemoryWorkStopped(&'a MemoryWorkReport),
    /// `prepare_turn` ran (its events, tokens before and after).
    Prepared(&'a TurnReport),
    /// The recall side query answered.
    Recalled(&'a RecallOutcome),
    /// The engine did something during a model call (reactive compaction).
    Engine(&'a EngineEvent),
    /// Text the model wrote beside its tool calls (logged with them; not
    /// the final answer).
    Said(&'a str),
    /// A tool is about to run.
    ToolStarted {
        /// Tool name.
        name: &'a str,
        /// Its arguments.
        arguments: &'a Value,
    },
    /// A tool ran.
    ToolFinished(&'a ToolCallRecord),
}

/// The text the turn ends with when the bound is hit.
pub fn iteration_limit_notice(max_iterations: usize) -> String {
    format!(
        "I stopped after {max_iterations} model calls without reaching a final answer (the tool-call \
         limit of one turn). Ask me to continue, or split the task into smaller steps."
    )
}

impl Engine {
    fn append_to_log(&self, key: &str, messages: &[Message]) -> Result<()> {
        self.sessions.open(key)?.append(messages)?;
        Ok(())
    }

    /// Runs one user turn to its final answer (see the module docs). Every
    /// message is appended to the session log as it happens: the user
    /// message before anything else, each assistant message (with its tool
    /// calls), the tool results, the final answer. When a step fails (or
    /// the caller drops the turn), the error is returned and the log keeps
    /// what was appended so far, the user message at least; the steps
    /// already reported through `observe` (compactions among them) stand.
    /// With [`MemoryWorkMode::Background`] (see `memory_work` in the
    /// answer) the caller starts the memory work after it.
    pub async fn run_turn(
        &self,
        key: &str,
        user_message: &str,
        tools: &dyn ToolExecutor,
        options: &TurnOptions,
        observe: &(dyn Fn(AgentStep<'_>) + Send + Sync),
    ) -> Result<AgentTurn> {
        if user_message.trim().is_empty() {
            return Err(Error::Invalid(
                "the message is empty: say something for the model to answer".into(),
            ));
        }
        if options.max_iterations == 0 {
            return Err(Error::Invalid(
                "max_iterations is 0: allow at least 1 model call per turn".into(),
            ));
        }
        // Logged before anything slow: the compaction records the
        // preparation writes come after it, and the model's answer after
        // them, so the user message is still the last message before the
        // answer, and the history the model sees ends with it.
        self.append_to_log(key, &[Message::user(user_message)])?;
        if let Some(stopped) = self.stop_memory_work(key).await {
            observe(AgentStep::MemoryWorkStopped(&stopped));
        }
        let memory_work = self.memory_work_mode();
        let prepare = self
            .prepare(key, Request::Logged, memory_work == MemoryWorkMode::Inline)
            .await?;
        observe(AgentStep::Prepared(&prepare));
        let recall = if options.recall {
            self.select_memories(key, user_message).await
        } else {
            RecallOutcome::default()
        };
        observe(AgentStep::Recalled(&recall));

        let mut events = prepare.events.clone();
        let mut records: Vec<ToolCallRecord> = Vec::new();
        // (answer, model calls made); `None` at the bound.
        let mut finished: Option<(String, usize)> = None;
        for iteration in 1..=options.max_iterations {
            let outcome = self.send_from_log(key, &recall.selected).await?;
            for e in &outcome.events {
                observe(AgentStep::Engine(e));
            }
            events.extend(outcome.events);
            let mut message = outcome.response.message;
            message.role = Role::Assistant;
            message.timestamp = None;
            let mut calls = message.tool_calls.take().unwrap_or_default();
            if calls.is_empty() {
                let answer = message.text();
                self.append_to_log(key, &[message])?;
                finished = Some((answer, iteration));
                break;
            }
            for (n, c) in calls.iter_mut().enumerate() {
                if c.id.trim().is_empty() {
                    c.id = format!("call_{iteration}_{n}");
                }
            }
            message.tool_calls = Some(calls.clone());
            let said = message.text();
            if !said.trim().is_empty() {
                observe(AgentStep::Said(said.trim()));
            }
            self.append_to_log(key, &[message])?;
            let mut results = Vec::with_capacity(calls.len());
            for call in &calls {
                let name = call.function.name.as_str();
                let arguments = call.function.arguments_value();
                observe(AgentStep::ToolStarted {
                    name,
                    arguments: &arguments,
                });
                let outcome = if arguments.is_object() {
                    tools.execute(name, &arguments).await
                } else {
                    Err(format!(
                        "the arguments of {name} are not a JSON object ({}): send an object such as {{\"query\": \"…\"}}",
                        crate::pipeline::clip(&call.function.arguments_string(), 200)
                    ))
                };
                let (result, is_error) = match outcome {
                    Ok(text) => (text, false),
                    Err(e) => (format!("Error: {e}"), true),
                };
                let record = ToolCallRecord {
                    id: call.id.clone(),
                    name: name.to_string(),
                    arguments,
                    result,
                    is_error,
                };
                observe(AgentStep::ToolFinished(&record));
                results.push(Message::tool_result(
                    record.id.clone(),
                    record.name.clone(),
                    record.result.clone(),
                ));
                records.push(record);
            }
            // One append for the results of one assistant message, so the
            // log's per-turn tool-result budget sees them together.
            self.append_to_log(key, &results)?;
        }
        let hit_iteration_limit = finished.is_none();
        let (answer, iterations) = match finished {
            Some(done) => done,
            None => {
                let notice = iteration_limit_notice(options.max_iterations);
                self.append_to_log(key, &[Message::assistant(notice.clone())])?;
                (notice, options.max_iterations)
            }
        };
        Ok(AgentTurn {
            key: key.to_string(),
            answer,
            tool_calls: records,
            events,
            prepare,
            recall,
            iterations,
            hit_iteration_limit,
            memory_work,
        })
    }
}
