//! The transformer of a GGUF chat model (Qwen2 and Llama families: RMS
//! norms, rotary positions, grouped-query attention, SwiGLU), with a KV
//! cache that keeps the longest prefix the next prompt shares with the last
//! one, and prompts (and the runs of tokens a schema forces) run in
//! batches.
//!
//! The forward pass works on plain rows of `f32` (one per token): the
//! matrix products run on [`crate::quant`]'s kernels, attention and the
//! half-float KV cache on [`crate::kv`], and the rest (norms, rotary
//! positions, SwiGLU, residuals) are loops here. Every step is computed
//! row by row, so a token's logits do not depend on the batch it ran in.
//!
//! Weights stay quantized as the file stores them: the token embedding is
//! read one row at a time rather than expanded to `f32`; candle's `QMatMul`
//! is kept for the block types the kernels lack.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use candle_core::quantized::gguf_file::{Content, Value};
use candle_core::quantized::{ggml_file::qtensor_from_ggml, GgmlDType, QMatMul};
use candle_core::{DType, Device, Module, Tensor};

use crate::error::{Error, Result, REFETCH};
use crate::kv::{self, Heads, LayerCache};
use crate::quant::{self, Kernel, QWeight};

/// Prompt tokens processed per forward pass: large enough that each weight
/// matrix is read once for many tokens, small enough to bound the attention
/// scores' memory.
pub const PROMPT_BATCH: usize = 128;

/// The architecture families this crate runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// Qwen2 / Qwen2.5: biases on q, k, v; rotary halves (NeoX layout).
    Qwen2,
    /// Llama (SmolLM2 and others): no biases; interleaved rotary pairs.
    Llama,
}

/// Shapes and constants read from the GGUF metadata.
#[derive(Debug, Clone)]
pub struct ModelConfig {
    /// Architecture.
    pub arch: Arch,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Query heads.
    pub n_head: usize,
    /// Key/value heads.
    pub n_kv_head: usize,
    /// Hidden size.
    pub n_embd: usize,
    /// Size of one head.
    pub head_dim: usize,
    /// RMS norm epsilon.
    pub eps: f64,
    /// Rotary base frequency.
    pub rope_base: f32,
    /// Context length the model was trained for.
    pub train_context: usize,
}

/// A weight matrix: this crate's kernels when they run its block type,
/// else candle's product. The kernels keep their own copy (Q4_K and Q6_K
/// in groups of rows), so candle's is dropped unless candle runs products.
struct Linear {
    own: Option<QWeight>,
    candle: Option<QMatMul>,
    cols: usize,
}

impl Linear {
    fn new(t: candle_core::quantized::QTensor) -> Result<Self> {
        let cols = t.shape().dims().last().copied().unwrap_or(0);
        let own = QWeight::new(&t);
        let candle =
            (own.is_none() || candle_from() < usize::MAX).then(|| QMatMul::QTensor(Arc::new(t)));
        Ok(Linear { own, candle, cols })
    }
}

/// `x · wᵀ` for each of `ws` (which share the input: `t` rows of `x`,
/// each `cols` long), each `[t, rows]` row-major: one pass of the kernels
/// over all of them when they all have one, else each on its own.
fn products(ws: &[&Linear], x: &[f32], t: usize, kernel: Kernel) -> Result<Vec<Vec<f32>>> {
    let own: Option<Vec<&QWeight>> = ws.iter().map(|w| w.own.as_ref()).collect();
    let ours = |w: &[&QWeight]| {
        quant::matmul_many(w, x, kernel).map_err(|e| Error::Inference(e.to_string()))
    };
    if let Some(own) = own.filter(|_| t < candle_from()) {
        return ours(&own);
    }
    let cols = ws.first().map_or(0, |w| w.cols);
    let h = Tensor::from_slice(x, (t, cols), &Device::Cpu)?;
    ws.iter()
        .map(|w| match (&w.candle, &w.own) {
            (Some(candle), _) => Ok(candle
                .forward(&h)?
                .flatten_all()?
                .to_dtype(DType::F32)?
                .to_vec1::<f32>()?),
            (None, Some(own)) => ours(&[own])?
                .pop()
                .ok_or_else(|| Error::Inference("no product".into())),
            // `Linear::new` keeps candle's tensor when there is no kernel.
            (None, None) => Err(Error::Inference("no product for a weight".into())),
        })
        .collect()
}

