//! [`LocalChat`]: a GGUF model behind the [`ChatModel`] trait. One request
//! at a time runs on a blocking thread; dropping the request's future (a
//! timeout, a cancelled turn) stops the generation at the next token.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use candle_core::quantized::gguf_file::Content;
use mnemo_core::{FunctionCall, Message, ToolCall};
use mnemo_llm::{
    BoxFuture, ChatModel, ChatRequest, ChatResponse, LlmError, ModelInfo, ToolChoice, Usage,
};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::grammar::{JsonMatcher, Node};
use crate::model::{architecture, check_extents, Model};
use crate::template::{forced_call_opening, py_json, ChatTemplate, IM_END, IM_START};
use crate::tokenizer::GgufTokenizer;
use crate::toolcalls;

/// Logits of tokens among the last [`REPEAT_WINDOW`] generated are divided
/// by this (multiplied when negative), as llama.cpp does by default: small
/// models otherwise fall into loops that only the budget ends.
pub const REPEAT_PENALTY: f32 = 1.1;
/// How many recent tokens [`REPEAT_PENALTY`] looks at.
pub const REPEAT_WINDOW: usize = 64;

/// Tokens before the end of a forced call's budget at which each token is
/// checked to leave room for closing the value: more than one token can
/// add to what closing takes (`{"` of an object with required keys).
const CLOSE_MARGIN: usize = 48;

/// Smallest output budget a prompt must leave free in the context window;
/// below it the prompt is reported as too long (so the engine compacts)
/// rather than answered in a few tokens.
pub const MIN_OUTPUT_ROOM: usize = 256;

/// How a local model is run.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalOptions {
    /// Name reported in [`ModelInfo::model`].
    pub name: String,
    /// Context window in tokens (capped at the model's training length).
    pub context_window: u32,
    /// Default output cap in tokens.
    pub max_output: u32,
    /// Seed of the sampler when a temperature is set.
    pub seed: u64,
}

/// Timings of the last request, for benchmarks and `tracing`.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GenerationStats {
    /// Prompt tokens.
    pub prompt_tokens: usize,
    /// Of which the KV cache already held.
    pub reused_tokens: usize,
    /// Seconds spent on the prompt.
    pub prompt_secs: f64,
    /// Tokens generated.
    pub generated_tokens: usize,
    /// Seconds spent generating them.
    pub generate_secs: f64,
}

struct Engine {
    model: Model,
    tokenizer: GgufTokenizer,
    template: ChatTemplate,
    stops: Vec<u32>,
    seed: u64,
    calls: u64,
    max_output: usize,
    stats: GenerationStats,
    cancelled: u64,
}

/// A GGUF chat model run inside the process.
pub struct LocalChat {
    info: ModelInfo,
    engine: Arc<Mutex<Engine>>,
    label: String,
    path: PathBuf,
    ids: Arc<AtomicU64>,
}

impl std::fmt::Debug for LocalChat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalChat")
            .field("info", &self.info)
            .field("path", &self.path)
            .finish()
    }
}

