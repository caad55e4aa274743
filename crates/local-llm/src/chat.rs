//! [`LocalChat`]: a GGUF model behind the [`ChatModel`] trait. One request
//! at a time runs on a blocking thread; dropping the request's future (a
//! timeout, a cancelled turn) stops the generation at the next token.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use candle_core::quantized::gguf_file::Content;
use mnemo_core::{FunctionCall, Message, ToolCall};
use mnemo_llm::{
    BoxFuture, ChatModel, ChatRequest, ChatResponse, LlmError, ModelActivity, ModelInfo,
    ToolChoice, Usage,
};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::grammar::{JsonMatcher, Node};
use crate::model::{architecture, check_extents, Model};
use crate::prompt_cache::{self, PromptCache};
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

/// Most tokens of a forced run checked in one batch: each brings a row of
/// logits as long as the vocabulary, and a schema's runs are a few tokens.
const FORCED_RUN_MAX: usize = 32;

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
    /// Folder of saved prompt prefixes (see [`crate::prompt_cache`]);
    /// `None`: none are saved or loaded.
    pub prompt_cache: Option<PathBuf>,
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
    /// Of which a forced call's schema left no choice about, run in the
    /// same pass as the token before them (and kept because the model
    /// chose them there): the model's passes for the generated tokens are
    /// `generated_tokens - forced_tokens`.
    pub forced_tokens: usize,
    /// Forced tokens that ran but were dropped: the model wrote those
    /// bytes with other tokens.
    pub dropped_tokens: usize,
    /// Seconds spent generating them.
    pub generate_secs: f64,
    /// Of the reused tokens, how many a saved prefix file gave.
    pub loaded_tokens: usize,
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
    /// Whether a forced call runs the bytes its schema forces as batches
    /// (`MNEMO_LLM_FORCED_BATCH=0` turns it off, to compare).
    forced_batch: bool,
    /// Forced tokens of the request being generated: kept, and run but
    /// dropped.
    forced_tokens: usize,
    dropped_tokens: usize,
    /// What the request being answered has done so far, read without the
    /// engine's lock (which a generation holds) by [`LocalChat::activity`].
    live: Arc<Live>,
    /// Saved system blocks.
    prompts: Option<PromptCache>,
    /// The token that ends a turn (and so the system block).
    im_end: Option<u32>,
}

/// How far the request being answered is: set as it goes, read by
/// another thread for a progress line.
#[derive(Debug, Default)]
struct Live {
    busy: AtomicBool,
    reading: AtomicBool,
    prompt_tokens: AtomicUsize,
    written: AtomicUsize,
}

/// Whether `MNEMO_LLM_FORCED_BATCH` leaves forced runs batched (anything
/// but `0`; the default).
fn forced_batch_default() -> bool {
    std::env::var("MNEMO_LLM_FORCED_BATCH").map_or(true, |v| v.trim() != "0")
}