fn product(w: &Linear, x: &[f32], t: usize, kernel: Kernel) -> Result<Vec<f32>> {
    products(&[w], x, t, kernel)?
        .pop()
        .ok_or_else(|| Error::Inference("no product".into()))
}

/// Products of this many tokens or more run on candle's `QMatMul`. By
/// default none do: the tiled kernels run prompt batches about as fast as
/// candle's tiled product, and candle builds a repacked copy of every Q4_K
/// matrix on its first product and keeps it (1.22 GB instead of 2.2 GB
/// peak for Qwen2.5-1.5B; docs/BENCHMARKS-LOG.md items 33 and 35).
/// `MNEMO_LLM_CANDLE_FROM` overrides, to compare (1: candle for
/// everything, as before the kernels; 2: candle for prompts only).
fn candle_from() -> usize {
    static N: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *N.get_or_init(|| {
        std::env::var("MNEMO_LLM_CANDLE_FROM")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(usize::MAX)
    })
}

struct Layer {
    attn_norm: Vec<f32>,
    wq: Linear,
    wk: Linear,
    wv: Linear,
    bq: Option<Vec<f32>>,
    bk: Option<Vec<f32>>,
    bv: Option<Vec<f32>>,
    wo: Linear,
    ffn_norm: Vec<f32>,
    gate: Linear,
    up: Linear,
    down: Linear,
}

/// One layer's keys and values for a run of positions, as the cache
/// stores them (half floats).
pub type LayerKv<'a> = (&'a [u16], &'a [u16]);

/// A loaded model and its KV cache.
pub struct Model {
    /// Shapes and constants.
    pub config: ModelConfig,
    layers: Vec<Layer>,
    embd_raw: Vec<u8>,
    embd_dtype: GgmlDType,
    embd_row_bytes: usize,
    norm: Vec<f32>,
    output: Linear,
    kernel: Kernel,
    /// `cos` and `sin` of each position's angles, `[position][head_dim / 2]`.
    cos: Vec<f32>,
    sin: Vec<f32>,
    cache: Vec<LayerCache>,
    /// The tokens whose keys and values the cache holds.
    cached: Vec<u32>,
    /// Largest number of positions (the configured context window).
    max_positions: usize,
}

fn meta_u32(ct: &Content, key: &str) -> Result<usize> {
    ct.metadata
        .get(key)
        .and_then(|v| v.to_u32().ok())
        .map(|v| v as usize)
        .ok_or_else(|| Error::Invalid(format!("GGUF metadata {key} is missing")))
}

fn meta_f32(ct: &Content, key: &str) -> Option<f32> {
    ct.metadata.get(key).and_then(|v| v.to_f32().ok())
}

/// The `general.architecture` of a GGUF's metadata.
pub fn architecture(ct: &Content) -> String {
    ct.metadata
        .get("general.architecture")
        .and_then(|v| Value::to_string(v).ok())
        .cloned()
        .unwrap_or_default()
}