impl LocalChat {
    /// Loads the GGUF at `path`.
    pub fn load(path: &Path, options: &LocalOptions) -> Result<Self> {
        let bad = |message: String| Error::BadModel {
            path: path.to_path_buf(),
            message,
        };
        let mut file = File::open(path).map_err(|e| {
            Error::NotFound(format!(
                "cannot open the model file {}: {e}",
                path.display()
            ))
        })?;
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        let ct = Content::read(&mut file).map_err(|e| {
            bad(format!(
                "it is not a readable GGUF file ({e}); fetch it again (scripts/fetch-models.sh --chat) or point `path` at a .gguf file"
            ))
        })?;
        check_extents(&ct, len, path)?;
        let arch = architecture(&ct);
        let tokenizer = GgufTokenizer::from_gguf(&ct).map_err(|e| bad(e.to_string()))?;
        if tokenizer.id(IM_START).is_none() || tokenizer.id(IM_END).is_none() {
            return Err(bad(format!(
                "its vocabulary has no {IM_START} / {IM_END} tokens: mnemo runs models with a ChatML chat template (Qwen2.5, SmolLM2)"
            )));
        }
        let template = ChatTemplate::from_jinja(
            ct.metadata
                .get("tokenizer.chat_template")
                .and_then(|v| v.to_string().ok())
                .map(String::as_str),
        );
        let cfg = crate::model::ModelConfig::from_gguf(&ct).map_err(|e| bad(e.to_string()))?;
        let context = (options.context_window as usize)
            .min(cfg.train_context)
            .max(MIN_OUTPUT_ROOM * 2);
        let model = Model::load(&ct, &mut file, context).map_err(|e| match e {
            Error::Invalid(m) => bad(m),
            other => other,
        })?;
        let mut stops: Vec<u32> = [IM_END, "<|endoftext|>", "<|eot_id|>"]
            .iter()
            .filter_map(|t| tokenizer.id(t))
            .collect();
        stops.extend(tokenizer.eos);
        let info = ModelInfo {
            provider: "local".into(),
            model: options.name.clone(),
            context_window: context as u32,
            max_output: options.max_output.min(context as u32 / 2).max(1),
        };
        tracing::debug!(path = %path.display(), %arch, context, "local chat model loaded");
        let max_output = info.max_output as usize;
        Ok(LocalChat {
            label: format!("local model `{}` ({})", options.name, path.display()),
            info,
            engine: Arc::new(Mutex::new(Engine {
                model,
                tokenizer,
                template,
                stops,
                seed: options.seed,
                calls: 0,
                max_output,
                stats: GenerationStats::default(),
                cancelled: 0,
            })),
            path: path.to_path_buf(),
            ids: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The model file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Timings of the last request.
    pub fn last_stats(&self) -> GenerationStats {
        self.engine.lock().unwrap_or_else(|e| e.into_inner()).stats
    }

    /// How many generations stopped because their caller went away.
    pub fn cancelled_generations(&self) -> u64 {
        self.engine
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .cancelled
    }

    /// The prompt `req` renders to (for tests and debugging).
    pub fn render(&self, req: &ChatRequest) -> String {
        let e = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        e.template.render(req)
    }

    /// Token ids of `text` under the model's tokenizer.
    pub fn tokenize(&self, text: &str) -> Result<Vec<u32>> {
        self.engine
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .tokenizer
            .encode(text)
    }

    /// Runs `req` on this thread (blocking): what [`ChatModel::complete`]
    /// does on a blocking thread. Setting `cancel` stops it.
    pub fn complete_blocking(
        &self,
        req: &ChatRequest,
        cancel: &AtomicBool,
    ) -> Result<ChatResponse> {
        let mut e = self.engine.lock().unwrap_or_else(|e| e.into_inner());
        let n = self.ids.fetch_add(1, Ordering::Relaxed);
        e.generate(req, cancel, n)
    }
}

/// Sets the flag when dropped: the generation notices and stops.
struct CancelOnDrop(Arc<AtomicBool>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl ChatModel for LocalChat {
    fn complete(
        &self,
        req: ChatRequest,
    ) -> BoxFuture<'_, std::result::Result<ChatResponse, LlmError>> {
        let engine = self.engine.clone();
        let ids = self.ids.clone();
        let label = self.label.clone();
        Box::pin(async move {
            let cancel = Arc::new(AtomicBool::new(false));
            let _guard = CancelOnDrop(cancel.clone());
            let task = tokio::task::spawn_blocking(move || {
                let mut e = engine.lock().unwrap_or_else(|e| e.into_inner());
                let n = ids.fetch_add(1, Ordering::Relaxed);
                e.generate(&req, &cancel, n)
            });
            match task.await {
                Ok(r) => r.map_err(|e| e.into_llm(&label)),
                Err(e) => Err(
                    Error::Inference(format!("the generation thread failed: {e}")).into_llm(&label),
                ),
            }
        })
    }

    fn info(&self) -> &ModelInfo {
        &self.info
    }
}

/// A tiny deterministic generator for sampling with a temperature.
struct Rng(u64);

impl Rng {
    fn next_f32(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
}

/// How a forced call is generated.
enum Forced {
    /// Just this tool: its arguments are constrained.
    One(String, Value),
    /// Any of these tools: the name first, then that tool's arguments.
    AnyOf(Vec<(String, Value)>),
}

impl Engine {
    fn generate(
        &mut self,
        req: &ChatRequest,
        cancel: &AtomicBool,
        call_no: u64,
    ) -> Result<ChatResponse> {
        let out = self.generate_inner(req, cancel, call_no);
        if matches!(out, Err(Error::Cancelled)) {
            self.cancelled += 1;
        }
        out
    }

    fn generate_inner(
        &mut self,
        req: &ChatRequest,
        cancel: &AtomicBool,
        call_no: u64,
    ) -> Result<ChatResponse> {
        self.calls += 1;
        let forced = forced_call(req)?;
        let mut prompt = self.template.render(req);
        match &forced {
            Some(Forced::One(name, _)) => prompt.push_str(&forced_call_opening(name)),
            Some(Forced::AnyOf(_)) => prompt.push_str("<tool_call>\n{\"name\": "),
            None => {}
        }
        let tokens = self.tokenizer.encode(&prompt)?;
        let context = self.model.max_positions();
        let want = req
            .max_tokens
            .map(|m| m as usize)
            .unwrap_or(self.max_output)
            .max(1);
        let room = context.saturating_sub(tokens.len());
        if room < want.min(MIN_OUTPUT_ROOM) {
            return Err(Error::ContextOverflow(format!(
                "the prompt has {} tokens and the context window {context}, leaving {room} for the answer (at least {} needed): compact the conversation first",
                tokens.len(),
                want.min(MIN_OUTPUT_ROOM)
            )));
        }
        let budget = want.min(room);
        let started = Instant::now();
        let (mut logits, reused) = self.model.prefill(&tokens, cancel)?;
        let prompt_secs = started.elapsed().as_secs_f64();
        let started = Instant::now();
        let mut rng = Rng(self.seed ^ (self.calls.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1);
        let temperature = req.temperature.unwrap_or(0.0);
        let mut generated = 0usize;

        let result = match forced {
            Some(forced) => {
                let (name, schema) = match forced {
                    Forced::One(name, schema) => (name, schema),
                    Forced::AnyOf(tools) => {
                        let names: Vec<Value> = tools
                            .iter()
                            .map(|(n, _)| Value::String(n.clone()))
                            .collect();
                        let node = Node::compile(&serde_json::json!({"enum": names}));
                        let (text, l) = self.constrained(
                            node,
                            logits,
                            budget,
                            &mut generated,
                            temperature,
                            &mut rng,
                            cancel,
                            "the tool name",
                        )?;
                        let name: String = serde_json::from_str(&text)
                            .map_err(|e| Error::BadAnswer(format!("tool name {text}: {e}")))?;
                        let schema = tools
                            .into_iter()
                            .find(|(n, _)| *n == name)
                            .map(|(_, s)| s)
                            .unwrap_or(Value::Null);
                        logits = l;
                        for t in self.tokenizer.encode(", \"arguments\": ")? {
                            logits = self.model.step(t)?;
                        }
                        (name, schema)
                    }
                };
                let node = Node::compile(&schema);
                let (args, _) = self.constrained(
                    node,
                    logits,
                    budget,
                    &mut generated,
                    temperature,
                    &mut rng,
                    cancel,
                    &format!("the forced {name} call"),
                )?;
                let arguments: Value = serde_json::from_str(&args).map_err(|e| {
                    Error::BadAnswer(format!("the {name} arguments are not JSON ({e}): {args}"))
                })?;
                let call = ToolCall {
                    id: format!("call_{call_no}"),
                    kind: "function".into(),
                    function: FunctionCall {
                        name,
                        arguments: Value::String(py_json(&arguments)),
                    },
                    extra: Map::new(),
                };
                let mut message = Message::assistant("");
                message.content = None;
                message.tool_calls = Some(vec![call]);
                ChatResponse {
                    message,
                    finish_reason: "tool_calls".into(),
                    usage: Usage::default(),
                }
            }
            None => self.free(
                req,
                logits,
                budget,
                &mut generated,
                temperature,
                &mut rng,
                cancel,
                call_no,
            )?,
        };
        self.stats = GenerationStats {
            prompt_tokens: tokens.len(),
            reused_tokens: reused,
            prompt_secs,
            generated_tokens: generated,
            generate_secs: started.elapsed().as_secs_f64(),
        };
        tracing::debug!(stats = ?self.stats, "local generation");
        Ok(ChatResponse {
            usage: Usage {
                input_tokens: tokens.len() as u32,
                output_tokens: generated as u32,
            },
            ..result
        })
    }

    /// Unconstrained generation until an end-of-turn token or the budget,
    /// then tool calls read from the text.
    #[allow(clippy::too_many_arguments)]
    fn free(
        &mut self,
        req: &ChatRequest,
        mut logits: Vec<f32>,
        budget: usize,
        generated: &mut usize,
        temperature: f32,
        rng: &mut Rng,
        cancel: &AtomicBool,
        call_no: u64,
    ) -> Result<ChatResponse> {
        let mut out = Vec::new();
        let mut finish = "length";
        while *generated < budget {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            penalize(&mut logits, &out);
            let t = sample(&logits, temperature, rng);
            *generated += 1;
            if self.stops.contains(&t) {
                finish = "stop";
                break;
            }
            out.push(t);
            logits = self.model.step(t)?;
        }
        let text = self.tokenizer.decode(&out);
        let offered: Vec<&str> = if req.tool_choice == Some(ToolChoice::None) {
            Vec::new()
        } else {
            req.tools.iter().map(|t| t.name.as_str()).collect()
        };
        let parsed = toolcalls::parse(&text, &offered).map_err(|m| {
            Error::BadAnswer(if finish == "length" {
                format!("the model ran past its budget of {budget} tokens: {m}")
            } else {
                m
            })
        })?;
        let mut message = Message::assistant(parsed.content.clone());
        if parsed.content.is_empty() {
            message.content = None;
        }
        if !parsed.calls.is_empty() {
            finish = "tool_calls";
            message.tool_calls = Some(
                parsed
                    .calls
                    .into_iter()
                    .enumerate()
                    .map(|(i, c)| ToolCall {
                        id: format!("call_{call_no}_{i}"),
                        kind: "function".into(),
                        function: FunctionCall {
                            name: c.name,
                            arguments: Value::String(py_json(&c.arguments)),
                        },
                        extra: Map::new(),
                    })
                    .collect(),
            );
        } else if message.content.is_none() {
            message.content = Some(mnemo_core::Content::Text(String::new()));
        }
        Ok(ChatResponse {
            message,
            finish_reason: finish.into(),
            usage: Usage::default(),
        })
    }

    /// Generates one JSON value of `node`, token by token, only ever taking
    /// a token the matcher accepts; returns its text and the logits after
    /// it. Running out of budget first is an error: a forced call is never
    /// cut short and passed on as if whole.
    #[allow(clippy::too_many_arguments)]
    fn constrained(
        &mut self,
        node: Arc<Node>,
        mut logits: Vec<f32>,
        budget: usize,
        generated: &mut usize,
        temperature: f32,
        rng: &mut Rng,
        cancel: &AtomicBool,
        what: &str,
    ) -> Result<(String, Vec<f32>)> {
        let mut matcher = JsonMatcher::new(node);
        let mut bytes = Vec::new();
        let mut recent: Vec<u32> = Vec::new();
        let vocab = self.tokenizer.vocab_size().min(logits.len());
        loop {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let over_budget = |bytes: &[u8]| {
                let text = String::from_utf8_lossy(bytes);
                let tail: String = {
                    let chars: Vec<char> = text.chars().collect();
                    chars[chars.len().saturating_sub(160)..].iter().collect()
                };
                Error::BadAnswer(format!(
                    "the model spent its budget of {budget} tokens inside {what} without closing its JSON ({} bytes so far, ending {tail:?}); raise max_tokens / max_output",
                    bytes.len()
                ))
            };
            if *generated >= budget {
                return Err(over_budget(&bytes));
            }
            penalize(&mut logits, &recent);
            // Near the end of the budget, a token must leave room to close
            // the value (one token per byte of `closing` at worst): a small
            // model that writes on is steered to close its call in time
            // rather than fail at the limit.
            let left = budget - *generated;
            let tight = matcher.closing().len() + CLOSE_MARGIN >= left;
            let ok = |id: usize| {
                if self.tokenizer.is_control(id as u32) {
                    return false;
                }
                let tb = self.tokenizer.token_bytes(id as u32);
                match matcher.usable_prefix(tb) {
                    None => false,
                    Some(n) if tight && n == tb.len() => {
                        let mut m = matcher.clone();
                        m.feed(tb);
                        m.is_done() || m.closing().len() < left
                    }
                    Some(_) => true,
                }
            };
            let best = crate::model::argmax(&logits[..vocab]) as usize;
            let choice = if temperature <= 0.0 && ok(best) {
                best
            } else {
                let mut order: Vec<usize> = (0..vocab).collect();
                order.sort_unstable_by(|&a, &b| logits[b].total_cmp(&logits[a]));
                let allowed: Vec<usize> = order
                    .into_iter()
                    .filter(|&i| ok(i))
                    .take(if temperature > 0.0 { 40 } else { 1 })
                    .collect();
                if allowed.is_empty() && tight {
                    // Not even the shortest way to close fits any more.
                    return Err(over_budget(&bytes));
                }
                if allowed.is_empty() {
                    return Err(Error::BadAnswer(format!("no token can continue {what}")));
                }
                if temperature > 0.0 {
                    let sub: Vec<f32> = allowed.iter().map(|&i| logits[i]).collect();
                    allowed[sample(&sub, temperature, rng) as usize]
                } else {
                    allowed[0]
                }
            };
            recent.push(choice as u32);
            let tb = self.tokenizer.token_bytes(choice as u32);
            // The bytes past the value's end (`}` of the call, a new line)
            // are not part of it.
            let take = matcher.usable_prefix(tb).unwrap_or(tb.len());
            let past_end = take < tb.len();
            let tb = tb[..take].to_vec();
            matcher.feed(&tb);
            bytes.extend_from_slice(&tb);
            *generated += 1;
            logits = self.model.step(choice as u32)?;
            if matcher.is_done() || past_end {
                return Ok((String::from_utf8_lossy(&bytes).into_owned(), logits));
            }
        }
    }
}

/// The tool(s) a request forces, with their schemas.
fn forced_call(req: &ChatRequest) -> Result<Option<Forced>> {
    if !req.forces_tool() {
        return Ok(None);
    }
    match &req.tool_choice {
        Some(ToolChoice::Function(name)) => {
            let tool = req.tools.iter().find(|t| &t.name == name).ok_or_else(|| {
                Error::Invalid(format!(
                    "tool_choice names `{name}`, which is not among the offered tools"
                ))
            })?;
            Ok(Some(Forced::One(name.clone(), tool.parameters.clone())))
        }
        _ if req.tools.len() == 1 => Ok(Some(Forced::One(
            req.tools[0].name.clone(),
            req.tools[0].parameters.clone(),
        ))),
        _ => Ok(Some(Forced::AnyOf(
            req.tools
                .iter()
                .map(|t| (t.name.clone(), t.parameters.clone()))
                .collect(),
        ))),
    }
}

/// Applies [`REPEAT_PENALTY`] to the tokens of the last [`REPEAT_WINDOW`] of `recent`.
fn penalize(logits: &mut [f32], recent: &[u32]) {
    let mut seen = std::collections::HashSet::new();
    for &t in recent.iter().rev().take(REPEAT_WINDOW) {
        if seen.insert(t) {
            if let Some(l) = logits.get_mut(t as usize) {
                *l = if *l > 0.0 {
                    *l / REPEAT_PENALTY
                } else {
                    *l * REPEAT_PENALTY
                };
            }
        }
    }
}

/// Greedy at temperature 0, else a draw from the softmax of the top 40.
fn sample(logits: &[f32], temperature: f32, rng: &mut Rng) -> u32 {
    if temperature <= 0.0 || logits.len() < 2 {
        return crate::model::argmax(logits);
    }
    let mut idx: Vec<usize> = (0..logits.len()).collect();
    let k = 40.min(idx.len());
    idx.select_nth_unstable_by(k - 1, |&a, &b| logits[b].total_cmp(&logits[a]));
    idx.truncate(k);
    let max = idx
        .iter()
        .map(|&i| logits[i])
        .fold(f32::NEG_INFINITY, f32::max);
    let weights: Vec<f32> = idx
        .iter()
        .map(|&i| ((logits[i] - max) / temperature).exp())
        .collect();
    let total: f32 = weights.iter().sum();
    let mut r = rng.next_f32() * total;
    for (w, &i) in weights.iter().zip(&idx) {
        r -= w;
        if r <= 0.0 {
            return i as u32;
        }
    }
    idx[0] as u32
}