/// A GGUF chat model run inside the process.
pub struct LocalChat {
    info: ModelInfo,
    engine: Arc<Mutex<Engine>>,
    label: String,
    path: PathBuf,
    ids: Arc<AtomicU64>,
    live: Arc<Live>,
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
            // Its first line: with RUST_BACKTRACE set, candle's message
            // goes on with a backtrace that hides the advice after it.
            let e = e.to_string();
            bad(format!(
                "it is not a readable GGUF file ({}); {}",
                e.lines().next().unwrap_or_default(),
                crate::error::REFETCH
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
        let live = Arc::new(Live::default());
        let im_end = tokenizer.id(IM_END);
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
                forced_batch: forced_batch_default(),
                forced_tokens: 0,
                dropped_tokens: 0,
                live: live.clone(),
                prompts: options.prompt_cache.clone().map(|dir| {
                    PromptCache::new(
                        dir,
                        format!(
                            "{} {len} {}x{}",
                            path.display(),
                            cfg.n_layer,
                            cfg.n_kv_head * cfg.head_dim
                        ),
                    )
                }),
                im_end,
            })),
            path: path.to_path_buf(),
            ids: Arc::new(AtomicU64::new(0)),
            live,
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

    /// Whether forced calls run what their schema forces (key names,
    /// separators, the rest of a settled enum option, closing brackets) as
    /// batches through the model instead of a pass per token. On unless
    /// `MNEMO_LLM_FORCED_BATCH=0`; the answer is the same either way.
    pub fn set_forced_batch(&self, on: bool) {
        self.engine
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .forced_batch = on;
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

impl LocalChat {
    /// Runs `work` on the engine on a blocking thread; dropping the future
    /// sets the cancel flag it is given, which stops a generation.
    fn on_engine<T, F>(
        &self,
        what: &'static str,
        work: F,
    ) -> BoxFuture<'_, std::result::Result<T, LlmError>>
    where
        T: Send + 'static,
        F: FnOnce(&mut Engine, &AtomicBool) -> Result<T> + Send + 'static,
    {
        let engine = self.engine.clone();
        let label = self.label.clone();
        Box::pin(async move {
            let cancel = Arc::new(AtomicBool::new(false));
            let _guard = CancelOnDrop(cancel.clone());
            let task = tokio::task::spawn_blocking(move || {
                let mut e = engine.lock().unwrap_or_else(|e| e.into_inner());
                work(&mut e, &cancel)
            });
            match task.await {
                Ok(r) => r.map_err(|e| e.into_llm(&label)),
                Err(e) => {
                    Err(Error::Inference(format!("the {what} thread failed: {e}")).into_llm(&label))
                }
            }
        })
    }
}

impl ChatModel for LocalChat {
    fn complete(
        &self,
        req: ChatRequest,
    ) -> BoxFuture<'_, std::result::Result<ChatResponse, LlmError>> {
        let ids = self.ids.clone();
        self.on_engine("generation", move |e, cancel| {
            let n = ids.fetch_add(1, Ordering::Relaxed);
            e.generate(&req, cancel, n)
        })
    }

    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn option_logprobs(
        &self,
        req: ChatRequest,
        options: Vec<String>,
    ) -> BoxFuture<'_, std::result::Result<Option<Vec<f32>>, LlmError>> {
        self.on_engine("judging", move |e, cancel| {
            e.option_logprobs(&req, &options, cancel).map(Some)
        })
    }

    fn activity(&self) -> Option<ModelActivity> {
        let live = &self.live;
        live.busy.load(Ordering::Relaxed).then(|| ModelActivity {
            prompt_tokens: live.prompt_tokens.load(Ordering::Relaxed),
            reading: live.reading.load(Ordering::Relaxed),
            written: live.written.load(Ordering::Relaxed),
        })
    }
}