impl ModelConfig {
    /// Reads the shapes of a Qwen2 or Llama GGUF.
    pub fn from_gguf(ct: &Content) -> Result<Self> {
        let arch_name = architecture(ct);
        let arch = match arch_name.as_str() {
            "qwen2" => Arch::Qwen2,
            "llama" => Arch::Llama,
            other => {
                return Err(Error::Invalid(format!(
                    "architecture `{other}` is not supported: mnemo runs Qwen2 and Llama family models (qwen2, llama)"
                )))
            }
        };
        let p = |k: &str| format!("{arch_name}.{k}");
        let n_head = meta_u32(ct, &p("attention.head_count"))?;
        let n_embd = meta_u32(ct, &p("embedding_length"))?;
        let head_dim = n_embd.checked_div(n_head).unwrap_or(0);
        if n_head == 0 || head_dim % 2 != 0 {
            return Err(Error::Invalid(format!(
                "bad attention shape: {n_head} heads for {n_embd} dimensions"
            )));
        }
        let n_kv_head = ct
            .metadata
            .get(&p("attention.head_count_kv"))
            .and_then(|v| v.to_u32().ok())
            .map(|v| v as usize)
            .unwrap_or(n_head);
        if n_kv_head == 0 || n_head % n_kv_head != 0 {
            return Err(Error::Invalid(format!(
                "bad attention shape: {n_head} query heads for {n_kv_head} key/value heads"
            )));
        }
        Ok(ModelConfig {
            arch,
            n_layer: meta_u32(ct, &p("block_count"))?,
            n_head,
            n_kv_head,
            n_embd,
            head_dim,
            eps: meta_f32(ct, &p("attention.layer_norm_rms_epsilon")).unwrap_or(1e-5) as f64,
            rope_base: meta_f32(ct, &p("rope.freq_base")).unwrap_or(10_000.0),
            train_context: meta_u32(ct, &p("context_length")).unwrap_or(4096),
        })
    }
}

/// Checks that every tensor lies inside the file, so a truncated download
/// is reported as such rather than as a read error deep in the loader.
pub fn check_extents(ct: &Content, file_len: u64, path: &Path) -> Result<()> {
    for (name, info) in &ct.tensor_infos {
        let elems = info.shape.elem_count();
        let bytes = (elems / info.ggml_dtype.block_size()) * info.ggml_dtype.type_size();
        let end = ct.tensor_data_offset + info.offset + bytes as u64;
        if end > file_len {
            return Err(Error::BadModel {
                path: path.to_path_buf(),
                message: format!(
                    "it is truncated: tensor {name} ends at byte {end} but the file has {file_len} bytes; {REFETCH}"
                ),
            });
        }
    }
    Ok(())
}

impl Model {
    /// Loads the weights of `ct` (read from `file`) for a context of
    /// `max_positions` tokens.
    pub fn load(ct: &Content, file: &mut File, max_positions: usize) -> Result<Self> {
        let config = ModelConfig::from_gguf(ct)?;
        let device = Device::Cpu;
        let mut tensor = |name: &str| {
            ct.tensor(file, name, &device)
                .map_err(|e| Error::Invalid(format!("tensor {name}: {e}")))
        };
        let mut layers = Vec::with_capacity(config.n_layer);
        let qwen = config.arch == Arch::Qwen2;
        for i in 0..config.n_layer {
            let n = |s: &str| format!("blk.{i}.{s}");
            let mut vector = |s: &str| -> Result<Vec<f32>> {
                Ok(tensor(&n(s))?
                    .dequantize(&device)?
                    .flatten_all()?
                    .to_vec1::<f32>()?)
            };
            let (bq, bk, bv) = match qwen {
                true => (
                    Some(vector("attn_q.bias")?),
                    Some(vector("attn_k.bias")?),
                    Some(vector("attn_v.bias")?),
                ),
                false => (None, None, None),
            };
            let (attn_norm, ffn_norm) = (vector("attn_norm.weight")?, vector("ffn_norm.weight")?);
            layers.push(Layer {
                attn_norm,
                wq: Linear::new(tensor(&n("attn_q.weight"))?)?,
                wk: Linear::new(tensor(&n("attn_k.weight"))?)?,
                wv: Linear::new(tensor(&n("attn_v.weight"))?)?,
                bq,
                bk,
                bv,
                wo: Linear::new(tensor(&n("attn_output.weight"))?)?,
                ffn_norm,
                gate: Linear::new(tensor(&n("ffn_gate.weight"))?)?,
                up: Linear::new(tensor(&n("ffn_up.weight"))?)?,
                down: Linear::new(tensor(&n("ffn_down.weight"))?)?,
            });
        }
        let norm = tensor("output_norm.weight")?
            .dequantize(&device)?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let output = match ct.tensor_infos.contains_key("output.weight") {
            true => Linear::new(tensor("output.weight")?)?,
            // Tied embeddings (SmolLM2): the embedding is the output matrix.
            false => Linear::new(tensor("token_embd.weight")?)?,
        };
        let info = ct
            .tensor_infos
            .get("token_embd.weight")
            .ok_or_else(|| Error::Invalid("tensor token_embd.weight is missing".into()))?;
        let embd_dtype = info.ggml_dtype;
        let dims = info.shape.dims();
        // candle lists GGUF dimensions outermost first: [vocab, n_embd].
        if dims.len() != 2 || dims[1] != config.n_embd {
            return Err(Error::Invalid(format!(
                "token_embd.weight has shape {dims:?}, expected [vocab, {}]",
                config.n_embd
            )));
        }
        let embd_row_bytes = config.n_embd / embd_dtype.block_size() * embd_dtype.type_size();
        let mut embd_raw = vec![0u8; embd_row_bytes * dims[0]];
        {
            use std::io::{Read, Seek, SeekFrom};
            file.seek(SeekFrom::Start(ct.tensor_data_offset + info.offset))
                .and_then(|_| file.read_exact(&mut embd_raw))
                .map_err(|e| Error::Invalid(format!("reading token_embd.weight: {e}")))?;
        }
        let max_positions = max_positions.max(1);
        let (cos, sin) = rope_tables(&config, max_positions);
        let cache = (0..config.n_layer).map(|_| LayerCache::default()).collect();
        Ok(Model {
            config,
            layers,
            embd_raw,
            embd_dtype,
            embd_row_bytes,
            norm,
            output,
            kernel: quant::kernel(),
            cos,
            sin,
            cache,
            cached: Vec::new(),
            max_positions,
        })
    }

    /// Number of rows of the embedding (the vocabulary size the model knows).
    pub fn vocab_rows(&self) -> usize {
        self.embd_raw.len() / self.embd_row_bytes.max(1)
    }

    /// The largest number of positions the cache may hold.
    pub fn max_positions(&self) -> usize {
        self.max_positions
    }

    /// The embedding rows of `tokens`, one after the other.
    fn embed(&self, tokens: &[u32]) -> Result<Vec<f32>> {
        let mut rows = Vec::with_capacity(tokens.len() * self.config.n_embd);
        for &t in tokens {
            let start = t as usize * self.embd_row_bytes;
            let raw = self
                .embd_raw
                .get(start..start + self.embd_row_bytes)
                .ok_or_else(|| {
                    Error::Inference(format!("token id {t} is outside the vocabulary"))
                })?;
            let q = qtensor_from_ggml(
                self.embd_dtype,
                raw,
                vec![1, self.config.n_embd],
                &Device::Cpu,
            )?;
            rows.extend(
                q.dequantize(&Device::Cpu)?
                    .flatten_all()?
                    .to_vec1::<f32>()?,
            );
        }
        Ok(rows)
    }

    /// Forgets the cache.
    pub fn reset(&mut self) {
        self.truncate(0);
    }

    /// How many leading tokens of `tokens` the cache already holds.
    pub fn shared_prefix(&self, tokens: &[u32]) -> usize {
        self.cached
            .iter()
            .zip(tokens)
            .take_while(|(a, b)| a == b)
            .count()
    }

    /// Runs `tokens` after the longest prefix the cache shares with them,
    /// in batches of [`PROMPT_BATCH`], and returns the last token's logits
    /// and how many tokens were reused. `cancel` stops it between batches.
    pub fn prefill(&mut self, tokens: &[u32], cancel: &AtomicBool) -> Result<(Vec<f32>, usize)> {
        if tokens.is_empty() {
            return Err(Error::Invalid("empty prompt".into()));
        }
        // At least one token must run, to have logits.
        let reuse = self.shared_prefix(tokens).min(tokens.len() - 1);
        self.truncate(reuse);
        Ok((self.append(&tokens[reuse..], cancel)?, reuse))
    }