/// `word` with its first letter in upper case.
fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
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
        self.busy(|e| e.generate_inner(req, cancel, call_no))
    }

    /// Runs `work` with [`LocalChat::activity`] saying the model is busy,
    /// counting a cancelled request.
    fn busy<T>(&mut self, work: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        self.live.written.store(0, Ordering::Relaxed);
        self.live.prompt_tokens.store(0, Ordering::Relaxed);
        self.live.reading.store(true, Ordering::Relaxed);
        self.live.busy.store(true, Ordering::Relaxed);
        let out = work(self);
        self.live.busy.store(false, Ordering::Relaxed);
        if matches!(out, Err(Error::Cancelled)) {
            self.cancelled += 1;
        }
        out
    }

    /// Runs the prompt `tokens` after what the cache shares with them,
    /// loading a saved system block first and, when `save` (the request's
    /// [`ChatRequest::fixed_system`]), saving one the cache did not hold:
    /// the last token's logits, the tokens reused and loaded. A block not
    /// marked fixed may hold memory (a chat turn's MEMORY.md and facts),
    /// and a file of it would keep forgotten text on disk, in a folder
    /// every workspace of a server shares.
    fn read_prompt(
        &mut self,
        tokens: &[u32],
        save: bool,
        cancel: &AtomicBool,
    ) -> Result<(Vec<f32>, usize, usize)> {
        let block = self.system_block(tokens);
        let loaded = block.map_or(0, |len| self.load_system_block(&tokens[..len]));
        let (logits, reused) = self.model.prefill(tokens, cancel)?;
        if let Some(len) = block.filter(|len| save && reused < *len) {
            self.save_system_block(len);
        }
        Ok((logits, reused, loaded))
    }

    fn generate_inner(
        &mut self,
        req: &ChatRequest,
        cancel: &AtomicBool,
        call_no: u64,
    ) -> Result<ChatResponse> {
        self.calls += 1;
        self.forced_tokens = 0;
        self.dropped_tokens = 0;
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
        self.live
            .prompt_tokens
            .store(tokens.len(), Ordering::Relaxed);
        let started = Instant::now();
        let (mut logits, reused, loaded) = self.read_prompt(&tokens, req.fixed_system, cancel)?;
        self.live.reading.store(false, Ordering::Relaxed);
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
                        let opening = self.tokenizer.encode(", \"arguments\": ")?;
                        if self.forced_batch {
                            logits = self.model.append(&opening, cancel)?;
                        } else {
                            for t in opening {
                                logits = self.model.step(t)?;
                            }
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
            forced_tokens: self.forced_tokens,
            dropped_tokens: self.dropped_tokens,
            generate_secs: started.elapsed().as_secs_f64(),
            loaded_tokens: loaded,
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

    /// The log-probability of each option as the answer's first token:
    /// one pass over the prompt (reusing the cached prefix, so judging
    /// many passages after one shared question pays for the question
    /// once) and nothing generated. An option counts under its first
    /// token as written and capitalised ("yes" and "Yes" are one answer).
    fn option_logprobs(
        &mut self,
        req: &ChatRequest,
        options: &[String],
        cancel: &AtomicBool,
    ) -> Result<Vec<f32>> {
        self.busy(|e| e.option_logprobs_inner(req, options, cancel))
    }

    fn option_logprobs_inner(
        &mut self,
        req: &ChatRequest,
        options: &[String],
        cancel: &AtomicBool,
    ) -> Result<Vec<f32>> {
        self.calls += 1;
        let prompt = self.template.render(req);
        let tokens = self.tokenizer.encode(&prompt)?;
        let context = self.model.max_positions();
        if tokens.len() >= context {
            return Err(Error::ContextOverflow(format!(
                "the prompt has {} tokens and the context window {context}",
                tokens.len()
            )));
        }
        self.live
            .prompt_tokens
            .store(tokens.len(), Ordering::Relaxed);
        let started = Instant::now();
        let (logits, reused, loaded) = self.read_prompt(&tokens, req.fixed_system, cancel)?;
        self.stats = GenerationStats {
            prompt_tokens: tokens.len(),
            reused_tokens: reused,
            prompt_secs: started.elapsed().as_secs_f64(),
            loaded_tokens: loaded,
            ..GenerationStats::default()
        };
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let norm = max + logits.iter().map(|l| (l - max).exp()).sum::<f32>().ln();
        let mut out = Vec::with_capacity(options.len());
        for option in options {
            let mut ids = Vec::new();
            for form in [option.clone(), capitalised(option)] {
                if let Some(&id) = self.tokenizer.encode(&form)?.first() {
                    if !ids.contains(&id) {
                        ids.push(id);
                    }
                }
            }
            let mass: f32 = ids
                .iter()
                .filter_map(|&id| logits.get(id as usize))
                .map(|l| (l - norm).exp())
                .sum();
            out.push(mass.ln());
        }
        Ok(out)
    }

    /// How many leading tokens of `tokens` are the system block (through
    /// its end-of-turn token and the newline after it), when it is long
    /// enough to save.
    fn system_block(&self, tokens: &[u32]) -> Option<usize> {
        let end = tokens.iter().position(|t| Some(*t) == self.im_end)?;
        let len = (end + 2).min(tokens.len() - 1);
        (len >= prompt_cache::MIN_TOKENS).then_some(len)
    }

    /// Puts the saved keys and values of `block` (a prompt's system block)
    /// in the cache when the cache does not hold it already; how many
    /// tokens that gave.
    fn load_system_block(&mut self, block: &[u32]) -> usize {
        let Some(cache) = &self.prompts else {
            return 0;
        };
        if self.model.shared_prefix(block) >= block.len() {
            return 0;
        }
        let layers = self.model.config.n_layer;
        match cache.load(block, layers, self.model.kv_dim()) {
            Some(saved) if self.model.restore_prefix(block, &saved) => block.len(),
            _ => 0,
        }
    }

    /// Saves the first `len` cached tokens, the system block the prompt
    /// just ran.
    fn save_system_block(&self, len: usize) {
        let Some(cache) = &self.prompts else {
            return;
        };
        if let Some((block, layers)) = self.model.saved_prefix(len) {
            cache.save(&block, &layers, self.model.kv_dim());
        }
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
            self.live.written.store(*generated, Ordering::Relaxed);
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

    /// Generates one JSON value of `node`, only ever taking a token the
    /// matcher accepts; returns its text and the logits after it. Running
    /// out of budget first is an error: a forced call is never cut short
    /// and passed on as if whole.
    ///
    /// Where the schema forces the bytes after a chosen token (a key and
    /// its `": "`, the rest of a settled enum option, closing brackets),
    /// their tokens run through the model in the same batch as that token,
    /// and each is kept while it is the token the model chooses there
    /// (chosen as always, on the batch's logits, which are the bits a step
    /// gives): the answer is the one a pass per token gives, for one pass
    /// over the token and its run. Where the model writes the bytes with
    /// other tokens (`},` where the run says `}`), the rest of the run
    /// leaves the cache and the model's token is taken.
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
        let mut d = Decoding {
            matcher: JsonMatcher::new(node),
            bytes: Vec::new(),
            recent: Vec::new(),
            budget,
            what,
        };
        // The model's choice where it left a run, already drawn.
        let mut pending = None;
        loop {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let choice = match pending.take() {
                Some(c) => c,
                None => self.choose(&mut logits, &d, *generated, temperature, rng)?,
            };
            let past_end = self.take(&mut d, choice, generated);
            let run = match self.forced_batch && !past_end && !d.matcher.is_done() {
                true => self.forced_run(&d.matcher)?,
                false => Vec::new(),
            };
            if run.is_empty() {
                logits = self.model.step(choice)?;
            } else {
                let base = self.model.cached_len();
                let batch: Vec<u32> = std::iter::once(choice).chain(run.iter().copied()).collect();
                let mut rows = self.model.append_rows(&batch, cancel)?.into_iter();
                logits = rows
                    .next()
                    .ok_or_else(|| Error::Inference("no logits for a forced run".into()))?;
                let mut kept = 0;
                for (&token, row) in run.iter().zip(rows) {
                    let c = self.choose(&mut logits, &d, *generated, temperature, rng)?;
                    if c != token {
                        pending = Some(c);
                        break;
                    }
                    self.take(&mut d, token, generated);
                    kept += 1;
                    logits = row;
                    if d.matcher.is_done() {
                        break;
                    }
                }
                if kept < run.len() {
                    self.model.truncate(base + 1 + kept);
                }
                self.forced_tokens += kept;
                self.dropped_tokens += run.len() - kept;
            }
            if d.matcher.is_done() || past_end {
                return Ok((d.text(), logits));
            }
        }
    }

    /// The token decoding takes at this point, from `logits` (penalized
    /// here for the recent tokens): the best one the matcher accepts at
    /// temperature 0, else a draw from the best 40 it accepts.
    fn choose(
        &self,
        logits: &mut [f32],
        d: &Decoding,
        generated: usize,
        temperature: f32,
        rng: &mut Rng,
    ) -> Result<u32> {
        let (budget, matcher) = (d.budget, &d.matcher);
        let over_budget = || {
            let text = String::from_utf8_lossy(&d.bytes);
            let tail: String = {
                let chars: Vec<char> = text.chars().collect();
                chars[chars.len().saturating_sub(160)..].iter().collect()
            };
            Error::BadAnswer(format!(
                "the model spent its budget of {budget} tokens inside {} without closing its JSON ({} bytes so far, ending {tail:?}); raise max_tokens / max_output",
                d.what,
                d.bytes.len()
            ))
        };
        if generated >= budget {
            return Err(over_budget());
        }
        penalize(logits, &d.recent);
        let vocab = self.tokenizer.vocab_size().min(logits.len());
        // Near the end of the budget, a token must leave room to close
        // the value (one token per byte of `closing` at worst): a small
        // model that writes on is steered to close its call in time
        // rather than fail at the limit.
        let left = budget - generated;
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
        if temperature <= 0.0 && ok(best) {
            return Ok(best as u32);
        }
        let mut order: Vec<usize> = (0..vocab).collect();
        order.sort_unstable_by(|&a, &b| logits[b].total_cmp(&logits[a]));
        let allowed: Vec<usize> = order
            .into_iter()
            .filter(|&i| ok(i))
            .take(if temperature > 0.0 { 40 } else { 1 })
            .collect();
        if allowed.is_empty() && tight {
            // Not even the shortest way to close fits any more.
            return Err(over_budget());
        }
        if allowed.is_empty() {
            return Err(Error::BadAnswer(format!(
                "no token can continue {}",
                d.what
            )));
        }
        let choice = if temperature > 0.0 {
            let sub: Vec<f32> = allowed.iter().map(|&i| logits[i]).collect();
            allowed[sample(&sub, temperature, rng) as usize]
        } else {
            allowed[0]
        };
        Ok(choice as u32)
    }

    /// Takes `token`: its bytes up to the value's end (a token may close
    /// the value and go on: `}` of the call, a new line) join the value.
    /// True when some of them were past the end.
    fn take(&self, d: &mut Decoding, token: u32, generated: &mut usize) -> bool {
        d.recent.push(token);
        let tb = self.tokenizer.token_bytes(token);
        let take = d.matcher.usable_prefix(tb).unwrap_or(tb.len());
        d.matcher.feed(&tb[..take]);
        d.bytes.extend_from_slice(&tb[..take]);
        *generated += 1;
        self.live.written.store(*generated, Ordering::Relaxed);
        take < tb.len()
    }

    /// The tokens of the run the schema forces from `matcher`'s state
    /// ([`JsonMatcher::forced`]), each piece tokenized on its own, at most
    /// [`FORCED_RUN_MAX`]; empty when the next token is the model's choice.
    /// A piece that is part of a character, or that the tokenizer does not
    /// give back byte for byte, is left to the model.
    fn forced_run(&self, matcher: &JsonMatcher) -> Result<Vec<u32>> {
        let mut m = matcher.clone();
        let mut ids = Vec::new();
        while ids.len() < FORCED_RUN_MAX {
            let run = m.forced();
            let text = match std::str::from_utf8(&run) {
                Ok(t) => t,
                Err(e) => std::str::from_utf8(&run[..e.valid_up_to()]).unwrap_or_default(),
            };
            if text.is_empty() {
                break;
            }
            let piece = self.tokenizer.encode(text)?;
            let same = piece.iter().all(|&t| !self.tokenizer.is_control(t))
                && piece
                    .iter()
                    .flat_map(|&t| self.tokenizer.token_bytes(t))
                    .eq(text.as_bytes());
            if !same || !m.feed(text.as_bytes()) {
                break;
            }
            ids.extend(piece);
            if text.len() < run.len() {
                break;
            }
        }
        ids.truncate(FORCED_RUN_MAX);
        Ok(ids)
    }
}

/// The state of one constrained value being decoded.
struct Decoding<'a> {
    matcher: JsonMatcher,
    /// The value's bytes so far.
    bytes: Vec<u8>,
    /// Its tokens so far, for [`REPEAT_PENALTY`].
    recent: Vec<u32>,
    budget: usize,
    /// What is being decoded, for errors ("the forced save_memory call").
    what: &'a str,
}

impl Decoding<'_> {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
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