    /// Runs `tokens` after everything the cache holds, in batches of
    /// [`PROMPT_BATCH`], and returns the last one's logits (the bits
    /// [`Model::step`] would give). `cancel` stops it between batches.
    pub fn append(&mut self, tokens: &[u32], cancel: &AtomicBool) -> Result<Vec<f32>> {
        let mut logits = None;
        for chunk in tokens.chunks(PROMPT_BATCH) {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            logits = Some(self.forward(chunk, false)?);
        }
        logits.ok_or_else(|| Error::Inference("no tokens ran".into()))
    }

    /// Runs `tokens` after everything the cache holds, as [`Model::append`]
    /// does, and returns the logits after each of them, one row per token,
    /// each the bits [`Model::step`] would give: a run of tokens the caller
    /// expects (the bytes a schema forces) is checked against what the
    /// model would have chosen at every position for one pass.
    pub fn append_rows(&mut self, tokens: &[u32], cancel: &AtomicBool) -> Result<Vec<Vec<f32>>> {
        let mut rows = Vec::with_capacity(tokens.len());
        for chunk in tokens.chunks(PROMPT_BATCH) {
            if cancel.load(Ordering::Relaxed) {
                return Err(Error::Cancelled);
            }
            let all = self.forward(chunk, true)?;
            let vocab = all.len() / chunk.len();
            rows.extend(all.chunks_exact(vocab).map(<[f32]>::to_vec));
        }
        Ok(rows)
    }

    /// Runs one generated token and returns the next logits.
    pub fn step(&mut self, token: u32) -> Result<Vec<f32>> {
        self.forward(&[token], false)
    }

    /// How many tokens the cache holds.
    pub fn cached_len(&self) -> usize {
        self.cached.len()
    }

    /// Positions' keys and values per layer (`kv_dim` half floats a
    /// position), the unit of [`Model::saved_prefix`].
    pub fn kv_dim(&self) -> usize {
        self.config.n_kv_head * self.config.head_dim
    }

    /// The first `len` cached tokens and each layer's keys and values for
    /// them, as stored (half floats), to be put back by
    /// [`Model::restore_prefix`]; `None` when the cache holds fewer.
    pub fn saved_prefix(&self, len: usize) -> Option<(Vec<u32>, Vec<LayerKv<'_>>)> {
        if self.cached.len() < len {
            return None;
        }
        let kv_dim = self.kv_dim();
        Some((
            self.cached[..len].to_vec(),
            self.cache.iter().map(|c| c.raw(len, kv_dim)).collect(),
        ))
    }

    /// Puts back what [`Model::saved_prefix`] gave (a model of the same
    /// file): the cache holds `tokens` after it, as if they had run.
    pub fn restore_prefix(&mut self, tokens: &[u32], layers: &[(Vec<u16>, Vec<u16>)]) -> bool {
        let want = tokens.len() * self.kv_dim();
        let fits = layers.len() == self.cache.len()
            && tokens.len() <= self.max_positions
            && layers
                .iter()
                .all(|(k, v)| k.len() == want && v.len() == want);
        if !fits {
            return false;
        }
        self.truncate(0);
        for (c, (k, v)) in self.cache.iter_mut().zip(layers) {
            c.push_raw(k, v);
        }
        self.cached = tokens.to_vec();
        true
    }

    /// Keeps the first `len` tokens of the cache and forgets the rest (the
    /// tail of an appended run the model would not have written).
    pub fn truncate(&mut self, len: usize) {
        self.cached.truncate(len);
        let kv_dim = self.config.n_kv_head * self.config.head_dim;
        for c in &mut self.cache {
            c.truncate(len, kv_dim);
        }
    }

    fn heads(&self) -> Heads {
        Heads {
            n_head: self.config.n_head,
            n_kv_head: self.config.n_kv_head,
            head_dim: self.config.head_dim,
        }
    }

    /// Runs `tokens` after the cache; the logits of the last one, or with
    /// `all_rows` of each (`[tokens, vocab]`).
    fn forward(&mut self, tokens: &[u32], all_rows: bool) -> Result<Vec<f32>> {
        let pos = self.cached.len();
        let n = tokens.len();
        if pos + n > self.max_positions {
            return Err(Error::ContextOverflow(format!(
                "{} tokens do not fit the context window of {}",
                pos + n,
                self.max_positions
            )));
        }
        let cfg = &self.config;
        let (kernel, heads, eps) = (self.kernel, self.heads(), cfg.eps as f32);
        let (q_dim, kv_dim) = (cfg.n_head * cfg.head_dim, cfg.n_kv_head * cfg.head_dim);
        let half = cfg.head_dim / 2;
        let rope = |v: &mut [f32], width: usize| {
            for (i, row) in v.chunks_exact_mut(width).enumerate() {
                let at = (pos + i) * half;
                let (cos, sin) = (&self.cos[at..at + half], &self.sin[at..at + half]);
                for head in row.chunks_exact_mut(cfg.head_dim) {
                    rotate(head, cos, sin, cfg.arch);
                }
            }
        };
        let mut x = self.embed(tokens)?;
        for (layer, cache) in self.layers.iter().zip(self.cache.iter_mut()) {
            let h = rms_norm(&x, &layer.attn_norm, eps);
            let mut qkv = products(&[&layer.wq, &layer.wk, &layer.wv], &h, n, kernel)?.into_iter();
            let (Some(mut q), Some(mut k), Some(mut v)) = (qkv.next(), qkv.next(), qkv.next())
            else {
                return Err(Error::Inference("no q/k/v product".into()));
            };
            add_bias(&mut q, layer.bq.as_deref());
            add_bias(&mut k, layer.bk.as_deref());
            add_bias(&mut v, layer.bv.as_deref());
            rope(&mut q, q_dim);
            rope(&mut k, kv_dim);
            cache.push(&k, &v);
            let y = kv::attend(&q, cache, heads, pos, n);
            add(&mut x, &product(&layer.wo, &y, n, kernel)?);
            let h = rms_norm(&x, &layer.ffn_norm, eps);
            let mut gu = products(&[&layer.gate, &layer.up], &h, n, kernel)?.into_iter();
            let (Some(mut g), Some(u)) = (gu.next(), gu.next()) else {
                return Err(Error::Inference("no gate/up product".into()));
            };
            for (g, u) in g.iter_mut().zip(&u) {
                *g = *g / (1.0 + (-*g).exp()) * u;
            }
            add(&mut x, &product(&layer.down, &g, n, kernel)?);
        }
        self.cached.extend_from_slice(tokens);
        let from = if all_rows { 0 } else { n - 1 };
        let rows = rms_norm(&x[from * cfg.n_embd..], &self.norm, eps);
        product(&self.output, &rows, n - from, kernel)
    }
}

/// Each row of `x` (rows of `w.len()`) divided by its root mean square,
/// times `w`.
fn rms_norm(x: &[f32], w: &[f32], eps: f32) -> Vec<f32> {
    let mut out = Vec::with_capacity(x.len());
    for row in x.chunks_exact(w.len()) {
        let ms = row.iter().map(|v| v * v).sum::<f32>() / w.len() as f32;
        let inv = 1.0 / (ms + eps).sqrt();
        out.extend(row.iter().zip(w).map(|(v, w)| v * inv * w));
    }
    out
}

fn add_bias(x: &mut [f32], bias: Option<&[f32]>) {
    if let Some(b) = bias {
        for row in x.chunks_exact_mut(b.len()) {
            add(row, b);
        }
    }
}

fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// Rotates one head's values by its position's angles: Qwen2 pairs value
/// `i` with `i + d/2` (NeoX halves), Llama pairs `2i` with `2i + 1`.
fn rotate(head: &mut [f32], cos: &[f32], sin: &[f32], arch: Arch) {
    let half = cos.len();
    for i in 0..half {
        let (a, b) = match arch {
            Arch::Qwen2 => (i, i + half),
            Arch::Llama => (2 * i, 2 * i + 1),
        };
        let (x0, x1) = (head[a], head[b]);
        head[a] = x0 * cos[i] - x1 * sin[i];
        head[b] = x0 * sin[i] + x1 * cos[i];
    }
}

fn rope_tables(cfg: &ModelConfig, positions: usize) -> (Vec<f32>, Vec<f32>) {
    let half = cfg.head_dim / 2;
    let inv: Vec<f32> = (0..half)
        .map(|i| 1.0 / cfg.rope_base.powf((2 * i) as f32 / cfg.head_dim as f32))
        .collect();
    let mut cos = Vec::with_capacity(positions * half);
    let mut sin = Vec::with_capacity(positions * half);
    for p in 0..positions {
        for f in &inv {
            let a = p as f32 * f;
            cos.push(a.cos());
            sin.push(a.sin());
        }
    }
    (cos, sin)
}

/// Index of the largest value (the greedy choice).
pub fn argmax(logits: &[f32]) -> u32 {
    let mut best = 0usize;
    for (i, &v) in logits.iter().enumerate() {
        if v > logits[best] {
            best = i;
        }
    }
    best as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::quantized::QTensor;

    /// The weight of `values` in `dtype`, and its dequantized values.
    fn weight(values: &[f32], rows: usize, cols: usize, dtype: GgmlDType) -> (Linear, Vec<f32>) {
        let t = Tensor::from_slice(values, (rows, cols), &Device::Cpu).unwrap();
        let q = QTensor::quantize(&t, dtype).unwrap();
        let plain = quant::dequantized(&q);
        (Linear::new(q).unwrap(), plain)
    }

    /// A set whose weights are not all of a block type with a kernel (a
    /// GGUF with a few Q5_0 matrices beside Q8_0 ones) goes weight by
    /// weight: candle's product for one, the kernel for the other, each
    /// giving what it gives alone and the product with its dequantized
    /// values.
    #[test]
    fn a_set_mixing_kernel_and_candle_weights_gives_each_product() {
        let (rows, cols, t) = (16, 64, 3);
        let value = |i: usize| ((i * 37 % 101) as f32 - 50.0) / 50.0;
        let a: Vec<f32> = (0..rows * cols).map(value).collect();
        let b: Vec<f32> = (0..rows * cols).map(|i| value(i + 7)).collect();
        let x: Vec<f32> = (0..t * cols).map(|i| value(i * 3 + 1)).collect();
        let (own, a) = weight(&a, rows, cols, GgmlDType::Q8_0);
        let (other, b) = weight(&b, rows, cols, GgmlDType::Q5_0);
        assert!(own.own.is_some() && own.candle.is_none());
        assert!(other.own.is_none() && other.candle.is_some());
        let kernel = quant::kernel();
        let both = products(&[&own, &other], &x, t, kernel).unwrap();
        assert_eq!(both.len(), 2);
        assert_eq!(both[0], product(&own, &x, t, kernel).unwrap());
        assert_eq!(both[1], product(&other, &x, t, kernel).unwrap());
        for (got, w) in both.iter().zip([&a, &b]) {
            assert_eq!(got.len(), t * rows);
            for (k, g) in got.iter().enumerate() {
                let (tok, row) = (k / rows, k % rows);
                let want: f32 = (0..cols)
                    .map(|c| x[tok * cols + c] * w[row * cols + c])
                    .sum();
                // What is left is the activations' 8-bit rounding.
                assert!(
                    (g - want).abs() < 0.02 * (1.0 + want.abs()),
                    "{k}: {g} vs {want}"
                );
            }
        }
    }
}
